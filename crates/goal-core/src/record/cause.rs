//! Why a goal stopped or waits, in one place: the typed cause
//! `goal.cause = {code, since, detail?, until?, fix?}` with each code's fix, and every
//! `statusReason` this package writes ([`reasons`]).
//!
//! `statusReason` stays the short human text OpenChamber's UI shows; `cause` is the machine
//! reading of the same moment, from a closed list of codes, so a host (or `explain`) can act on
//! it without parsing prose. A goal that is simply running carries no cause. A new reason to
//! stop is one line of `cause_codes!` (its code and fix) and, when the UI should read words of
//! its own, one line of `status_reasons!`. Pure: no I/O.

use serde_json::{Map, Value};

/// Maximum characters of a cause's `detail` (a provider name, an HTTP status, a session id).
pub const CAUSE_DETAIL_CHAR_LIMIT: usize = 200;
/// Maximum characters of a cause's `fix` sentence.
pub const CAUSE_FIX_CHAR_LIMIT: usize = 300;

/// Every reason the runtime stops, pauses or parks a goal, or makes it wait: its wire name and
/// its fix row, one line each. The list is closed; a new reason is one line here. The binding's
/// TypeScript union of `cause.code` is generated from these lines (the addon's `build.rs`).
macro_rules! cause_codes {
    ($($(#[$doc:meta])* $variant:ident = $wire:literal => $fix:expr,)*) => {
        /// Every reason the runtime stops, pauses or parks a goal, or makes it wait (the closed
        /// list of `goal.cause.code`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum CauseCode {
            $($(#[$doc])* $variant,)*
        }

        impl CauseCode {
            /// Every code, in documentation order.
            pub const ALL: &'static [CauseCode] = &[$(Self::$variant,)*];

            /// The wire name stored in `cause.code`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $wire,)*
                }
            }

            /// What a user can do about this code, and what `doctor --fix` may apply.
            pub fn fix_row(self) -> FixRow {
                match self {
                    $(Self::$variant => $fix,)*
                }
            }
        }
    };
}

// In a fix sentence `{id}` is the session id and `{detail}` the cause's detail (or the row's
// fallback words when there is none); `goal/decide/causes.rs` fills them in.
cause_codes! {
    /// The auditor verified the objective.
    Verified = "verified" => done(),
    /// Every acceptance check passed.
    ChecksPassed = "checksPassed" => done(),
    /// The user marked the goal complete.
    UserComplete = "userComplete" => done(),
    /// The auditor said the work cannot go on without the user.
    AuditorBlocked = "auditorBlocked" => resume(
        "Read the auditor's note, answer it in the session or sharpen the objective, then resume: `session-goal resume {id}`.",
        "",
    ),
    /// Turns went by with no progress (the no-progress breaker, repeated truncation).
    NoProgress = "noProgress" => resume(
        "Give the agent a hint or narrow the objective, then resume: `session-goal resume {id}`.",
        "",
    ),
    /// The progress audit could not be run.
    AuditUnavailable = "auditUnavailable" => resume(
        "Connect the auditor's provider ({detail}) or set small_model, then resume: `session-goal resume {id}`.",
        "no status",
    ),
    /// A continuation could not be posted.
    DispatchFailed = "dispatchFailed" => resume(
        "Check that OpenCode is reachable and the session's model is available ({detail}), then resume: `session-goal resume {id}`.",
        "no status",
    ),
    /// The session's messages could not be read.
    MessagesUnavailable = "messagesUnavailable" => resume(
        "Check that OpenCode is reachable and the goal's objective is readable ({detail}), then resume: `session-goal resume {id}`.",
        "messages",
    ),
    /// The token budget is spent.
    TokenBudget = "tokenBudget" => resume_with(
        FixAction::ResumeWithTokenBudget,
        "Resume with a larger token budget: `session-goal resume {id} --goal-token-budget N`.",
    ),
    /// The active-time budget is spent.
    TimeBudget = "timeBudget" => resume_with(
        FixAction::ResumeWithTimeBudget,
        "Resume with a larger time budget: `session-goal resume {id} --goal-time-budget 2h`.",
    ),
    /// The cost budget (US dollars) is spent.
    CostBudget = "costBudget" => resume_with(
        FixAction::ResumeWithCostBudget,
        "Resume with a larger cost budget in US dollars: `session-goal resume {id} --goal-cost-budget 5`.",
    ),
    /// The automatic turn cap is reached.
    TurnCap = "turnCap" => resume(
        "Check the session's progress, then resume for another round of automatic turns: `session-goal resume {id}`.",
        "",
    ),
    /// The user paused the goal.
    UserPaused = "userPaused" => resume("Resume when ready: `session-goal resume {id}`.", ""),
    /// The user aborted the running turn, which pauses the goal.
    UserAborted = "userAborted" => resume("Resume when ready: `session-goal resume {id}`.", ""),
    /// The person asked in the chat to stop or pause, and the auditor read it so (`detail`
    /// quotes them).
    UserAskedToPause = "userAskedToPause" => resume(
        "Paused as you asked in the chat; resume when the goal should go on: `session-goal resume {id}`.",
        "",
    ),
    /// The agent waits on the user (a permission or a question).
    WaitingForUser = "waitingForUser" => advise("Answer the pending permission or question in the session.", ""),
    /// Outside the goal's working hours.
    WaitingForHours = "waitingForHours" => advise("Nothing to do: the goal goes on when its working hours begin.", ""),
    /// Parked until a provider's rate or usage limit resets.
    WaitingForProviderLimit = "waitingForProviderLimit" => advise(
        "Nothing to do: the goal goes on when the provider's limit resets ({detail}).",
        "provider",
    ),
    /// Another host holds the goal's lease.
    WaitingForLease = "waitingForLease" => advise(
        "Nothing to do while host {detail} runs the goal; its lease ends by itself if that host is gone.",
        "(unknown)",
    ),
    /// A request the loop needs keeps failing (OpenCode answers an error, garbage or nothing);
    /// the goal goes on by itself once it answers. `detail` names the request and its answer.
    WaitingForOpenCode = "waitingForOpenCode" => advise(
        "Check why OpenCode fails {detail} (its log, a proxy in front of it, its version); the goal goes on by itself once it answers.",
        "a request",
    ),
    /// The provider refused the credentials.
    ProviderAuth = "providerAuth" => resume(
        "Connect provider {detail} again (check its API key), then resume: `session-goal resume {id}`.",
        "of the session",
    ),
    /// The provider's quota is spent and will not reset soon.
    ProviderQuota = "providerQuota" => resume(
        "Raise the quota of provider {detail} or switch the session's model, then resume: `session-goal resume {id}`.",
        "of the session",
    ),
    /// The conversation no longer fits the model's context.
    ContextOverflow = "contextOverflow" => resume(
        "Compact the session (or continue in a new one), then resume: `session-goal resume {id}`.",
        "",
    ),
    /// The provider's content filter stopped the reply.
    ContentFilter = "contentFilter" => resume(
        "Rephrase the objective or the last request, then resume: `session-goal resume {id}`.",
        "",
    ),
    /// Turns were cut by a server restart, repeatedly.
    TurnInterrupted = "turnInterrupted" => resume(
        "Check why the OpenCode server restarted, then resume: `session-goal resume {id}`.",
        "",
    ),
    /// A turn ended with an error the provider table does not name. A bare resume meets the same
    /// failed tail again (resume does not bypass assistant errors), so the fix names the message
    /// that moves past it, and `doctor --fix` applies nothing.
    TurnFailed = "turnFailed" => advise(
        "Read the failed turn's error in the session, fix its cause (or switch the session's model) and send the agent a message, then resume: `session-goal resume {id}`.",
        "",
    ),
    /// The goal was copied from another session (a fork) and waits for the user.
    Inherited = "inherited" => resume(
        "This goal was copied from session {detail}: resume it to run it here, or clear it: `session-goal resume {id}`.",
        "another session",
    ),
    /// A guard the user set (checks, criteria, a cost or time budget, working hours) is stored
    /// in a shape that cannot be read: the goal stops rather than run past it. The fix is the
    /// field's own (`goal/decide/guard_rules.rs`); this sentence is for a detail that names no
    /// guard field, and only the user can say what was meant.
    InvalidGoal = "invalidGoal" => advise(
        "Correct the goal's unreadable field ({detail}) with `editGoal`; the edit resumes the goal.",
        "",
    ),
    /// The reviewer (a second agent that reads the repository) approved the completion.
    ReviewApproved = "reviewApproved" => done(),
    /// The reviewer gave no readable answer, twice.
    ReviewUnavailable = "reviewUnavailable" => resume(
        "The reviewer gave no readable answer ({detail}): check its model and agent, or turn review off (editGoal with review: false), then resume: `session-goal resume {id}`.",
        "no answer",
    ),
}

/// Declares [`FixAction`] and its wire names from one line each (the binding's TypeScript union
/// of `fixAction` is generated from these lines).
macro_rules! fix_actions {
    ($($(#[$doc:meta])* $variant:ident = $wire:literal,)*) => {
        /// What `doctor --fix` may do for a cause: nothing, or exactly the action its fix names.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum FixAction {
            $($(#[$doc])* $variant,)*
        }

        impl FixAction {
            /// The wire name (`explain` and `doctor --json`).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $wire,)*
                }
            }
        }
    };
}

fix_actions! {
    /// Nothing to apply: the goal is done, or waits for something that ends by itself, or the
    /// fix needs a choice only the user can make.
    None = "none",
    /// Resume the goal (a fresh turn allowance).
    Resume = "resume",
    /// Resume with a larger token budget (the user names it).
    ResumeWithTokenBudget = "resumeWithTokenBudget",
    /// Resume with a larger time budget (the user names it).
    ResumeWithTimeBudget = "resumeWithTimeBudget",
    /// Resume with a larger cost budget (the user names it).
    ResumeWithCostBudget = "resumeWithCostBudget",
}

/// A code's fix: the sentence a user can act on (none for a finished goal), the words that
/// stand for `{detail}` when the cause has none, and the action `doctor --fix` may apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixRow {
    /// The sentence, with `{id}` and `{detail}` still to fill in.
    pub sentence: Option<&'static str>,
    /// What `{detail}` reads when the cause has no detail.
    pub detail_fallback: &'static str,
    /// What `doctor --fix` may apply.
    pub action: FixAction,
}

/// A finished goal: nothing to fix.
const fn done() -> FixRow {
    FixRow { sentence: None, detail_fallback: "", action: FixAction::None }
}

/// A fix the user applies, after which a plain resume goes on.
const fn resume(sentence: &'static str, detail_fallback: &'static str) -> FixRow {
    FixRow { sentence: Some(sentence), detail_fallback, action: FixAction::Resume }
}

/// Advice only: the wait ends by itself, or only the user can choose what to do.
const fn advise(sentence: &'static str, detail_fallback: &'static str) -> FixRow {
    FixRow { sentence: Some(sentence), detail_fallback, action: FixAction::None }
}

/// A spent budget: the fix resumes with a new value, which the user names.
const fn resume_with(action: FixAction, sentence: &'static str) -> FixRow {
    FixRow { sentence: Some(sentence), detail_fallback: "", action }
}

impl CauseCode {
    /// Parses a wire name; anything outside the closed list is `None`.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|code| code.as_str() == text)
    }

    /// Whether the goal waits for something outside the user's hands and will go on by itself.
    pub fn is_wait(self) -> bool {
        matches!(
            self,
            Self::WaitingForUser
                | Self::WaitingForHours
                | Self::WaitingForProviderLimit
                | Self::WaitingForLease
                | Self::WaitingForOpenCode
        )
    }
}

