//! The parts of a goal record as typed values, shared by what returns a goal (`GoalRecord`) and
//! what explains one (`GoalExplanation`): each is built from the core's own typed value, so
//! index.d.ts declares it once and it cannot drift from the record.

use napi_derive::napi;

use goal_core::{AcceptanceCheck, Cause, Criterion};

/// Declares [`GoalCause`] with the TypeScript union of its code, which `build.rs` writes from
/// goal-core's closed list (`CauseCode::ALL`, one line each in its `record/cause.rs`).
macro_rules! declare_goal_cause {
    ($code_union:tt) => {
        /// Why a goal stopped or waits (docs/causes.md lists the codes).
        #[napi(object, object_from_js = false)]
        pub struct GoalCause {
            /// The code from the closed list (`goal_core::CauseCode::ALL`; docs/causes.md).
            #[napi(ts_type = $code_union)]
            pub code: String,
            /// When the stop or wait began (ms since epoch).
            pub since: f64,
            /// A short detail: a provider name, an HTTP status, a session id.
            pub detail: Option<String>,
            /// When the wait ends by itself (ms since epoch), for waits that know it.
            pub until: Option<f64>,
            /// One sentence a user can act on.
            pub fix: Option<String>,
        }
    };
}

include!(concat!(env!("OUT_DIR"), "/cause_codes_union.rs"));

/// One acceptance check of a goal.
#[napi(object, object_from_js = false)]
pub struct GoalCheck {
    /// The shell command.
    pub command: String,
    /// Its time limit (ms), when set.
    pub timeout_ms: Option<f64>,
}

/// One acceptance criterion of a goal, with its latest grade.
#[napi(object, object_from_js = false)]
pub struct GoalCriterion {
    /// `c<n>`.
    pub id: String,
    /// What must hold.
    pub text: String,
    /// Who wrote it.
    #[napi(ts_type = "'user' | 'derived'")]
    pub source: String,
    /// The latest grade.
    #[napi(ts_type = "'unmet' | 'met' | 'unclear'")]
    pub state: String,
    /// The evidence ids the latest grade cited, when it cited any.
    pub evidence: Option<Vec<String>>,
    /// When the state last changed (ms since epoch).
    pub since: Option<f64>,
}

/// A goal's working hours, as stored.
#[napi(object, object_from_js = false)]
pub struct GoalActiveHours {
    /// Start, `HH:MM`.
    pub start: String,
    /// End, `HH:MM` (before `start`: the window crosses midnight).
    pub end: String,
    /// The IANA time zone.
    pub time_zone: String,
}

impl From<&Cause> for GoalCause {
    fn from(cause: &Cause) -> Self {
        GoalCause {
            code: cause.code.as_str().to_string(),
            since: cause.since,
            detail: cause.detail.clone(),
            until: cause.until,
            fix: cause.fix.clone(),
        }
    }
}

impl From<&AcceptanceCheck> for GoalCheck {
    fn from(check: &AcceptanceCheck) -> Self {
        GoalCheck { command: check.command.clone(), timeout_ms: check.timeout_ms.map(|ms| ms as f64) }
    }
}

impl From<&Criterion> for GoalCriterion {
    fn from(criterion: &Criterion) -> Self {
        GoalCriterion {
            id: criterion.id.clone(),
            text: criterion.text.clone(),
            source: criterion.source.as_str().to_string(),
            state: criterion.state.as_str().to_string(),
            evidence: (!criterion.evidence.is_empty()).then(|| criterion.evidence.clone()),
            since: criterion.since,
        }
    }
}

/// The stored working hours `{start, end, timeZone}` (a part missing from a hand-edited record
/// reads as empty).
impl From<&serde_json::Map<String, serde_json::Value>> for GoalActiveHours {
    fn from(stored: &serde_json::Map<String, serde_json::Value>) -> Self {
        let text = |key: &str| stored.get(key).and_then(serde_json::Value::as_str).unwrap_or_default().to_string();
        GoalActiveHours { start: text("start"), end: text("end"), time_zone: text("timeZone") }
    }
}
