//! The continuation: the time stage again on the clock of the post (an audit, checks or a review
//! may have run long), this process's dispatch claim, the reservation (a guarded write watched
//! for its echo: nothing is posted over a user's change it overwrote), the read-back (the user
//! may have typed, paused, edited or cleared right after it landed), the post under the turn's
//! idempotent id, and how the tick ends on its outcome: sent; stopped by the user (an unused
//! turn goes back); or failed (retried with the same id, or settled `blocked`).

use crate::sched::outcome::TickOutcome;
use std::ops::ControlFlow;

use serde_json::{json, Value};

use super::planning::{budget_spent, hours};
use super::{act, end, late_retry, read, Decide, Flow};
use crate::goal::decide::change::{Change, Extras, ReservedTurn};
use crate::goal::decide::decision::Slot;
use crate::goal::decide::dispatch_rules::{next_classified, next_with_id, Delivery, DispatchNext, Judge};
use crate::goal::decide::gates::lease_wait;
use crate::goal::decide::plan_rules::{blocked, Basis, Reservation, Settlement};
use crate::goal::decide::seen::{Held, Written};
use crate::goal::decide::{Effect, Guard, Need, PauseBefore, Write};
use crate::record::cause::CauseCode;
use crate::record::continuation_id::continuation_message_id_for;
use crate::record::part_id::part_id_for;
use crate::record::reasons::{REASON_DISPATCH_FAILED, REASON_RESUMED, REASON_TIME_BUDGET};
use crate::record::session::SessionView;
use crate::record::{continuation_for_of, Goal, GoalStatus};
use crate::text::prompts;

/// Reserves the turn and posts its continuation, and ends the tick on the outcome.
pub(super) fn deliver(at: &Decide<'_>, objective: &str, basis: Basis, reservation: Reservation) -> Flow {
    let seen = at.seen;
    let claim = seen.plan.dispatch_claim;
    if claim.is_none() {
        if !seen.current {
            return end(TickOutcome::Done);
        }
        budget_spent(at, &basis, at.now)?;
        if let crate::time::hours::HoursGate::WaitUntil(_) = crate::time::hours::goal_gate(at.goal, at.now) {
            hours(at, &basis, at.now, Slot::HoursAgain)?;
        }
    }
    match claim {
        None => return act(Effect::ClaimDispatch),
        // Another runtime of this process is dispatching this session.
        Some(false) => return end(TickOutcome::BackOff(at.config.idle_quiet)),
        Some(true) => {}
    }
    let goal = at.goal;
    let tail = basis.tail_message_id.clone();
    // A reservation left for this tail was counted then; after a resume (OpenChamber's resets
    // the turn count) it is counted again.
    let reused = continuation_for_of(goal) == Some(tail.as_str()) && goal.status_reason != REASON_RESUMED;
    // Every host and every retry derives this same id from the same tail; OpenCode answers a
    // repeated id once.
    let message_id = continuation_message_id_for(&goal.id, &tail, basis.tail_created);
    let (reserved, contested, late) = match seen.held(Slot::Reserved) {
        None => {
            let turn = ReservedTurn {
                reservation: reservation.clone(),
                reused,
                tail,
                message_id,
                tail_output: basis.tail_output,
                cut_turn: basis.cut_turn,
            };
            let change = Change::Reserve(Box::new(turn));
            return act(Effect::Watched(Write {
                change,
                guard: Guard::Reserve,
                keep_owner: false,
                slot: Slot::Reserved,
            }));
        }
        Some(Held::Written { goal, contested, late }) => (goal.as_ref(), *contested, *late),
        Some(Held::Repaired | Held::Stale) => return end(TickOutcome::Done),
        Some(Held::Failed) => return end(at.late_retry()),
    };
    let turn = Turn { basis: &basis, reserved, reused, message_id: message_id.as_deref(), late, tail: &tail };
    posted(at, objective, &reservation, &turn, contested)
}

/// The reserved turn.
struct Turn<'a> {
    basis: &'a Basis,
    /// The goal as the reservation wrote it.
    reserved: &'a Goal,
    reused: bool,
    message_id: Option<&'a str>,
    /// The reservation's echo had not come by its bound.
    late: bool,
    tail: &'a str,
}

