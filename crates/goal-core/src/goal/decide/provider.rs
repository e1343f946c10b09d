//! The provider stage, before any audit: what the tail reply's error (or its absence, for a turn
//! cut by a restart) means for the goal, by the rules of `limit_rules.rs`: a park (the goal stays
//! active and waits for the reset), the end of a stale park, a settle with a typed cause, or a
//! continuation over the failed or cut reply (not audited). Decided on the time the live state
//! was read.

use crate::sched::outcome::TickOutcome;
use std::ops::ControlFlow;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::{act, after_write, end, read, wait_until, write, Decide, Flow};
use crate::config::ProviderLimits;
use crate::goal::decide::accounting::account;
use crate::goal::decide::causes::cause_of;
use crate::goal::decide::change::{Change, Extras};
use crate::goal::decide::limit_rules::{self, Park, TailStep};
use crate::goal::decide::plan_rules::{Basis, Settlement};
use crate::goal::decide::seen::{Live, Written};
use crate::goal::decide::{Effect, Guard, Line, Need, Slot};
use crate::record::session::{chronological, Message, Role};
use crate::record::{Goal, GoalStatus};

/// What the provider stage leaves to the plan: the window to plan on (the failed or cut reply
/// made plannable when it is continued) and a cut turn's number in the row.
#[derive(Debug, Clone, Default)]
pub struct Window {
    /// The window, when it differs from the one read.
    pub messages: Option<Vec<Message>>,
    /// Set for a cut turn.
    pub cut: Option<u64>,
}

/// What the tail means (the pure part of the stage).
#[derive(Debug, Clone, PartialEq)]
pub enum TailMeaning {
    /// Nothing provider-related: goal as usual.
    Usual,
    /// Continue over the failed (or cut) reply without an audit, on `messages`, where that reply
    /// reads as finished; `cut` is the cut turn's number in the row.
    Continue {
        /// The window with the tail made plannable.
        messages: Vec<Message>,
        /// Set for a cut turn.
        cut: Option<u64>,
    },
    /// Park the goal.
    Park(Park),
    /// Still parked: look again at the wake-up time.
    Wait(Duration),
    /// Settle `blocked` with this stop.
    Block(limit_rules::Stop),
}

/// The provider stage on the live state: `Continue` hands the plan its window.
pub(super) fn stage(at: &Decide<'_>, live: &Live) -> Flow<Window> {
    let (seen, config, goal) = (at.seen, at.config, at.goal);
    let now = seen.live_at;
    match tail_meaning(goal, &live.messages, now, config.provider_limits, seen.attempt, config.idle_quiet) {
        TailMeaning::Usual => {
            let tail = chronological(&live.messages).last().map(|m| m.id.clone()).unwrap_or_default();
            if limit_rules::parked_for(goal).is_some_and(|parked| parked != tail) {
                // A park the tail no longer matches (the user typed, the reply changed) goes.
                match seen.written(Slot::ParkCleared) {
                    None => return act(write(Change::ClearPark, Slot::ParkCleared)),
                    Some(written) => after_write(written, at.late_retry())?,
                }
            }
            ControlFlow::Continue(Window::default())
        }
        TailMeaning::Continue { messages, cut: Some(nth) } => {
            confirm_cut(at, &live.messages)?;
            ControlFlow::Continue(Window { messages: Some(messages), cut: Some(nth) })
        }
        TailMeaning::Continue { messages, cut: None } => {
            ControlFlow::Continue(Window { messages: Some(messages), cut: None })
        }
        TailMeaning::Wait(wait) => end(TickOutcome::BackOff(wait)),
        TailMeaning::Park(park) => parked(at, live, park, now),
        TailMeaning::Block(stop) => {
            let tail = chronological(&live.messages).last().map(|m| m.id.clone()).unwrap_or_default();
            let accounting = account(goal, &live.messages);
            let settlement = Settlement {
                detail: stop.cause.detail.clone(),
                ..Settlement::new(GoalStatus::Blocked, stop.reason, stop.cause.code, accounting)
            };
            let line = crate::goal::decide::notify::trail_line(goal, &tail, "blocked", stop.reason, at.now);
            let extras = Extras { clear_park: true, ..Extras::default() };
            let line = Line { record: line, detached: false, slot: Slot::Settled };
            ControlFlow::Break(at.settle(settlement, extras, Guard::Tick, Some(line)))
        }
    }
}

