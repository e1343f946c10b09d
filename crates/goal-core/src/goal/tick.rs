//! One goal tick: observe (concurrent reads) → decide (pure) → act (guarded writes, audit,
//! reserved and classified dispatch, notification).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tracing::{debug, info, warn};

use crate::config::GoalConfig;
use crate::goal::dispatch::{continuation_message_id, Delivery, Dispatch, CONTINUATION_ID_FIELD};
use crate::goal::gates::{live_gate, quiet_remaining, LiveGate};
use crate::goal::notify::goal_notification;
use crate::goal::plan::{
    self, after_audit, parse_verdict, plan_tick, unaudited_reservation, AfterAudit, Audit, Basis, Plan, Reservation,
    Settlement, WaitReason, REASON_DISPATCH_FAILED, REASON_MESSAGES_UNAVAILABLE, REASON_OBJECTIVE_UNAVAILABLE,
    REASON_PAUSED_AFTER_ABORT, REASON_RESUMED,
};
use crate::goal::repair::Echo;
use crate::io::opencode::OpenCodeClient;
use crate::io::services::{Services, SmallModelRequest};
use crate::io::writer::{continuation_for_of, write_goal, write_goal_on, BaseRead, GoalGuard, GoalWrite};
use crate::record::lease::{take_lease, LEASE_FIELD};
use crate::record::session::chronological;
use crate::record::{truncate_chars, Goal, GoalStatus, NOTE_CHAR_LIMIT, REASON_CHAR_LIMIT};
use crate::sched::{Generation, TickOutcome};
use crate::text::jsonx::extract_json_object;
use crate::text::prompts;
use crate::text::script_guard::introduces_foreign_script;
use crate::time::clock::now_ms;

/// Everything a tick needs.
#[derive(Clone)]
pub struct TickContext {
    /// OpenCode.
    pub client: OpenCodeClient,
    /// Host services.
    pub services: Services,
    /// Tunables.
    pub config: Arc<GoalConfig>,
    /// Whether the session (or a child) waits for the user (permission, question).
    pub waiting_for_user: Arc<dyn Fn(&str) -> bool + Send + Sync>,
    /// This runtime's lease holder id (several hosts may watch one OpenCode server).
    pub holder: String,
    /// Whether events last showed the session's goal active: the tick then reads the session
    /// and the live state at once (one round trip instead of two); otherwise it reads the
    /// session first, so a session without a goal costs one read.
    pub known_active: Arc<dyn Fn(&str) -> bool + Send + Sync>,
    /// Goal events seen while a reservation is written (lost-update repair).
    pub echoes: Arc<crate::goal::repair::WriteEchoes>,
    /// The dispatch claims of the runtime's context (shared by its runtimes).
    pub dispatch_claims: crate::io::locks::DispatchClaims,
}

/// Longest wait for the echo of the reservation before posting (see [`crate::goal::repair`]).
const ECHO_BOUND: Duration = Duration::from_millis(1_000);

pub use crate::io::writer::CONTINUATION_FOR_FIELD;

/// Status reason while a permission or question is pending.
pub const WAITING_FOR_USER: &str = "waiting for user input";

