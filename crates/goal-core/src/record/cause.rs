//! The typed cause of a stop or a wait: `goal.cause = {code, since, detail?, until?, fix?}`.
//!
//! `statusReason` stays the short human text OpenChamber's UI shows; `cause` is the machine
//! reading of the same moment, from a closed list of codes, so a host (or `explain`) can act on
//! it without parsing prose. A goal that is simply running carries no cause. Pure: no I/O.

use serde_json::{Map, Value};

/// Maximum characters of a cause's `detail` (a provider name, an HTTP status, a session id).
pub const CAUSE_DETAIL_CHAR_LIMIT: usize = 200;
/// Maximum characters of a cause's `fix` sentence.
pub const CAUSE_FIX_CHAR_LIMIT: usize = 300;

/// Every reason the runtime stops, pauses or parks a goal, or makes it wait, with its wire
/// name. The list is closed: a new reason is one line here (and its row in
/// `goal/decide/causes.rs`).
macro_rules! cause_codes {
    ($($(#[$doc:meta])* $variant:ident = $wire:literal,)*) => {
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
        }
    };
}

cause_codes! {
    /// The auditor verified the objective.
    Verified = "verified",
    /// Every acceptance check passed.
    ChecksPassed = "checksPassed",
    /// The user marked the goal complete.
    UserComplete = "userComplete",
    /// The auditor said the work cannot go on without the user.
    AuditorBlocked = "auditorBlocked",
    /// Turns went by with no progress (the no-progress breaker, repeated truncation).
    NoProgress = "noProgress",
    /// The progress audit could not be run.
    AuditUnavailable = "auditUnavailable",
    /// A continuation could not be posted.
    DispatchFailed = "dispatchFailed",
    /// The session's messages could not be read.
    MessagesUnavailable = "messagesUnavailable",
    /// The token budget is spent.
    TokenBudget = "tokenBudget",
    /// The active-time budget is spent.
    TimeBudget = "timeBudget",
    /// The cost budget (US dollars) is spent.
    CostBudget = "costBudget",
    /// The automatic turn cap is reached.
    TurnCap = "turnCap",
    /// The user paused the goal.
    UserPaused = "userPaused",
    /// The user aborted the running turn, which pauses the goal.
    UserAborted = "userAborted",
    /// The person asked in the chat to stop or pause, and the auditor read it so (`detail`
    /// quotes them).
    UserAskedToPause = "userAskedToPause",
    /// The agent waits on the user (a permission or a question).
    WaitingForUser = "waitingForUser",
    /// Outside the goal's working hours.
    WaitingForHours = "waitingForHours",
    /// Parked until a provider's rate or usage limit resets.
    WaitingForProviderLimit = "waitingForProviderLimit",
    /// Another host holds the goal's lease.
    WaitingForLease = "waitingForLease",
    /// A request the loop needs keeps failing (OpenCode answers an error, garbage or nothing);
    /// the goal goes on by itself once it answers. `detail` names the request and its answer.
    WaitingForOpenCode = "waitingForOpenCode",
    /// The provider refused the credentials.
    ProviderAuth = "providerAuth",
    /// The provider's quota is spent and will not reset soon.
    ProviderQuota = "providerQuota",
    /// The conversation no longer fits the model's context.
    ContextOverflow = "contextOverflow",
    /// The provider's content filter stopped the reply.
    ContentFilter = "contentFilter",
    /// Turns were cut by a server restart, repeatedly.
    TurnInterrupted = "turnInterrupted",
    /// A turn ended with an error the provider table does not name.
    TurnFailed = "turnFailed",
    /// The goal was copied from another session (a fork) and waits for the user.
    Inherited = "inherited",
    /// A guard the user set (checks, criteria, a cost or time budget, working hours) is stored
    /// in a shape that cannot be read: the goal stops rather than run past it.
    InvalidGoal = "invalidGoal",
    /// The reviewer (a second agent that reads the repository) approved the completion.
    ReviewApproved = "reviewApproved",
    /// The reviewer gave no readable answer, twice.
    ReviewUnavailable = "reviewUnavailable",
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
        let detail = crate::record::truncate_chars(detail.as_ref().trim(), CAUSE_DETAIL_CHAR_LIMIT);
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
        let fix = crate::record::truncate_chars(fix.as_ref().trim(), CAUSE_FIX_CHAR_LIMIT);
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
                .map(|s| crate::record::truncate_chars(s, limit))
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
