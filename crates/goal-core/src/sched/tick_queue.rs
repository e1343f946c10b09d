//! Fired ticks and the slots they run in. At most `Job::max_concurrent` ticks run at once
//! (`sched/job.rs`); a tick fired beyond that waits here, in firing order, as its start alone (a
//! few hundred bytes) instead of as a spawned task parked on the semaphore (about a kilobyte
//! each, ten megabytes when ten thousand sessions go idle together).
//!
//! A running tick hands its slot back with its report (`Command::Finished`); the scheduler frees
//! it and asks for [`TickQueue::ready`] on every report, so a waiting tick is never left behind a
//! free slot.

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::sched::job::TickStart;

/// Waiting starts and the slots they need.
pub struct TickQueue {
    slots: Arc<Semaphore>,
    waiting: VecDeque<TickStart>,
}

impl TickQueue {
    /// A queue whose ticks run at most `limit` at once (at least one).
    pub fn new(limit: usize) -> Self {
        Self { slots: Arc::new(Semaphore::new(limit.max(1))), waiting: VecDeque::new() }
    }

    /// Queues a fired tick behind the ones already waiting.
    pub fn push(&mut self, start: TickStart) {
        self.waiting.push_back(start);
    }

    /// The next waiting tick that can run now, with its slot (held until the tick ends).
    pub fn ready(&mut self) -> Option<(OwnedSemaphorePermit, TickStart)> {
        if self.waiting.is_empty() {
            return None;
        }
        let slot = self.slots.clone().try_acquire_owned().ok()?;
        self.waiting.pop_front().map(|start| (slot, start))
    }

    /// Ticks waiting for a slot.
    #[cfg(test)]
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Drops every waiting tick (the scheduler stops).
    pub fn clear(&mut self) {
        self.waiting = VecDeque::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::job::Generation;
    use crate::sched::stage_watch::StageWatch;
    use std::sync::atomic::AtomicU64;
    use std::time::Duration;

    fn start(session: &str) -> TickStart {
        TickStart {
            session_id: session.into(),
            directory: "/d".into(),
            attempt: 0,
            generation: Generation::capture(&Arc::new(AtomicU64::new(0))),
            watch: StageWatch::start("waiting for a slot", Duration::ZERO),
        }
    }

    #[test]
    fn runs_at_most_the_limit_in_firing_order_and_frees_a_slot_when_dropped() {
        let mut queue = TickQueue::new(2);
        for session in ["a", "b", "c"] {
            queue.push(start(session));
        }
        let (first, a) = queue.ready().expect("a slot");
        let (_second, b) = queue.ready().expect("a second slot");
        assert_eq!((a.session_id.as_str(), b.session_id.as_str()), ("a", "b"));
        assert!(queue.ready().is_none(), "both slots are taken");
        assert_eq!(queue.waiting(), 1);
        drop(first);
        let (_third, c) = queue.ready().expect("the freed slot");
        assert_eq!(c.session_id, "c");
        assert!(queue.ready().is_none(), "nothing waits");
    }

    #[test]
    fn a_zero_limit_still_runs_one_and_clear_drops_the_waiting() {
        let mut queue = TickQueue::new(0);
        queue.push(start("a"));
        queue.push(start("b"));
        let held = queue.ready().expect("one slot");
        assert!(queue.ready().is_none());
        queue.clear();
        drop(held);
        assert!(queue.ready().is_none(), "cleared");
        assert_eq!(queue.waiting(), 0);
    }
}
