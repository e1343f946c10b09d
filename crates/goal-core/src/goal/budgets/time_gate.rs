//! The time stage, before any audit or continuation: a spent time budget settles the goal
//! `budgetLimited`; outside its working hours the goal waits (nothing sent) until the window
//! opens, and the waiting period is closed once it does.

use std::time::Duration;

use tracing::{debug, info};

use crate::goal::context::Tick;
use crate::goal::planning::plan::{Basis, Settlement};
use crate::goal::settling::causes::cause_of;
use crate::goal::settling::trail;
use crate::io::writer::{write_goal, GoalWrite};
use crate::record::cause::CauseCode;
use crate::record::reasons::{REASON_RESUMED, REASON_TIME_BUDGET, REASON_WAITING_FOR_HOURS};
use crate::record::{Goal, GoalStatus};
use crate::sched::TickOutcome;
use crate::time::active::{begin_inactive, end_inactive, time_budget_reached};
use crate::time::hours::{self, HoursGate};

/// Time budget and working hours. `Some` ends the tick: settled `budgetLimited`, or waiting
/// until the window opens.
pub async fn check(tick: &Tick<'_>, basis: &Basis) -> Option<TickOutcome> {
    let now = tick.now_ms();
    if let Some(outcome) = budget_spent(tick, basis, now).await {
        return Some(outcome);
    }
    hours_stage(tick, basis, now).await
}

/// The time stage again just before a continuation is reserved (an audit, checks or a review
/// may have run long): the budget, and a working-hours window that closed meanwhile. The
/// waiting period [`check`] closed stays closed (no second write).
pub async fn recheck(tick: &Tick<'_>, basis: &Basis) -> Option<TickOutcome> {
    let now = tick.now_ms();
    if let Some(outcome) = budget_spent(tick, basis, now).await {
        return Some(outcome);
    }
    match hours::goal_gate(&tick.goal, now) {
        HoursGate::WaitUntil(_) => hours_stage(tick, basis, now).await,
        HoursGate::Open => None,
    }
}

/// A spent time budget settles the goal `budgetLimited`. The budget is judged on the goal with
/// a waiting period a resume ended closed at the resume (the record closes it in this tick).
async fn budget_spent(tick: &Tick<'_>, basis: &Basis, now: f64) -> Option<TickOutcome> {
    let goal = &tick.goal;
    let mut judged = goal.clone();
    if judged.inactive_since.is_present() && judged.status_reason == REASON_RESUMED {
        end_inactive(&mut judged, resumed_at(goal, now));
    }
    if time_budget_reached(&judged, now) {
        info!(target: "session_goal", session = tick.session_id, "time budget reached");
        let line =
            trail::line(goal, &basis.tail_message_id, GoalStatus::BudgetLimited.as_str(), REASON_TIME_BUDGET, now);
        tick.append_trail(line).await;
        let settlement = Settlement {
            status: GoalStatus::BudgetLimited,
            reason: REASON_TIME_BUDGET.into(),
            note: None,
            accounting: basis.accounting.clone(),
            evaluation: None,
            cause: CauseCode::TimeBudget,
            detail: None,
        };
        return Some(tick.settle(settlement).await);
    }
    None
}

