//! The tick's evidence hooks (I/O glue around the pure `evidence`, `active_time` and `hours`
//! modules): the time-budget and working-hours gate before any audit, the evidence read and the
//! no-progress breaker, the verdict review (complete while a command fails) and the audit trail.
//! `tick.rs` calls these at marked places and keeps its own flow.

use serde_json::{json, Value};
use tracing::{debug, info};

use crate::evidence::{self, Digest, ProgressState, TurnPrint, OVERRIDES_FIELD, PROGRESS_FIELD, REASON_NO_PROGRESS};
use crate::goal::plan::{AfterAudit, Audit, Basis, Reservation, Settlement, Verdict};
use crate::goal::tick::{settle, TickContext};
use crate::io::writer::{write_goal, GoalGuard, GoalWrite};
use crate::record::{Goal, GoalStatus};
use crate::sched::TickOutcome;
use crate::time::active::{self as active_time, REASON_TIME_BUDGET};
use crate::time::clock::now_ms;
use crate::time::hours::{self, HoursGate};

/// Status reason while the goal waits for its working hours.
pub const REASON_WAITING_FOR_HOURS: &str = "waiting for working hours";

/// What the audit call reported besides the verdict.
#[derive(Debug, Clone, Default)]
pub struct AuditExtras {
    /// Facts the auditor relied on.
    pub evidence: Vec<String>,
    /// What it could not verify.
    pub missing: Vec<String>,
    /// Tokens the audit cost, when the model reported them.
    pub tokens: Option<u64>,
}

/// What the tick observed for the evidence audit.
pub struct Observed {
    /// The digest since the previous audit.
    pub digest: Digest,
    /// The breaker's state after this turn.
    pub state: ProgressState,
}

impl Observed {
    /// The block appended to the audit prompt.
    pub fn prompt_block(&self, ctx: &TickContext) -> String {
        evidence::audit_evidence_block(&self.digest, &ctx.config.evidence.limits)
    }
}

fn record(goal: &Goal, tail: &str, action: &str, reason: &str, now: f64) -> serde_json::Map<String, Value> {
    let mut record = serde_json::Map::new();
    record.insert("time".into(), json!(now));
    record.insert("turn".into(), json!(goal.turns_used));
    record.insert("tail".into(), json!(tail));
    record.insert("action".into(), json!(action));
    if !reason.is_empty() {
        record.insert("reason".into(), json!(reason));
    }
    record.insert("activeMs".into(), json!(active_time::active_ms(goal, now).floor()));
    if let Some(budget) = active_time::time_budget_ms(goal) {
        record.insert("timeBudgetMs".into(), json!(budget));
    }
    record
}

/// Every goal write of these hooks goes through one boxed closure type, so the write machinery is
/// compiled once for all of them (binary size).
async fn write(
    ctx: &TickContext,
    session_id: &str,
    directory: &str,
    guard: &GoalGuard,
    mutate: Box<dyn FnOnce(&mut Goal) + Send + '_>,
) -> Result<GoalWrite, crate::io::opencode::HttpError> {
    write_goal(&ctx.client, session_id, directory, guard, mutate).await
}

async fn append(ctx: &TickContext, session_id: &str, record: serde_json::Map<String, Value>) {
    crate::io::history::append(
        ctx.services.data_dir.root(),
        session_id,
        &Value::Object(record),
        ctx.config.evidence.history_max_records,
    )
    .await;
}

