//! The audit stage: the evidence read, the small model's verdict on the turn, the verdict
//! reviewed against the evidence, and the decision it leads to (settle, or a reservation).

use std::time::Duration;

use serde_json::{Map, Value};
use tracing::{debug, warn};

use crate::goal::acceptance::checks::RoundInput;
use crate::goal::acceptance::review::ReviewInput;
use crate::goal::context::Tick;
use crate::goal::observation::evidence_stage::{self, audit_extras, AuditExtras};
use crate::goal::planning::plan::{after_audit, parse_verdict, AfterAudit, Audit, Basis, Reservation};
use crate::goal::verdict::grading;
use crate::io::services::SmallModelQuery;
use crate::record::cause::CauseCode;
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
    let without_checks = crate::goal::acceptance::checks::without_check_runs(raw_messages);
    let evidence_messages = without_checks.as_deref().unwrap_or(raw_messages);
    let observed = evidence_stage::observe(tick, basis, evidence_messages, todos).await?;
    let grading = Grading::prepare(tick, &observed);
    let (audit, mut extras, object) = request_verdict(tick, basis, &grading.prompt(tick, &observed)).await;
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
    // Graded completion: only an audit that answered grades (or derives) anything.
    let graded = audit.as_ref().map(|_| grading.conclude(tick, basis, object.as_ref()));
    if let Some(graded) = &graded {
        decision = crate::goal::planning::plan::hold_completion(decision, &graded.update.criteria);
        extras.criteria = Some(grading::trail_value(&graded.update));
    }
    let decision = evidence_stage::review(tick, basis, &observed, audit.as_ref(), &extras, decision).await;
    let Some(graded) = graded else {
        return decided(tick, basis, &observed, decision, None).await;
    };
    decided(tick, basis, &observed, graded.finish(decision), Some(graded)).await
}

/// Ends the audit stage on its decision: a `complete` runs the checks first (when the goal has
/// any), another settle is written, a continuation goes on to its reservation.
async fn decided(
    tick: &Tick<'_>,
    basis: &Basis,
    observed: &evidence_stage::Observed,
    decision: AfterAudit,
    graded: Option<Graded>,
) -> Result<Reservation, TickOutcome> {
    let update = graded.as_ref().map(|g| g.update.clone());
    match decision {
        // Proof before the claim: a goal with checks settles complete only once they pass, and
        // a goal that asks for review only once a reviewer approves (after the checks).
        AfterAudit::Settle(settlement)
            if settlement.status == GoalStatus::Complete
                && (!tick.goal.checks.is_empty() || tick.goal.review_wanted().is_some()) =>
        {
            let items = grading::evidence_items(&observed.digest);
            let mut reservation = if tick.goal.checks.is_empty() {
                tick.review_completion(ReviewInput { basis, settlement, criteria: update, items }).await?
            } else {
                tick.run_checks(RoundInput { basis, settlement, criteria: update, items }).await?
            };
            // A failed check is a turn like any other: the no-progress breaker counts it.
            reservation.evidence.progress = observed.state.to_value().as_object().cloned();
            Ok(reservation)
        }
        AfterAudit::Settle(settlement) => {
            let fix = graded.and_then(|g| g.blocker).map(|(_, fix)| fix);
            Err(tick
                .settle_then(settlement, move |g| {
                    if let Some(update) = &update {
                        update.apply(g);
                    }
                    // Only the auditor's own stop takes the blocker's fix.
                    let blocked = g.cause.as_mut().filter(|c| c.code == CauseCode::AuditorBlocked);
                    if let (Some(fix), Some(cause)) = (fix, blocked) {
                        cause.fix = Some(fix);
                    }
                })
                .await)
        }
        AfterAudit::Continue(mut reservation) => {
            reservation.evidence.criteria = update;
            Ok(reservation)
        }
    }
}

/// The graded-completion part of one audit: what the prompt shows, then what the answer means.
struct Grading {
    /// Whether this audit asks for derived criteria.
    derive: bool,
    /// The digest's items, numbered `e1…` in this audit.
    items: Vec<String>,
}

/// An audit's graded criteria, and a blocker's cause when the verdict carried a usable one.
struct Graded {
    /// The criteria to write.
    update: grading::CriteriaUpdate,
    /// A usable blocker's detail (its kind) and fix.
    blocker: Option<(String, String)>,
}

