//! The guard stage, before any continuation: a guard field of the record (checks, criteria,
//! cost or time budget, working hours) that cannot be read stops the goal `invalidGoal` instead
//! of being treated as absent. `guard_rules` decides (pure); `guards` writes the stop.

pub mod guard_rules;
pub mod guards;
