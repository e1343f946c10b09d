//! This host's identity towards the other hosts of its OpenCode server: what its leases and claim
//! parts name (`record/lease.rs`). It is kept in the data directory, so a host started again
//! after a crash is the same host, and takes up at once the lease and the claims its previous
//! process left behind (another host would have to wait them out). Each identity is a file,
//! locked by the process that holds it for as long as that process lives: two live processes
//! sharing a data directory (a web server and a desktop app) take two different files, and a
//! file whose process died is free for the next one. Where no file can be held (no lock on this
//! file system, every slot taken, no data directory), the identity is this process's own.
//! The file is let go when the last runtime of the process on that directory stops (or is
//! dropped): a stopped host leaves its data directory free to remove (Windows refuses to remove
//! a file some process holds open), and a runtime started again in the same process takes the
//! same free file, so the same identity.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use parking_lot::Mutex;
use tokio::sync::OnceCell;

use crate::io::services::DataDir;
use crate::record::lease::holder_id;

/// The identity files, under the data directory: `host-identity-0` … (one per live process that
/// shares the directory).
const IDENTITY_FILE: &str = "goals/host-identity";

/// Identity files a data directory offers: more processes than that on one directory get an
/// identity of their own that no successor takes up.
const SLOTS: usize = 8;

/// An identity file this process holds: its seed, the open (and so locked) file, and how many
/// of the process's runtimes use it.
struct Held {
    seed: u64,
    _file: File,
    users: usize,
}

/// The identity seeds this process holds, by data directory; each one's file is kept open, and
/// so locked, while a runtime of the process uses it.
fn held() -> &'static Mutex<HashMap<PathBuf, Held>> {
    static HELD: OnceLock<Mutex<HashMap<PathBuf, Held>>> = OnceLock::new();
    HELD.get_or_init(Mutex::default)
}

/// One user of the identity held in `root` is done with it: the last one lets the file go.
pub fn release_in(root: &Path) {
    let mut held = held().lock();
    let Some(entry) = held.get_mut(root) else { return };
    entry.users = entry.users.saturating_sub(1);
    if entry.users == 0 {
        held.remove(root);
    }
}

/// This process's own seed: random, the same for every runtime of the process.
pub fn process_seed() -> u64 {
    static SEED: OnceLock<u64> = OnceLock::new();
    *SEED.get_or_init(fresh_seed)
}

fn fresh_seed() -> u64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0),
    );
    hasher.write_u32(std::process::id());
    hasher.finish()
}

/// The seed of the identity this process holds in the data directory `root`: the first
/// identity file no live process holds, locked now (its seed written when it has none yet).
/// `None` when none can be held. Each `Some` counts one user until [`release_in`]. Blocking file
/// work: call it on the blocking pool.
pub fn seed_in(root: &Path) -> Option<u64> {
    let mut held = held().lock();
    if let Some(entry) = held.get_mut(root) {
        entry.users += 1;
        return Some(entry.seed);
    }
    let base = root.join(IDENTITY_FILE);
    std::fs::create_dir_all(base.parent()?).ok()?;
    for slot in 0..SLOTS {
        let path = PathBuf::from(format!("{}-{slot}", base.display()));
        let Ok(file) = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path) else {
            continue;
        };
        // Held by a live process (or this file system locks nothing): the next slot.
        if file.try_lock().is_err() {
            continue;
        }
        let Some((seed, file)) = seed_of(file) else { continue };
        held.insert(root.to_path_buf(), Held { seed, _file: file, users: 1 });
        return Some(seed);
    }
    None
}

/// The seed a locked identity file holds, written first when it holds none.
fn seed_of(mut file: File) -> Option<(u64, File)> {
    let mut text = String::new();
    file.read_to_string(&mut text).ok()?;
    if let Ok(seed) = u64::from_str_radix(text.trim(), 16) {
        return Some((seed, file));
    }
    let seed = fresh_seed();
    file.set_len(0).ok()?;
    file.seek(SeekFrom::Start(0)).ok()?;
    writeln!(file, "{seed:016x}").ok()?;
    file.sync_all().ok()?;
    Some((seed, file))
}

/// A runtime's lease holder id, found on first use (the identity file is read on the blocking
/// pool, within the file work's deadline, off the caller's thread).
#[derive(Debug)]
pub struct HolderId {
    group: String,
    data_dir: DataDir,
    id: OnceCell<String>,
    /// Whether its seed came from an identity file this process holds (then it is one of the
    /// file's users until [`HolderId::release`]).
    holds_file: AtomicBool,
}

