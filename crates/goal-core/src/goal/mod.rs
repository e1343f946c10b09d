//! The goal loop, one tick at a time, as gather → decide → act:
//!
//! - `decide/`: the decision, pure. What the tick has seen, the settings and the clock value in;
//!   the next step out: read this, carry out that, or end. Every rule of the loop lives here,
//!   each step in a file of its own (`start.rs`, `provider.rs`, `planning.rs`, `verdict.rs`,
//!   `acceptance.rs`, `review.rs`, `delivery.rs`), composed in branch order by `decide/mod.rs`.
//! - `gather/`: the reads a decision asks for, and the owner lists' memory.
//! - `act/`: the one executor: the only place that writes the goal, posts, notifies and appends
//!   trail lines, each effect under its own guard; its memory beside it.
//! - `tick.rs`: the loop that asks, reads, acts and asks again; `context.rs`: what the ticks of a
//!   runtime share.
//!
//! Imports only go down: `decide` ← `gather` ← `act` ← `tick` (`scripts/module-graph.mjs`
//! checks it, and that `decide` imports no I/O and is not `async`).

/// The one executor of a tick's effects, and its memory.
pub mod act;
/// What the ticks of a runtime share.
pub mod context;
/// The decision: pure, one step at a time.
pub mod decide;
/// The reads a decision asks for, and the owner lists' memory.
pub mod gather;
/// One tick: gather → decide → act until the decision ends it.
pub mod tick;