/// A cut turn is judged on two reads made at once, the transcript's and the status': the
/// status may have been answered after the reply finished. The transcript is read once more: a
/// tail that finished meanwhile is no cut, and the tick looks again after the quiet window (the
/// simulator found a finished turn continued as cut, its tokens never counted).
fn confirm_cut(at: &Decide<'_>, messages: &[Message]) -> Flow {
    let Some(tail) = chronological(messages).last().map(|m| m.id.clone()) else { return ControlFlow::Continue(()) };
    match &at.seen.fresh_tail {
        None => read(Need::FreshTail),
        Some(Ok(fresh)) => match fresh.iter().find(|m| m.id == tail) {
            Some(now) if now.is_completed() || now.error.is_some() => end(TickOutcome::Rearm),
            _ => ControlFlow::Continue(()),
        },
        Some(Err(_)) => end(at.late_retry()),
    }
}

/// A park: written, then its trail line; the tick looks again at the wake-up time.
fn parked<T>(at: &Decide<'_>, live: &Live, park: Park, now: f64) -> Flow<T> {
    let seen = at.seen;
    match seen.written(Slot::Park) {
        None => {
            // The stored cause takes its fix sentence from the cause table, like every other cause.
            let mut park = park;
            park.cause = cause_of(park.cause.code, park.cause.since, &seen.session_id, park.cause.detail.as_deref())
                .with_until(park.until);
            let accounting = account(at.goal, &live.messages);
            act(write(Change::Park(Box::new(park), accounting), Slot::Park))
        }
        Some(Written::Goal(written)) if !seen.trailed(Slot::ParkTrail) => act(Effect::Trail(Line {
            record: park_record(written, &park, now),
            detached: false,
            slot: Slot::ParkTrail,
        })),
        Some(Written::Goal(_)) => end(TickOutcome::BackOff(wait_until(park.until, now))),
        Some(Written::Stale) => end(TickOutcome::Done),
        Some(Written::Failed) => end(at.late_retry()),
    }
}

/// Whether an unfinished tail on an idle session is a cut turn rather than one just starting:
/// seen so on an earlier look of this wake-up (`attempt` > 0), or older than the quiet window.
pub fn cut_confirmed(tail: &Message, attempt: u32, now_ms: f64, quiet: Duration) -> bool {
    attempt > 0 || tail.created.is_some_and(|created| now_ms - created >= quiet.as_millis() as f64)
}

/// What the tail means, from the goal and the message window (the session is idle).
pub fn tail_meaning(
    goal: &Goal,
    messages: &[Message],
    now_ms: f64,
    limits: ProviderLimits,
    attempt: u32,
    quiet: Duration,
) -> TailMeaning {
    let ordered = chronological(messages);
    let Some(tail) = ordered.last().copied() else { return TailMeaning::Usual };
    if tail.role != Role::Assistant {
        return TailMeaning::Usual;
    }
    let confirmed = cut_confirmed(tail, attempt, now_ms, quiet);
    match limit_rules::tail_step(goal, tail, now_ms, limits, confirmed) {
        TailStep::Usual => TailMeaning::Usual,
        TailStep::Park(park) => TailMeaning::Park(park),
        TailStep::Parked { until } => TailMeaning::Wait(wait_until(until, now_ms)),
        TailStep::Block(stop) => TailMeaning::Block(stop),
        TailStep::Resume => TailMeaning::Continue { messages: plannable(messages, &tail.id), cut: None },
        TailStep::ContinueCut { nth } => {
            TailMeaning::Continue { messages: plannable(messages, &tail.id), cut: Some(nth) }
        }
    }
}