/// Runs one tick. `attempt` counts consecutive read failures (0 on a normal wake-up); the tick
/// that follows the last allowed retry settles the goal instead of asking for another.
pub async fn run_tick(
    ctx: &TickContext,
    session_id: &str,
    directory: &str,
    attempt: u32,
    generation: Generation,
) -> TickOutcome {
    let exhausted = attempt >= ctx.config.max_retry_attempts;
    // The todo list is evidence for the audit: read beside the live state, so an audited turn
    // spends no extra round trip on it (a tick that ends early just drops it).
    let read_live = || async {
        tokio::join!(
            ctx.client.status_map(directory),
            ctx.client.children(session_id, directory),
            ctx.client.messages_with_raw(session_id, directory, ctx.config.message_limit),
            ctx.client.session_evidence(session_id, directory, "/todo", None),
        )
    };
    // The settings file is read beside the first requests (a disk read would otherwise delay
    // them); when goals are switched off, what was read is dropped unused.
    // The session read may become the reservation's base (no second read when the tick goes
    // straight on): the write epoch is taken before it is sent, and goal events are watched from
    // here (see `repair`).
    let epoch = ctx.client.write_slots().epoch(session_id);
    let watch = ctx.echoes.watch(session_id);
    let read_session = || async {
        let session = ctx.client.get_session(session_id, directory).await;
        (session, Instant::now())
    };
    let (flags, ((session, answered), early_live)) = tokio::join!(ctx.services.data_dir.flags(), async {
        if (ctx.known_active)(session_id) {
            let (session, live) = tokio::join!(read_session(), read_live());
            (session, Some(live))
        } else {
            (read_session().await, None)
        }
    });
    if !flags.goal_enabled {
        return TickOutcome::Done;
    }
    let first_read = match session {
        Ok(session) => BaseRead { session, epoch, answered },
        Err(error) => {
            warn!(target: "session_goal", session = session_id, %error, attempt, "session unreadable");
            // A session the server says is not there is dropped once the retries are spent.
            // A server that is only slow or failing is never given up on: past the last retry,
            // the scheduler looks again after a long pause (an active goal behind it must not
            // wait for the periodic sweep).
            return if exhausted && error.is_definite() { TickOutcome::Done } else { TickOutcome::Retry };
        }
    };
    if first_read.session.is_subagent() {
        return TickOutcome::Done;
    }
    let Some(goal) = first_read.session.goal().filter(|g| g.status == GoalStatus::Active) else {
        return TickOutcome::Done;
    };
    if let Some(wait) = lease_wait(ctx, &goal) {
        debug!(target: "session_goal", session = session_id, "another runtime holds the lease; backing off");
        return TickOutcome::BackOff(wait);
    }
    let guard = GoalGuard::Exact { revision: goal.revision(), status: GoalStatus::Active, holder: ctx.holder.clone() };

    let objective = match effective_objective(ctx, session_id, &goal).await {
        Some(text) => text,
        None if exhausted => {
            return settle(ctx, session_id, directory, &goal, &guard, blocked(&goal, REASON_OBJECTIVE_UNAVAILABLE), "")
                .await;
        }
        None => {
            warn!(target: "session_goal", session = session_id, "objective unavailable; retrying");
            return TickOutcome::Retry;
        }
    };

    let (status, children, messages, todos) = match early_live {
        Some(live) => live,
        None => read_live().await,
    };
    let (status, children, messages) = match (status, children, messages) {
        (Ok(s), Ok(c), Ok(m)) => (s, c, m),
        (s, c, m) => {
            let which = [("status", s.is_err()), ("children", c.is_err()), ("messages", m.is_err())]
                .iter()
                .filter(|(_, failed)| *failed)
                .map(|(name, _)| *name)
                .collect::<Vec<_>>()
                .join(",");
            warn!(target: "session_goal", session = session_id, failed = %which, attempt, "live state unreadable");
            if exhausted {
                return settle(
                    ctx,
                    session_id,
                    directory,
                    &goal,
                    &guard,
                    blocked(&goal, REASON_MESSAGES_UNAVAILABLE),
                    &objective,
                )
                .await;
            }
            return TickOutcome::Retry;
        }
    };
    // The raw list feeds the evidence digest (tool parts), so the audit path reads nothing twice.
    let (messages, raw_messages) = messages;
    match live_gate(&status, session_id, &children, |id| (ctx.waiting_for_user)(id)) {
        LiveGate::Proceed => {}
        LiveGate::Busy => return TickOutcome::Done,
        LiveGate::ChildBusy => {
            debug!(target: "session_goal", session = session_id, "child busy; re-arming");
            return TickOutcome::Rearm;
        }
        LiveGate::WaitingForUser => {
            if goal.status_reason != WAITING_FOR_USER && goal.status_reason != REASON_RESUMED {
                note_waiting(ctx, session_id, directory, &guard).await;
            }
            return TickOutcome::Done;
        }
    }

    let plan = plan_tick(&goal, &messages, ctx.config.max_auto_turns);
    // [evidence hook] time budget and working hours, before any audit or continuation.
    if let Plan::Audit(basis) | Plan::ContinueUnaudited(basis) = &plan {
        if let Some(outcome) =
            crate::goal::evidence::gate(ctx, session_id, directory, &goal, &guard, &objective, basis).await
        {
            return outcome;
        }
    }
    // The quiet window, from data: whatever order the events came in (a kickoff or follow-up
    // armed during the turn, an idle seen late), nothing is sent within `idleQuietMs` of the
    // tail's completion. Checked before the audit, which only adds time. An explicit resume is
    // the user asking to go on now: its own short kickoff applies.
    let resumed = goal.status_reason == REASON_RESUMED;
    if let (Plan::Audit(basis) | Plan::ContinueUnaudited(basis), false) = (&plan, resumed) {
        let tail = messages.iter().find(|m| m.id == basis.tail_message_id);
        if let Some(wait) = quiet_remaining(tail, None, now_ms(), ctx.config.idle_quiet) {
            debug!(target: "session_goal", session = session_id, wait_ms = wait.as_millis() as u64, "inside the quiet window; looking again after it");
            return TickOutcome::BackOff(wait + Duration::from_millis(QUIET_MARGIN_MS));
        }
    }
    let (basis, reservation) = match plan {
        Plan::Wait(WaitReason::NoReplyYet) => {
            // Waiting for the user's first exchange is not being stuck.
            return TickOutcome::Done;
        }
        Plan::Wait(reason) => {
            // The session is idle, yet its newest message has no finished reply: normally a
            // turn that is just starting (busy follows), so look again with backoff; if it never
            // starts, the turn failed and the goal must not sit active forever.
            debug!(target: "session_goal", session = session_id, ?reason, attempt, "idle without a finished reply");
            if exhausted {
                settle(ctx, session_id, directory, &goal, &guard, blocked(&goal, plan::REASON_TURN_FAILED), &objective)
                    .await;
                return TickOutcome::Settled;
            }
            return TickOutcome::Retry;
        }
        Plan::Pause(accounting) => {
            if !generation.is_current() {
                return TickOutcome::Done;
            }
            let result = write_goal(&ctx.client, session_id, directory, &guard, |g| {
                g.status = GoalStatus::Paused;
                g.status_reason = REASON_PAUSED_AFTER_ABORT.into();
                accounting.apply(g);
                g.extra.remove(LEASE_FIELD);
                // [evidence hook] paused time is not active time.
                crate::time::active::begin_inactive(g, now_ms());
            })
            .await;
            log_write(session_id, "pause", &result);
            return written_outcome(&result);
        }
        Plan::Settle(settlement) => {
            return settle(ctx, session_id, directory, &goal, &guard, settlement, &objective).await;
        }
        Plan::ContinueUnaudited(basis) => {
            let reservation = unaudited_reservation(&goal, &basis);
            (basis, reservation)
        }
        Plan::Audit(basis) => {
            if !generation.is_current() {
                return TickOutcome::Done;
            }
            // [evidence hook] read the evidence; the no-progress breaker may settle here.
            let observed = match crate::goal::evidence::observe(
                ctx,
                session_id,
                directory,
                &goal,
                &guard,
                &objective,
                &basis,
                &raw_messages,
                todos,
            )
            .await
            {
                Ok(observed) => observed,
                Err(outcome) => return outcome,
            };
            let (audit, extras) = run_audit(ctx, directory, &objective, &basis, &observed.prompt_block(ctx)).await;
            if !generation.is_current() {
                debug!(target: "session_goal", session = session_id, "invalidated during audit");
                return TickOutcome::Done;
            }
            let decision = after_audit(&goal, &basis, audit.clone());
            // [evidence hook] complete-while-failing review, breaker state, audit trail.
            let decision = match crate::goal::evidence::review(
                ctx,
                session_id,
                &goal,
                &basis,
                &observed,
                audit.as_ref(),
                &extras,
                decision,
            )
            .await
            {
                Ok(decision) => decision,
                Err(outcome) => return outcome,
            };
            match decision {
                AfterAudit::Settle(settlement) => {
                    return settle(ctx, session_id, directory, &goal, &guard, settlement, &objective).await;
                }
                AfterAudit::Continue(reservation) => (basis, reservation),
            }
        }
    };
    let read = ReadAtStart { base: first_read, watch };
    continue_goal(ctx, session_id, directory, &goal, &objective, basis, reservation, generation, exhausted, read).await
}

