//! The turn budget: automatic continuations a goal may take (`turnBudget`), below the runtime's
//! turn cap. Its rule is the one check of a host's value; its check is a row of the plan's
//! per-turn budgets. Pure.

use crate::goal::decide::budgets::TurnBudget;
use crate::record::cause::{reasons::REASON_TURN_BUDGET, CauseCode};
use crate::record::Goal;

/// The rule: a turn budget is a whole number from 1 to 1000.
pub fn check_budget(turns: f64) -> Result<u64, String> {
    if turns.fract() == 0.0 && (1.0..=1000.0).contains(&turns) {
        Ok(turns as u64)
    } else {
        Err("must be a whole number of turns from 1 to 1000".into())
    }
}

/// The budget as the plan checks it after each turn.
pub const PER_TURN: TurnBudget = TurnBudget {
    reached: |goal, _| budget_reached(goal),
    reason: REASON_TURN_BUDGET,
    code: CauseCode::TurnBudget,
};

/// The check: whether the goal has taken as many continuations as its budget allows.
pub fn budget_reached(goal: &Goal) -> bool {
    goal.turn_budget.get().is_some_and(|budget| goal.turns_used >= *budget)
}
