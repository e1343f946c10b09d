//! The core's input rules for the command line (`bin/session-goal.js`), so it refuses what the
//! runtime would refuse, with the same limits, without a second copy of any rule in JS. Each
//! check answers with a [`RuleOutcome`] whose `problem` names no field: the caller names its
//! own (the CLI its flag). Exported under the `inputRules` namespace, which the package entry
//! exports as it is (`lib/exports.json`), for any host that checks user input first.

use napi_derive::napi;
use serde_json::{json, Value};

use goal_core::{rule, HoursPart};

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
    fn accepted(value: Option<f64>) -> Self {
        Self { value, problem: None }
    }

    fn refused(problem: String) -> Self {
        Self { value: None, problem: Some(problem) }
    }
}

/// A time budget written as a duration (`90m`, `2h`, `1h30m`, `45s`, `1d`) in milliseconds,
/// within the core's time-budget bounds.
#[napi(namespace = "inputRules")]
pub fn time_budget(text: String) -> RuleOutcome {
    match goal_core::parse_duration(&text) {
        Ok(ms) => RuleOutcome::accepted(Some(ms as f64)),
        Err(problem) => RuleOutcome::refused(problem),
    }
}

/// Milliseconds as the status lines show a duration (`1h 30m`, `45m`, `20s`).
#[napi(namespace = "inputRules")]
pub fn format_duration(ms: f64) -> String {
    goal_core::format_duration(ms)
}

/// A token budget: an integer within the goal settings' bounds.
#[napi(namespace = "inputRules")]
pub fn token_budget(value: f64) -> RuleOutcome {
    rule::token_budget(value).map(|budget| budget as f64).into()
}

/// A cost budget in US dollars within the goal settings' bounds.
#[napi(namespace = "inputRules")]
pub fn cost_budget(dollars: f64) -> RuleOutcome {
    rule::cost_budget(dollars).into()
}

/// A list of acceptance criteria, by the goal settings' rule (how many, how long, one line
/// each, no control characters); the value is how many there are.
#[napi(namespace = "inputRules")]
pub fn criteria(texts: Vec<String>) -> RuleOutcome {
    rule::criteria(texts).map(|list| list.len() as f64).into()
}

/// A list of acceptance-check commands, by the goal settings' rule (how many, how long, one
/// line each).
#[napi(namespace = "inputRules")]
pub fn checks(commands: Vec<String>) -> RuleOutcome {
    let list = Value::Array(commands.into_iter().map(|command| json!({ "command": command })).collect());
    rule::checks(list).map(|parsed| parsed.len() as f64).into()
}

/// Working hours `start`–`end` (`HH:MM`) in the IANA zone `time_zone`; a refusal names the part
/// at fault in words (`time zone`, `start time`…), not the API's field.
#[napi(namespace = "inputRules")]
pub fn active_hours(start: String, end: String, time_zone: String) -> RuleOutcome {
    match goal_core::ActiveHours::check(&start, &end, &time_zone) {
        Ok(_) => RuleOutcome::accepted(None),
        Err(problem) => {
            let part = match problem.part {
                HoursPart::Start => "start time",
                HoursPart::End => "end time",
                HoursPart::Window => "start and end time",
                HoursPart::TimeZone => "time zone",
            };
            RuleOutcome::refused(format!("{part} {}", problem.text))
        }
    }
}

/// Whether `id` has the form of a session id the runtime accepts (letters, digits, `_` and
/// `-`, 4 to 128 of them).
#[napi(namespace = "inputRules")]
pub fn is_session_id(id: String) -> bool {
    goal_core::is_valid_session_id(&id)
}
