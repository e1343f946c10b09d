//! `buildGoalIntroText`: the goal-mode intro a host attaches (as a synthetic text part) after the
//! first prompt of a goal, as OpenChamber's routes and scheduled tasks do.

use napi_derive::napi;

/// The `<system-reminder>` block that tells the agent goal mode is on (attach it as a synthetic
/// text part after the prompt). A positive `tokenBudget` adds one sentence naming the budget;
/// `null`, `undefined`, 0, negative or non-finite values mean no budget.
#[napi(catch_unwind)]
pub fn build_goal_intro_text(token_budget: Option<f64>) -> String {
    let budget = token_budget.filter(|b| b.is_finite() && *b >= 1.0).map(|b| b.min(u64::MAX as f64).floor() as u64);
    goal_core::goal_intro_text(budget)
}
