//! Deciding whether a turn finished the goal: the audit stage (`audit`) and graded completion
//! against the acceptance criteria (`grading`, pure).

pub mod audit;
pub mod grading;
