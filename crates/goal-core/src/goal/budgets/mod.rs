//! The limits a goal runs under: the cost budget (`cost`) and the time budget and working hours
//! (`time_gate`). Provider limits are `goal/provider/`.

pub mod cost;
pub mod time_gate;
