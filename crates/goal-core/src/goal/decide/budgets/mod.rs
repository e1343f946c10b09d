//! A goal's budgets, one file each with its rule (the one check of a host's value, applied by
//! `control/goal_settings.rs`) and its check (whether the goal has spent it): tokens (`tokens`),
//! US dollars (`cost`) and active time (`time`). Each is read where the tick decides: a budget
//! counted per turn is a row of [`PER_TURN`], which the plan (`goal/decide/plan_rules.rs`) walks after
//! each turn; time is read on the clock by the time stage (`goal/decide/planning.rs`). A spent
//! budget settles the goal `budgetLimited`; before it, the wrap-up's forecast (`forecast`) says
//! when the next turn must be the handoff (`goal/decide/wrap_up.rs`). Provider limits, which are not a goal's budget, are
//! `goal/decide/provider.rs` and `goal/decide/limit_rules.rs`. Pure.

pub mod cost;
pub mod forecast;
pub mod time;
pub mod tokens;

use crate::goal::decide::accounting::Accounting;
use crate::record::cause::CauseCode;
use crate::record::Goal;

/// A budget counted per turn, as the plan checks it.
pub struct TurnBudget {
    /// Whether the goal has spent it, given what its turns have spent so far.
    pub reached: fn(&Goal, &Accounting) -> bool,
    /// The `statusReason` of the goal it stops.
    pub reason: &'static str,
    /// The cause it stops the goal with.
    pub code: CauseCode,
}

/// Every budget counted per turn, in the order the plan checks them: the first one spent settles
/// the goal.
pub const PER_TURN: &[TurnBudget] = &[tokens::PER_TURN, cost::PER_TURN];
