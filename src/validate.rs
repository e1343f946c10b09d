//! The core's input rules for the command line (`bin/command-line.js`), so it refuses what the
//! runtime would refuse, with the same limits, without a second copy of any rule in JS. Each
//! check answers with a [`RuleOutcome`] whose `problem` names no field: the caller names its
//! own (the CLI its flag). Exported under the `inputRules` namespace, which the package entry
//! exports as it is (`lib/exports.json`), for any host that checks user input first. The goal
//! settings' own rules sit with the settings' input (`src/goal_settings.rs`); here are the
//! rest.

use napi_derive::napi;

/// What a rule made of one input: the accepted value, or why it was refused.
#[napi(object)]
pub struct RuleOutcome {
    /// The accepted value (milliseconds for a duration, tokens for a budget, the number of
    /// checks for a check list); absent when refused or when the rule has no value.
    pub value: Option<f64>,
    /// Why the input was refused, worded without a field name; absent when accepted.
    pub problem: Option<String>,
}

impl From<Result<f64, String>> for RuleOutcome {
    fn from(outcome: Result<f64, String>) -> Self {
        match outcome {
            Ok(value) => RuleOutcome::accepted(Some(value)),
            Err(problem) => RuleOutcome::refused(problem),
        }
    }
}

impl RuleOutcome {
    /// The input was accepted, as `value` when the rule has one.
    pub(crate) fn accepted(value: Option<f64>) -> Self {
        Self { value, problem: None }
    }

    /// The input was refused for `problem`.
    pub(crate) fn refused(problem: String) -> Self {
        Self { value: None, problem: Some(problem) }
    }
}

/// Milliseconds as the status lines show a duration (`1h 30m`, `45m`, `20s`).
#[napi(namespace = "inputRules")]
pub fn format_duration(ms: f64) -> String {
    goal_core::format_duration(ms)
}

/// US dollars as the status lines show them: two decimals, four below a cent (`$0.0042`).
#[napi(namespace = "inputRules")]
pub fn format_usd(dollars: f64) -> String {
    goal_core::format_usd(dollars)
}

/// Whether `id` has the form of a session id the runtime accepts (letters, digits, `_` and
/// `-`, 4 to 128 of them).
#[napi(namespace = "inputRules")]
pub fn is_session_id(id: String) -> bool {
    goal_core::is_valid_session_id(&id)
}
