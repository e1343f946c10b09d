//! Every `statusReason` this package writes, in one place: the short human text OpenChamber's
//! UI shows beside a goal's status. (The machine-readable why is the goal's `cause`, see
//! `cause.rs`.) Adding a stop reason is one line of `status_reasons!` here, plus the code that
//! writes it.

/// Declares each status reason as a constant and lists them all in [`ALL`], from one line each.
macro_rules! status_reasons {
    ($($(#[$doc:meta])* $name:ident = $text:literal,)*) => {
        $($(#[$doc])* pub const $name: &str = $text;)*

        /// Every reason the runtime writes itself (anything else in `statusReason` may be an
        /// auditor's note, which is model output).
        pub const ALL: &[&str] = &[$($name,)*];
    };
}

status_reasons! {
    /// Status reason: the UI's explicit resume signal.
    REASON_RESUMED = "resumed",
    /// Status reason while a permission or question is pending.
    WAITING_FOR_USER = "waiting for user input",
    /// Status reason: the user aborted the running turn.
    REASON_PAUSED_AFTER_ABORT = "paused after abort",
    /// Status reason: the person asked in the chat to stop, and the auditor read it so.
    REASON_ASKED_TO_PAUSE = "paused: the person asked to stop",
    /// Status reason of a goal the user marked complete.
    REASON_MARKED_BY_USER = "marked by user",
    /// Status reason: budget spent.
    REASON_BUDGET = "token budget reached",
    /// Status reason: the cost budget (US dollars) is spent.
    REASON_COST_BUDGET = "cost budget reached",
    /// Status reason: the time budget is spent.
    REASON_TIME_BUDGET = "time budget reached",
    /// Status reason: the turn cap was reached.
    REASON_TURN_CAP = "auto-continuation limit reached",
    /// Status reason: the auditor verified the objective.
    REASON_VERIFIED = "verified by audit",
    /// Status reason: the auditor said blocked three times without a note.
    REASON_BLOCKED_PER_AUDIT = "blocked per audit",
    /// Status reason: the auditor failed twice in a row.
    REASON_AUDIT_UNAVAILABLE = "progress audit unavailable",
    /// Status reason of the breaker.
    REASON_NO_PROGRESS = "no progress",
    /// Status reason: an unnamed assistant error.
    REASON_TURN_FAILED = "assistant turn failed",
    /// Status reason: two truncated turns in a row.
    REASON_REPEATED_TRUNCATION = "repeated output truncation",
    /// Status reason: messages (or session state) could not be read after every retry.
    REASON_MESSAGES_UNAVAILABLE = "messages unavailable",
    /// Status reason: neither the objective file nor an inline objective could be read.
    REASON_OBJECTIVE_UNAVAILABLE = "objective unavailable",
    /// Status reason: the continuation could not be delivered.
    REASON_DISPATCH_FAILED = "continuation dispatch failed",
    /// Status reason while the goal waits for its working hours.
    REASON_WAITING_FOR_HOURS = "waiting for working hours",
    /// Status reason OpenChamber writes when the agent itself reports the goal complete (read, never
    /// written, by this package).
    REASON_REPORTED_BY_AGENT = "reported by agent",
    /// Status reason of a goal parked until a provider's rate or usage limit resets.
    REASON_WAITING_FOR_PROVIDER = "waiting for provider limit",
    /// Status reason: the provider's quota is spent (or its limit did not reset within the parks).
    REASON_PROVIDER_QUOTA = "provider quota exhausted",
    /// Status reason: the provider refused the credentials.
    REASON_PROVIDER_AUTH = "provider authentication failed",
    /// Status reason: the conversation no longer fits the model's context.
    REASON_CONTEXT_OVERFLOW = "context window exceeded",
    /// Status reason: the provider's content filter stopped the reply.
    REASON_CONTENT_FILTER = "stopped by the provider's content filter",
    /// Status reason: turns were cut by server restarts, twice in a row.
    REASON_TURN_INTERRUPTED = "turns interrupted by server restarts",
    /// Status reason of a goal copied from another session (a fork) and adopted paused.
    REASON_COPIED = "copied from another session",
    /// Every acceptance check passed (the goal settled `complete` on them).
    REASON_CHECKS_PASSED = "checks passed",
    /// The acceptance checks cannot run (the shell endpoint is missing or refuses).
    REASON_CHECKS_UNAVAILABLE = "acceptance checks unavailable",
    /// A guard the user set (checks, criteria, a budget, working hours) cannot be read.
    REASON_INVALID_GOAL = "goal field unreadable",
    /// A message OpenCode stored but never answered, posted again under its own ids without a turn.
    REASON_MESSAGE_UNANSWERED = "message never answered",
    /// The reviewer approved the completion (the goal settled `complete` on its approval).
    REASON_REVIEW_APPROVED = "approved by review",
    /// The reviewer gave no readable answer, twice.
    REASON_REVIEW_UNAVAILABLE = "review unavailable",
}

/// The note of a goal paused at the person's request, before their quoted words.
pub const NOTE_ASKED_TO_PAUSE: &str = "Paused because the person asked in the chat:";
/// The trail's action for a `pause` verdict with no person's message since the last
/// continuation: it is not obeyed, and the goal goes on.
pub const ACTION_PAUSE_UNFOUNDED: &str = "continue (pause verdict without a person's message)";
/// The goal's note while the turn after a cut one runs (a cut turn: no `finish`, no
/// `time.completed`, no error; OpenCode restarted or the stream broke mid-turn), so a person sees
/// why a continuation went out without an audit. The next audit's note replaces it.
pub const NOTE_TURN_CUT: &str = "The last turn was cut: it ended with no finish (OpenCode restarted or its stream broke), so it was continued without an audit.";
