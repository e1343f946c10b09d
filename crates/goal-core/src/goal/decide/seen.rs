//! What a tick has seen so far: the reads the gatherer answered and the results of the effects
//! the executor carried out, each `None` until it is known; a write's, a watched write's and a
//! trail line's results are kept by their [`Slot`]. Everything enters through one exhaustive
//! `Seen::absorb` of an `Observation` (`observation.rs`). The decision is a function of this, the settings and
//! the clock; nothing here performs anything.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::error::HttpError;
use crate::evidence::digest::Digest;
use crate::evidence::no_progress::ProgressState;
use crate::goal::decide::check_rules::{CheckRun, ClaimRound};
use crate::goal::decide::decision::Slot;
use crate::goal::decide::dispatch_rules::DispatchStep;
use crate::goal::decide::lineage::OwnerView;
use crate::goal::decide::review_rules::{ReviewAnswer, ReviewerTurn};
use crate::goal::decide::wait_rules::Route;
use crate::record::session::{Message, SessionView};
use crate::record::small_model_call::SmallModelReply;
use crate::record::Goal;

/// What the tick has seen.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    /// The session the tick drives.
    pub session_id: String,
    /// Its project directory.
    pub directory: String,
    /// This runtime's lease holder id.
    pub holder: String,
    /// Consecutive read failures before this tick (0 on a normal wake-up).
    pub attempt: u32,
    /// No user action since the tick began (read again before every decision).
    pub current: bool,
    /// When the first reads answered (the owner and lease steps decide on this time).
    pub first_at: f64,
    /// When the live state answered (the provider stage and the plan decide on this time).
    pub live_at: f64,
    /// The settings switches and the session, as first read.
    pub first: Option<First>,
    /// Ownership: what the lists told, and what was done about it.
    pub owner: OwnerSeen,
    /// The effective objective (`Some(None)`: none could be read).
    pub objective: Option<Option<String>>,
    /// The live state (`Err`: the routes that failed).
    pub live: Option<Result<Live, Vec<(Route, HttpError)>>>,
    /// What became of a goal that waits on the user or on OpenCode.
    pub waiting: WaitingSeen,
    /// The transcript read again to confirm a cut turn (`Err`: unreadable).
    pub fresh_tail: Option<Result<Vec<Message>, HttpError>>,
    /// The time stage, the strand, and a cut turn's trace.
    pub plan: PlanSeen,
    /// The audit.
    pub audit: AuditSeen,
    /// The acceptance checks.
    pub checks: ChecksSeen,
    /// The review.
    pub review: ReviewSeen,
    /// The files the session changed, for a wrap-up's handoff (`Some(None)`: unreadable).
    pub changed_files: Option<Option<Vec<String>>>,
    /// The reservation and the post.
    pub deliver: DeliverSeen,
    /// The terminal write was announced (console, owner memory, notification).
    pub announced: bool,
    /// Each guarded write's result, by its slot.
    pub(super) written: HashMap<Slot, Written>,
    /// Each watched write's result, by its slot.
    pub(super) held: HashMap<Slot, Held>,
    /// The trail lines written, by their slots.
    pub(super) trailed: HashSet<Slot>,
}

/// The first reads.
#[derive(Debug, Clone)]
pub struct First {
    /// Goals are switched on in the settings file.
    pub enabled: bool,
    /// The settings file asks for a notification when a goal settles.
    pub notify: bool,
    /// The session (with its goal), or why it could not be read.
    pub session: Result<SessionView, HttpError>,
    /// The session's goal, parsed once (whatever its status).
    pub goal: Option<Goal>,
}

/// How a goal write ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Written {
    /// Written: the goal as stored now.
    Goal(Box<Goal>),
    /// The goal changed meanwhile (or the change declined): nothing written.
    Stale,
    /// The write failed.
    Failed,
}

/// What the owner lists told of the goal's carriers.
#[derive(Debug, Clone, PartialEq)]
pub enum OwnerAnswer {
    /// What the lists read tell (`listed`: a list holding every carrier was read).
    Listed(OwnerView),
    /// The server cannot list sessions (404): the session itself decides.
    CannotList,
    /// The directory's lists fail; the goal waits for the next one (`detail`: the request and
    /// its answer).
    Failing {
        /// `GET /session → 503`.
        detail: String,
    },
}

