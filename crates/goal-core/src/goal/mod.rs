//! The goal loop, one tick at a time: observe (the session, its live state and evidence) →
//! plan (pure decisions and gates) → audit (the small model's verdict, reviewed against the
//! evidence) → reserve (a guarded write of the turn) → dispatch (an idempotent post) → settle
//! (a terminal status and the notification). `repair` watches a reservation's echo for a lost
//! update.

pub mod accounting;
pub mod adopt;
pub mod dispatch;
pub mod evidence;
pub mod gates;
pub mod limits;
pub mod lineage;
pub mod notify;
pub mod operator;
pub mod park;
pub mod plan;
pub mod repair;
pub mod tick;
