//! The contract between the scheduler and the jobs it runs: how a tick ended, and the
//! per-session generation a job checks to know it was not invalidated meanwhile.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

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
}

/// A tick's work as the scheduler runs it: boxed, sendable, ending in a [`TickOutcome`].
pub type TickFuture = Pin<Box<dyn Future<Output = TickOutcome> + Send>>;

/// How a tick ended, for the scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TickOutcome {
    /// Nothing more to do until the next event.
    Done,
    /// Look again after one quiet window (a child is busy).
    Rearm,
    /// Another host's runtime holds the lease: look again once it expires.
    BackOff(Duration),
    /// A read failed: retry with backoff (the scheduler counts attempts).
    Retry,
    /// A continuation was sent.
    Continued,
    /// The goal was settled or paused.
    Settled,
}

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
