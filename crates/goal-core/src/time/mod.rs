//! Time: the clock, a goal's active time and time budget, and its working hours. Pure apart
//! from reading the system clock.

pub mod active;
pub mod clock;
pub mod hours;
