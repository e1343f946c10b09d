//! The goal loop, one tick at a time: observe (the session and its goal) → ownership (whose goal
//! it is, the lease) → guards → the live state → provider limits → plan (pure decisions and
//! gates; the budgets' checks; the time stage) → audit (the small model's verdict, reviewed
//! against the evidence; checks and review before `complete`) → reserve (a guarded write of the
//! turn) → deliver (an idempotent post) → settle (a terminal status and the notification).
//! `tick.rs` runs the stages in that order, passing each once; each folder below is one stage (or
//! a few that belong together) with its pure rules beside it (`docs/layout.md` lists them).
//!
//! A stage's pure part, when it has a file of its own, is named after the stage with `_rules`
//! (`provider/limit_rules.rs` of `provider/limits.rs`, `acceptance/check_rules.rs` of
//! `acceptance/checks.rs`); `scripts/module-graph.mjs` checks that pure files import no I/O.

/// What the stages share: the runtime's tick context and one tick's value.
pub mod context;
/// The tick's stages and how long each may take (the watchdog's budget).
pub mod stages;
/// One tick, stage by stage.
pub mod tick;

/// Acceptance checks (their claim across hosts, the run, the reading of results) and the reviewer.
pub mod acceptance;
/// The cost and time limits, and the stage that acts on them.
pub mod budgets;
/// Reserving a turn, posting it once, and watching the reservation's echo.
pub mod delivery;
/// Guards that cannot be read: read what can be read safely, stop the goal on the rest.
pub mod guarding;
/// What a tick reads: the session and its goal, then its live state.
pub mod observation;
/// Which session owns a goal (the stage after the first reads): the owner list, lineage rules,
/// adoption of a fork's copy, the lease.
pub mod ownership;
/// The pure decisions: the plan of a tick, its gates, token accounting.
pub mod planning;
/// Provider limits: the provider stage (parks and resumes, typed stops, cut turns) and its rules.
pub mod provider;
/// Settling a goal: the status write, the notification, the trail, causes, operator lines, and
/// the cause of a goal that waits on a failing request.
pub mod settling;
/// The audit stage and graded completion against the criteria.
pub mod verdict;