/// One cause: what stopped or holds the goal, since when, until when, and what a user can do.
#[derive(Debug, Clone, PartialEq)]
pub struct Cause {
    /// The code from the closed list.
    pub code: CauseCode,
    /// When the stop or wait began (epoch ms).
    pub since: f64,
    /// A short machine-friendly detail: a provider name, an HTTP status, a session id.
    pub detail: Option<String>,
    /// When the wait ends by itself (epoch ms), for waits that know it.
    pub until: Option<f64>,
    /// One sentence a user can act on.
    pub fix: Option<String>,
}

impl Cause {
    /// A cause with only its code and start time.
    pub fn new(code: CauseCode, since: f64) -> Self {
        Cause { code, since, detail: None, until: None, fix: None }
    }

    /// Adds a detail (bounded).
    pub fn with_detail(mut self, detail: impl AsRef<str>) -> Self {
        let detail = crate::text::truncate_chars(detail.as_ref().trim(), CAUSE_DETAIL_CHAR_LIMIT);
        self.detail = (!detail.is_empty()).then_some(detail);
        self
    }

    /// Adds the time the wait ends.
    pub fn with_until(mut self, until: f64) -> Self {
        self.until = until.is_finite().then_some(until);
        self
    }

    /// Adds the sentence a user can act on (bounded).
    pub fn with_fix(mut self, fix: impl AsRef<str>) -> Self {
        let fix = crate::text::truncate_chars(fix.as_ref().trim(), CAUSE_FIX_CHAR_LIMIT);
        self.fix = (!fix.is_empty()).then_some(fix);
        self
    }