/// The window with the reply `tail_id` reading as a finished, error-free reply, so the plan
/// (budget, turn cap, model to continue with) treats it as any other reply.
pub fn plannable(messages: &[Message], tail_id: &str) -> Vec<Message> {
    messages
        .iter()
        .cloned()
        .map(|mut message| {
            if message.id == tail_id {
                message.error = None;
                message.provider_error = None;
                message.completed = message.completed.or(message.created).or(Some(1.0));
                if message.finish.is_empty() || message.finish == "length" {
                    message.finish = "stop".into();
                }
            }
            message
        })
        .collect()
}

/// A trail record of a park.
pub fn park_record(goal: &Goal, park: &Park, now_ms: f64) -> Map<String, Value> {
    let reason = limit_rules::REASON_WAITING_FOR_PROVIDER;
    let mut record = crate::goal::decide::notify::trail_line(goal, &park.tail, "park", reason, now_ms);
    record.insert("until".into(), json!(park.until));
    record.insert("park".into(), json!(park.nth));
    if let Some(detail) = &park.cause.detail {
        record.insert("detail".into(), json!(detail));
    }
    record
}

/// A trail record of a continuation over a cut turn (`nth` in the row): not audited, and why.
pub fn cut_record(goal: &Goal, basis: &Basis, nth: u64, now_ms: f64) -> Map<String, Value> {
    let reason = crate::record::reasons::NOTE_TURN_CUT;
    let action = "continue (turn cut)";
    let mut record = crate::goal::decide::notify::trail_line(goal, &basis.tail_message_id, action, reason, now_ms);
    record.insert("cut".into(), json!(nth));
    record
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(value: Value) -> Vec<Message> {
        Message::list_from_value(&value).unwrap()
    }

    #[test]
    fn a_failed_or_cut_tail_becomes_plannable() {
        let messages = window(json!([
            {"info": {"id": "m1", "role": "user", "time": {"created": 1}}},
            {"info": {"id": "m2", "role": "assistant", "time": {"created": 2},
                "error": {"name": "APIError", "data": {"statusCode": 429}}}},
        ]));
        let fixed = plannable(&messages, "m2");
        assert!(fixed[1].error.is_none() && fixed[1].provider_error.is_none());
        assert_eq!((fixed[1].completed, fixed[1].finish.as_str()), (Some(2.0), "stop"));
        assert_eq!(fixed[0], messages[0]);
    }

    #[test]
    fn the_stage_follows_the_tail() {
        let limits = ProviderLimits::default();
        let quiet = Duration::from_millis(400);
        let goal = Goal::from_value(&json!({"id": "g", "status": "active", "objective": "o"})).unwrap();
        let cut = window(json!([
            {"info": {"id": "m1", "role": "user", "time": {"created": 1000}}},
            {"info": {"id": "m2", "role": "assistant", "time": {"created": 1000}}},
        ]));
        assert_eq!(tail_meaning(&goal, &cut, 1100.0, limits, 0, quiet), TailMeaning::Usual, "may be a turn starting");
        assert!(matches!(
            tail_meaning(&goal, &cut, 1100.0, limits, 1, quiet),
            TailMeaning::Continue { cut: Some(1), .. }
        ));
        assert!(matches!(
            tail_meaning(&goal, &cut, 1500.0, limits, 0, quiet),
            TailMeaning::Continue { cut: Some(1), .. }
        ));
        let user_tail = window(json!([{"info": {"id": "m1", "role": "user", "time": {"created": 1}}}]));
        assert_eq!(tail_meaning(&goal, &user_tail, 5.0, limits, 3, quiet), TailMeaning::Usual);
        assert_eq!(tail_meaning(&goal, &[], 5.0, limits, 3, quiet), TailMeaning::Usual);
        assert_eq!(wait_until(1000.0, 2000.0), Duration::from_millis(20));
    }
}
