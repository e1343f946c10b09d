//! A goal's budgets, one file each with its rule (the one check of a host's value, applied by
//! `control/goal_settings.rs`) and its check (whether the goal has spent it): tokens (`tokens`),
//! US dollars (`cost`) and active time (`time`). Each is read where the tick decides: tokens
//! and cost by the plan (`goal/decide/plan.rs`), time by the time stage
//! (`goal/decide/planning.rs`); a spent budget settles the goal `budgetLimited`. Provider
//! limits, which are not a goal's budget, are `goal/decide/provider.rs` and
//! `goal/decide/limit_rules.rs`. Pure.

pub mod cost;
pub mod time;
pub mod tokens;
