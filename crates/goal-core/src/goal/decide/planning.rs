//! The plan, on the live state as read: the plan's own ends (wait, pause, settle), the time stage
//! (a spent time budget, working hours), the quiet window, a stranded message posted again, and
//! otherwise the turn to continue, audited or not.

use crate::sched::outcome::TickOutcome;
use std::ops::ControlFlow;
use std::time::Duration;

use super::provider::{cut_record, Window};
use super::{act, after_write, end, write, Decide, Flow, MARGIN};
use crate::goal::decide::budgets::time as time_budget;
use crate::goal::decide::causes::cause_of;
use crate::goal::decide::change::{Change, Extras};
use crate::goal::decide::gates::quiet_remaining;
use crate::goal::decide::notify::trail_line;
use crate::goal::decide::plan_rules::{
    blocked, plan_tick, unaudited_reservation, Basis, Plan, Reservation, Settlement, WaitReason,
};
use crate::goal::decide::seen::{Live, Written};
use crate::goal::decide::strand_rules::{next_step, repost_body, stranded_tail, StrandStep, MAX_REPOSTS};
use crate::goal::decide::{Effect, Guard, Line, Slot, Write};
use crate::record::cause::CauseCode;
use crate::record::reasons::{
    NOTE_TURN_CUT, REASON_MESSAGE_UNANSWERED, REASON_RESUMED, REASON_TIME_BUDGET, REASON_TURN_FAILED,
    REASON_WAITING_FOR_HOURS,
};
use crate::record::{Goal, GoalStatus, Reposted};
use crate::time::active::end_inactive;
use crate::time::hours::{self, HoursGate};

/// How the plan goes on.
pub(super) enum Course {
    /// Continue without an audit (compaction, resume over an abort, truncation, a cut turn).
    Continue(Basis, Box<Reservation>),
    /// Audit the turn first.
    Audit(Basis),
}

/// Plans the tick on the live state (and the provider stage's window).
pub(super) fn plan(at: &Decide<'_>, live: &Live, window: &Window) -> Flow<Course> {
    let (seen, goal) = (at.seen, at.goal);
    let messages = window.messages.as_deref().unwrap_or(&live.messages);
    let plan = match plan_tick(goal, messages, at.config.max_auto_turns) {
        Plan::Audit(basis) if window.messages.is_some() => Plan::ContinueUnaudited(basis),
        plan => plan,
    };
    let now = seen.live_at;
    if let Plan::Audit(basis) | Plan::ContinueUnaudited(basis) = &plan {
        budget_spent(at, basis, now)?;
        hours(at, basis, now, Slot::Hours)?;
        if let Some(wait) = quiet_wait(goal, live, basis, now, at.config.idle_quiet) {
            return end(TickOutcome::BackOff(wait + MARGIN));
        }
    }
    match plan {
        // Waiting for the user's first exchange is not being stuck.
        Plan::Wait(WaitReason::NoReplyYet) => end(TickOutcome::Done),
        Plan::Wait(reason) => waiting(at, live, reason),
        Plan::Pause(_) if !seen.current => end(TickOutcome::Done),
        Plan::Pause(accounting) => {
            let write =
                Write { change: Change::Pause(accounting), guard: Guard::Tick, keep_owner: false, slot: Slot::Paused };
            act(Effect::Settle { write, trail: None })
        }
        Plan::Settle(settlement) => ControlFlow::Break(at.settle(settlement, Extras::default(), Guard::Tick, None)),
        Plan::ContinueUnaudited(mut basis) => {
            basis.cut_turn = window.cut;
            let mut reservation = unaudited_reservation(goal, &basis);
            if let Some(nth) = window.cut {
                // Visible: the note while the next turn runs, and a line in the trail.
                reservation.note = Some(NOTE_TURN_CUT.into());
                if !seen.trailed(Slot::CutTrail) {
                    let record = cut_record(goal, &basis, nth, at.now);
                    return act(Effect::Trail(Line { record, detached: true, slot: Slot::CutTrail }));
                }
            }
            ControlFlow::Continue(Course::Continue(basis, Box::new(reservation)))
        }
        Plan::Audit(basis) => ControlFlow::Continue(Course::Audit(basis)),
    }
}

