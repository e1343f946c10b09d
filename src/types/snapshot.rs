//! A goal runtime's counters and tracked sessions (`snapshot()`).

use napi_derive::napi;

/// Counters and tracked sessions of a goal runtime (`snapshot()`); the counters count from the
/// runtime's creation. The assist runtime has its own, `AssistRuntimeSnapshot`.
#[napi(object)]
pub struct RuntimeSnapshot {
    /// Sessions with an armed timer or a running tick.
    pub sessions: Vec<SessionState>,
    /// Sessions with a wake-up timer armed now.
    pub armed_timers: u32,
    /// Ticks running now (waiting for a slot included).
    pub in_flight: u32,
    /// Ticks started: one evaluation of one session's goal each.
    pub ticks: f64,
    /// Continuation prompts sent.
    pub continuations: f64,
    /// Goals settled or paused by ticks.
    pub settled: f64,
    /// Follow-ups queued while a tick ran.
    pub follow_ups: f64,
    /// Ticks that panicked (caught; session state reset, looked at again with backoff).
    pub panics: f64,
    /// Ticks the watchdog cancelled: each outlived the sum of its stages' bounds, was logged at
    /// `warn` with the stage it was in, and its session is looked at again with backoff.
    pub ticks_timed_out: f64,
    /// Sessions whose goal the runtime last saw active, in events or scans.
    pub active_goals: u32,
    /// `stop()` was called.
    pub stopped: bool,
}

/// One session a runtime tracks (the goal runtime's and the assist runtime's snapshots alike).
#[napi(object)]
pub struct SessionState {
    /// The OpenCode session.
    pub session_id: String,
    /// Its project directory, sent with its requests as `?directory=` (empty when no event
    /// named one).
    pub directory: String,
    /// Milliseconds until the timer fires, when one is armed.
    pub due_in_ms: Option<f64>,
    /// A run for it is in progress (a goal tick, or an assist generation).
    pub ticking: bool,
    /// One more run is queued for when the current one ends (an idle, resume or kickoff came
    /// in while it ran).
    pub follow_up: bool,
    /// Consecutive runs that could not read the session and were retried (0 once one reads).
    pub attempt: u32,
}

/// A runtime's snapshot object (`$object`) from the core's: the scheduler's part (tracked
/// sessions, timers, runs in flight and started, follow-ups, panics) converted here for every
/// runtime, `$started` naming the runs-started counter, then the runtime's own fields. The objects
/// are flat for JavaScript, so the shared part cannot be one nested field.
macro_rules! snapshot_object {
    ($object:ident from $scheduler:expr, $started:ident; $($field:ident: $value:expr),* $(,)?) => {{
        let scheduler: goal_core::SchedulerSnapshot = $scheduler;
        $object {
            sessions: scheduler.sessions.into_iter().map($crate::types::snapshot::SessionState::from).collect(),
            armed_timers: scheduler.armed as u32,
            in_flight: scheduler.in_flight as u32,
            $started: scheduler.ticks as f64,
            follow_ups: scheduler.follow_ups as f64,
            panics: scheduler.panics as f64,
            ticks_timed_out: scheduler.ticks_timed_out as f64,
            $($field: $value,)*
        }
    }};
}
pub(crate) use snapshot_object;

impl From<goal_core::GoalSnapshot> for RuntimeSnapshot {
    fn from(snapshot: goal_core::GoalSnapshot) -> Self {
        snapshot_object!(RuntimeSnapshot from snapshot.scheduler, ticks;
            continuations: snapshot.continuations as f64,
            settled: snapshot.settled as f64,
            active_goals: snapshot.active_goals as u32,
            stopped: snapshot.stopped,
        )
    }
}