impl HolderId {
    /// The holder id of a runtime on the OpenCode server `group` with its data directory.
    pub fn new(group: &str, data_dir: &DataDir) -> HolderId {
        HolderId {
            group: group.to_string(),
            data_dir: data_dir.clone(),
            id: OnceCell::new(),
            holds_file: AtomicBool::new(false),
        }
    }

    /// The id (found once).
    pub async fn get(&self) -> &str {
        self.id.get_or_init(|| async { holder_id(&self.group, self.seed().await) }).await
    }

    /// The identity's seed: the data directory's (in memory, named by its root), else this
    /// process's.
    async fn seed(&self) -> u64 {
        if self.data_dir.memory().is_some() {
            // An in-memory directory (the simulator's hosts) keeps its identity by its name: a
            // host started again on it is the same host, and the seed is the same on every run.
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            hasher.write(self.data_dir.root().to_string_lossy().as_bytes());
            return hasher.finish();
        }
        let root = self.data_dir.root().to_path_buf();
        match crate::io::file_io::run(move || seed_in(&root)).await.flatten() {
            Some(seed) => {
                self.holds_file.store(true, Ordering::SeqCst);
                seed
            }
            None => process_seed(),
        }
    }

    /// The runtime stopped: it no longer holds the identity file (the id it has stays its own).
    pub fn release(&self) {
        if self.holds_file.swap(false, Ordering::SeqCst) {
            release_in(self.data_dir.root());
        }
    }
}

impl Drop for HolderId {
    fn drop(&mut self) {
        self.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_root(name: &str) -> PathBuf {
        let root = std::env::temp_dir().join(format!("goal-identity-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        root
    }

    #[test]
    fn a_data_directory_keeps_its_identity_and_one_process_holds_one_slot() {
        let root = temp_root("keeps");
        let seed = seed_in(&root).expect("a slot");
        assert_eq!(seed_in(&root), Some(seed), "the process holds one identity per directory");
        let text = std::fs::read_to_string(root.join("goals/host-identity-0")).unwrap();
        assert_eq!(u64::from_str_radix(text.trim(), 16).unwrap(), seed);
        // Another process finds slot 0 locked: it takes slot 1.
        let other = OpenOptions::new().read(true).write(true).open(root.join("goals/host-identity-0")).unwrap();
        assert!(other.try_lock().is_err(), "the slot stays locked while this process lives");
        drop(other);
        held().lock().remove(&root);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn a_slot_freed_by_its_process_is_taken_up_with_its_seed() {
        let root = temp_root("successor");
        let first = seed_in(&root).expect("a slot");
        // The process that held it is gone (its file closed, its lock released).
        held().lock().remove(&root);
        assert_eq!(seed_in(&root), Some(first), "a successor is the same host");
        held().lock().remove(&root).expect("held");
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn the_file_is_let_go_when_its_last_user_releases_it_and_taken_again_with_its_seed() {
        let root = temp_root("release");
        let seed = seed_in(&root).expect("a slot");
        assert_eq!(seed_in(&root), Some(seed), "a second runtime of the process");
        let probe = || OpenOptions::new().read(true).write(true).open(root.join("goals/host-identity-0")).unwrap();
        release_in(&root);
        assert!(probe().try_lock().is_err(), "one runtime still uses it");
        release_in(&root);
        let free = probe();
        assert!(free.try_lock().is_ok(), "the last user let it go");
        drop(free);
        assert_eq!(seed_in(&root), Some(seed), "a runtime started again is the same host");
        release_in(&root);
        assert!(held().lock().get(&root).is_none());
        std::fs::remove_dir_all(&root).expect("a directory no process holds a file of can be removed");
    }

    #[test]
    fn a_locked_slot_is_passed_over_and_a_damaged_file_gets_a_new_seed() {
        let root = temp_root("locked");
        std::fs::create_dir_all(root.join("goals")).unwrap();
        std::fs::write(root.join("goals/host-identity-0"), "00000000000000aa\n").unwrap();
        std::fs::write(root.join("goals/host-identity-1"), "not hex").unwrap();
        let elsewhere = File::open(root.join("goals/host-identity-0")).unwrap();
        elsewhere.lock().unwrap();
        let seed = seed_in(&root).expect("slot 1");
        assert_ne!(seed, 0xaa, "slot 0 is another live process's");
        let text = std::fs::read_to_string(root.join("goals/host-identity-1")).unwrap();
        assert_eq!(u64::from_str_radix(text.trim(), 16).unwrap(), seed);
        drop(elsewhere);
        held().lock().remove(&root).expect("held");
        let _ = std::fs::remove_dir_all(&root);
    }
}
