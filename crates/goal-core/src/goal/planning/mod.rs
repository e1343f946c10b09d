//! The plan stage. Its pure decisions: `plan` (what to do, in the reference's branch order;
//! the token and cost budgets' checks among them), `gates` (working, waiting, quiet windows) and
//! `accounting` (tokens by chronology): no I/O, no clock, every input is passed in. And the time
//! stage that runs just before the plan acts (`time_gate`: a spent time budget settles the goal,
//! outside working hours it waits), which writes.

pub mod accounting;
pub mod gates;
pub mod plan;
pub mod time_gate;
