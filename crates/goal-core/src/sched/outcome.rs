//! How a tick ends: the decision's last word (`goal/decide/`) and what the scheduler does next,
//! one type for both. Pure: the decision imports it without importing the scheduler.

use std::time::Duration;

/// How a tick ended, for the scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TickOutcome {
    /// Nothing more to do until an event, the watch or the sweep.
    Done,
    /// OpenCode shows the session busy: its idle brings the next look, and the sweep re-reads
    /// the status in case that idle is lost.
    Busy,
    /// Look again after one quiet window.
    Rearm,
    /// Look again after this wait (a lease, a park, a window, the quiet window).
    BackOff(Duration),
    /// A read failed: retry with the scheduler's backoff (it counts attempts).
    Retry,
    /// A request after the tick's reads failed (a write, a claim, a post): retry (counted as an
    /// attempt) after this wait, which continues the post's own doubling, so every try of it
    /// backs off as one request.
    RetryIn(Duration),
    /// A continuation was sent.
    Continued,
    /// The goal was settled or paused.
    Settled,
}