/// The quiet window, from data: whatever order the events came in, nothing is sent within
/// `idleQuietMs` of the tail's completion. An explicit resume is the user asking to go on now.
fn quiet_wait(goal: &Goal, live: &Live, basis: &Basis, now: f64, quiet: Duration) -> Option<Duration> {
    if goal.status_reason == REASON_RESUMED {
        return None;
    }
    let tail = live.messages.iter().find(|m| m.id == basis.tail_message_id);
    quiet_remaining(tail, None, now, quiet)
}

/// A spent time budget settles the goal `budgetLimited`, judged on the goal with a waiting period
/// a resume ended closed at the resume.
pub(super) fn budget_spent(at: &Decide<'_>, basis: &Basis, now: f64) -> Flow {
    let goal = at.goal;
    let mut judged = goal.clone();
    if judged.inactive_since.is_present() && judged.status_reason == REASON_RESUMED {
        end_inactive(&mut judged, resumed_at(goal, now));
    }
    if !time_budget::budget_reached(&judged, now) {
        return ControlFlow::Continue(());
    }
    let status = GoalStatus::BudgetLimited;
    let line = trail_line(goal, &basis.tail_message_id, status.as_str(), REASON_TIME_BUDGET, now);
    let settlement = Settlement::new(status, REASON_TIME_BUDGET, CauseCode::TimeBudget, basis.accounting.clone());
    let line = Line { record: line, detached: false, slot: Slot::Settled };
    ControlFlow::Break(at.settle(settlement, Extras::default(), Guard::Tick, Some(line)))
}

/// Working hours: outside them the goal waits (nothing sent) until the window opens, and says
/// so once; back inside, its waiting period is closed. `slot` says whose step this is (the
/// plan's, [`Slot::Hours`], or the post's recheck, [`Slot::HoursAgain`]).
pub(super) fn hours(at: &Decide<'_>, basis: &Basis, now: f64, slot: Slot) -> Flow {
    let goal = at.goal;
    let trail_slot = if slot == Slot::Hours { Slot::HoursTrail } else { Slot::HoursAgainTrail };
    let (written, trailed) = (at.seen.written(slot), at.seen.trailed(trail_slot));
    match hours::goal_gate(goal, now) {
        HoursGate::WaitUntil(opens) => {
            if goal.status_reason != REASON_WAITING_FOR_HOURS || !goal.inactive_since.is_present() {
                match written {
                    None => {
                        let cause =
                            cause_of(CauseCode::WaitingForHours, now, &at.seen.session_id, None).with_until(opens);
                        return act(write(Change::HoursWait(cause), slot));
                    }
                    Some(Written::Goal(_)) if !trailed => {
                        let record = trail_line(goal, &basis.tail_message_id, "wait", REASON_WAITING_FOR_HOURS, now);
                        return act(Effect::Trail(Line { record, detached: false, slot: trail_slot }));
                    }
                    Some(_) => {}
                }
            }
            end(TickOutcome::BackOff(super::wait_until(opens, now)))
        }
        HoursGate::Open if goal.inactive_since.is_present() || goal.status_reason == REASON_WAITING_FOR_HOURS => {
            // Back from waiting (for the user or for working hours): the waiting period closes,
            // at the resume's own write when another client resumed it.
            match written {
                None => act(write(Change::HoursResume { ended: resumed_at(goal, now) }, slot)),
                Some(written) => after_write(written, at.late_retry()),
            }
        }
        HoursGate::Open => ControlFlow::Continue(()),
    }
}

/// When the goal's waiting period ended: the resume's own write time (`updatedAt` of a goal that
/// reads `resumed`, read before any write of this tick), else now.
pub fn resumed_at(goal: &Goal, now: f64) -> f64 {
    let since = goal.inactive_since.get().copied().unwrap_or(0.0);
    let resumed = goal.status_reason == REASON_RESUMED && goal.updated_at > since && goal.updated_at <= now;
    if resumed {
        goal.updated_at
    } else {
        now
    }
}

