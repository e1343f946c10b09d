//! The dispatch stage, after the reservation: the goal and the tail are read back (the user may
//! have typed, paused, edited or cleared right after the reservation landed), the continuation
//! is posted (see `dispatch.rs`), and the outcome decides how the tick ends: sent; stopped by the
//! user (an unused turn goes back); or failed (retried with the same id, or settled `blocked`).

use serde_json::{json, Value};
use tracing::{info, warn};

use crate::error::Cancelled;
use crate::goal::context::Tick;
use crate::goal::delivery::dispatch::{Delivery, Dispatch};
use crate::goal::delivery::echo::repaired_late;
use crate::goal::delivery::reserve::Reserved;
use crate::goal::planning::plan::Basis;
use crate::goal::settling::settle::blocked;
use crate::io::writer::{continuation_for_of, try_write_goal, GoalGuard, GoalUpdate};
use crate::record::cause::CauseCode;
use crate::record::part_id::part_id_for;
use crate::record::reasons::REASON_DISPATCH_FAILED;
use crate::record::session::{chronological, SessionView};
use crate::record::{Goal, GoalStatus};
use crate::sched::TickOutcome;
use crate::text::prompts;

/// Reads back, posts the continuation of the reserved turn, and ends the tick on the outcome.
pub async fn deliver(tick: &Tick<'_>, basis: &Basis, reserved: Reserved) -> TickOutcome {
    let ctx = tick.ctx;
    let mut text = prompts::continuation_prompt(
        &tick.objective,
        reserved.goal.tokens_used,
        reserved.goal.token_budget,
        reserved.goal.turns_used.min(u32::MAX as u64) as u32,
        ctx.config.max_auto_turns.min(u32::MAX as u64) as u32,
    );
    if let Some(appendix) = &reserved.appendix {
        text.push_str("\n\n");
        text.push_str(appendix);
    }
    let body = prompt_body(basis, &text, reserved.message_id.as_deref());
    if reserved.contested {
        // The other host's post, if its read-back passed before our write replaced its lease,
        // shows up as a moved tail by then: one post at the wire, not two of the same id.
        tokio::time::sleep(ctx.config.dispatch_retry_delay).await;
    }
    if let Some(outcome) = read_back(tick, &reserved).await {
        return outcome;
    }
    let dispatch = Dispatch { tick, body: &body };
    if let Some(id) = &reserved.message_id {
        ctx.own_posts.record(tick.session_id, id);
    }
    let still_ours = |fresh: &SessionView| standing(tick, fresh, &reserved.goal).is_none();
    let delivery = match &reserved.message_id {
        // Every attempt posts the same id: after a timeout or a 5xx it is posted again unless
        // the transcript shows it stored.
        Some(id) => dispatch.with_id(id, still_ours).await,
        // Without an id (unknown tail format) a second post could make a second turn.
        None => dispatch.classified(&reserved.tail, &text, still_ours).await,
    };
    match delivery {
        Delivery::Sent => {
            if let Some(late) = reserved.late {
                crate::goal::delivery::echo::follow_late_echo(tick, late);
            }
            let turn = reserved.goal.turns_used;
            info!(target: "session_goal", session = tick.session_id, turn, "continuation sent");
            let (tokens, budget) = (reserved.goal.tokens_used, reserved.goal.token_budget);
            crate::goal::settling::operator::continuation_sent(
                tick.session_id,
                turn,
                ctx.config.max_auto_turns,
                tokens,
                budget,
            );
            TickOutcome::Continued
        }
        Delivery::Stopped { unused } => stopped(tick, &reserved, unused).await,
        Delivery::Failed { refused } => failed(tick, basis, &reserved, refused).await,
    }
}

/// The `prompt_async` body: the continuation text on the session's model, agent and variant. With
/// a message id, its text part carries the id derived from it, so a re-post of the same id
/// replaces the part instead of appending a copy of the text (`record/part_id.rs`).
fn prompt_body(basis: &Basis, text: &str, message_id: Option<&str>) -> Value {
    let mut part = json!({ "type": "text", "text": text });
    if let Some(id) = message_id.and_then(|id| part_id_for(id, 0)) {
        part["id"] = Value::from(id);
    }
    let mut body = json!({
        "model": { "providerID": basis.target.provider_id, "modelID": basis.target.model_id },
        "parts": [part],
    });
    if !basis.target.agent.is_empty() {
        body["agent"] = Value::from(basis.target.agent.clone());
    }
    if !basis.target.variant.is_empty() {
        body["variant"] = Value::from(basis.target.variant.clone());
    }
    body
}

