//! The evidence stage, around the audit (I/O glue over the pure `evidence` module): before it,
//! the digest of the turn(s) since the previous audit is read and the no-progress breaker
//! advanced (it may settle the goal `blocked`); after it, the verdict is reviewed (a `complete`
//! while a command fails goes on), the breaker state rides on the reservation, and every outcome
//! goes to the audit trail.

use serde_json::{json, Value};
use tracing::info;

use crate::evidence::{self, Digest, ProgressState, TurnPrint};
use crate::goal::context::Tick;
use crate::goal::planning::plan::{AfterAudit, Audit, Basis, Reservation, Settlement, Verdict};
use crate::goal::settling::trail;
use crate::record::cause::CauseCode;
use crate::record::reasons::REASON_NO_PROGRESS;
use crate::record::GoalStatus;
use crate::sched::TickOutcome;

/// What the audit call reported besides the verdict.
#[derive(Debug, Clone, Default)]
pub struct AuditExtras {
    /// Facts the auditor relied on.
    pub evidence: Vec<String>,
    /// What it could not verify.
    pub missing: Vec<String>,
    /// Tokens the audit cost, when the model reported them.
    pub tokens: Option<u64>,
    /// Why the audit failed (an HTTP status, a timeout), when it did: the cause's detail.
    pub failure: Option<String>,
    /// The criteria as this audit graded them (see `goal/verdict/grading.rs`), for the trail.
    pub criteria: Option<Value>,
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
    pub fn prompt_block(&self, tick: &Tick<'_>) -> String {
        evidence::audit_evidence_block(&self.digest, &tick.ctx.config.evidence.limits)
    }
}

/// Reads the evidence of the turn(s) since the previous audit (from the message list and the
/// todo list the tick already holds; the diff route only when a turn recorded no summary) and
/// advances the breaker. `Err` ends the tick: the breaker settled the goal `blocked`.
pub async fn observe(
    tick: &Tick<'_>,
    basis: &Basis,
    messages: &[Value],
    todos: Option<Value>,
) -> Result<Observed, TickOutcome> {
    let goal = &tick.goal;
    let tail = basis.tail_message_id.as_str();
    let previous = ProgressState::of_goal(goal);
    let cursor = previous.cursor_for(tail, goal.created_at);
    let diff = read_diff(tick, messages, &evidence::window(messages, &cursor, tail)).await;
    let tail_created = messages
        .iter()
        .find(|m| m.get("info").and_then(|i| i.get("id")).and_then(Value::as_str) == Some(tail))
        .and_then(|m| m.get("info")?.get("time")?.get("created")?.as_f64())
        .unwrap_or(0.0);
    let limits = &tick.ctx.config.evidence.limits;
    let digest = evidence::build_digest(messages, &cursor, tail, diff.as_ref(), todos.as_ref(), limits);
    let print = TurnPrint::of(&digest, &basis.assistant_text);
    let state = evidence::advance(&previous, tail, tail_created, cursor, print);
    let limit = tick.ctx.config.evidence.no_progress_turns;
    if limit > 0 && state.streak >= limit {
        return Err(no_progress(tick, basis, &digest, state.streak).await);
    }
    Ok(Observed { digest, state })
}

/// The session diff of the turns in `window`: the summaries their user messages recorded, else
/// the newest turn's `/diff`, else the session's.
async fn read_diff(tick: &Tick<'_>, messages: &[Value], window: &[&Value]) -> Option<Value> {
    let (client, session_id, directory) = (&tick.ctx.client, tick.session_id, tick.directory);
    match evidence::turn_diffs(messages, window) {
        Ok(diffs) => Some(diffs),
        // No recorded summary: ask for the newest turn's diff, else the session's.
        Err(missing) => match missing.first() {
            Some(message_id) => match client.session_evidence(session_id, directory, "/diff", Some(message_id)).await {
                Some(diff) => Some(diff),
                None => client.session_evidence(session_id, directory, "/diff", None).await,
            },
            None => client.session_evidence(session_id, directory, "/diff", None).await,
        },
    }
}

/// The breaker tripped: the trail records why, and the goal settles `blocked`.
async fn no_progress(tick: &Tick<'_>, basis: &Basis, digest: &Digest, streak: u32) -> TickOutcome {
    let note = evidence::no_progress_note(streak, digest);
    info!(target: "session_goal", session = tick.session_id, turns = streak, "no progress; settling blocked");
    let mut entry = trail::line(
        &tick.goal,
        &basis.tail_message_id,
        GoalStatus::Blocked.as_str(),
        REASON_NO_PROGRESS,
        tick.now_ms(),
    );
    entry.insert("note".into(), json!(note));
    entry.insert("digest".into(), digest.summary());
    tick.append_trail(entry).await;
    let settlement = Settlement {
        status: GoalStatus::Blocked,
        reason: REASON_NO_PROGRESS.into(),
        note: Some(note),
        accounting: basis.accounting.clone(),
        evaluation: None,
        cause: CauseCode::NoProgress,
        detail: Some(format!("{streak} turns")),
    };
    tick.settle(settlement).await
}

