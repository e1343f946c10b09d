//! The decision as data: what a tick does next, given what it has seen. `decide` returns one
//! [`Decision`] at a time; the tick's driver (`goal/tick.rs`) answers a [`Need`] by gathering
//! (`goal/gather/`), carries an [`Effect`] out through the one executor (`goal/act/`), and stops
//! at its end, a [`TickOutcome`]. Nothing here performs anything.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::goal::decide::change::Change;
use crate::goal::decide::check_rules::CheckRun;
use crate::goal::decide::review_rules::ReviewerBody;
use crate::record::session::Selection;
use crate::record::{AcceptanceCheck, Goal};
use crate::sched::outcome::TickOutcome;

/// What the tick does next.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Gather this, then decide again.
    Read(Need),
    /// Carry this out, then decide again on its result.
    Act(Effect),
    /// The tick ends.
    End(TickOutcome),
}

/// What the decision needs to know next (read from OpenCode, the data directory or the
/// runtime's memory).
#[derive(Debug, Clone, PartialEq)]
pub enum Need {
    /// The settings file's switches and the session (with the live state beside it for a goal
    /// events showed active: one round trip instead of two).
    First,
    /// What the owner lists tell of the goal's carriers (the live state read beside the list
    /// when it was not read yet).
    Owners,
    /// The effective objective (the objective file's text for a file-backed goal).
    Objective,
    /// Status, children, messages and todos.
    Live,
    /// Whether OpenCode lists an open permission or question of the session or its children.
    OpenRequests,
    /// The transcript once more, to confirm a cut turn.
    FreshTail,
    /// The evidence of the turns since the last audit up to `tail` (the diff is read when a
    /// turn recorded none; the digest and the breaker are computed with it); `reply` is the
    /// judged reply's text (the progress fingerprint reads it).
    Evidence {
        /// The judged reply.
        tail: String,
        /// Its text.
        reply: String,
    },
    /// Before the next check runs: the status, the transcript and the session, at once.
    CheckTranscript,
    /// A reviewer session of this tail that already answered (named by its title).
    FinishedReview {
        /// The reviewer session's title.
        title: String,
    },
    /// Which of the files a reviewer cited exist.
    CitedFiles(Vec<String>),
    /// After the reservation: the goal and the tail read back.
    ReadBack,
    /// Before a retry of the continuation's post: the session, fresh.
    PostSession,
    /// Whether the transcript holds the continuation's id.
    Stored(String),
    /// A post without an id reconciled: the status, the transcript and the session, at once.
    Reconcile,
    /// What the reviewer in this session cost.
    ReviewerCost(String),
    /// The files the session changed since it began (OpenCode's diff), for a wrap-up's handoff.
    ChangedFiles,
}

/// Which goal a write must still find (compare-and-set), as data.
#[derive(Debug, Clone, PartialEq)]
pub enum Guard {
    /// The goal the tick read (revision, active, no other live lease).
    Tick,
    /// The goal the tick read, and nobody reserved a turn since (the reservation's own
    /// compare-and-set: the same turn count and reserved tail).
    Reserve,
    /// The goal the reservation wrote.
    Reserved,
    /// The goal with this id, whatever its status (the write decides again on the fresh goal).
    SameId,
}

/// A guarded write of the goal.
#[derive(Debug, Clone, PartialEq)]
pub struct Write {
    /// What it changes (decided again on the fresh goal where the change says so).
    pub change: Change,
    /// What the write must find.
    pub guard: Guard,
    /// Whether a goal that names no session stays so (a goal whose owner is not known yet).
    pub keep_owner: bool,
    /// Where its result is seen.
    pub slot: Slot,
}

/// A trail line: appended and waited for, or beside the work that follows.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// The record.
    pub record: Map<String, Value>,
    /// Written beside what follows (a continuation waits for nothing it does not need).
    pub detached: bool,
    /// Where its being written is seen.
    pub slot: Slot,
}

crate::wire::wire_enum! {
    /// Where the result of a write or a trail line is seen (the observation it completes), and
    /// what the log calls it.
    pub enum Slot {
        #[doc = "A resumed copy claimed."] Claim = "claim",
        #[doc = "A copy adopted paused."] Adopt = "adopt",
        #[doc = "A waiting cause written."] Waiting = "waiting",
        #[doc = "A stale park ended."] ParkCleared = "end park",
        #[doc = "A park written."] Park = "park",
        #[doc = "The park's trail line."] ParkTrail = "park trail",
        #[doc = "The wait for working hours, or its end, in the goal."] Hours = "hours",
        #[doc = "Its trail line."] HoursTrail = "hours trail",
        #[doc = "The wait for working hours on the clock of the post."] HoursAgain = "hours again",
        #[doc = "Its trail line."] HoursAgainTrail = "hours again trail",
        #[doc = "A cut turn's trail line."] CutTrail = "cut",
        #[doc = "A stranded message's re-post recorded."] Reposted = "repost",
        #[doc = "The audit's trail line."] AuditTrail = "audit",
        #[doc = "The check round's lease."] ChecksHeld = "hold checks",
        #[doc = "The review's lease."] ReviewHeld = "hold review",
        #[doc = "The reservation."] Reserved = "reserve",
        #[doc = "The reserved turn given back."] GiveBack = "give back",
        #[doc = "A terminal write (and the trail line before it), announced once written."] Settled = "settle",
        #[doc = "A pause after an abort the messages show: terminal, not announced."] Paused = "pause",
    }
}

