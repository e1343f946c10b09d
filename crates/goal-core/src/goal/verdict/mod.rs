//! Deciding whether a turn finished the goal: the audit stage (`audit`), the evidence around
//! it (`audit_evidence`: the digest of the turns since the last audit read before the call, the
//! verdict reviewed after it, the trail written) and graded completion against the acceptance
//! criteria (`grading`, pure).

pub mod audit;
pub mod audit_evidence;
pub mod grading;
