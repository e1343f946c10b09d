//! The goal loop, one tick at a time: observe (the session, its live state and evidence) →
//! plan (pure decisions and gates) → audit (the small model's verdict, reviewed against the
//! evidence) → reserve (a guarded write of the turn) → dispatch (an idempotent post) → settle
//! (a terminal status and the notification). `tick.rs` runs the stages in that order; each
//! folder below is one stage (or a few that belong together) with its pure rules beside it.
//!
//! A stage's pure part, when it has a file of its own, is named after the stage with `_rules`
//! (`budgets/limit_rules.rs` of `budgets/limits.rs`, `acceptance/check_rules.rs` of
//! `acceptance/checks.rs`); `scripts/module-graph.mjs` checks that pure files import no I/O.

/// What the stages share: the runtime's tick context and one tick's value.
pub mod context;
/// The tick's stages and how long each may take (the watchdog's budget).
pub mod stages;
/// One tick, stage by stage.
pub mod tick;

/// Acceptance checks (their claim across hosts, the run, the reading of results) and the reviewer.
pub mod acceptance;
/// The provider, cost and time limits, and the stages that act on them.
pub mod budgets;
/// Reserving a turn, posting it once, and watching the reservation's echo.
pub mod delivery;
/// Guards that cannot be read: read what can be read safely, stop the goal on the rest.
pub mod guarding;
/// What a tick reads: the session, its live state, and the evidence around an audit.
pub mod observation;
/// Which session owns a goal: adoption of a fork's copy, the owner list, lineage rules.
pub mod ownership;
/// The pure decisions: the plan of a tick, its gates, token accounting.
pub mod planning;
/// Settling a goal: the status write, the notification, the trail, causes, operator lines.
pub mod settling;
/// The audit stage and graded completion against the criteria.
pub mod verdict;