    /// Parses a stored cause. `None` for anything that is not an object with a known `code`
    /// (the record then keeps the raw value verbatim instead, so nothing is lost).
    pub fn from_value(value: &Value) -> Option<Cause> {
        let object = value.as_object()?;
        let code = CauseCode::parse(object.get("code")?.as_str()?)?;
        let finite = |key: &str| object.get(key).and_then(Value::as_f64).filter(|n| n.is_finite() && *n >= 0.0);
        let text = |key: &str, limit: usize| {
            object
                .get(key)
                .and_then(Value::as_str)
                .map(|s| crate::text::truncate_chars(s, limit))
                .filter(|s| !s.is_empty())
        };
        Some(Cause {
            code,
            since: finite("since").unwrap_or(0.0),
            detail: text("detail", CAUSE_DETAIL_CHAR_LIMIT),
            until: finite("until"),
            fix: text("fix", CAUSE_FIX_CHAR_LIMIT),
        })
    }

    /// The stored shape; absent optional parts are left out.
    pub fn to_value(&self) -> Value {
        let mut object = Map::new();
        object.insert("code".into(), Value::from(self.code.as_str()));
        object.insert("since".into(), Value::from(self.since));
        if let Some(detail) = &self.detail {
            object.insert("detail".into(), Value::from(detail.clone()));
        }
        if let Some(until) = self.until {
            object.insert("until".into(), Value::from(until));
        }
        if let Some(fix) = &self.fix {
            object.insert("fix".into(), Value::from(fix.clone()));
        }
        Value::Object(object)
    }
}

