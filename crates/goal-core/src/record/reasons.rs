//! Every `statusReason` this package writes, in one place: the short human text OpenChamber's
//! UI shows beside a goal's status. (The machine-readable why is the goal's `cause`, see
//! `cause.rs`.) Adding a stop reason is one constant here, plus the code that writes it.

/// Status reason: the UI's explicit resume signal.
pub const REASON_RESUMED: &str = "resumed";
/// Status reason while a permission or question is pending.
pub const WAITING_FOR_USER: &str = "waiting for user input";
/// Status reason: the user aborted the running turn.
pub const REASON_PAUSED_AFTER_ABORT: &str = "paused after abort";
/// Status reason: the person asked in the chat to stop, and the auditor read it so.
pub const REASON_ASKED_TO_PAUSE: &str = "paused: the person asked to stop";
/// The note of a goal paused at the person's request, before their quoted words.
pub const NOTE_ASKED_TO_PAUSE: &str = "Paused because the person asked in the chat:";
/// The trail's action for a `pause` verdict with no person's message since the last
/// continuation: it is not obeyed, and the goal goes on.
pub const ACTION_PAUSE_UNFOUNDED: &str = "continue (pause verdict without a person's message)";
/// Status reason of a goal the user marked complete.
pub const REASON_MARKED_BY_USER: &str = "marked by user";
/// Status reason: budget spent.
pub const REASON_BUDGET: &str = "token budget reached";
/// Status reason: the cost budget (US dollars) is spent.
pub const REASON_COST_BUDGET: &str = "cost budget reached";
/// Status reason: the time budget is spent.
pub const REASON_TIME_BUDGET: &str = "time budget reached";
/// Status reason: the turn cap was reached.
pub const REASON_TURN_CAP: &str = "auto-continuation limit reached";
/// Status reason: the auditor verified the objective.
pub const REASON_VERIFIED: &str = "verified by audit";
/// Status reason: the auditor said blocked three times without a note.
pub const REASON_BLOCKED_PER_AUDIT: &str = "blocked per audit";
/// Status reason: the auditor failed twice in a row.
pub const REASON_AUDIT_UNAVAILABLE: &str = "progress audit unavailable";
/// Status reason of the breaker.
pub const REASON_NO_PROGRESS: &str = "no progress";
/// Status reason: an unnamed assistant error.
pub const REASON_TURN_FAILED: &str = "assistant turn failed";
/// Status reason: two truncated turns in a row.
pub const REASON_REPEATED_TRUNCATION: &str = "repeated output truncation";
/// Status reason: messages (or session state) could not be read after every retry.
pub const REASON_MESSAGES_UNAVAILABLE: &str = "messages unavailable";
/// Status reason: neither the objective file nor an inline objective could be read.
pub const REASON_OBJECTIVE_UNAVAILABLE: &str = "objective unavailable";
/// Status reason: the continuation could not be delivered.
pub const REASON_DISPATCH_FAILED: &str = "continuation dispatch failed";
/// Status reason while the goal waits for its working hours.
pub const REASON_WAITING_FOR_HOURS: &str = "waiting for working hours";
/// Status reason OpenChamber writes when the agent itself reports the goal complete (read, never
/// written, by this package).
pub const REASON_REPORTED_BY_AGENT: &str = "reported by agent";
/// Every acceptance check passed (the goal settled `complete` on them).
pub const REASON_CHECKS_PASSED: &str = "checks passed";
/// The acceptance checks cannot run (the shell endpoint is missing or refuses).
pub const REASON_CHECKS_UNAVAILABLE: &str = "acceptance checks unavailable";
/// The reviewer approved the completion (the goal settled `complete` on its approval).
pub const REASON_REVIEW_APPROVED: &str = "approved by review";
/// The reviewer gave no readable answer, twice.
pub const REASON_REVIEW_UNAVAILABLE: &str = "review unavailable";

/// Status reason of a goal parked until a provider's rate or usage limit resets.
pub const REASON_WAITING_FOR_PROVIDER: &str = "waiting for provider limit";
/// Status reason: the provider's quota is spent (or its limit did not reset within the parks).
pub const REASON_PROVIDER_QUOTA: &str = "provider quota exhausted";
/// Status reason: the provider refused the credentials.
pub const REASON_PROVIDER_AUTH: &str = "provider authentication failed";
/// Status reason: the conversation no longer fits the model's context.
pub const REASON_CONTEXT_OVERFLOW: &str = "context window exceeded";
/// Status reason: the provider's content filter stopped the reply.
pub const REASON_CONTENT_FILTER: &str = "stopped by the provider's content filter";
/// Status reason: turns were cut by server restarts, twice in a row.
pub const REASON_TURN_INTERRUPTED: &str = "turns interrupted by server restarts";
/// The goal's note while the turn after a cut one runs (a cut turn: no `finish`, no
/// `time.completed`, no error; OpenCode restarted or the stream broke mid-turn), so a person sees
/// why a continuation went out without an audit. The next audit's note replaces it.
pub const NOTE_TURN_CUT: &str = "The last turn was cut: it ended with no finish (OpenCode restarted or its stream broke), so it was continued without an audit.";
/// Status reason of a goal copied from another session (a fork) and adopted paused.
pub const REASON_COPIED: &str = "copied from another session";
/// A guard the user set (checks, criteria, a budget, working hours) cannot be read.
pub const REASON_INVALID_GOAL: &str = "goal field unreadable";
/// A message OpenCode stored but never answered, posted again under its own ids without a turn.
pub const REASON_MESSAGE_UNANSWERED: &str = "message never answered";

/// Every reason above: the ones the runtime writes itself (anything else in `statusReason` may
/// be an auditor's note, which is model output).
pub const ALL: &[&str] = &[
    REASON_RESUMED,
    WAITING_FOR_USER,
    REASON_PAUSED_AFTER_ABORT,
    REASON_ASKED_TO_PAUSE,
    REASON_MARKED_BY_USER,
    REASON_BUDGET,
    REASON_COST_BUDGET,
    REASON_TIME_BUDGET,
    REASON_TURN_CAP,
    REASON_VERIFIED,
    REASON_BLOCKED_PER_AUDIT,
    REASON_AUDIT_UNAVAILABLE,
    REASON_NO_PROGRESS,
    REASON_TURN_FAILED,
    REASON_REPEATED_TRUNCATION,
    REASON_MESSAGES_UNAVAILABLE,
    REASON_OBJECTIVE_UNAVAILABLE,
    REASON_DISPATCH_FAILED,
    REASON_WAITING_FOR_HOURS,
    REASON_REPORTED_BY_AGENT,
    REASON_WAITING_FOR_PROVIDER,
    REASON_PROVIDER_QUOTA,
    REASON_PROVIDER_AUTH,
    REASON_CONTEXT_OVERFLOW,
    REASON_CONTENT_FILTER,
    REASON_TURN_INTERRUPTED,
    REASON_COPIED,
    REASON_CHECKS_PASSED,
    REASON_CHECKS_UNAVAILABLE,
    REASON_INVALID_GOAL,
    REASON_MESSAGE_UNANSWERED,
    REASON_REVIEW_APPROVED,
    REASON_REVIEW_UNAVAILABLE,
];
