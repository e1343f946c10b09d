//! What the scheduler's task is asked: the commands its handle sends (`sched/mod.rs`), how an
//! arm request treats a pending timer, and a sighting of a session's goal.

use std::time::Duration;

use tokio::sync::{oneshot, OwnedSemaphorePermit};

use crate::sched::facts::Seen;
use crate::sched::outcome::TickOutcome;

/// How an arm request treats a timer already pending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArmMode {
    /// Replace it (idle re-arms the quiet window).
    Replace,
    /// Keep whichever fires first (a resume kickoff replaces a pending longer timer).
    Earliest,
    /// The quiet window after an idle: replaces any pending timer, and ends the session's
    /// known-busy state.
    Idle,
    /// Only when no timer is pending and the session is not known to be busy (a fresh-goal
    /// kickoff never replaces an idle timer, and never arms during a turn: the idle that ends
    /// the turn arms the quiet window instead).
    IfNothingPending,
    /// Only when no timer is armed and no tick runs, whatever events said about busy (a
    /// recovery scan after a reconnect: a pending timer, a retry's backoff among them, is the
    /// next look already, and a running tick reads the session itself).
    IfIdleTimer,
}

/// A sighting of a session's goal, and what to arm because of it.
#[derive(Debug, Clone)]
pub struct GoalSighting {
    /// Session id.
    pub session: String,
    /// Its directory.
    pub directory: String,
    /// What was seen.
    pub seen: Seen,
    /// Armed in any case (a kickoff, a resume, a recovered goal).
    pub arm: Option<(Duration, ArmMode)>,
    /// Armed only when the sighting invalidated work in flight (an edit of an active goal:
    /// nothing else would bring a wake-up back).
    pub arm_if_changed: Option<(Duration, ArmMode)>,
}

/// What the rest of the runtime asks of the actor.
pub enum Command {
    Goal(Box<GoalSighting>),
    /// The sweep read the session: its goal, and whether OpenCode shows it working. An idle
    /// session with no timer and no tick is armed after `arm`.
    Swept {
        sighting: Box<GoalSighting>,
        working: bool,
        arm: Duration,
    },
    UserInput {
        session: String,
        directory: String,
        request_id: String,
        pending: bool,
        rearm: Duration,
    },
    /// OpenCode shows no open request of the session: what events said is cleared, nothing armed.
    InputSettled {
        session: String,
    },
    Arm {
        session: String,
        directory: String,
        delay: Duration,
        mode: ArmMode,
    },
    Clear {
        session: String,
    },
    Forget {
        session: String,
    },
    Busy {
        session: String,
        directory: String,
    },
    /// The silence watch asks which remembered-busy sessions are due a status read (see
    /// `sched/silence.rs`), by directory.
    Recheck {
        stream_down: bool,
        reply: oneshot::Sender<Vec<(String, Vec<String>)>>,
    },
    /// What the silence watch's status read showed of a remembered-busy session: an idle one
    /// with nothing pending is armed after `arm`.
    StatusRead {
        session: String,
        working: bool,
        arm: Duration,
    },
    UserActivity {
        session: String,
        at_ms: f64,
    },
    Fire {
        session: String,
        timer: u64,
    },
    /// A tick ended; it hands its slot back with the report, so the actor frees the slot before
    /// it starts the next waiting tick (`sched/tick_queue.rs`).
    Finished {
        session: String,
        outcome: TickOutcome,
        slot: OwnedSemaphorePermit,
    },
    Stop {
        done: oneshot::Sender<()>,
    },
}