/// Applies the evidence to the decision after the audit: a `complete` while a command's latest
/// run failed becomes `continue` (once per failing command), the breaker state and the override
/// set go with the continuation's reservation, and every outcome goes to the audit trail.
pub async fn review(
    tick: &Tick<'_>,
    basis: &Basis,
    observed: &Observed,
    audit: Option<&Audit>,
    extras: &AuditExtras,
    decision: AfterAudit,
) -> AfterAudit {
    let (decision, overrides) = override_complete(tick, basis, observed, decision);
    let entry = trail_entry(tick, basis, observed, audit, extras, &decision, overrides.is_some());
    if matches!(decision, AfterAudit::Continue(_)) {
        // A continuation waits for nothing it does not need: the trail's line (a few blocking
        // file operations) is written beside it.
        tick.append_trail_detached(entry);
    } else {
        tick.append_trail(entry).await;
    }
    // The breaker state and the override set ride on the reservation's guarded write (one
    // write, watched for lost updates), not on a write of their own.
    match decision {
        AfterAudit::Continue(mut reservation) => {
            reservation.evidence.progress = observed.state.to_value().as_object().cloned();
            reservation.evidence.overrides = overrides;
            AfterAudit::Continue(reservation)
        }
        settle => settle,
    }
}

/// A `complete` while a command's latest run failed goes on instead; the override set used.
fn override_complete(
    tick: &Tick<'_>,
    basis: &Basis,
    observed: &Observed,
    decision: AfterAudit,
) -> (AfterAudit, Option<Vec<String>>) {
    let AfterAudit::Settle(settlement) = decision else { return (decision, None) };
    if settlement.status != GoalStatus::Complete {
        return (AfterAudit::Settle(settlement), None);
    }
    match evidence::complete_override(&observed.digest, &evidence::overrides_of(&tick.goal)) {
        Some((note, used)) => {
            info!(target: "session_goal", session = tick.session_id, "complete verdict while a command fails; continuing");
            let reservation = Reservation {
                accounting: basis.accounting.clone(),
                blocked_streak: 0,
                audit_fail_streak: 0,
                note: Some(note),
                evaluation: settlement.evaluation,
                evidence: Default::default(),
                appendix: None,
            };
            (AfterAudit::Continue(reservation), Some(used))
        }
        None => (AfterAudit::Settle(settlement), None),
    }
}

/// The trail line of an audited decision: verdict, note, digest, citations, cost, auditor.
fn trail_entry(
    tick: &Tick<'_>,
    basis: &Basis,
    observed: &Observed,
    audit: Option<&Audit>,
    extras: &AuditExtras,
    decision: &AfterAudit,
    overridden: bool,
) -> serde_json::Map<String, Value> {
    let (action, reason, note) = match decision {
        AfterAudit::Settle(s) => (s.status.as_str().to_string(), s.reason.clone(), s.note.clone().unwrap_or_default()),
        AfterAudit::Continue(r) => {
            let action = if overridden { "continue (complete overridden)" } else { "continue" };
            (action.to_string(), String::new(), r.note.clone().unwrap_or_default())
        }
    };
    let mut entry = trail::line(&tick.goal, &basis.tail_message_id, &action, &reason, tick.now_ms());
    let verdict = match audit.map(|a| a.verdict) {
        Some(Verdict::Continue) => json!("continue"),
        Some(Verdict::Complete) => json!("complete"),
        Some(Verdict::Blocked) => json!("blocked"),
        None => Value::Null,
    };
    entry.insert("verdict".into(), verdict);
    entry.insert("note".into(), json!(note));
    entry.insert("digest".into(), observed.digest.summary());
    entry.insert("evidence".into(), json!(extras.evidence));
    entry.insert("missing".into(), json!(extras.missing));
    if let Some(criteria) = &extras.criteria {
        entry.insert("criteria".into(), criteria.clone());
    }
    if let Some(tokens) = extras.tokens {
        entry.insert("auditTokens".into(), json!(tokens));
    }
    if let Some(audit) = audit {
        entry.insert("auditor".into(), json!(format!("{}/{}", audit.provider_id, audit.model_id)));
    }
    entry
}

/// Parses `evidence` / `missing` from the auditor's JSON object.
pub fn audit_extras(object: Option<&serde_json::Map<String, Value>>, tokens: Option<u64>) -> AuditExtras {
    match object {
        Some(object) => AuditExtras {
            evidence: evidence::citations(object, "evidence"),
            missing: evidence::citations(object, "missing"),
            tokens,
            failure: None,
            criteria: None,
        },
        None => AuditExtras { tokens, ..AuditExtras::default() },
    }
}
