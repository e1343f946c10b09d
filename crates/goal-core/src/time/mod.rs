//! Time: the clock, a goal's active time (which its time budget, `goal/budgets/time.rs`,
//! counts), its working hours, and the header time stamps a provider states its reset in. Pure
//! apart from reading the system clock.

pub mod active;
pub mod clock;
pub mod hours;
pub mod stamp;
