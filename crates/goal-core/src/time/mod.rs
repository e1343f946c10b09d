//! Time: the clock, a goal's active time (which its time budget, `goal/decide/budgets/time.rs`,
//! counts), its working hours, the header time stamps a provider states its reset in, and the
//! one backoff rule of every repeated request. Pure apart from reading the system clock.

pub mod active;
pub mod backoff;
pub mod clock;
pub mod hours;
pub mod stamp;