/// Ownership.
#[derive(Debug, Clone, Default)]
pub struct OwnerSeen {
    /// What the lists told.
    pub answer: Option<OwnerAnswer>,
    /// That this session carries the goal was remembered.
    pub remembered: bool,
    /// The source's objective file was copied (an adopted copy).
    pub objective_copied: bool,
}

/// The live state of the session.
#[derive(Debug, Clone, Default)]
pub struct Live {
    /// `GET /session/status`.
    pub status: Value,
    /// Its direct children.
    pub children: Vec<SessionView>,
    /// The message window, parsed.
    pub messages: Vec<Message>,
    /// The same messages as OpenCode sent them.
    pub raw: Vec<Value>,
    /// The todo list, when readable.
    pub todos: Option<Value>,
    /// Events showed the session, or one of its children, waiting on the user.
    pub waiting_events: bool,
}

/// A goal that waits on the user or on a failing request.
#[derive(Debug, Clone, Default)]
pub struct WaitingSeen {
    /// Whether OpenCode lists an open permission or question of the session or its children
    /// (`None`: not asked; a list that cannot be read keeps what the events said).
    pub requests_open: Option<bool>,
    /// The scheduler was told no request is open after all.
    pub inputs_settled: bool,
}

/// The time stage, the strand, and the cut turn's trace.
#[derive(Debug, Clone, Default)]
pub struct PlanSeen {
    /// The dispatch claim of this process (the strand's or the continuation's).
    pub dispatch_claim: Option<bool>,
    /// The stranded message was posted again.
    pub repost_sent: bool,
}

/// The audit.
#[derive(Debug, Clone, Default)]
pub struct AuditSeen {
    /// The evidence of the turns since the last audit.
    pub evidence: Option<Evidence>,
    /// The small model's answer, and when it came (`Err`: the failure, as the cause's detail).
    pub answer: Option<(Result<SmallModelReply, String>, f64)>,
}

/// The evidence around the audit.
#[derive(Debug, Clone)]
pub struct Evidence {
    /// The digest of the turns since the previous audit.
    pub digest: Digest,
    /// The no-progress breaker after this turn.
    pub state: ProgressState,
    /// What a person typed since the last continuation, oldest first.
    pub person: Vec<crate::evidence::person_words::PersonMessage>,
}

/// The acceptance checks.
#[derive(Debug, Clone, Default)]
pub struct ChecksSeen {
    /// The checks concluded (their trail lines written), in order.
    pub runs: Vec<CheckRun>,
    /// The check under way (index `runs.len()`).
    pub current: CheckSeen,
}

/// A watched write's result: written (and what its echo showed), stale or failed.
#[derive(Debug, Clone, PartialEq)]
pub enum Held {
    /// Written; the echo showed no other writer's change (or did not come in time).
    Written {
        /// The goal as written.
        goal: Box<Goal>,
        /// The echo showed another host's reservation of the same turn, which landed first.
        contested: bool,
        /// The echo had not come by its bound.
        late: bool,
    },
    /// The echo showed a user's change the write overwrote, written back: nothing goes on.
    Repaired,
    /// The goal changed meanwhile: nothing written.
    Stale,
    /// The write failed.
    Failed,
}

/// One check's progress.
#[derive(Debug, Clone, Default)]
pub struct CheckSeen {
    /// The status, transcript and session just before it (`Err`: one could not be read).
    pub transcript: Option<Result<Transcript, ()>>,
    /// Its claim across hosts, round by round.
    pub claims: Vec<ClaimRound>,
    /// Its run.
    pub run: Option<Result<CheckRun, HttpError>>,
}

/// The session just before a check or a review runs.
#[derive(Debug, Clone)]
pub struct Transcript {
    /// The session shows busy.
    pub busy: bool,
    /// The transcript, raw.
    pub raw: Vec<Value>,
    /// The newest message's id.
    pub newest: String,
    /// The session's goal, as read.
    pub goal: Option<Goal>,
}

