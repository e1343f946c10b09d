//! Acceptance checks, run before a goal may complete: the claim of a run across hosts
//! (`check_claim`), the run itself (`checks`) and its pure rules (`check_rules`); then, for a goal
//! that asks for it, the reviewer that must approve before `complete` (`review`, with its pure
//! `review_rules`).

pub mod check_claim;
pub mod check_rules;
pub mod checks;
pub mod review;
pub mod review_rules;
