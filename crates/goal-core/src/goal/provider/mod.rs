//! Provider limits, which are not a goal's budget but the provider's: the provider stage
//! (`limits`: a rate or usage limit parks the goal until its reset and resumes it, a typed
//! provider error stops it, a cut turn goes on) and what each failure means (`limit_rules`,
//! pure; `limit_rules/reset.rs` reads the reset headers).

pub mod limit_rules;
pub mod limits;
