//! What a scheduler publishes of itself: counters, and a per-session view of its timers and
//! ticks that the host's `snapshot()`, `explain` and the sweep read without asking the actor.
//! Only the actor (`sched/actor.rs`) writes it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

/// Counters and gauges published for `snapshot()`.
#[derive(Debug, Default)]
pub struct Stats {
    /// Sessions with state.
    pub tracked: AtomicUsize,
    /// Timers armed.
    pub armed: AtomicUsize,
    /// Ticks running.
    pub in_flight: AtomicUsize,
    /// Ticks started.
    pub ticks: AtomicU64,
    /// Continuations sent.
    pub continuations: AtomicU64,
    /// Goals settled or paused by a tick.
    pub settled: AtomicU64,
    /// Follow-ups queued while a tick ran.
    pub follow_ups: AtomicU64,
    /// Ticks that panicked (caught; state reset).
    pub panics: AtomicU64,
    /// Ticks cancelled by the watchdog (past their stages' bounds).
    pub ticks_timed_out: AtomicU64,
}

/// A per-session view for `snapshot()`.
#[derive(Debug, Clone)]
pub struct SessionSnapshot {
    /// The OpenCode session this entry tracks.
    pub session_id: String,
    /// The project directory its requests are routed to (`?directory=`).
    pub directory: String,
    /// Milliseconds until the timer fires, when armed.
    pub due_in_ms: Option<u64>,
    /// A tick is running.
    pub ticking: bool,
    /// A follow-up is queued.
    pub follow_up: bool,
    /// Consecutive read-failure retries.
    pub attempt: u32,
}

/// What a scheduler reports of itself in its runtime's `snapshot()`; the counters count from
/// its start.
#[derive(Debug, Clone)]
pub struct SchedulerSnapshot {
    /// Sessions with an armed timer or a running tick.
    pub sessions: Vec<SessionSnapshot>,
    /// Timers armed.
    pub armed: usize,
    /// Ticks running (waiting for a slot included).
    pub in_flight: usize,
    /// Ticks started.
    pub ticks: u64,
    /// Follow-ups queued while a tick ran.
    pub follow_ups: u64,
    /// Ticks that panicked (caught; session state reset).
    pub panics: u64,
    /// Ticks the watchdog cancelled (each logged at `warn` with its stage).
    pub ticks_timed_out: u64,
}

/// The published per-session view and counters. Cloning shares them.
#[derive(Clone, Default)]
pub struct Published {
    /// The counters.
    pub stats: Arc<Stats>,
    sessions: Arc<RwLock<HashMap<String, SessionSnapshot>>>,
}

impl Published {
    /// Replaces (`Some`) or removes (`None`) a session's view, keeping the gauges in step: O(1)
    /// however many sessions are tracked.
    pub fn set(&self, session: &str, view: Option<SessionSnapshot>) {
        let flags = |s: &SessionSnapshot| (s.due_in_ms.is_some(), s.ticking);
        let after = view.as_ref().map(flags);
        let mut sessions = self.sessions.write();
        let before = match view {
            Some(view) => sessions.insert(session.to_string(), view),
            None => sessions.remove(session),
        }
        .as_ref()
        .map(flags);
        drop(sessions);
        let adjust = |gauge: &AtomicUsize, was: bool, is: bool| match (was, is) {
            (false, true) => {
                gauge.fetch_add(1, Ordering::Relaxed);
            }
            (true, false) => {
                gauge.fetch_sub(1, Ordering::Relaxed);
            }
            _ => {}
        };
        let stats = &self.stats;
        adjust(&stats.tracked, before.is_some(), after.is_some());
        adjust(&stats.armed, before.is_some_and(|b| b.0), after.is_some_and(|a| a.0));
        adjust(&stats.in_flight, before.is_some_and(|b| b.1), after.is_some_and(|a| a.1));
    }

    /// Forgets every session (the scheduler stopped).
    pub fn clear(&self) {
        self.sessions.write().clear();
        for gauge in [&self.stats.tracked, &self.stats.armed, &self.stats.in_flight] {
            gauge.store(0, Ordering::Relaxed);
        }
    }

    /// One session's view.
    pub fn session(&self, session: &str) -> Option<SessionSnapshot> {
        self.sessions.read().get(session).cloned()
    }

    /// The tracked sessions and the counters.
    pub fn snapshot(&self) -> SchedulerSnapshot {
        let stats = &self.stats;
        SchedulerSnapshot {
            sessions: self.sessions.read().values().cloned().collect(),
            armed: stats.armed.load(Ordering::Relaxed),
            in_flight: stats.in_flight.load(Ordering::Relaxed),
            ticks: stats.ticks.load(Ordering::Relaxed),
            follow_ups: stats.follow_ups.load(Ordering::Relaxed),
            panics: stats.panics.load(Ordering::Relaxed),
            ticks_timed_out: stats.ticks_timed_out.load(Ordering::Relaxed),
        }
    }
}
