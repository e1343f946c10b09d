//! The contract between the scheduler and the jobs it runs: what a tick is handed, and the
//! per-session generation a job checks to know it was not invalidated meanwhile (how a tick
//! ends: `outcome.rs`).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::sched::outcome::TickOutcome;
use crate::sched::stage_watch::StageWatch;

/// What a job is handed when a session's timer fires.
#[derive(Debug, Clone)]
pub struct TickStart {
    /// The OpenCode session.
    pub session_id: String,
    /// Its project directory (`?directory=` on its requests).
    pub directory: String,
    /// Consecutive read failures before this tick (0 on a normal wake-up).
    pub attempt: u32,
    /// Captured as the tick started: invalidated by any user action since.
    pub generation: Generation,
    /// The stage the tick is in and the time it has left: the tick enters each stage with its
    /// bound, and the scheduler's watchdog cancels a tick past them (`sched/watchdog.rs`).
    pub watch: StageWatch,
}

/// A tick's work as the scheduler runs it: boxed, sendable, ending in a [`TickOutcome`].
pub type TickFuture = Pin<Box<dyn Future<Output = TickOutcome> + Send>>;

/// A per-session counter bumped by every user action that invalidates in-flight work.
#[derive(Debug, Clone)]
pub struct Generation {
    counter: Arc<AtomicU64>,
    seen: u64,
}

impl Generation {
    /// Captures the current value.
    pub fn capture(counter: &Arc<AtomicU64>) -> Self {
        Self { counter: counter.clone(), seen: counter.load(Ordering::SeqCst) }
    }

    /// No abort/pause/clear/edit/new user message since the capture.
    pub fn is_current(&self) -> bool {
        self.counter.load(Ordering::SeqCst) == self.seen
    }
}

/// Most ticks of one runtime that run at once. A burst of wake-ups (thousands of sessions going
/// idle together, a reconnect scan) would otherwise start every tick at once: one connection
/// per read per session, OpenCode answering past the request timeout, and ticks giving up on
/// reads that would have succeeded. Beyond this many, fired ticks wait their turn (FIFO). A
/// waiting tick counts as in flight (follow-ups and invalidation work as for a running one).
pub const MAX_CONCURRENT_TICKS: usize = 32;

/// What a scheduler runs when a session's timer fires.
pub trait Job: Send + Sync + 'static {
    /// Runs one tick for a session.
    fn run(&self, start: TickStart) -> TickFuture;
    /// The quiet window used for re-arms and backoff.
    fn quiet(&self) -> Duration;
    /// Retries after the first run (the run after the last retry settles, or else the session
    /// waits a long pause for a fresh round).
    fn max_attempts(&self) -> u32;
    /// Ticks allowed to run at once (see [`MAX_CONCURRENT_TICKS`]).
    fn max_concurrent(&self) -> usize {
        MAX_CONCURRENT_TICKS
    }
    /// The stage a tick starts in and how long it may take; later stages add their own bounds
    /// (`sched/watchdog.rs`).
    fn first_stage(&self) -> (&'static str, Duration) {
        ("tick", Duration::from_secs(60))
    }
}