/// After the reservation: the read-back, the time budget on the clock of the post, the post, and
/// its outcome.
fn posted(at: &Decide<'_>, objective: &str, reservation: &Reservation, turn: &Turn<'_>, contested: bool) -> Flow {
    let seen = &at.seen.deliver;
    if contested && !seen.waited {
        // The other host's post, if its read-back passed before our write replaced its lease,
        // shows up as a moved tail by then: one post at the wire, not two of the same id.
        return act(Effect::Pause { wait: at.config.dispatch_retry_delay, before: PauseBefore::ReadBack });
    }
    let Some(read_back) = &seen.read_back else { return read(Need::ReadBack) };
    let fresh = match &read_back.session {
        Ok(fresh) => fresh,
        Err(_) => return end(at.late_retry()),
    };
    if let Some(outcome) = standing(fresh, turn.reserved, &at.seen.holder, at.now) {
        late_repair(at, turn)?;
        let stopped = fresh.goal().is_some_and(|g| g.id == turn.reserved.id && g.status != GoalStatus::Active);
        if !turn.reused && stopped {
            give_back(at, turn)?;
        }
        return end(outcome);
    }
    match &read_back.newest {
        Err(_) => return end(at.late_retry()),
        Ok(newest) if newest != turn.tail => {
            // Ending without posting: an echo that came late may show a user's change our
            // reservation overwrote (another host's post moved the tail meanwhile). The newer
            // message's turn is looked at after one quiet window: its events may never come (a
            // restart cut it, or they were lost while the stream was down).
            late_repair(at, turn)?;
            return end(TickOutcome::Rearm);
        }
        _ => {}
    }
    match dispatch(at, objective, reservation, turn)? {
        Delivery::Sent if !seen.announced => act(Effect::AnnounceContinuation),
        Delivery::Sent => end(TickOutcome::Continued),
        Delivery::Stopped { unused } => {
            late_repair(at, turn)?;
            if unused && !turn.reused {
                // Declined inside unless the stored goal is stopped and still holds this reservation.
                give_back(at, turn)?;
            }
            // Stopped on a fresh read (no event said so): plan again, which settles on what the
            // user did.
            end(if at.seen.current { TickOutcome::Rearm } else { TickOutcome::Done })
        }
        Delivery::Failed { refused } => failed(at, turn, refused),
    }
}

/// The continuation's post, attempt by attempt (`dispatch_rules.rs`): the prompt on the session's
/// model, agent and variant, under the turn's message id (its text part under the id derived
/// from it, so a re-post replaces the part). `Continue` with how it ended.
fn dispatch(at: &Decide<'_>, objective: &str, reservation: &Reservation, turn: &Turn<'_>) -> Flow<Delivery> {
    let steps = &at.seen.deliver.dispatch;
    if steps.is_empty() {
        if let Some(outcome) = out_of_time(at, turn) {
            return ControlFlow::Break(outcome);
        }
    }
    let reserved = turn.reserved;
    let mut text = match reservation.wrap_up {
        Some(limit) => super::wrap_up::prompt(objective, reserved, limit, at.config.max_auto_turns, at.now),
        None => prompts::continuation_prompt(
            objective,
            reserved.tokens_used,
            reserved.token_budget,
            reserved.turns_used.min(u32::MAX as u64) as u32,
            at.config.max_auto_turns.min(u32::MAX as u64) as u32,
        ),
    };
    if let Some(appendix) = &reservation.appendix {
        text.push_str("\n\n");
        text.push_str(appendix);
    }
    let still_ours = |fresh: &SessionView| standing(fresh, reserved, &at.seen.holder, at.now).is_none();
    let judge = Judge {
        attempts: at.config.max_dispatch_attempts,
        retry_delay: at.config.dispatch_retry_delay,
        current: at.seen.current,
        still_ours: &still_ours,
        session_id: &at.seen.session_id,
        tail: turn.tail,
        text: &text,
    };
    let next = if turn.message_id.is_some() { next_with_id(steps, &judge) } else { next_classified(steps, &judge) };
    match next {
        DispatchNext::Post => {
            let mut body = prompt_body(turn.basis, &text, turn.message_id);
            if let Some(id) = turn.message_id {
                body["messageID"] = Value::from(id);
            }
            act(Effect::Post { body, message_id: turn.message_id.map(str::to_string) })
        }
        DispatchNext::Pause(wait) => act(Effect::Pause { wait, before: PauseBefore::Retry }),
        DispatchNext::ReadSession => read(Need::PostSession),
        DispatchNext::ReadStored => read(Need::Stored(turn.message_id.unwrap_or_default().to_string())),
        DispatchNext::Reconcile => read(Need::Reconcile),
        DispatchNext::Done(delivery) => ControlFlow::Continue(delivery),
    }
}