/// What a pause within the tick comes before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PauseBefore {
    /// The read-back after a contested reservation.
    ReadBack,
    /// A retry of the continuation's post.
    Retry,
}

crate::wire::wire_enum! {
    /// What a claim across hosts is for, and what its part names (`acceptance check claimed by …`).
    pub enum ClaimFor {
        #[doc = "An acceptance check's run."] Check = "acceptance check",
        #[doc = "The goal's review."] Review = "goal review",
    }
}

/// Something the one executor carries out; its result is the next observation.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// A guarded write of the goal.
    Write(Write),
    /// A terminal write: its trail line first (when given), then the write.
    Settle {
        /// The write (a [`Change::Settle`] in [`Slot::Settled`], or a [`Change::Pause`] in
        /// [`Slot::Paused`]).
        write: Write,
        /// A trail line written before it.
        trail: Option<Line>,
    },
    /// A settled goal announced: the console line, its carriers forgotten (a copy seen later is
    /// listed again), and the host's notification when the settings file asks for one.
    Announce {
        /// The goal as settled.
        goal: Box<Goal>,
        /// The notification.
        notification: Option<Value>,
    },
    /// A goal write watched for its echo (another writer's change it overwrote is written back):
    /// the reservation of a turn, or the lease of a check round or review.
    Watched(Write),
    /// A trail line.
    Trail(Line),
    /// The small model's verdict on the turn.
    Audit(crate::record::small_model_call::SmallModelQuery),
    /// One round of the claim of a check run or a review across hosts before it runs: the claim
    /// posted under `claim_id`, and its message read back (`check_rules.rs`, `claim_step`).
    Claim {
        /// The claim message's id.
        claim_id: String,
        /// Which run it claims.
        run: ClaimFor,
        /// The session's model and agent (the claim's post names them).
        target: Selection,
    },
    /// Runs one acceptance check through OpenCode's shell, within its time limit.
    RunCheck {
        /// Its place in the goal's list.
        index: usize,
        /// The check.
        check: AcceptanceCheck,
        /// The run's message id (empty: none could be derived).
        message_id: String,
        /// The session's model and agent.
        target: Selection,
    },
    /// A finished check run: its trail line and console line; the run is concluded.
    ConcludeCheck {
        /// The run.
        run: CheckRun,
        /// Its trail line.
        line: Map<String, Value>,
        /// The goal's number of checks.
        total: usize,
    },
    /// Opens the reviewer session, a child of the goal's session.
    OpenReviewer {
        /// Its title.
        title: String,
    },
    /// Asks the reviewer once and waits for its final reply, at most the review timeout.
    AskReviewer {
        /// The reviewer session.
        session: String,
        /// The prompt's body.
        body: ReviewerBody,
    },
    /// The review's trail line and console line, and the `lastReview` value it leads to.
    RecordReview {
        /// Its trail line.
        line: Map<String, Value>,
        /// `approved`, `rejected` or `unavailable`.
        verdict: &'static str,
        /// The `lastReview` value.
        last: Value,
    },
    /// Posts a stranded message again under its own ids (the body is the original post's).
    Repost {
        /// The message.
        message_id: String,
        /// The post's body.
        body: Value,
    },
    /// Posts the reserved continuation (every attempt under the same message id, when there is
    /// one) and says how it went.
    Post {
        /// The `prompt_async` body (with its `messageID` when the turn has one).
        body: Value,
        /// The id every post of this turn uses.
        message_id: Option<String>,
    },
    /// The continuation went out: a reservation's echo that had not come is followed, and the
    /// console says so.
    AnnounceContinuation,
    /// Copies the source session's objective file to this session's path (an adopted copy).
    CopyObjective {
        /// The session the copy came from.
        source: String,
    },
    /// Remembers that this session carries the goal (the owner lists' memory).
    RememberCarrier,
    /// Tells the scheduler that OpenCode lists no open request of these sessions (what events
    /// said was lost).
    InputsSettled(Vec<String>),
    /// Takes this process's dispatch claim of the session (one dispatch per session at a time
    /// among the runtimes of a process).
    ClaimDispatch,
    /// Waits within the tick: before the read-back (another host's post may be on its way), or
    /// before a retry of the post.
    Pause {
        /// How long.
        wait: Duration,
        /// What it comes before.
        before: PauseBefore,
    },
    /// Looks once more for a reservation's echo that had not come (the tick ends without a
    /// post): a user's change it shows the reservation overwrote is written back.
    HearLate,
}