/// The tick's first session read, and the goal-event watch started just before it.
struct ReadAtStart {
    base: BaseRead,
    watch: crate::goal::repair::WatchGuard,
}

/// Slack added to a quiet-window back-off, so the next look lands after the window, not on it.
const QUIET_MARGIN_MS: u64 = 20;

/// How long to wait when another runtime's lease is live.
fn lease_wait(ctx: &TickContext, goal: &Goal) -> Option<Duration> {
    crate::goal::gates::lease_wait(goal, &ctx.holder, now_ms())
}

async fn effective_objective(ctx: &TickContext, session_id: &str, goal: &Goal) -> Option<String> {
    if goal.objective_file {
        if let Some(text) = ctx.services.data_dir.read_objective(session_id).await {
            return Some(text);
        }
        if goal.objective.is_empty() {
            return None;
        }
        warn!(target: "session_goal", session = session_id, "objective file unreadable; using inline objective");
    }
    Some(goal.objective.clone())
}

fn blocked(goal: &Goal, reason: &str) -> Settlement {
    Settlement {
        status: GoalStatus::Blocked,
        reason: reason.into(),
        note: None,
        accounting: crate::goal::accounting::Accounting::of(goal),
        evaluation: None,
    }
}

fn log_write(session_id: &str, what: &str, result: &Result<GoalWrite, crate::io::opencode::HttpError>) {
    match result {
        Ok(GoalWrite::Written(goal)) => {
            info!(target: "session_goal", session = session_id, what, status = goal.status.as_str(), "goal written")
        }
        Ok(GoalWrite::Stale) => {
            info!(target: "session_goal", session = session_id, what, "goal changed during tick; write dropped")
        }
        Err(error) => warn!(target: "session_goal", session = session_id, what, %error, "goal write failed"),
    }
}

/// Records in `statusReason` that the goal waits on the user (permission or question).
async fn note_waiting(ctx: &TickContext, session_id: &str, directory: &str, guard: &GoalGuard) {
    let result = write_goal(&ctx.client, session_id, directory, guard, |g| {
        if g.status_reason != REASON_RESUMED {
            g.status_reason = WAITING_FOR_USER.into();
        }
        // [evidence hook] waiting for the user is not active time.
        crate::goal::evidence::begin_waiting_for_user(g);
    })
    .await;
    log_write(session_id, "waiting", &result);
}