/// Time budget and working hours, checked before any audit or continuation. `Some` ends the
/// tick: settled `budgetLimited`, or waiting (nothing sent) until the window opens.
pub async fn gate(
    ctx: &TickContext,
    session_id: &str,
    directory: &str,
    goal: &Goal,
    guard: &GoalGuard,
    objective: &str,
    basis: &Basis,
) -> Option<TickOutcome> {
    let now = now_ms();
    if active_time::time_budget_reached(goal, now) {
        info!(target: "session_goal", session = session_id, "time budget reached");
        append(
            ctx,
            session_id,
            record(goal, &basis.tail_message_id, GoalStatus::BudgetLimited.as_str(), REASON_TIME_BUDGET, now),
        )
        .await;
        let settlement = Settlement {
            status: GoalStatus::BudgetLimited,
            reason: REASON_TIME_BUDGET.into(),
            note: None,
            accounting: basis.accounting.clone(),
            evaluation: None,
        };
        return Some(settle(ctx, session_id, directory, goal, guard, settlement, objective).await);
    }
    match hours::gate(&goal.extra, now) {
        HoursGate::WaitUntil(opens) => {
            if goal.status_reason != REASON_WAITING_FOR_HOURS
                || !goal.extra.contains_key(active_time::INACTIVE_SINCE_FIELD)
            {
                let result = write(
                    ctx,
                    session_id,
                    directory,
                    guard,
                    Box::new(move |g: &mut Goal| {
                        g.status_reason = REASON_WAITING_FOR_HOURS.into();
                        active_time::begin_inactive(g, now);
                    }),
                )
                .await;
                if matches!(result, Ok(GoalWrite::Written(_))) {
                    append(
                        ctx,
                        session_id,
                        record(goal, &basis.tail_message_id, "wait", REASON_WAITING_FOR_HOURS, now),
                    )
                    .await;
                }
            }
            let wait_ms = (opens - now).max(0.0) + 50.0;
            debug!(target: "session_goal", session = session_id, wait_ms, "outside working hours");
            Some(TickOutcome::BackOff(std::time::Duration::from_millis(wait_ms as u64)))
        }
        HoursGate::Open => {
            // Back from waiting (for the user or for working hours): close the waiting period.
            if goal.extra.contains_key(active_time::INACTIVE_SINCE_FIELD)
                || goal.status_reason == REASON_WAITING_FOR_HOURS
            {
                let result = write(
                    ctx,
                    session_id,
                    directory,
                    guard,
                    Box::new(move |g: &mut Goal| {
                        active_time::end_inactive(g, now);
                        if g.status_reason == REASON_WAITING_FOR_HOURS {
                            g.status_reason.clear();
                        }
                    }),
                )
                .await;
                if !matches!(result, Ok(GoalWrite::Written(_))) {
                    return Some(if result.is_err() { TickOutcome::Retry } else { TickOutcome::Done });
                }
            }
            None
        }
    }
}

/// Marks the start of a wait for the user (called where the tick records that state).
pub fn begin_waiting_for_user(goal: &mut Goal) {
    active_time::begin_inactive(goal, now_ms());
}

/// Reads the evidence of the turn(s) since the previous audit (from the message list and the
/// todo list the tick already holds; the diff route only when a turn recorded no summary) and
/// advances the breaker. `Err` ends the tick: the breaker
/// settled the goal `blocked`.
#[allow(clippy::too_many_arguments)]
pub async fn observe(
    ctx: &TickContext,
    session_id: &str,
    directory: &str,
    goal: &Goal,
    guard: &GoalGuard,
    objective: &str,
    basis: &Basis,
    messages: &[Value],
    todos: Option<Value>,
) -> Result<Observed, TickOutcome> {
    let tail = basis.tail_message_id.as_str();
    let previous = ProgressState::from_goal_extra(&goal.extra);
    let cursor = previous.cursor_for(tail, goal.created_at);
    let diff = {
        match evidence::turn_diffs(messages, &evidence::window(messages, &cursor, tail)) {
            Ok(diffs) => Some(diffs),
            // No recorded summary: ask for the newest turn's diff, else the session's.
            Err(missing) => match missing.first() {
                Some(message_id) => {
                    match ctx.client.session_evidence(session_id, directory, "/diff", Some(message_id)).await {
                        Some(diff) => Some(diff),
                        None => ctx.client.session_evidence(session_id, directory, "/diff", None).await,
                    }
                }
                None => ctx.client.session_evidence(session_id, directory, "/diff", None).await,
            },
        }
    };
    let tail_created = messages
        .iter()
        .find(|m| m.get("info").and_then(|i| i.get("id")).and_then(Value::as_str) == Some(tail))
        .and_then(|m| m.get("info")?.get("time")?.get("created")?.as_f64())
        .unwrap_or(0.0);
    let limits = &ctx.config.evidence.limits;
    let digest = evidence::build_digest(messages, &cursor, tail, diff.as_ref(), todos.as_ref(), limits);
    let print = TurnPrint::of(&digest, &basis.assistant_text);
    let state = evidence::advance(&previous, tail, tail_created, cursor, print);
    let limit = ctx.config.evidence.no_progress_turns;
    if limit > 0 && state.streak >= limit {
        let note = evidence::no_progress_note(state.streak, &digest);
        info!(target: "session_goal", session = session_id, turns = state.streak, "no progress; settling blocked");
        let mut entry = record(goal, tail, GoalStatus::Blocked.as_str(), REASON_NO_PROGRESS, now_ms());
        entry.insert("note".into(), json!(note));
        entry.insert("digest".into(), digest.summary());
        append(ctx, session_id, entry).await;
        let settlement = Settlement {
            status: GoalStatus::Blocked,
            reason: REASON_NO_PROGRESS.into(),
            note: Some(note),
            accounting: basis.accounting.clone(),
            evaluation: None,
        };
        return Err(settle(ctx, session_id, directory, goal, guard, settlement, objective).await);
    }
    Ok(Observed { digest, state })
}