/// The `prompt_async` body: the continuation text on the session's model, agent and variant.
/// With a message id, its text part carries the id derived from it (`record/part_id.rs`).
pub fn prompt_body(basis: &Basis, text: &str, message_id: Option<&str>) -> Value {
    let mut part = json!({ "type": "text", "text": text });
    if let Some(id) = message_id.and_then(|id| part_id_for(id, 0)) {
        part["id"] = Value::from(id);
    }
    Value::Object(basis.target.prompt_body(vec![part]))
}

/// Whether the goal read back after the reservation is still the one this tick reserved for:
/// `None` when it is; otherwise how the tick ends. A paused, finished or cleared goal ends it;
/// an edited (or replaced) goal still active is planned again after a quiet window, with its new
/// objective; another runtime's lease backs off.
fn standing(fresh: &SessionView, reserved: &Goal, holder: &str, now: f64) -> Option<TickOutcome> {
    let Some(goal) = fresh.goal().filter(|g| g.status == GoalStatus::Active) else {
        return Some(TickOutcome::Done);
    };
    if goal.revision() != reserved.revision() {
        return Some(TickOutcome::Rearm);
    }
    lease_wait(&goal, holder, now).map(TickOutcome::BackOff)
}

/// The time budget ran out between the reservation and the post (a slow read-back): no turn
/// starts past it. The goal settles `budgetLimited` and the reserved, unused turn goes back.
fn out_of_time(at: &Decide<'_>, turn: &Turn<'_>) -> Option<super::Decision> {
    if !crate::goal::decide::budgets::time::budget_reached(turn.reserved, at.now) {
        return None;
    }
    let accounting = turn.basis.accounting.clone();
    let settlement = Settlement::new(GoalStatus::BudgetLimited, REASON_TIME_BUDGET, CauseCode::TimeBudget, accounting);
    let extras = Extras { give_back: !turn.reused, ..Extras::default() };
    Some(at.settle(settlement, extras, Guard::Reserved, None))
}

/// Every attempt failed. With an id, an ambiguous failure may have landed or may not: a later
/// tick over the same tail reuses the reservation and posts the same id again, which cannot make
/// a second turn. Only once the retries are spent does the goal settle `blocked`; only a turn
/// provably never admitted is given back.
fn failed(at: &Decide<'_>, turn: &Turn<'_>, refused: bool) -> Flow {
    if !at.seen.current {
        late_repair(at, turn)?;
        return end(TickOutcome::Done);
    }
    if !refused && turn.message_id.is_some() && !at.exhausted() {
        return end(late_retry(at.seen, at.config, 1));
    }
    let mut settlement = blocked(turn.reserved, REASON_DISPATCH_FAILED, CauseCode::DispatchFailed);
    settlement.accounting = turn.basis.accounting.clone();
    let extras = Extras { give_back: refused && !turn.reused, ..Extras::default() };
    ControlFlow::Break(at.settle(settlement, extras, Guard::Reserved, None))
}

/// Before the tick ends without posting, a reservation's echo that had not come is looked for
/// once more; it may show a user's change the reservation overwrote (then written back, and the
/// tick is done).
fn late_repair(at: &Decide<'_>, turn: &Turn<'_>) -> Flow {
    if !turn.late {
        return ControlFlow::Continue(());
    }
    match at.seen.deliver.repaired_late {
        None => act(Effect::HearLate),
        Some(true) => end(TickOutcome::Done),
        Some(false) => ControlFlow::Continue(()),
    }
}

/// The user stopped the goal after the reservation and before anything was posted: the turn was
/// never used, so it goes back (only while the stored goal still carries this reservation).
fn give_back(at: &Decide<'_>, turn: &Turn<'_>) -> Flow {
    match at.seen.written(Slot::GiveBack) {
        None => {
            let change = Change::GiveBackTurn { turns_used: turn.reserved.turns_used, tail: turn.tail.to_string() };
            act(Effect::Write(Write { change, guard: Guard::SameId, keep_owner: false, slot: Slot::GiveBack }))
        }
        Some(Written::Goal(_) | Written::Stale | Written::Failed) => ControlFlow::Continue(()),
    }
}