/// How a tick ends after a terminal write: written, settled; the goal changed meanwhile, done
/// (the change brings its own wake-up); the write failed, retried (a terminal decision that was
/// never stored would otherwise leave the goal active with nothing armed).
fn written_outcome(result: &Result<GoalWrite, crate::io::opencode::HttpError>) -> TickOutcome {
    match result {
        Ok(GoalWrite::Written(_)) => TickOutcome::Settled,
        Ok(GoalWrite::Stale) => TickOutcome::Done,
        Err(_) => TickOutcome::Retry,
    }
}

/// Writes a terminal status and notifies the host; how the tick ends (see [`written_outcome`]).
pub async fn settle(
    ctx: &TickContext,
    session_id: &str,
    directory: &str,
    goal: &Goal,
    guard: &GoalGuard,
    settlement: Settlement,
    objective: &str,
) -> TickOutcome {
    settle_with(ctx, session_id, directory, goal, guard, settlement, objective, |_| {}).await
}

/// [`settle`] with an extra change made in the same write.
#[allow(clippy::too_many_arguments)]
async fn settle_with(
    ctx: &TickContext,
    session_id: &str,
    directory: &str,
    goal: &Goal,
    guard: &GoalGuard,
    settlement: Settlement,
    objective: &str,
    extra: impl FnOnce(&mut Goal) + Send,
) -> TickOutcome {
    let result = write_goal(&ctx.client, session_id, directory, guard, |g| {
        extra(g);
        g.status = settlement.status;
        g.status_reason = truncate_chars(&settlement.reason, REASON_CHAR_LIMIT);
        if let Some(note) = &settlement.note {
            g.note = truncate_chars(note, NOTE_CHAR_LIMIT);
        }
        g.blocked_streak = 0;
        g.audit_fail_streak = 0;
        settlement.accounting.apply(g);
        if let Some((provider, model)) = &settlement.evaluation {
            g.evaluation_provider_id = provider.clone();
            g.evaluation_model_id = model.clone();
        }
        g.extra.remove(CONTINUATION_FOR_FIELD);
        g.extra.remove(CONTINUATION_ID_FIELD);
        g.extra.remove(LEASE_FIELD);
        // [evidence hook] from here the goal is not working (time budget after a resume).
        crate::time::active::begin_inactive(g, now_ms());
    })
    .await;
    log_write(session_id, "settle", &result);
    if let Ok(GoalWrite::Written(written)) = &result {
        crate::goal::operator::settled(session_id, written);
        let flags = ctx.services.data_dir.flags().await;
        if flags.notify_on_completion && written.status != GoalStatus::Paused {
            let objective = if objective.is_empty() { goal.objective.as_str() } else { objective };
            ctx.services.notifier.notify(goal_notification(session_id, directory, written, objective));
        }
    }
    written_outcome(&result)
}

/// Asks the small model for a verdict, with the evidence block. `None` = unavailable or
/// unparseable; the extras carry the cited evidence and the audit's token cost.
async fn run_audit(
    ctx: &TickContext,
    directory: &str,
    objective: &str,
    basis: &Basis,
    evidence_block: &str,
) -> (Option<Audit>, crate::goal::evidence::AuditExtras) {
    let request = SmallModelRequest {
        prompt: format!("{}\n\n{evidence_block}", prompts::audit_user_prompt(objective, &basis.assistant_text)),
        system: format!("{}\n{}", prompts::audit_system_prompt(), crate::evidence::AUDIT_SYSTEM_EVIDENCE),
        directory: directory.to_string(),
        preferred_provider_id: basis.target.provider_id.clone(),
        preferred_model_id: basis.target.model_id.clone(),
        restrict_to_preferred_provider: true,
        max_output_tokens: None,
        timeout_ms: ctx.config.audit_timeout.as_millis() as u64,
    };
    let call = ctx.services.small_model.generate(request);
    let reply = match tokio::time::timeout(ctx.config.audit_timeout + Duration::from_millis(500), call).await {
        Ok(Ok(reply)) => reply,
        Ok(Err(error)) => {
            if !error.is_silent() {
                warn!(target: "session_goal", status = ?error.status, code = %error.code, "progress audit failed");
                crate::goal::operator::audit_failed(
                    &error.status.map(|s| format!("status {s}")).unwrap_or_else(|| error.code.clone()),
                );
            }
            return (None, Default::default());
        }
        Err(_) => {
            warn!(target: "session_goal", "progress audit timed out");
            crate::goal::operator::audit_failed("timed out");
            return (None, Default::default());
        }
    };
    let object = extract_json_object(&reply.text);
    let extras = crate::goal::evidence::audit_extras(object.as_ref(), reply.tokens);
    let parsed = object.as_ref().and_then(parse_verdict);
    let Some((verdict, raw_note)) = parsed else {
        warn!(
            target: "session_goal",
            provider = %reply.provider_id,
            model = %reply.model_id,
            output_chars = reply.text.chars().count(),
            json_object_found = object.is_some(),
            "[session-goal:diagnostic] audit parse failed"
        );
        crate::goal::operator::audit_failed("reply not parseable");
        return (None, extras);
    };
    let mut note = truncate_chars(raw_note.trim(), NOTE_CHAR_LIMIT);
    let reference = format!("{objective}\n{}", basis.assistant_text);
    if introduces_foreign_script(&note, &reference) {
        note.clear();
    }
    (Some(Audit { verdict, note, provider_id: reply.provider_id, model_id: reply.model_id }), extras)
}

