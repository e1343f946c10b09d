//! What keeps the work of one context apart, per session: the metadata write slot (one write
//! at a time, so a read-merge-write never erases another's keys) and the dispatch claim (one
//! continuation in flight). Both live in a [`crate::io::shared::SharedContext`]: runtimes and host
//! actions built from one context exclude each other, and two contexts never block each other.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

type SlotMap = Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>;

/// Buckets of the write epoch (sessions hash into them; a shared bucket only costs a re-read).
const EPOCH_BUCKETS: usize = 256;

/// The per-session metadata write slots of one context. Cloning shares them.
#[derive(Clone)]
pub struct WriteSlots {
    slots: Arc<SlotMap>,
    /// Bumped each time a slot is released. A session read taken while a bucket's epoch stayed
    /// the same has seen every write of this context to that session.
    epochs: Arc<[AtomicU64; EPOCH_BUCKETS]>,
}

impl Default for WriteSlots {
    fn default() -> Self {
        WriteSlots { slots: Arc::default(), epochs: Arc::new(std::array::from_fn(|_| AtomicU64::new(0))) }
    }
}

fn epoch_bucket(session_id: &str) -> usize {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    session_id.hash(&mut hasher);
    (hasher.finish() as usize) % EPOCH_BUCKETS
}

impl WriteSlots {
    /// Waits for the session's write slot (serialises every metadata write of the context).
    pub async fn acquire(&self, session_id: &str) -> WriteSlot {
        let lock = {
            let mut map = self.slots.lock();
            map.entry(session_id.to_string()).or_insert_with(|| Arc::new(tokio::sync::Mutex::new(()))).clone()
        };
        let guard = lock.clone().lock_owned().await;
        WriteSlot { slots: self.clone(), session_id: session_id.to_string(), lock, guard: Some(guard) }
    }

    /// The session's write epoch: unchanged between two calls means no write slot of this
    /// context was released for the session in between (other sessions may share the bucket,
    /// which only makes a caller read again). Take it before a read that a later write will use
    /// as its base, and compare once the slot is held.
    pub fn epoch(&self, session_id: &str) -> u64 {
        self.epochs[epoch_bucket(session_id)].load(Ordering::SeqCst)
    }

    /// Sessions with a slot held or awaited (tests: entries are pruned on release).
    pub fn len(&self) -> usize {
        self.slots.lock().len()
    }

    /// Whether no slot is held or awaited.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Holds the session's write slot; released (and the map entry pruned) on drop.
pub struct WriteSlot {
    slots: WriteSlots,
    session_id: String,
    lock: Arc<tokio::sync::Mutex<()>>,
    guard: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl Drop for WriteSlot {
    fn drop(&mut self) {
        // Before the release: whoever takes the slot next sees the new epoch.
        self.slots.epochs[epoch_bucket(&self.session_id)].fetch_add(1, Ordering::SeqCst);
        self.guard.take();
        let mut map = self.slots.slots.lock();
        // Two strong refs: the map's and ours. Nobody else waits: prune.
        if Arc::strong_count(&self.lock) <= 2 {
            map.remove(&self.session_id);
        }
    }
}

/// The dispatch claims of one context. Every runtime of a process shares one lease holder id
/// per server (so a host that replaces its runtime keeps the lease), which means the lease
/// cannot keep two runtimes of one context apart (a host that dropped its runtime without
/// stopping it, then created a new one); these claims do. Cloning shares them.
#[derive(Clone, Default)]
pub struct DispatchClaims {
    sessions: Arc<Mutex<HashSet<String>>>,
}

impl DispatchClaims {
    /// Claims the session's dispatch; `None` while another tick of the context holds it.
    pub fn claim(&self, session_id: &str) -> Option<DispatchClaim> {
        self.sessions
            .lock()
            .insert(session_id.to_string())
            .then(|| DispatchClaim { sessions: self.sessions.clone(), session_id: session_id.to_string() })
    }
}

/// A claim on dispatching one session's continuation, held from the reservation until the
/// dispatch outcome is known, and released on drop (also when the tick is cancelled or panics).
pub struct DispatchClaim {
    sessions: Arc<Mutex<HashSet<String>>>,
    session_id: String,
}

impl Drop for DispatchClaim {
    fn drop(&mut self) {
        self.sessions.lock().remove(&self.session_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn one_dispatch_claim_per_session() {
        let claims = DispatchClaims::default();
        let first = claims.claim("ses_claim_test").expect("free");
        assert!(claims.claim("ses_claim_test").is_none());
        assert!(claims.claim("ses_other_claim_test").is_some());
        drop(first);
        assert!(claims.claim("ses_claim_test").is_some());
    }

    #[tokio::test]
    async fn a_released_slot_moves_its_sessions_epoch() {
        let slots = WriteSlots::default();
        let before = slots.epoch("ses_epoch");
        let held = slots.acquire("ses_epoch").await;
        assert_eq!(slots.epoch("ses_epoch"), before, "held, not yet released");
        drop(held);
        assert_ne!(slots.epoch("ses_epoch"), before);
        let shared = slots.clone();
        let now = slots.epoch("ses_epoch");
        drop(shared.acquire("ses_epoch").await);
        assert_ne!(slots.epoch("ses_epoch"), now, "clones share the epochs");
    }

    #[tokio::test]
    async fn a_write_slot_serialises_one_session_and_is_pruned_on_release() {
        let slots = WriteSlots::default();
        let held = slots.acquire("ses_a").await;
        let other = tokio::time::timeout(Duration::from_millis(50), slots.acquire("ses_b")).await;
        assert!(other.is_ok(), "another session is not blocked");
        drop(other);
        let same = tokio::time::timeout(Duration::from_millis(50), slots.acquire("ses_a")).await;
        assert!(same.is_err(), "the same session waits for the holder");
        drop(held);
        assert!(slots.is_empty(), "released slots leave no entry behind");
    }
}
