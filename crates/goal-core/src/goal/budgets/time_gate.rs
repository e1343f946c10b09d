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
use crate::record::reasons::{REASON_TIME_BUDGET, REASON_WAITING_FOR_HOURS};
use crate::record::{Goal, GoalStatus};
use crate::sched::TickOutcome;
use crate::time::active::{begin_inactive, end_inactive, time_budget_reached};
use crate::time::hours::{self, HoursGate};

/// Time budget and working hours. `Some` ends the tick: settled `budgetLimited`, or waiting
/// until the window opens.
pub async fn check(tick: &Tick<'_>, basis: &Basis) -> Option<TickOutcome> {
    let now = tick.now_ms();
    let goal = &tick.goal;
    if time_budget_reached(goal, now) {
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
                let written = write(tick, move |g: &mut Goal| {
                    end_inactive(g, now);
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
                    None => return Some(TickOutcome::Retry),
                }
            }
            None
        }
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