#[allow(clippy::too_many_arguments)]
async fn continue_goal(
    ctx: &TickContext,
    session_id: &str,
    directory: &str,
    goal: &Goal,
    objective: &str,
    basis: Basis,
    reservation: Reservation,
    generation: Generation,
    exhausted: bool,
    read: ReadAtStart,
) -> TickOutcome {
    if !generation.is_current() {
        return TickOutcome::Done;
    }
    // One dispatch per session at a time in this context, from the reservation until the outcome
    // is known (runtimes of one process share a lease holder id; see DispatchClaims).
    let Some(_claim) = ctx.dispatch_claims.claim(session_id) else {
        debug!(target: "session_goal", session = session_id, "another runtime of this process is dispatching; backing off");
        return TickOutcome::BackOff(ctx.config.idle_quiet);
    };
    // Reserve the turn before prompting: a crash after this only waits for the next idle; the
    // reverse could send twice. A reservation already made for this same tail is reused. The
    // write only lands when nobody reserved since this tick read the goal.
    let tail = basis.tail_message_id.clone();
    let reused = continuation_for_of(goal) == Some(tail.as_str());
    // Every host and every retry derives this same id from the same tail; OpenCode answers a
    // repeated id once.
    let message_id = continuation_message_id(&goal.id, &tail);
    let reserve_guard = GoalGuard::Reserve {
        revision: goal.revision(),
        holder: ctx.holder.clone(),
        turns_used: goal.turns_used,
        continuation_for: continuation_for_of(goal).map(str::to_string),
    };
    // Watch the goal's events from before the read the write builds on until the write's echo:
    // another writer's pause, clear or edit landing in between shows up there (see `repair`).
    // When the tick went straight on (an audit answered at once, or none), its first read is
    // that base and its watch already runs; otherwise the write reads fresh, watched anew.
    let ReadAtStart { base, watch } = read;
    let (base, watch) = if base.usable() {
        (Some(base), watch)
    } else {
        drop(watch);
        (None, ctx.echoes.watch(session_id))
    };
    let mut read_goal: Option<Goal> = None;
    let written = write_goal_on(&ctx.client, session_id, directory, &reserve_guard, base.as_ref(), |g| {
        read_goal = Some(g.clone());
        reservation.accounting.apply(g);
        if !reused {
            g.turns_used = g.turns_used.saturating_add(1);
        }
        g.blocked_streak = reservation.blocked_streak;
        g.audit_fail_streak = reservation.audit_fail_streak;
        g.status_reason.clear();
        if let Some(note) = &reservation.note {
            g.note = truncate_chars(note, NOTE_CHAR_LIMIT);
        }
        if let Some((provider, model)) = &reservation.evaluation {
            g.evaluation_provider_id = provider.clone();
            g.evaluation_model_id = model.clone();
        }
        for (field, value) in &reservation.goal_fields {
            g.extra.insert(field.clone(), value.clone());
        }
        g.extra.insert(CONTINUATION_FOR_FIELD.into(), Value::from(tail.clone()));
        match &message_id {
            Some(id) => g.extra.insert(CONTINUATION_ID_FIELD.into(), Value::from(id.clone())),
            None => g.extra.remove(CONTINUATION_ID_FIELD),
        };
        take_lease(g, &ctx.holder, now_ms(), ctx.config.lease.as_millis() as f64);
    })
    .await;
    let (written, written_metadata) = match written {
        Ok((write, metadata)) => (Ok(write), metadata),
        Err(error) => (Err(error), None),
    };
    let reserved = match written {
        Ok(GoalWrite::Written(goal)) => *goal,
        other => {
            log_write(session_id, "reserve", &other);
            return if other.is_err() { TickOutcome::Retry } else { TickOutcome::Done };
        }
    };
    let reserved_guard =
        GoalGuard::Exact { revision: reserved.revision(), status: GoalStatus::Active, holder: ctx.holder.clone() };
    let bound = ECHO_BOUND.min(ctx.config.idle_quiet.max(Duration::from_millis(50)));
    let read_value = read_goal.as_ref().map_or(Value::Null, Goal::to_value);
    let written_value = reserved.to_value();
    let reservation_echo = ReservationEcho {
        watch,
        read_value,
        written_value,
        written_metadata,
        reserved: &reserved,
        read_goal: read_goal.as_ref(),
    };
    // An echo that had not come by the bound (a slow event stream) is looked for again when the
    // tick ends without posting: the event that stopped it is often the very write we overwrote.
    let late = match reservation_echo.hear(ctx, session_id, directory, bound).await {
        Heard::Repaired => return TickOutcome::Done,
        Heard::NotYet => Some(reservation_echo),
        Heard::Settled => None,
    };

    let text = prompts::continuation_prompt(
        objective,
        reserved.tokens_used,
        reserved.token_budget,
        reserved.turns_used.min(u32::MAX as u64) as u32,
        ctx.config.max_auto_turns.min(u32::MAX as u64) as u32,
    );
    let mut body = json!({
        "model": { "providerID": basis.target.provider_id, "modelID": basis.target.model_id },
        "parts": [{ "type": "text", "text": text }],
    });
    if !basis.target.agent.is_empty() {
        body["agent"] = Value::from(basis.target.agent.clone());
    }
    if !basis.target.variant.is_empty() {
        body["variant"] = Value::from(basis.target.variant.clone());
    }
    let dispatch = Dispatch {
        client: &ctx.client,
        session_id,
        directory,
        body: &body,
        attempts: ctx.config.max_dispatch_attempts,
        retry_delay: ctx.config.dispatch_retry_delay,
        message_limit: ctx.config.message_limit,
    };

    // Read back: the user may have typed, paused, edited or cleared the goal right after our
    // reservation landed (a host that forwards no events, or an event still in flight), which
    // only a fresh read shows. (The id makes a second host's post, or a retry, harmless; it
    // cannot tell that the user stopped.)
    let (fresh_session, tail_messages) = tokio::join!(
        ctx.client.get_session(session_id, directory),
        ctx.client.messages(session_id, directory, ctx.config.message_limit)
    );
    match fresh_session {
        Ok(fresh) => {
            if let Some(outcome) = standing(ctx, session_id, &fresh, &reserved) {
                if repaired_late(ctx, session_id, directory, late.as_ref()).await {
                    return TickOutcome::Done;
                }
                if !reused && fresh.goal().is_some_and(|g| g.id == reserved.id && g.status != GoalStatus::Active) {
                    give_back_stopped_turn(ctx, session_id, directory, &reserved, &tail).await;
                }
                return outcome;
            }
        }
        Err(error) => {
            warn!(target: "session_goal", session = session_id, %error, "goal re-check failed");
            return TickOutcome::Retry;
        }
    }
    match tail_messages {
        Ok(messages) => {
            let newest = chronological(&messages).last().map(|m| m.id.clone()).unwrap_or_default();
            if newest != tail {
                info!(target: "session_goal", session = session_id, "tail moved on; continuation dropped");
                return TickOutcome::Done;
            }
        }
        Err(error) => {
            warn!(target: "session_goal", session = session_id, %error, "tail re-check failed");
            return TickOutcome::Retry;
        }
    }
    let still_ours =
        |fresh: &crate::record::session::SessionView| standing(ctx, session_id, fresh, &reserved).is_none();
    let delivery = match &message_id {
        // Every attempt posts the same id: a timeout or a 5xx is simply posted again.
        Some(id) => dispatch.with_id(id, &generation, still_ours).await,
        // Without an id (unknown tail format) a second post could make a second turn.
        None => dispatch.classified(&tail, &text, &generation, still_ours).await,
    };
    match delivery {
        Delivery::Sent => {
            info!(target: "session_goal", session = session_id, turn = reserved.turns_used, "continuation sent");
            crate::goal::operator::continuation_sent(session_id, reserved.turns_used, ctx.config.max_auto_turns);
            TickOutcome::Continued
        }
        Delivery::Stopped { unused } => {
            info!(target: "session_goal", session = session_id, "stopped by the user before dispatch");
            if repaired_late(ctx, session_id, directory, late.as_ref()).await {
                return TickOutcome::Done;
            }
            if unused && !reused {
                // Declined inside unless the stored goal is stopped and still holds this
                // reservation.
                give_back_stopped_turn(ctx, session_id, directory, &reserved, &tail).await;
            }
            // Stopped on a fresh read (no event said so): plan again, which settles on what the
            // user did (a paused goal ends there; an edited one goes on with its new content).
            if generation.is_current() {
                TickOutcome::Rearm
            } else {
                TickOutcome::Done
            }
        }
        Delivery::Failed { refused } => {
            if !generation.is_current() {
                repaired_late(ctx, session_id, directory, late.as_ref()).await;
                return TickOutcome::Done;
            }
            // With an id, an ambiguous failure (an overloaded server timing out) may have landed
            // or may not: a later tick over the same tail reuses the reservation and posts the
            // same id again, which cannot make a second turn. Only once the retries are spent
            // does the goal settle.
            if !refused && message_id.is_some() && !exhausted {
                warn!(target: "session_goal", session = session_id, "continuation outcome unknown after every attempt; retrying later with the same id");
                return TickOutcome::Retry;
            }
            let mut settlement = blocked(&reserved, REASON_DISPATCH_FAILED);
            settlement.accounting = basis.accounting.clone();
            // Only a turn that was provably never admitted is given back.
            let give_back = refused && !reused;
            settle_with(ctx, session_id, directory, &reserved, &reserved_guard, settlement, objective, |g| {
                if give_back {
                    g.turns_used = g.turns_used.saturating_sub(1);
                }
                g.extra.remove(CONTINUATION_ID_FIELD);
            })
            .await
        }
    }
}