impl Grading {
    /// Whether this audit derives, and the evidence items it numbers (only to grade criteria).
    fn prepare(tick: &Tick<'_>, observed: &evidence_stage::Observed) -> Grading {
        let derive = grading::wants_derivation(&tick.goal, tick.ctx.config.derive_criteria);
        let items = if tick.goal.criteria.is_empty() { Vec::new() } else { grading::evidence_items(&observed.digest) };
        Grading { derive, items }
    }

    /// The evidence block of the prompt, with the criteria (or the derivation request) after it.
    fn prompt(&self, tick: &Tick<'_>, observed: &evidence_stage::Observed) -> String {
        let sample = prompts::language_sample(&tick.objective);
        let block = grading::prompt_block(&tick.goal.criteria, &self.items, self.derive, &sample);
        let evidence = observed.prompt_block(tick);
        if block.is_empty() {
            evidence
        } else {
            format!("{evidence}\n\n{block}")
        }
    }

    /// What the answer means for the criteria, and a blocker's cause when it is usable.
    fn conclude(&self, tick: &Tick<'_>, basis: &Basis, object: Option<&Map<String, Value>>) -> Graded {
        let answer = object.map(grading::parse_answer).unwrap_or_default();
        let update =
            grading::conclude(&tick.goal, self.derive, &answer, self.items.len(), &tick.objective, tick.now_ms());
        let reference = format!("{}\n{}", tick.objective, basis.assistant_text);
        let blocker = answer.blocker.as_ref().and_then(|b| grading::blocker_cause(b, &reference, tick.session_id));
        Graded { update, blocker }
    }
}

impl Graded {
    /// The decision with the criteria's progress: the note's `k/n criteria met`, the open
    /// criteria named in a continuation, a blocker's kind as a blocked settle's detail.
    fn finish(&self, decision: AfterAudit) -> AfterAudit {
        let criteria = &self.update.criteria;
        let noted = |note: Option<String>| {
            if criteria.is_empty() {
                note
            } else {
                Some(grading::progress_note(criteria, note.as_deref().unwrap_or("")))
            }
        };
        match decision {
            AfterAudit::Continue(mut reservation) => {
                reservation.note = noted(reservation.note.take());
                if let Some(open) = grading::open_criteria_paragraph(criteria) {
                    reservation.appendix = Some(match reservation.appendix.take() {
                        Some(appendix) => format!("{appendix}\n\n{open}"),
                        None => open,
                    });
                }
                AfterAudit::Continue(reservation)
            }
            AfterAudit::Settle(mut settlement) => {
                settlement.note = noted(settlement.note.take());
                if settlement.cause == CauseCode::AuditorBlocked {
                    if let Some((detail, _)) = &self.blocker {
                        settlement.detail = Some(detail.clone());
                    }
                }
                AfterAudit::Settle(settlement)
            }
        }
    }
}

/// Asks the small model for a verdict, with the evidence block. `None` = unavailable or
/// unparseable; the extras carry the cited evidence and the audit's token cost.
async fn request_verdict(
    tick: &Tick<'_>,
    basis: &Basis,
    evidence_block: &str,
) -> (Option<Audit>, AuditExtras, Option<Map<String, Value>>) {
    let (objective, timeout) = (tick.objective.as_str(), tick.ctx.config.audit_timeout);
    let request = SmallModelQuery {
        prompt: format!("{}\n\n{evidence_block}", prompts::audit_user_prompt(objective, &basis.assistant_text)),
        system: format!(
            "{}\n{}\n{}",
            prompts::audit_system_prompt(),
            crate::evidence::AUDIT_SYSTEM_EVIDENCE,
            grading::GRADING_SYSTEM
        ),
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
                crate::goal::settling::operator::audit_failed(&failure);
            }
            return (None, AuditExtras { failure: Some(failure), ..Default::default() }, None);
        }
        Err(_) => {
            warn!(target: "session_goal", "progress audit timed out");
            crate::goal::settling::operator::audit_failed("timed out");
            return (None, AuditExtras { failure: Some("timed out".into()), ..Default::default() }, None);
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
        crate::goal::settling::operator::audit_failed("reply not parseable");
        return (None, AuditExtras { failure: Some("reply not parseable".into()), ..extras }, None);
    };
    let mut note = truncate_chars(raw_note.trim(), NOTE_CHAR_LIMIT);
    let reference = format!("{objective}\n{}", basis.assistant_text);
    if introduces_foreign_script(&note, &reference) {
        note.clear();
    }
    let audit = Audit { verdict, note, provider_id: reply.provider_id, model_id: reply.model_id };
    (Some(audit), extras, object)
}