/// Reads the goal and the tail back after the reservation: only a fresh read shows a user who
/// typed, paused, edited or cleared right after it landed (a host that forwards no events, or an
/// event still in flight). (The id makes a second host's post, or a retry, harmless; it cannot
/// tell that the user stopped.) `Some` ends the tick.
async fn read_back(tick: &Tick<'_>, reserved: &Reserved) -> Option<TickOutcome> {
    let (ctx, session_id, directory) = (tick.ctx, tick.session_id, tick.directory);
    let (fresh_session, tail_messages) = tokio::join!(
        ctx.client.get_session(session_id, directory),
        ctx.client.messages(session_id, directory, ctx.config.message_limit)
    );
    match fresh_session {
        Ok(fresh) => {
            if let Some(outcome) = standing(tick, &fresh, &reserved.goal) {
                if repaired_late(tick, reserved.late.as_ref()).await {
                    return Some(TickOutcome::Done);
                }
                let stopped = fresh.goal().is_some_and(|g| g.id == reserved.goal.id && g.status != GoalStatus::Active);
                if !reserved.reused && stopped {
                    give_back_stopped_turn(tick, &reserved.goal, &reserved.tail).await;
                }
                return Some(outcome);
            }
        }
        Err(error) => {
            warn!(target: "session_goal", session = session_id, %error, "goal re-check failed");
            return Some(tick.late_retry());
        }
    }
    match tail_messages {
        Ok(messages) => {
            let newest = chronological(&messages).last().map(|m| m.id.clone()).unwrap_or_default();
            if newest != reserved.tail {
                info!(target: "session_goal", session = session_id, "tail moved on; continuation dropped");
                // Ending without posting: an echo that came late may show a user's change our
                // reservation overwrote (another host's post moved the tail meanwhile).
                repaired_late(tick, reserved.late.as_ref()).await;
                return Some(TickOutcome::Done);
            }
            None
        }
        Err(error) => {
            warn!(target: "session_goal", session = session_id, %error, "tail re-check failed");
            Some(tick.late_retry())
        }
    }
}

/// The user stopped the goal before the post: an unused turn goes back, and the tick plans
/// again on what the user did (a paused goal ends there; an edited one goes on).
async fn stopped(tick: &Tick<'_>, reserved: &Reserved, unused: bool) -> TickOutcome {
    info!(target: "session_goal", session = tick.session_id, "stopped by the user before dispatch");
    if repaired_late(tick, reserved.late.as_ref()).await {
        return TickOutcome::Done;
    }
    if unused && !reserved.reused {
        // Declined inside unless the stored goal is stopped and still holds this reservation.
        give_back_stopped_turn(tick, &reserved.goal, &reserved.tail).await;
    }
    // Stopped on a fresh read (no event said so): plan again, which settles on what the user did.
    if tick.generation.is_current() {
        TickOutcome::Rearm
    } else {
        TickOutcome::Done
    }
}

/// Every attempt failed. With an id, an ambiguous failure (an overloaded server timing out) may
/// have landed or may not: a later tick over the same tail reuses the reservation and posts the
/// same id again, which cannot make a second turn. Only once the retries are spent does the
/// goal settle `blocked`; only a turn provably never admitted is given back.
async fn failed(tick: &Tick<'_>, basis: &Basis, reserved: &Reserved, refused: bool) -> TickOutcome {
    if !tick.generation.is_current() {
        repaired_late(tick, reserved.late.as_ref()).await;
        return TickOutcome::Done;
    }
    if !refused && reserved.message_id.is_some() && !tick.exhausted {
        warn!(target: "session_goal", session = tick.session_id, "continuation outcome unknown after every attempt; retrying later with the same id");
        return tick.late_retry();
    }
    let mut settlement = blocked(&reserved.goal, REASON_DISPATCH_FAILED, CauseCode::DispatchFailed);
    settlement.accounting = basis.accounting.clone();
    let give_back = refused && !reserved.reused;
    tick.settle_on(&reserved.goal, &reserved.guard, settlement, |g| {
        if give_back {
            g.turns_used = g.turns_used.saturating_sub(1);
        }
        g.continuation_id.clear();
    })
    .await
}

/// The user stopped the goal (paused it, or settled it) after this tick reserved a turn and
/// before anything was posted: the turn was never used, so it goes back, with the reservation.
/// Only while the stored goal still carries exactly this reservation (nobody reserved again).
async fn give_back_stopped_turn(tick: &Tick<'_>, reserved: &Goal, tail: &str) {
    let session_id = tick.session_id;
    let guard = GoalGuard::SameId(reserved.id.clone());
    let result = try_write_goal(&tick.ctx.client, session_id, tick.directory, &guard, |g| {
        if g.status == GoalStatus::Active || g.turns_used != reserved.turns_used || continuation_for_of(g) != Some(tail)
        {
            return Err(Cancelled);
        }
        g.turns_used = g.turns_used.saturating_sub(1);
        g.continuation_for.clear();
        g.continuation_id.clear();
        g.lease.clear();
        Ok(())
    })
    .await;
    match result {
        Ok(GoalUpdate::Written { .. }) => {
            info!(target: "session_goal", session = session_id, "stopped before dispatch; the reserved turn was given back")
        }
        Ok(_) => {}
        Err(error) => {
            warn!(target: "session_goal", session = session_id, %error, "giving back the reserved turn failed")
        }
    }
}

/// Whether the goal read back after the reservation is still the one this tick reserved for:
/// `None` when it is; otherwise how the tick ends. A paused, finished or cleared goal ends it; an
/// edited (or replaced) goal that is still active is planned again after a quiet window, with
/// its new objective; another runtime's lease backs off.
fn standing(tick: &Tick<'_>, fresh: &SessionView, reserved: &Goal) -> Option<TickOutcome> {
    let session_id = tick.session_id;
    let Some(goal) = fresh.goal().filter(|g| g.status == GoalStatus::Active) else {
        info!(target: "session_goal", session = session_id, "goal stopped by the user before dispatch; continuation dropped");
        return Some(TickOutcome::Done);
    };
    if goal.revision() != reserved.revision() {
        info!(target: "session_goal", session = session_id, "goal edited before dispatch; planning again");
        return Some(TickOutcome::Rearm);
    }
    if let Some(wait) = tick.ctx.lease_wait(&goal) {
        info!(target: "session_goal", session = session_id, "lost the lease to another runtime; backing off");
        return Some(TickOutcome::BackOff(wait));
    }
    None
}