/// Applies the evidence to the decision after the audit: a `complete` while a command's latest
/// run failed becomes `continue` (once per failing command), the breaker state and the override
/// set go with the continuation's reservation, and every outcome goes to the audit trail.
#[allow(clippy::too_many_arguments)]
pub async fn review(
    ctx: &TickContext,
    session_id: &str,
    goal: &Goal,
    basis: &Basis,
    observed: &Observed,
    audit: Option<&Audit>,
    extras: &AuditExtras,
    decision: AfterAudit,
) -> Result<AfterAudit, TickOutcome> {
    let mut overrides = None;
    let decision = match decision {
        AfterAudit::Settle(settlement) if settlement.status == GoalStatus::Complete => {
            match evidence::complete_override(&observed.digest, &evidence::overrides_of(&goal.extra)) {
                Some((note, used)) => {
                    info!(target: "session_goal", session = session_id, "complete verdict while a command fails; continuing");
                    overrides = Some(used);
                    AfterAudit::Continue(Reservation {
                        accounting: basis.accounting.clone(),
                        blocked_streak: 0,
                        audit_fail_streak: 0,
                        note: Some(note),
                        evaluation: settlement.evaluation,
                        goal_fields: Vec::new(),
                    })
                }
                None => AfterAudit::Settle(settlement),
            }
        }
        other => other,
    };

    let now = now_ms();
    let (action, reason, note) = match &decision {
        AfterAudit::Settle(s) => (s.status.as_str().to_string(), s.reason.clone(), s.note.clone().unwrap_or_default()),
        AfterAudit::Continue(r) => {
            let action = if overrides.is_some() { "continue (complete overridden)" } else { "continue" };
            (action.to_string(), String::new(), r.note.clone().unwrap_or_default())
        }
    };
    let mut entry = record(goal, &basis.tail_message_id, &action, &reason, now);
    entry.insert(
        "verdict".into(),
        match audit.map(|a| a.verdict) {
            Some(Verdict::Continue) => json!("continue"),
            Some(Verdict::Complete) => json!("complete"),
            Some(Verdict::Blocked) => json!("blocked"),
            None => Value::Null,
        },
    );
    entry.insert("note".into(), json!(note));
    entry.insert("digest".into(), observed.digest.summary());
    entry.insert("evidence".into(), json!(extras.evidence));
    entry.insert("missing".into(), json!(extras.missing));
    if let Some(tokens) = extras.tokens {
        entry.insert("auditTokens".into(), json!(tokens));
    }
    if let Some(audit) = audit {
        entry.insert("auditor".into(), json!(format!("{}/{}", audit.provider_id, audit.model_id)));
    }
    if matches!(decision, AfterAudit::Continue(_)) {
        // A continuation waits for nothing it does not need: the trail's line (a few blocking
        // file operations) is written beside it. Records of one session are a turn apart.
        let (root, session, max) = (
            ctx.services.data_dir.root().to_path_buf(),
            session_id.to_string(),
            ctx.config.evidence.history_max_records,
        );
        crate::goal::tick::spawn_detached(Box::pin(async move {
            crate::io::history::append(&root, &session, &Value::Object(entry), max).await
        }));
    } else {
        append(ctx, session_id, entry).await;
    }

    // The breaker state and the override set ride on the reservation's guarded write (one
    // write, watched for lost updates), not on a write of their own.
    let decision = match decision {
        AfterAudit::Continue(mut reservation) => {
            reservation.goal_fields.push((PROGRESS_FIELD.into(), observed.state.to_value()));
            if let Some(used) = overrides {
                reservation.goal_fields.push((OVERRIDES_FIELD.into(), json!(used)));
            }
            AfterAudit::Continue(reservation)
        }
        settle => settle,
    };
    Ok(decision)
}

/// Parses `evidence` / `missing` from the auditor's JSON object.
pub fn audit_extras(object: Option<&serde_json::Map<String, Value>>, tokens: Option<u64>) -> AuditExtras {
    match object {
        Some(object) => AuditExtras {
            evidence: evidence::citations(object, "evidence"),
            missing: evidence::citations(object, "missing"),
            tokens,
        },
        None => AuditExtras { tokens, ..AuditExtras::default() },
    }
}
