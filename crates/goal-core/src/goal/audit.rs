//! The audit stage: the evidence read, the small model's verdict on the turn, the verdict
//! reviewed against the evidence, and the decision it leads to (settle, or a reservation).

use std::time::Duration;

use serde_json::Value;
use tracing::{debug, warn};

use crate::goal::checks::RoundInput;
use crate::goal::context::Tick;
use crate::goal::evidence::{self, audit_extras, AuditExtras};
use crate::goal::plan::{after_audit, parse_verdict, AfterAudit, Audit, Basis, Reservation};
use crate::io::services::SmallModelRequest;
use crate::record::{truncate_chars, GoalStatus, NOTE_CHAR_LIMIT};
use crate::sched::TickOutcome;
use crate::text::jsonx::extract_json_object;
use crate::text::prompts;
use crate::text::script_guard::introduces_foreign_script;

/// Observes the evidence, audits the turn and reviews the verdict. `Ok` is the reservation of
/// the next turn; `Err` ends the tick (settled, or invalidated meanwhile).
pub async fn audit_turn(
    tick: &Tick<'_>,
    basis: &Basis,
    raw_messages: &[Value],
    todos: Option<Value>,
) -> Result<Reservation, TickOutcome> {
    if !tick.generation.is_current() {
        return Err(TickOutcome::Done);
    }
    // The runtime's own check runs are not the agent's work: the digest reads without them.
    let without_checks = crate::goal::checks::without_check_runs(raw_messages);
    let evidence_messages = without_checks.as_deref().unwrap_or(raw_messages);
    let observed = evidence::observe(tick, basis, evidence_messages, todos).await?;
    let (audit, extras) = request_verdict(tick, basis, &observed.prompt_block(tick)).await;
    if !tick.generation.is_current() {
        debug!(target: "session_goal", session = tick.session_id, "invalidated during audit");
        return Err(TickOutcome::Done);
    }
    let mut decision = after_audit(&tick.goal, basis, audit.clone());
    if let AfterAudit::Settle(settlement) = &mut decision {
        if settlement.detail.is_none() {
            settlement.detail = extras.failure.clone();
        }
    }
    match evidence::review(tick, basis, &observed, audit.as_ref(), &extras, decision).await {
        // Proof before the claim: a goal with checks settles complete only once they pass.
        AfterAudit::Settle(settlement) if settlement.status == GoalStatus::Complete && !tick.goal.checks.is_empty() => {
            let mut reservation = tick.run_checks(RoundInput { basis, settlement }).await?;
            // A failed check is a turn like any other: the no-progress breaker counts it.
            reservation.evidence.progress = observed.state.to_value().as_object().cloned();
            Ok(reservation)
        }
        AfterAudit::Settle(settlement) => Err(tick.settle(settlement).await),
        AfterAudit::Continue(reservation) => Ok(reservation),
    }
}

/// Asks the small model for a verdict, with the evidence block. `None` = unavailable or
/// unparseable; the extras carry the cited evidence and the audit's token cost.
async fn request_verdict(tick: &Tick<'_>, basis: &Basis, evidence_block: &str) -> (Option<Audit>, AuditExtras) {
    let (objective, timeout) = (tick.objective.as_str(), tick.ctx.config.audit_timeout);
    let request = SmallModelRequest {
        prompt: format!("{}\n\n{evidence_block}", prompts::audit_user_prompt(objective, &basis.assistant_text)),
        system: format!("{}\n{}", prompts::audit_system_prompt(), crate::evidence::AUDIT_SYSTEM_EVIDENCE),
        directory: tick.directory.to_string(),
        preferred_provider_id: basis.target.provider_id.clone(),
        preferred_model_id: basis.target.model_id.clone(),
        restrict_to_preferred_provider: true,
        max_output_tokens: None,
        timeout_ms: timeout.as_millis() as u64,
    };
    let call = tick.ctx.services.small_model.generate(request);
    let reply = match tokio::time::timeout(timeout + Duration::from_millis(500), call).await {
        Ok(Ok(reply)) => reply,
        Ok(Err(error)) => {
            let failure = error.status.map(|s| format!("status {s}")).unwrap_or_else(|| error.code.clone());
            if !error.is_silent() {
                warn!(target: "session_goal", status = ?error.status, code = %error.code, "progress audit failed");
                crate::goal::operator::audit_failed(&failure);
            }
            return (None, AuditExtras { failure: Some(failure), ..Default::default() });
        }
        Err(_) => {
            warn!(target: "session_goal", "progress audit timed out");
            crate::goal::operator::audit_failed("timed out");
            return (None, AuditExtras { failure: Some("timed out".into()), ..Default::default() });
        }
    };
    let object = extract_json_object(&reply.text);
    let extras = audit_extras(object.as_ref(), reply.tokens);
    let Some((verdict, raw_note)) = object.as_ref().and_then(parse_verdict) else {
        warn!(
            target: "session_goal",
            provider = %reply.provider_id,
            model = %reply.model_id,
            output_chars = reply.text.chars().count(),
            json_object_found = object.is_some(),
            "[session-goal:diagnostic] audit parse failed"
        );
        crate::goal::operator::audit_failed("reply not parseable");
        return (None, AuditExtras { failure: Some("reply not parseable".into()), ..extras });
    };
    let mut note = truncate_chars(raw_note.trim(), NOTE_CHAR_LIMIT);
    let reference = format!("{objective}\n{}", basis.assistant_text);
    if introduces_foreign_script(&note, &reference) {
        note.clear();
    }
    (Some(Audit { verdict, note, provider_id: reply.provider_id, model_id: reply.model_id }), extras)
}