/// Our whole-metadata write replaced keys another writer had just written (the events show the
/// state before our echo): they are put back beside the dispatch, which they do not concern.
fn restore_lost_foreign_keys(
    ctx: &TickContext,
    session_id: &str,
    directory: &str,
    watch: &crate::goal::repair::WatchGuard,
    written_goal: &Value,
    written: Option<&Value>,
) {
    let Some(written) = written else { return };
    let Some(theirs) = watch.lost_foreign(written_goal, written) else { return };
    info!(target: "session_goal", session = session_id, "the reservation replaced keys another writer had just written; putting them back");
    let ours = crate::record::metadata::foreign_part(written);
    let (client, session, directory) = (ctx.client.clone(), session_id.to_string(), directory.to_string());
    spawn_detached(Box::pin(async move {
        if let Err(error) = crate::io::writer::restore_foreign_keys(&client, &session, &directory, &ours, &theirs).await
        {
            warn!(target: "session_goal", session = %session, %error, "putting back another writer's keys failed");
        }
    }));
}

/// The watch of a reservation's write, with what it needs to judge the echo.
struct ReservationEcho<'a> {
    watch: crate::goal::repair::WatchGuard,
    read_value: Value,
    written_value: Value,
    written_metadata: Option<Value>,
    reserved: &'a Goal,
    read_goal: Option<&'a Goal>,
}

