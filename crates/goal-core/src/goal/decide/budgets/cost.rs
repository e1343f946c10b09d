//! The cost budget: US dollars a goal may spend. OpenCode prices every assistant message in
//! `info.cost` from the model's configured price (`docs/opencode.md`, "Cost"); the goal's
//! `costUsed` is the sum of those prices since the goal began, compaction summaries included,
//! counted by the accounting pass (`goal/decide/accounting.rs`). A model without a price reports 0, so
//! its goal never reaches the budget; `explain` says so. Its rule is the one check of a host's
//! value; its check is read by the plan (`goal/decide/plan_rules.rs`), which settles a spent budget
//! `budgetLimited`. Pure: no I/O.

use crate::goal::decide::accounting::cost_used;
use crate::goal::decide::budgets::TurnBudget;
use crate::record::cause::{reasons::REASON_COST_BUDGET, CauseCode};
use crate::record::Goal;

/// Smallest accepted cost budget (one cent).
pub const MIN_COST_BUDGET: f64 = 0.01;
/// Largest accepted cost budget (US dollars).
pub const MAX_COST_BUDGET: f64 = 1_000_000.0;

/// The rule: a cost budget is a finite number of US dollars in
/// [`MIN_COST_BUDGET`, `MAX_COST_BUDGET`].
pub fn check_budget(dollars: f64) -> Result<f64, String> {
    if dollars.is_finite() && (MIN_COST_BUDGET..=MAX_COST_BUDGET).contains(&dollars) {
        Ok(dollars)
    } else {
        Err(format!("must be a number of US dollars between {MIN_COST_BUDGET} and {MAX_COST_BUDGET}"))
    }
}

/// The goal's cost budget, when it has a valid one.
pub fn budget(goal: &Goal) -> Option<f64> {
    goal.cost_budget.get().copied()
}

/// The budget as the plan checks it after each turn.
pub const PER_TURN: TurnBudget = TurnBudget {
    reached: |goal, spent| budget_reached(goal, spent.cost_used),
    reason: REASON_COST_BUDGET,
    code: CauseCode::CostBudget,
};

/// The check: whether `cost_used` has reached the goal's budget. A provider that reports no cost keeps
/// `cost_used` at 0, below every accepted budget, so it never reaches it.
pub fn budget_reached(goal: &Goal, cost_used: f64) -> bool {
    budget(goal).is_some_and(|budget| cost_used >= budget)
}

/// Whether the goal has a cost budget but its replies, which did spend tokens, cost nothing:
/// the provider reports no cost, and the budget will never be reached.
pub fn provider_reports_no_cost(goal: &Goal) -> bool {
    budget(goal).is_some() && goal.tokens_used > 0 && cost_used(goal) <= 0.0
}

/// Dollars as people read them: two decimals, more only below a cent (`$0.0042`).
pub fn format_usd(dollars: f64) -> String {
    if dollars > 0.0 && dollars < 0.01 {
        format!("${dollars:.4}")
    } else {
        format!("${dollars:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::test_goal::goal;
    use serde_json::json;

    #[test]
    fn the_budget_is_reached_at_or_above_it_and_never_without_one() {
        let g = goal(json!({"costBudget": 0.5}));
        assert!(!budget_reached(&g, 0.49));
        assert!(budget_reached(&g, 0.5), "at the budget counts as reached");
        assert!(budget_reached(&g, 0.7));
        assert!(!budget_reached(&g, 0.0), "a provider that reports no cost never reaches it");
        assert!(!budget_reached(&goal(json!({})), 1e9), "no budget, never reached");
        // An unreadable stored budget is kept verbatim and never limits.
        let odd = goal(json!({"costBudget": "five dollars"}));
        assert!(!budget_reached(&odd, 1e9));
        assert_eq!(odd.to_value()["costBudget"], json!("five dollars"));
    }

    #[test]
    fn budgets_are_checked() {
        assert_eq!(check_budget(2.5), Ok(2.5));
        assert_eq!(check_budget(0.01), Ok(0.01));
        for bad in [0.0, -1.0, 0.001, f64::NAN, f64::INFINITY, 2e6] {
            assert!(check_budget(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn no_cost_is_told_apart_from_no_spend() {
        assert!(provider_reports_no_cost(&goal(json!({"costBudget": 1, "tokensUsed": 500}))));
        assert!(!provider_reports_no_cost(&goal(json!({"costBudget": 1, "tokensUsed": 0}))), "nothing spent yet");
        assert!(!provider_reports_no_cost(&goal(json!({"costBudget": 1, "tokensUsed": 500, "costUsed": 0.2}))));
        assert!(!provider_reports_no_cost(&goal(json!({"tokensUsed": 500}))), "no budget, nothing to say");
    }

    #[test]
    fn dollars_read_as_people_write_them() {
        assert_eq!(format_usd(0.6), "$0.60");
        assert_eq!(format_usd(12.0), "$12.00");
        assert_eq!(format_usd(0.0042), "$0.0042");
        assert_eq!(format_usd(0.0), "$0.00");
    }
}
