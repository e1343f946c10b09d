//! One backoff per directory for every session list a runtime reads: the owner lists
//! (`owners.rs`), the sweep and the recovery scan after a reconnect (`runtime/sweep.rs`). A list
//! that fails closes the directory's gate for the next wait of the one backoff
//! (`time/backoff.rs`, from [`LIST_RETRY_BASE`]); no list of that directory starts before it
//! opens, whoever asks, so a failing list route sees at most one list per directory per wait
//! (A.8 item 2: after the first three, one every 10 s). One list of a directory is in flight at
//! a time: a reader holds a [`ListPermit`] while its list is read, and a second reader waits
//! (the owner lists) or skips the directory (the sweep, the recovery scan).

use std::collections::HashMap;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use crate::goal::decide::list_rules::LIST_RETRY_BASE;
use crate::time::backoff::retry_delay;

/// Directories whose gate state is kept (beyond it, the open ones are forgotten).
const MAX_DIRECTORIES: usize = 1000;

/// How long a reader waits for a list in flight before it looks again (a list is bounded by
/// the request timeout; this is only the poll of a waiting owner list).
const IN_FLIGHT_POLL: Duration = Duration::from_millis(100);

/// One directory's gate.
#[derive(Debug, Default, Clone, Copy)]
struct Gate {
    /// Lists failed in a row.
    failures: u32,
    /// No list starts before then.
    until: Option<Instant>,
    /// A list is being read.
    in_flight: bool,
}

/// The gates of a runtime's directories. Shared through an `Arc` by every reader.
#[derive(Debug, Default)]
pub struct ListGate {
    gates: Mutex<HashMap<String, Gate>>,
}

/// The right to read one list of a directory. Say how it ended with [`ListPermit::read`] or
/// [`ListPermit::failed`]; dropped without either (the reader was cancelled), the directory is
/// free again with its backoff unchanged.
#[derive(Debug)]
pub struct ListPermit<'a> {
    gate: &'a ListGate,
    directory: String,
    ended: bool,
}

impl ListPermit<'_> {
    /// The list was read: the gate opens.
    pub fn read(mut self) {
        self.ended = true;
        self.gate.gates.lock().remove(&self.directory);
    }

    /// The list failed: the gate closes for the next wait of the backoff; returns it.
    pub fn failed(mut self) -> Duration {
        self.ended = true;
        let mut gates = self.gate.gates.lock();
        let gate = gates.entry(self.directory.clone()).or_default();
        gate.failures = gate.failures.saturating_add(1);
        let wait = retry_delay(LIST_RETRY_BASE, gate.failures);
        gate.until = Some(Instant::now() + wait);
        gate.in_flight = false;
        wait
    }
}

impl Drop for ListPermit<'_> {
    fn drop(&mut self) {
        if !self.ended {
            if let Some(gate) = self.gate.gates.lock().get_mut(&self.directory) {
                gate.in_flight = false;
            }
        }
    }
}

impl ListGate {
    /// The right to list `directory` now: `None` while its backoff runs or another list of it
    /// is being read.
    pub fn try_begin(&self, directory: &str) -> Option<ListPermit<'_>> {
        let mut gates = self.gates.lock();
        if gates.len() >= MAX_DIRECTORIES && !gates.contains_key(directory) {
            let now = Instant::now();
            gates.retain(|_, gate| gate.in_flight || gate.until.is_some_and(|until| until > now));
        }
        let gate = gates.entry(directory.to_string()).or_default();
        if gate.in_flight || gate.until.is_some_and(|until| until > Instant::now()) {
            return None;
        }
        gate.in_flight = true;
        Some(ListPermit { gate: self, directory: directory.to_string(), ended: false })
    }

    /// Waits for the right to list `directory` (its backoff, and a list in flight, end first).
    pub async fn begin(&self, directory: &str) -> ListPermit<'_> {
        loop {
            if let Some(permit) = self.try_begin(directory) {
                return permit;
            }
            let until = self.gates.lock().get(directory).and_then(|gate| gate.until);
            let wait = until
                .map_or(IN_FLIGHT_POLL, |until| until.saturating_duration_since(Instant::now()).max(IN_FLIGHT_POLL));
            tokio::time::sleep(wait).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn failures_close_the_gate_for_the_doubling_wait_one_list_at_a_time_and_a_read_opens_it() {
        let gate = ListGate::default();
        let first = gate.try_begin("/p").expect("open");
        assert!(gate.try_begin("/p").is_none(), "one list of a directory at a time");
        assert!(gate.try_begin("/other").is_some());
        let mut waits = vec![first.failed()];
        for _ in 0..3 {
            tokio::time::sleep(*waits.last().unwrap()).await;
            waits.push(gate.try_begin("/p").expect("the wait ended").failed());
        }
        assert_eq!(waits, [LIST_RETRY_BASE, LIST_RETRY_BASE * 2, LIST_RETRY_BASE * 4, Duration::from_secs(10)]);
        assert!(gate.try_begin("/p").is_none(), "inside the backoff");
        let started = Instant::now();
        gate.begin("/p").await.read();
        assert_eq!(started.elapsed(), Duration::from_secs(10));
        assert!(gate.try_begin("/p").is_some(), "a read opens it");
    }

    #[tokio::test(start_paused = true)]
    async fn a_reader_cancelled_mid_list_frees_the_directory() {
        let gate = ListGate::default();
        drop(gate.try_begin("/p").expect("open"));
        assert!(gate.try_begin("/p").is_some());
    }
}