/// The session is idle, yet its newest message has no finished reply. A user message nothing
/// answers is a stranded message, posted again under its own ids. Otherwise it is normally a
/// turn just starting (busy follows), so look again with backoff; if it never starts, the turn
/// failed and the goal must not sit active forever.
fn waiting<T>(at: &Decide<'_>, live: &Live, reason: WaitReason) -> Flow<T> {
    if reason == WaitReason::TrailingUserMessage {
        strand(at, live)?;
    }
    if at.exhausted() {
        let mut settlement = blocked(at.goal, REASON_TURN_FAILED, CauseCode::DispatchFailed);
        settlement.detail = Some("no reply".into());
        return ControlFlow::Break(at.settle(settlement, Extras::default(), Guard::Tick, None));
    }
    end(TickOutcome::Retry)
}

/// A stranded message: waits out the quiet window, is posted again under its own ids (each post
/// recorded in the goal before it goes out, so every host and every restart counts the same
/// posts), and after the last one the goal settles `blocked`. `Continue`: no stranded message.
fn strand(at: &Decide<'_>, live: &Live) -> Flow {
    let Some(tail) = stranded_tail(&live.messages) else { return ControlFlow::Continue(()) };
    let (seen, quiet) = (at.seen, at.config.idle_quiet);
    match next_step(tail, at.goal.reposted.get(), seen.live_at, quiet) {
        StrandStep::Wait(wait) => end(TickOutcome::BackOff(wait + MARGIN)),
        StrandStep::GiveUp => give_up(at, &tail.id),
        StrandStep::Repost { posts } => {
            let entry = live.raw.get(tail.index).filter(|e| e["info"]["id"].as_str() == Some(tail.id.as_str()));
            match entry.and_then(repost_body) {
                Some(body) => repost(at, &tail.id, posts, body),
                None => give_up(at, &tail.id),
            }
        }
    }
}

/// Records post number `posts`, then posts the message again; looks again a quiet window later.
fn repost(at: &Decide<'_>, message_id: &str, posts: u64, body: serde_json::Value) -> Flow {
    let plan = &at.seen.plan;
    match plan.dispatch_claim {
        None if !at.seen.current => return end(TickOutcome::Done),
        None => return act(Effect::ClaimDispatch),
        Some(false) => return end(TickOutcome::BackOff(at.config.idle_quiet)),
        Some(true) => {}
    }
    match at.seen.written(Slot::Reposted) {
        None => {
            let record = Reposted { message_id: message_id.to_string(), posts, at: at.now };
            return act(write(Change::Reposted(record), Slot::Reposted));
        }
        Some(written) => after_write(written, at.late_retry())?,
    }
    if !plan.repost_sent {
        if !at.seen.current {
            return end(TickOutcome::Done);
        }
        return act(Effect::Repost { message_id: message_id.to_string(), body });
    }
    end(TickOutcome::BackOff(at.config.idle_quiet + MARGIN))
}

/// Posted [`MAX_REPOSTS`] times (or not postable) and still unanswered: `blocked`; a resume is
/// the user asking to try again, and gets its own posts.
fn give_up<T>(at: &Decide<'_>, message_id: &str) -> Flow<T> {
    let mut settlement = blocked(at.goal, REASON_MESSAGE_UNANSWERED, CauseCode::DispatchFailed);
    settlement.detail = Some(format!("message {message_id} unanswered after {MAX_REPOSTS} posts"));
    let extras = Extras { clear_reposted: true, ..Extras::default() };
    ControlFlow::Break(at.settle(settlement, extras, Guard::Tick, None))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn goal(fields: serde_json::Value) -> Goal {
        let mut base =
            json!({"id": "g", "status": "active", "objective": "o", "createdAt": 1_000.0, "inactiveSince": 5_000.0});
        for (key, value) in fields.as_object().expect("fields") {
            base[key] = value.clone();
        }
        Goal::from_value(&base).expect("a goal")
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