/// What the watch of a reservation heard.
enum Heard {
    /// The reservation overwrote a user's change, which was written back: nothing is sent.
    Repaired,
    /// The echo came; nothing of the user's was overwritten (other keys may have been put back).
    Settled,
    /// No echo within the bound (or no events reach this runtime).
    NotYet,
}

impl ReservationEcho<'_> {
    /// Waits (at most `bound`) for the echo, puts back other writers' keys it shows were
    /// replaced, and writes back a user's goal change it shows was overwritten.
    async fn hear(&self, ctx: &TickContext, session_id: &str, directory: &str, bound: Duration) -> Heard {
        let echo = self.watch.echo(&self.read_value, &self.written_value, now_ms(), bound).await;
        if echo == Echo::Unknown {
            return Heard::NotYet;
        }
        restore_lost_foreign_keys(
            ctx,
            session_id,
            directory,
            &self.watch,
            &self.written_value,
            self.written_metadata.as_ref(),
        );
        match echo {
            Echo::Overwrote(theirs) if !is_competing_reservation(theirs.as_ref(), self.read_goal) => {
                give_back_to_the_user(ctx, session_id, directory, self.reserved, self.read_goal, theirs).await;
                Heard::Repaired
            }
            Echo::Overwrote(_) => {
                // Another host's reservation of the same turn is no user intent to restore: it
                // posts the same message id, and the read-back lets only the lease's holder on.
                debug!(target: "session_goal", session = session_id, "another host reserved the same turn; the read-back decides");
                Heard::Settled
            }
            _ => Heard::Settled,
        }
    }
}

/// A tick ending without posting after its echo came late looks for it once more (see
/// [`ReservationEcho::hear`]); whether a user's change was written back.
async fn repaired_late(
    ctx: &TickContext,
    session_id: &str,
    directory: &str,
    late: Option<&ReservationEcho<'_>>,
) -> bool {
    match late {
        Some(late) => matches!(late.hear(ctx, session_id, directory, ECHO_BOUND).await, Heard::Repaired),
        None => false,
    }
}

/// Whether the goal state our reservation overwrote was another host's reservation of the same
/// turn rather than a user's change: the same goal, active before and after, with the same
/// user-owned content (objective, budget, creation). Pure.
fn is_competing_reservation(theirs: Option<&Value>, read: Option<&Goal>) -> bool {
    let (Some(their_goal), Some(read)) = (theirs.and_then(Goal::from_value), read) else {
        return false;
    };
    their_goal.status == GoalStatus::Active
        && read.status == GoalStatus::Active
        && their_goal.revision() == read.revision()
}

/// Our reservation overwrote another writer's goal state (a pause, clear or edit that landed
/// between our fresh read and our write): write theirs back, unless the goal changed again since
/// our write. The reserved turn goes back with it (their goal carries the count from before).
/// Events carry the goal's known fields only, so theirs is laid over the goal as we read it
/// (the state their writer started from too), which keeps any other field it had.
async fn give_back_to_the_user(
    ctx: &TickContext,
    session_id: &str,
    directory: &str,
    reserved: &Goal,
    read: Option<&Goal>,
    theirs: Option<Value>,
) {
    info!(target: "session_goal", session = session_id, "another writer changed the goal during the reservation; restoring it, nothing sent");
    let ours = reserved.updated_at;
    let theirs = theirs.map(|their_goal| restored_goal(read, their_goal));
    let result =
        crate::io::writer::write_namespace_key(&ctx.client, session_id, directory, "goal", |fresh| {
            match fresh.goal() {
                Some(current) if current.updated_at == ours => Ok(theirs),
                _ => Err(()),
            }
        })
        .await;
    if let Err(error) = result {
        warn!(target: "session_goal", session = session_id, %error, "restoring the other writer's goal failed");
    }
}

