//! What a tick reads before it decides: `observe` reads the session, its goal and live state;
//! `evidence_stage` gathers the digest of the turns since the last audit (over the pure
//! `crate::evidence`) and records the trail;
//! a goal waiting on a failing request says so (`waiting`, with its pure `wait_rules`).

pub mod evidence_stage;
pub mod observe;
pub mod wait_rules;
pub mod waiting;
