//! The guard stage, first after the goal is read: a guard the user set that cannot be read (see
//! `guard_rules.rs`) stops the goal before anything else runs, so no audit, check or
//! continuation happens past it. The settle write builds on a fresh read, so the unreadable value
//! is written back exactly as stored.

use tracing::warn;

use crate::goal::context::Tick;
use crate::goal::guarding::guard_rules::{detail_of, unreadable_guards};
use crate::goal::settling::settle::blocked;
use crate::record::cause::CauseCode;
use crate::record::reasons::REASON_INVALID_GOAL;
use crate::sched::TickOutcome;

/// `Some` ends the tick: the goal was settled `blocked` (`invalidGoal`), or the write is retried.
pub async fn check(tick: &Tick<'_>) -> Option<TickOutcome> {
    let unreadable = unreadable_guards(&tick.goal);
    let detail = detail_of(&unreadable)?;
    let fields: Vec<&str> = unreadable.iter().map(|guard| guard.field).collect();
    warn!(target: "session_goal", session = tick.session_id, fields = %fields.join(","), "a guard of the goal cannot be read; stopping the goal");
    let mut settlement = blocked(&tick.goal, REASON_INVALID_GOAL, CauseCode::InvalidGoal);
    settlement.detail = Some(detail);
    Some(tick.settle(settlement).await)
}
