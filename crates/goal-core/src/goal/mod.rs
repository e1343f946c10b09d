//! The goal loop, one tick at a time: observe (the session, its live state and evidence) →
//! plan (pure decisions and gates) → audit (the small model's verdict, reviewed against the
//! evidence) → reserve (a guarded write of the turn) → dispatch (an idempotent post) → settle
//! (a terminal status and the notification). `echo_watch` watches a reservation's echo for a lost
//! update.

// Pure: decisions, gates, accounting, the notification. A stage's pure part, when it has one
// file of its own, is named after the stage: `limit_rules` (of `limits`), `check_rules` (of
// `checks`).
pub mod accounting;
pub mod causes;
pub mod check_rules;
pub mod cost;
pub mod gates;
pub mod grading;
pub mod limit_rules;
pub mod lineage;
pub mod notify;
pub mod operator;
pub mod plan;
pub mod review_rules;
// What the stages share.
pub mod context;
pub mod echo_watch;
pub mod trail;
// The stages, in the order a tick runs them.
pub mod adopt;
pub mod audit;
pub mod check_claim;
pub mod checks;
pub mod deliver;
pub mod dispatch;
pub mod echo;
pub mod evidence;
pub mod limits;
pub mod observe;
pub mod owner_scan;
pub mod reserve;
pub mod review;
pub mod settle;
pub mod tick;
pub mod time_gate;