/// The review.
#[derive(Debug, Clone, Default)]
pub struct ReviewSeen {
    /// A reviewer of this tail that already answered: its session, answer and cost.
    pub finished: Option<Option<(String, ReviewAnswer, f64)>>,
    /// Its claim across hosts, round by round.
    pub claims: Vec<ClaimRound>,
    /// The reviewer session opened (`Err`: why it could not be).
    pub opened: Option<Result<String, String>>,
    /// The reviewer's turns so far.
    pub turns: Vec<ReviewerTurn>,
    /// What the reviewer cost, read after its turns.
    pub cost: Option<f64>,
    /// Which cited files exist, and when they were looked up (the judgement's time).
    pub files: Option<(HashSet<String>, f64)>,
    /// Its trail line (and the `lastReview` it wrote).
    pub recorded: Option<Value>,
}

/// The reservation and the post.
#[derive(Debug, Clone, Default)]
pub struct DeliverSeen {
    /// Another host's post had a moment to show (a contested reservation).
    pub waited: bool,
    /// The goal and the tail read back after the reservation.
    pub read_back: Option<ReadBack>,
    /// A late echo looked for once more before ending without a post (`true`: it showed a
    /// user's change, written back).
    pub repaired_late: Option<bool>,
    /// The continuation's post, step by step (`dispatch_rules.rs`).
    pub dispatch: Vec<DispatchStep>,
    /// Its going out was announced.
    pub announced: bool,
}

/// The read-back after a reservation.
#[derive(Debug, Clone)]
pub struct ReadBack {
    /// The session (`Err`: unreadable).
    pub session: Result<SessionView, HttpError>,
    /// The newest message's id (`Err`: the transcript unreadable).
    pub newest: Result<String, HttpError>,
}

impl Seen {
    /// A tick of `session_id` in `directory`, after `attempt` read failures.
    pub fn new(session_id: &str, directory: &str, holder: &str, attempt: u32) -> Seen {
        Seen {
            session_id: session_id.to_string(),
            directory: directory.to_string(),
            holder: holder.to_string(),
            attempt,
            current: true,
            ..Seen::default()
        }
    }

    /// The goal the tick drives: the session's active goal as first read, or as a claim wrote it.
    pub fn goal(&self) -> Option<&Goal> {
        if let Some(Written::Goal(goal)) = self.written(Slot::Claim) {
            return Some(goal);
        }
        self.first.as_ref()?.goal.as_ref()
    }

    /// The session as first read.
    pub fn session(&self) -> Option<&SessionView> {
        self.first.as_ref()?.session.as_ref().ok()
    }

    /// The live state, when it was read.
    pub fn live(&self) -> Option<&Live> {
        self.live.as_ref()?.as_ref().ok()
    }

    /// A guarded write's result, when the write in `slot` was made.
    pub fn written(&self, slot: Slot) -> Option<&Written> {
        self.written.get(&slot)
    }

    /// A watched write's result, when the write in `slot` was made.
    pub fn held(&self, slot: Slot) -> Option<&Held> {
        self.held.get(&slot)
    }

    /// Whether the trail line of `slot` was written.
    pub fn trailed(&self, slot: Slot) -> bool {
        self.trailed.contains(&slot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::goal::decide::observation::Observation;

    #[test]
    fn a_result_is_seen_in_its_own_slot_and_nowhere_else() {
        let mut seen = Seen::new("ses_1", "/p", "me", 0);
        seen.absorb(Observation::Wrote(Slot::Hours, Written::Stale));
        seen.absorb(Observation::Trailed(Slot::HoursTrail));
        seen.absorb(Observation::Held(Slot::ChecksHeld, Held::Failed));
        assert_eq!(seen.written(Slot::Hours), Some(&Written::Stale));
        assert!(seen.trailed(Slot::HoursTrail));
        assert_eq!(seen.held(Slot::ChecksHeld), Some(&Held::Failed));
        // A write that is not the terminal one is no terminal write (the tick would end on it).
        assert_eq!(seen.written(Slot::Settled), None);
        assert_eq!(seen.written(Slot::HoursAgain), None);
        assert!(!seen.trailed(Slot::HoursAgainTrail));
        assert_eq!(seen.held(Slot::Reserved), None);
    }
}
