//! One goal tick, stage by stage, each passed once: observe's first reads (`observe.rs`) →
//! ownership (`ownership/stage.rs`: the owner list, the decision, the lease) → guards
//! (`guards.rs`: a guard that cannot be read stops the goal) → the live state (`observe.rs`) →
//! provider limits (`provider/limits.rs`) → plan (`plan.rs`, pure, with the budgets' checks; the
//! time stage `time_gate.rs`, the quiet window, and a stranded message posted again,
//! `strand.rs`) → audit (`audit.rs`, with the evidence read and reviewed in `audit_evidence.rs`)
//! → reserve (`reserve.rs`, echo reactions in `echo.rs`) → deliver (`deliver.rs`, the post in
//! `dispatch.rs`) → settle (`settle.rs`). A [`Tick`] carries what every stage needs.

use std::time::Duration;

use tracing::debug;

use crate::goal::context::{ReadAtStart, Tick, TickContext};
use crate::goal::delivery::deliver::deliver;
use crate::goal::delivery::reserve::reserve;
use crate::goal::delivery::strand;
use crate::goal::guarding::guards;
use crate::goal::observation::observe::{self, Live};
use crate::goal::ownership::stage::decide_owner;
use crate::goal::planning::gates::quiet_remaining;
use crate::goal::planning::plan::{plan_tick, unaudited_reservation, Basis, Plan, Reservation, WaitReason};
use crate::goal::planning::time_gate;
use crate::goal::settling::settle::blocked;
use crate::goal::stages::Stage;
use crate::goal::verdict::audit::audit_turn;
use crate::io::writer::GoalGuard;
use crate::record::cause::CauseCode;
use crate::record::reasons::{NOTE_TURN_CUT, REASON_OBJECTIVE_UNAVAILABLE, REASON_RESUMED, REASON_TURN_FAILED};
use crate::record::GoalStatus;
use crate::sched::{TickOutcome, TickStart};

/// Slack added to a quiet-window back-off, so the next look lands after the window, not on it.
const QUIET_MARGIN_MS: u64 = 20;

/// Runs one tick. `start.attempt` counts consecutive read failures (0 on a normal wake-up); the
/// tick that follows the last allowed retry settles the goal instead of asking for another. The
/// tick enters each stage on `start.watch` (the watchdog's budget; it began in [`Stage::Observe`]).
pub async fn run_tick(ctx: &TickContext, start: TickStart) -> TickOutcome {
    let TickStart { session_id, directory, attempt, generation, watch } = start;
    let (session_id, directory) = (session_id.as_str(), directory.as_str());
    let exhausted = attempt >= ctx.config.max_retry_attempts;
    let (mut started, goal) = match observe::start(ctx, session_id, directory, attempt).await {
        Ok(started) => started,
        Err(outcome) => return outcome,
    };
    let session = &started.read.base.session;
    let goal = match decide_owner(ctx, session, directory, goal, &mut started.early_live).await {
        Ok(goal) => goal,
        Err(outcome) => return outcome,
    };
    let guard = GoalGuard::Exact { revision: goal.revision(), status: GoalStatus::Active, holder: ctx.holder.clone() };
    let objective = observe::effective_objective(ctx, session_id, &goal).await;
    let tick = Tick {
        ctx,
        session_id,
        directory,
        goal,
        guard,
        objective: objective.clone().unwrap_or_default(),
        generation,
        attempt,
        exhausted,
        watch,
    };
    tick.enter(Stage::Guards);
    // A guard that cannot be read stops the goal before anything runs past it.
    if let Some(outcome) = guards::check(&tick).await {
        return outcome;
    }
    if objective.is_none() {
        if exhausted {
            let mut settlement = blocked(&tick.goal, REASON_OBJECTIVE_UNAVAILABLE, CauseCode::MessagesUnavailable);
            settlement.detail = Some("objective file".into());
            return tick.settle(settlement).await;
        }
        tracing::warn!(target: "session_goal", session = session_id, "objective unavailable; retrying");
        return TickOutcome::Retry;
    }
    tick.enter(Stage::Live);
    let live = match started.live(&tick).await {
        Ok(live) => live,
        Err(outcome) => return outcome,
    };
    let (basis, reservation) = match plan_and_audit(&tick, live).await {
        Ok(next) => next,
        Err(outcome) => return outcome,
    };
    continue_goal(&tick, basis, reservation, started.read).await
}

