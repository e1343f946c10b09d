//! The limits a goal runs under: the provider stage (`limits`, with its pure `limit_rules`),
//! the cost budget (`cost`) and the time budget and working hours (`time_gate`).

pub mod cost;
pub mod limit_rules;
pub mod limits;
pub mod time_gate;