/// Every `statusReason` this package writes: the short human text OpenChamber's UI shows beside
/// a goal's status (the machine-readable why is the goal's [`Cause`]).
pub mod reasons {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_code_round_trips_and_names_are_unique() {
        let mut names: Vec<&str> = CauseCode::ALL.iter().map(|code| code.as_str()).collect();
        for &code in CauseCode::ALL {
            assert_eq!(CauseCode::parse(code.as_str()), Some(code));
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), CauseCode::ALL.len());
        assert_eq!(CauseCode::parse("waiting"), None);
    }

    #[test]
    fn cause_round_trips_and_bounds_its_text() {
        let cause =
            Cause::new(CauseCode::ProviderAuth, 10.0).with_detail("openai").with_until(20.0).with_fix("x".repeat(1000));
        assert_eq!(cause.fix.as_ref().unwrap().chars().count(), CAUSE_FIX_CHAR_LIMIT);
        assert_eq!(Cause::from_value(&cause.to_value()), Some(cause));
        let bare = Cause::new(CauseCode::UserPaused, 5.0);
        assert_eq!(bare.to_value(), json!({"code": "userPaused", "since": 5.0}));
    }

    #[test]
    fn foreign_shapes_are_not_causes() {
        for bad in [json!(null), json!("verified"), json!({"code": "nope"}), json!({"code": 3}), json!([])] {
            assert_eq!(Cause::from_value(&bad), None, "{bad}");
        }
        let odd = Cause::from_value(&json!({"code": "turnCap", "since": "yesterday", "until": -1})).unwrap();
        assert_eq!((odd.since, odd.until), (0.0, None));
    }

    #[test]
    fn waits_are_the_waiting_codes() {
        let waits: Vec<_> = CauseCode::ALL.iter().copied().filter(|code| code.is_wait()).collect();
        assert_eq!(waits.len(), 5);
        assert!(waits.iter().all(|code| code.as_str().starts_with("waitingFor")));
    }
}
