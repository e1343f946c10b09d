//! A goal runtime's counters and tracked sessions (`snapshot()`).

use napi_derive::napi;

/// Counters and tracked sessions of a runtime.
#[napi(object)]
pub struct RuntimeSnapshot {
    /// Sessions with an armed timer or a running tick.
    pub sessions: Vec<SessionState>,
    /// Timers armed.
    pub armed_timers: u32,
    /// Ticks running now.
    pub in_flight: u32,
    /// Ticks (or assist runs) started.
    pub ticks: f64,
    /// Continuations sent (goal) or assists written (assist).
    pub continuations: f64,
    /// Goals settled or paused by ticks.
    pub settled: f64,
    /// Follow-ups queued while a tick ran.
    pub follow_ups: f64,
    /// Ticks that panicked (caught; session state reset).
    pub panics: f64,
    /// Goals last seen active in events.
    pub active_goals: u32,
    /// `stop()` was called.
    pub stopped: bool,
}

/// One tracked session.
#[napi(object)]
pub struct SessionState {
    /// Session id.
    pub session_id: String,
    /// Directory.
    pub directory: String,
    /// Milliseconds until the timer fires, when one is armed.
    pub due_in_ms: Option<f64>,
    /// A tick is running.
    pub ticking: bool,
    /// A follow-up wake-up is queued.
    pub follow_up: bool,
    /// Consecutive read-failure retries.
    pub attempt: u32,
}

pub(crate) fn to_js_snapshot(snapshot: goal_core::GoalSnapshot) -> RuntimeSnapshot {
    RuntimeSnapshot {
        sessions: snapshot.sessions.into_iter().map(SessionState::from).collect(),
        armed_timers: snapshot.armed as u32,
        in_flight: snapshot.in_flight as u32,
        ticks: snapshot.ticks as f64,
        continuations: snapshot.continuations as f64,
        settled: snapshot.settled as f64,
        follow_ups: snapshot.follow_ups as f64,
        panics: snapshot.panics as f64,
        active_goals: snapshot.active_goals as u32,
        stopped: snapshot.stopped,
    }
}