/// Working hours: outside them the goal waits; back inside, its waiting period is closed.
async fn hours_stage(tick: &Tick<'_>, basis: &Basis, now: f64) -> Option<TickOutcome> {
    let goal = &tick.goal;
    match hours::goal_gate(goal, now) {
        HoursGate::WaitUntil(opens) => {
            let cause = cause_of(CauseCode::WaitingForHours, now, tick.session_id, None).with_until(opens);
            if goal.status_reason != REASON_WAITING_FOR_HOURS || !goal.inactive_since.is_present() {
                let written = write(tick, move |g: &mut Goal| {
                    g.status_reason = REASON_WAITING_FOR_HOURS.into();
                    g.set_cause(Some(cause));
                    begin_inactive(g, now);
                })
                .await;
                if written == Some(true) {
                    tick.append_trail(trail::line(goal, &basis.tail_message_id, "wait", REASON_WAITING_FOR_HOURS, now))
                        .await;
                }
            }
            let wait_ms = (opens - now).max(0.0) + 50.0;
            debug!(target: "session_goal", session = tick.session_id, wait_ms, "outside working hours");
            Some(TickOutcome::BackOff(Duration::from_millis(wait_ms as u64)))
        }
        HoursGate::Open => {
            // Back from waiting (for the user or for working hours): close the waiting period.
            if goal.inactive_since.is_present() || goal.status_reason == REASON_WAITING_FOR_HOURS {
                // A resume another client wrote (OpenChamber's UI) ends the waiting period when
                // it was written, not when this runtime first saw it (events may be lost, and
                // the sweep see it minutes later): that time was not spent working either way,
                // but it is not the goal's either.
                let ended = resumed_at(goal, now);
                let written = write(tick, move |g: &mut Goal| {
                    end_inactive(g, ended);
                    if g.status_reason == REASON_WAITING_FOR_HOURS {
                        g.status_reason.clear();
                    }
                    // Back at work: a running goal carries no cause.
                    if g.cause.as_ref().is_some_and(|c| c.code.is_wait()) {
                        g.set_cause(None);
                    }
                })
                .await;
                match written {
                    Some(true) => {}
                    Some(false) => return Some(TickOutcome::Done),
                    None => return Some(tick.late_retry()),
                }
            }
            None
        }
    }
}

/// When the goal's waiting period ended: the resume's own write time (`updatedAt` of a goal that
/// reads `resumed`, read before any write of this tick), else now.
fn resumed_at(goal: &Goal, now: f64) -> f64 {
    let since = goal.inactive_since.get().copied().unwrap_or(0.0);
    let resumed = goal.status_reason == REASON_RESUMED && goal.updated_at > since && goal.updated_at <= now;
    if resumed {
        goal.updated_at
    } else {
        now
    }
}

/// A guarded write of the tick's goal through one boxed closure type, so the write machinery is
/// compiled once for every such site (binary size): `Some(true)` written, `Some(false)` stale,
/// `None` failed.
async fn write(tick: &Tick<'_>, mutate: impl FnOnce(&mut Goal) + Send + 'static) -> Option<bool> {
    let mutate: Box<dyn FnOnce(&mut Goal) + Send> = Box::new(mutate);
    match write_goal(&tick.ctx.client, tick.session_id, tick.directory, &tick.guard, mutate).await {
        Ok(GoalWrite::Written(_)) => Some(true),
        Ok(GoalWrite::Stale) => Some(false),
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn goal(fields: serde_json::Value) -> Goal {
        let mut base =
            json!({"id": "g", "status": "active", "objective": "o", "createdAt": 1_000.0, "inactiveSince": 5_000.0});
        for (key, value) in fields.as_object().unwrap() {
            base[key] = value.clone();
        }
        Goal::from_value(&base).unwrap()
    }

    /// Found by the simulator: a resume the runtime saw a minute late (events lost) counted
    /// that minute as active, and a time budget was passed.
    #[test]
    fn a_resume_written_by_another_client_ends_the_wait_when_it_was_written() {
        let resumed = goal(json!({"statusReason": "resumed", "updatedAt": 9_000.0}));
        assert_eq!(resumed_at(&resumed, 70_000.0), 9_000.0);
        // Not a resume, or a stamp before the wait began (another writer's): now.
        assert_eq!(resumed_at(&goal(json!({"updatedAt": 9_000.0})), 70_000.0), 70_000.0);
        assert_eq!(resumed_at(&goal(json!({"statusReason": "resumed", "updatedAt": 4_000.0})), 70_000.0), 70_000.0);
    }
}
