//! The pure decisions of a tick: `plan` (what to do, in the reference's branch order),
//! `gates` (working, waiting, quiet windows) and `accounting` (tokens by chronology). No I/O, no
//! clock: every input is passed in.

pub mod accounting;
pub mod gates;
pub mod plan;