/// Plans the tick on the live state: the time stage and the quiet window first, then the plan's
/// own ends (wait, pause, settle), else the turn to continue, audited or not.
async fn plan_and_audit(tick: &Tick<'_>, live: Live) -> Result<(Basis, Reservation), TickOutcome> {
    // Provider failures and cut turns first: a parked, limited or failed tail is never audited
    // (the plan settles any error the provider table does not name, `turnFailed`).
    tick.enter(Stage::Provider);
    let after = tick.provider_stage(&live.messages).await?;
    let continued = after.messages.is_some();
    let plan =
        plan_tick(&tick.goal, after.messages.as_deref().unwrap_or(&live.messages), tick.ctx.config.max_auto_turns);
    let plan = match plan {
        Plan::Audit(basis) if continued => Plan::ContinueUnaudited(basis),
        plan => plan,
    };
    tick.enter(Stage::Plan);
    if let Plan::Audit(basis) | Plan::ContinueUnaudited(basis) = &plan {
        if let Some(outcome) = time_gate::check(tick, basis).await {
            return Err(outcome);
        }
        if let Some(wait) = quiet_wait(tick, &live, basis) {
            debug!(target: "session_goal", session = tick.session_id, wait_ms = wait.as_millis() as u64, "inside the quiet window; looking again after it");
            return Err(TickOutcome::BackOff(wait + Duration::from_millis(QUIET_MARGIN_MS)));
        }
    }
    match plan {
        // Waiting for the user's first exchange is not being stuck.
        Plan::Wait(WaitReason::NoReplyYet) => Err(TickOutcome::Done),
        Plan::Wait(reason) => Err(waiting(tick, &live, reason).await),
        Plan::Pause(accounting) => {
            if !tick.generation.is_current() {
                return Err(TickOutcome::Done);
            }
            Err(tick.pause(accounting).await)
        }
        Plan::Settle(settlement) => Err(tick.settle(settlement).await),
        Plan::ContinueUnaudited(mut basis) => {
            basis.cut_turn = after.cut;
            let mut reservation = unaudited_reservation(&tick.goal, &basis);
            if let Some(nth) = after.cut {
                // Visible: the note while the next turn runs, and a line in the trail.
                reservation.note = Some(NOTE_TURN_CUT.into());
                tick.append_trail_detached(crate::goal::provider::limits::cut_record(
                    &tick.goal,
                    &basis,
                    nth,
                    tick.now_ms(),
                ));
            }
            Ok((basis, reservation))
        }
        Plan::Audit(basis) => {
            tick.enter(Stage::Audit);
            let reservation = audit_turn(tick, &basis, &live.raw_messages, live.todos).await?;
            Ok((basis, reservation))
        }
    }
}

/// The session is idle, yet its newest message has no finished reply. A user message nothing
/// answers is a stranded message, posted again under its own ids (`strand.rs`). Otherwise it is
/// normally a turn that is just starting (busy follows), so look again with backoff; if it never
/// starts, the turn failed and the goal must not sit active forever.
async fn waiting(tick: &Tick<'_>, live: &Live, reason: WaitReason) -> TickOutcome {
    if reason == WaitReason::TrailingUserMessage {
        tick.enter(Stage::Strand);
        if let Some(outcome) = strand::recover(tick, live).await {
            return outcome;
        }
    }
    debug!(target: "session_goal", session = tick.session_id, ?reason, attempt = tick.attempt, "idle without a finished reply");
    if tick.exhausted {
        let mut settlement = blocked(&tick.goal, REASON_TURN_FAILED, CauseCode::DispatchFailed);
        settlement.detail = Some("no reply".into());
        // A failed write retries (goal/context.rs, `written_outcome`): reporting it settled
        // would leave the goal active with nothing armed.
        return tick.settle(settlement).await;
    }
    TickOutcome::Retry
}

/// The quiet window, from data: whatever order the events came in (a kickoff or follow-up armed
/// during the turn, an idle seen late), nothing is sent within `idleQuietMs` of the tail's
/// completion. Checked before the audit, which only adds time. An explicit resume is the user
/// asking to go on now: its own short kickoff applies.
fn quiet_wait(tick: &Tick<'_>, live: &Live, basis: &Basis) -> Option<Duration> {
    if tick.goal.status_reason == REASON_RESUMED {
        return None;
    }
    let tail = live.messages.iter().find(|m| m.id == basis.tail_message_id);
    quiet_remaining(tail, None, tick.now_ms(), tick.ctx.config.idle_quiet)
}

/// Reserves the turn and posts its continuation: one dispatch per session at a time in this
/// context, from the reservation until the outcome is known (runtimes of one process share a
/// lease holder id; see `DispatchClaims`).
async fn continue_goal(tick: &Tick<'_>, basis: Basis, reservation: Reservation, read: ReadAtStart) -> TickOutcome {
    if !tick.generation.is_current() {
        return TickOutcome::Done;
    }
    // The audit, the checks or a review may have run long: the time budget and the working
    // hours are read again on the clock of the post (the simulator found a review that outlasted
    // both).
    if let Some(outcome) = time_gate::recheck(tick, &basis).await {
        return outcome;
    }
    let Some(_claim) = tick.ctx.dispatch_claims.claim(tick.session_id) else {
        debug!(target: "session_goal", session = tick.session_id, "another runtime of this process is dispatching; backing off");
        return TickOutcome::BackOff(tick.ctx.config.idle_quiet);
    };
    tick.enter(Stage::Reserve);
    let reserved = match reserve(tick, &basis, reservation, read).await {
        Ok(reserved) => reserved,
        Err(outcome) => return outcome,
    };
    tick.enter(Stage::Deliver);
    deliver(tick, &basis, reserved).await
}