/// The other writer's goal (known fields, from an event) laid over the goal as we read it, when
/// it is the same goal; a different goal (replaced) is taken as the event shows it.
fn restored_goal(read: Option<&Goal>, theirs: Value) -> Value {
    let (Some(read), Some(their_fields)) = (read, theirs.as_object()) else { return theirs };
    if their_fields.get("id").and_then(Value::as_str) != Some(read.id.as_str()) {
        return theirs;
    }
    let mut base = read.to_value();
    if let Some(object) = base.as_object_mut() {
        for (key, value) in their_fields {
            object.insert(key.clone(), value.clone());
        }
    }
    base
}

/// The user stopped the goal (paused it, or settled it) after this tick reserved a turn and
/// before anything was posted: the turn was never used, so it goes back, with the reservation.
/// Only while the stored goal still carries exactly this reservation (nobody reserved again).
async fn give_back_stopped_turn(ctx: &TickContext, session_id: &str, directory: &str, reserved: &Goal, tail: &str) {
    let result = crate::io::writer::try_write_goal(
        &ctx.client,
        session_id,
        directory,
        &GoalGuard::SameId(reserved.id.clone()),
        |g| {
            if g.status == GoalStatus::Active
                || g.turns_used != reserved.turns_used
                || continuation_for_of(g) != Some(tail)
            {
                return Err(());
            }
            g.turns_used = g.turns_used.saturating_sub(1);
            g.extra.remove(CONTINUATION_FOR_FIELD);
            g.extra.remove(CONTINUATION_ID_FIELD);
            g.extra.remove(LEASE_FIELD);
            Ok(())
        },
    )
    .await;
    match result {
        Ok(crate::io::writer::GoalUpdate::Written { .. }) => {
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
fn standing(
    ctx: &TickContext,
    session_id: &str,
    fresh: &crate::record::session::SessionView,
    reserved: &Goal,
) -> Option<TickOutcome> {
    let Some(goal) = fresh.goal().filter(|g| g.status == GoalStatus::Active) else {
        info!(target: "session_goal", session = session_id, "goal stopped by the user before dispatch; continuation dropped");
        return Some(TickOutcome::Done);
    };
    if goal.revision() != reserved.revision() {
        info!(target: "session_goal", session = session_id, "goal edited before dispatch; planning again");
        return Some(TickOutcome::Rearm);
    }
    if let Some(wait) = lease_wait(ctx, &goal) {
        info!(target: "session_goal", session = session_id, "lost the lease to another runtime; backing off");
        return Some(TickOutcome::BackOff(wait));
    }
    None
}

/// The event-path pause: an abort landed for this session. Pauses an active goal unless the user
/// resumed it after that abort.
pub async fn pause_after_abort(client: &OpenCodeClient, session_id: &str, directory: &str, aborted_at: f64) -> bool {
    let result = write_goal(client, session_id, directory, &GoalGuard::AnyWithStatus(GoalStatus::Active), |g| {
        let resumed_since = g.status_reason == REASON_RESUMED && aborted_at > 0.0 && aborted_at <= g.updated_at;
        if !resumed_since {
            g.status = GoalStatus::Paused;
            g.status_reason = REASON_PAUSED_AFTER_ABORT.into();
            g.extra.remove(LEASE_FIELD);
            // [evidence hook] paused time is not active time.
            crate::time::active::begin_inactive(g, now_ms());
        }
    })
    .await;
    log_write(session_id, "abort-pause", &result);
    matches!(result, Ok(GoalWrite::Written(ref g)) if g.status == GoalStatus::Paused)
}

/// Runs side work that nothing waits for on the ambient tokio runtime. One boxed future type for
/// every such site, so the task machinery is compiled once (the addon's size is budgeted).
pub(crate) fn spawn_detached(work: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>) {
    tokio::spawn(work);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn goal(status: &str, objective: &str, turns: u64) -> Value {
        json!({"id": "goal-1", "objective": objective, "status": status, "turnsUsed": turns, "createdAt": 1000.0, "updatedAt": 2000.0 + turns as f64})
    }

    #[test]
    fn another_hosts_reservation_is_not_a_user_change() {
        let read = Goal::from_value(&goal("active", "Port the parser", 1)).unwrap();
        // Another host reserved the same turn: only counters, lease and timestamps differ.
        assert!(is_competing_reservation(Some(&goal("active", "Port the parser", 2)), Some(&read)));
        // The user paused, edited or cleared: theirs is restored.
        assert!(!is_competing_reservation(Some(&goal("paused", "Port the parser", 1)), Some(&read)));
        assert!(!is_competing_reservation(Some(&goal("active", "Port the lexer", 1)), Some(&read)));
        assert!(!is_competing_reservation(None, Some(&read)));
        assert!(!is_competing_reservation(Some(&goal("active", "Port the parser", 2)), None));
    }
}
