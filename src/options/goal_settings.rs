//! `goal: {…}` on create / send / fork: a new goal's limits and proof, converted once into the
//! core's validated `GoalSettings`. A refusal names the field as the host wrote it
//! (`goal.tokenBudget`).

use napi_derive::napi;

use goal_core::{ErrorKind, GoalError, GoalSettings};

/// A new goal's settings (`goal: true` is the same as `goal: {}`: no limits).
#[napi(object)]
#[derive(Default)]
pub struct GoalSettingsInput {
    /// Token budget: an integer in [1000, 100000000].
    pub token_budget: Option<f64>,
    /// Time budget in ms (active time, at least 1000).
    pub time_budget_ms: Option<f64>,
    /// Working hours `{start: "HH:MM", end: "HH:MM", timeZone}`.
    #[napi(ts_type = "{ start: string; end: string; timeZone: string }")]
    pub active_hours: Option<serde_json::Value>,
    /// Acceptance checks, `[{command, timeoutMs?}]`: at most 8, each command one line of at most
    /// 2,000 characters; `timeoutMs` defaults to 10 minutes.
    #[napi(ts_type = "Array<{ command: string; timeoutMs?: number } | string>")]
    pub checks: Option<serde_json::Value>,
    /// Cost budget in US dollars: at least 0.01.
    pub cost_budget: Option<f64>,
    /// Acceptance criteria: at most 8 strings of at most 300 characters, each graded against
    /// evidence before the goal may complete.
    pub criteria: Option<Vec<String>>,
}

impl TryFrom<GoalSettingsInput> for GoalSettings {
    type Error = GoalError;

    fn try_from(input: GoalSettingsInput) -> Result<Self, GoalError> {
        let token_budget = input
            .token_budget
            .map(|budget| goal_core::check_token_budget(budget).map_err(|e| renamed(e, "goal.tokenBudget")))
            .transpose()?;
        let time_limits = goal_core::GoalTimeLimits::check(input.time_budget_ms, input.active_hours.as_ref())
            .map_err(|message| GoalError::new(ErrorKind::InvalidInput, message))?;
        let checks = goal_core::check_goal_checks(input.checks.as_ref()).map_err(|e| renamed(e, "goal.checks"))?;
        let cost_budget = input
            .cost_budget
            .map(|dollars| goal_core::check_cost_budget(dollars).map_err(|m| GoalError::invalid("goal.costBudget", m)))
            .transpose()?;
        let criteria = input.criteria.map(|list| serde_json::json!(list));
        let criteria = goal_core::check_goal_criteria(criteria.as_ref(), "goal.criteria")?;
        Ok(GoalSettings { token_budget, time_limits, checks, cost_budget, criteria })
    }
}

/// The same refusal, naming the field as this request spells it.
fn renamed(error: GoalError, field: &'static str) -> GoalError {
    error.on_field(field)
}
