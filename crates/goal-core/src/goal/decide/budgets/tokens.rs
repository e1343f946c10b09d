//! The token budget: tokens a goal may spend (`tokenBudget`), counted by the accounting pass
//! (`goal/decide/accounting.rs`: input, output and reasoning tokens of every reply since the
//! goal began, compaction summaries included). Its rule is the one check of a host's value; its
//! check is read by the plan (`goal/decide/plan_rules.rs`), which settles a spent budget
//! `budgetLimited`. Pure: no I/O.

use crate::goal::decide::budgets::TurnBudget;
use crate::record::cause::{reasons::REASON_BUDGET, CauseCode};
use crate::record::Goal;

/// Smallest token budget a goal accepts.
pub const MIN_TOKEN_BUDGET: u64 = 1_000;
/// Largest token budget a goal accepts.
pub const MAX_TOKEN_BUDGET: u64 = 100_000_000;

/// The rule: a token budget is an integer in [`MIN_TOKEN_BUDGET`, `MAX_TOKEN_BUDGET`].
pub fn check_budget(budget: f64) -> Result<u64, String> {
    let whole = budget.is_finite() && budget.fract() == 0.0;
    if whole && (MIN_TOKEN_BUDGET as f64..=MAX_TOKEN_BUDGET as f64).contains(&budget) {
        Ok(budget as u64)
    } else {
        Err(format!("must be an integer between {MIN_TOKEN_BUDGET} and {MAX_TOKEN_BUDGET}"))
    }
}

/// The budget as the plan checks it after each turn.
pub const PER_TURN: TurnBudget = TurnBudget {
    reached: |goal, spent| budget_reached(goal, spent.tokens_used),
    reason: REASON_BUDGET,
    code: CauseCode::TokenBudget,
};

/// The check: whether `tokens_used` has reached the goal's budget (never without one).
pub fn budget_reached(goal: &Goal, tokens_used: u64) -> bool {
    goal.token_budget.is_some_and(|budget| tokens_used >= budget)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::test_goal::goal;
    use serde_json::json;

    #[test]
    fn token_budget_bounds() {
        assert_eq!(check_budget(1000.0), Ok(1000));
        assert_eq!(check_budget(100_000_000.0), Ok(100_000_000));
        for bad in [999.0, 100_000_001.0, 1500.5, f64::NAN, f64::INFINITY, -5000.0] {
            assert!(check_budget(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_budget_is_reached_at_or_above_it_and_never_without_one() {
        let g = goal(json!({"tokenBudget": 5000}));
        assert!(!budget_reached(&g, 4999));
        assert!(budget_reached(&g, 5000), "at the budget counts as reached");
        assert!(!budget_reached(&goal(json!({})), u64::MAX), "no budget, never reached");
    }
}
