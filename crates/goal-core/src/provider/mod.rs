//! Provider failures: what a failed reply's error means (`failure`), when a resetting limit
//! resets (`reset`), and the goal's parked state and decisions (`park`). Pure: no I/O.

pub mod failure;
pub mod park;
pub mod reset;
