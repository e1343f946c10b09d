//! The audit: the evidence of the turns since the last audit (the no-progress breaker may settle
//! the goal), the small model's verdict on the turn, read and reviewed against the evidence (a
//! `complete` while a command fails goes on; criteria are graded or derived), the trail's line,
//! and the decision it leads to: settle, run the checks or the review, or continue.

use crate::sched::outcome::TickOutcome;
use std::ops::ControlFlow;

use serde_json::{json, Map, Value};

use super::{act, end, read, Decide, Flow};
use crate::evidence::{audit_block, complete_override, no_progress, person_words};
use crate::goal::decide::change::Extras;
use crate::goal::decide::grading::{self, CriteriaUpdate, GradingAnswer};
use crate::goal::decide::notify::trail_line;
use crate::goal::decide::plan_rules::{
    after_audit, hold_completion, parse_verdict, AfterAudit, Audit, Basis, Reservation, Settlement, Verdict,
};
use crate::goal::decide::seen::Evidence;
use crate::goal::decide::{Effect, Guard, Line, Need, Slot};
use crate::record::cause::CauseCode;
use crate::record::reasons::{ACTION_PAUSE_UNFOUNDED, REASON_NO_PROGRESS};
use crate::record::small_model_call::{SmallModelQuery, SmallModelReply};
use crate::record::{GoalStatus, NOTE_CHAR_LIMIT};
use crate::text::jsonx::extract_json_object;
use crate::text::prompts;
use crate::text::script_guard::introduces_foreign_script;
use crate::text::truncate_chars;

/// What the audit's answer means: the verdict, the extras, the grading, and the decision.
pub(super) struct Concluded {
    /// The decision after the audit, the evidence review and the grading.
    pub decision: AfterAudit,
    /// The criteria the audit graded or derived (`None`: the audit did not answer).
    pub update: Option<CriteriaUpdate>,
    /// A usable blocker's fix sentence.
    pub blocker_fix: Option<String>,
    /// The trail's line of the audit.
    pub line: Map<String, Value>,
}

/// The audit stage: `Continue` is the turn's reservation (the checks and the review, when the
/// goal asks for them, already passed); a settle or the end of the tick otherwise.
pub(super) fn audit(at: &Decide<'_>, objective: &str, basis: Basis) -> Flow<(Basis, Reservation)> {
    let seen = at.seen;
    let audit_seen = &seen.audit;
    if audit_seen.answer.is_none() && !seen.current {
        return end(TickOutcome::Done);
    }
    let Some(evidence) = &audit_seen.evidence else {
        return read(Need::Evidence { tail: basis.tail_message_id.clone(), reply: basis.assistant_text.clone() });
    };
    let limit = at.config.evidence.no_progress_turns;
    if limit > 0 && evidence.state.streak >= limit {
        return no_progress(at, &basis, evidence);
    }
    let derive = grading::wants_derivation(at.goal, at.config.derive_criteria);
    let items = if at.goal.criteria.is_empty() { Vec::new() } else { grading::evidence_items(&evidence.digest) };
    let Some((answer, answered_at)) = &audit_seen.answer else {
        return act(Effect::Audit(query(at, &basis, objective, evidence, derive, &items)));
    };
    if !seen.trailed(Slot::AuditTrail) && !seen.current {
        return end(TickOutcome::Done);
    }
    let concluded = conclude(at, &basis, objective, evidence, answer.as_ref(), *answered_at, derive, items.len());
    if !seen.trailed(Slot::AuditTrail) {
        let detached = matches!(concluded.decision, AfterAudit::Continue(_));
        return act(Effect::Trail(Line { record: concluded.line, detached, slot: Slot::AuditTrail }));
    }
    decided(at, objective, basis, evidence, concluded)
}

/// The evidence of the turns since the previous audit, up to `tail` (the transcript without the
/// runtime's own check runs, the turns' diff when read, the todo list), and the no-progress
/// breaker advanced by this turn (`reply`: the judged reply's text).
pub fn evidence(
    goal: &crate::record::Goal,
    messages: &[Value],
    diff: Option<&Value>,
    todos: Option<&Value>,
    tail: &str,
    reply: &str,
    limits: &crate::config::EvidenceLimits,
) -> Evidence {
    let previous = no_progress::ProgressState::of_goal(goal);
    let cursor = previous.cursor_for(tail, goal.created_at);
    let tail_created = messages
        .iter()
        .find(|m| m.get("info").and_then(|i| i.get("id")).and_then(Value::as_str) == Some(tail))
        .and_then(|m| m.get("info")?.get("time")?.get("created")?.as_f64())
        .unwrap_or(0.0);
    let digest = crate::evidence::digest::build_digest(messages, &cursor, tail, diff, todos, limits);
    let print = no_progress::TurnPrint::of(&digest, reply);
    let state = no_progress::advance(&previous, tail, tail_created, cursor, print);
    Evidence { digest, state, person: person_words::person_messages(goal, messages) }
}

/// The breaker tripped: the trail records why, and the goal settles `blocked`.
fn no_progress<T>(at: &Decide<'_>, basis: &Basis, evidence: &Evidence) -> Flow<T> {
    let streak = evidence.state.streak;
    let note = no_progress::no_progress_note(streak, &evidence.digest);
    let mut line =
        trail_line(at.goal, &basis.tail_message_id, GoalStatus::Blocked.as_str(), REASON_NO_PROGRESS, at.now);
    line.insert("note".into(), json!(note));
    line.insert("digest".into(), evidence.digest.summary());
    let settlement = Settlement {
        note: Some(note),
        detail: Some(format!("{streak} turns")),
        ..Settlement::new(GoalStatus::Blocked, REASON_NO_PROGRESS, CauseCode::NoProgress, basis.accounting.clone())
    };
    let line = Line { record: line, detached: false, slot: Slot::Settled };
    ControlFlow::Break(at.settle(settlement, Extras::default(), Guard::Tick, Some(line)))
}

/// The small model's request: the objective and the reply, the evidence, and the criteria (or
/// the derivation request), on the session's provider.
fn query(
    at: &Decide<'_>,
    basis: &Basis,
    objective: &str,
    evidence: &Evidence,
    derive: bool,
    items: &[String],
) -> SmallModelQuery {
    let sample = prompts::language_sample(objective);
    let block = grading::prompt_block(&at.goal.criteria, items, derive, &sample);
    let evidence_block = audit_block::audit_evidence_block(&evidence.digest, &at.config.evidence.limits);
    let evidence_block = if block.is_empty() { evidence_block } else { format!("{evidence_block}\n\n{block}") };
    let person = person_words::audit_block(&evidence.person);
    let timeout = at.config.audit_timeout;
    SmallModelQuery {
        prompt: format!(
            "{}\n\n{person}\n\n{evidence_block}",
            prompts::audit_user_prompt(objective, &basis.assistant_text)
        ),
        system: format!(
            "{}\n{}\n{}",
            prompts::audit_system_prompt(),
            audit_block::AUDIT_SYSTEM_EVIDENCE,
            grading::GRADING_SYSTEM
        ),
        directory: at.seen.directory.clone(),
        preferred_provider_id: basis.target.provider_id.clone(),
        preferred_model_id: basis.target.model_id.clone(),
        restrict_to_preferred_provider: true,
        max_output_tokens: None,
        timeout_ms: timeout.as_millis() as u64,
    }
}

/// What the auditor's reply says: the verdict (its note clamped and kept only in the objective's
/// writing system), the JSON object, and the extras; `Err` is why it failed.
pub fn read_reply(
    reply: Result<&SmallModelReply, &String>,
    reference: &str,
) -> (Option<Audit>, audit_block::AuditExtras, Option<Map<String, Value>>) {
    let reply = match reply {
        Ok(reply) => reply,
        Err(failure) => {
            return (None, audit_block::AuditExtras { failure: Some(failure.clone()), ..Default::default() }, None)
        }
    };
    let object = extract_json_object(&reply.text);
    let extras = audit_block::audit_extras(object.as_ref(), reply.tokens);
    let Some((verdict, raw_note)) = object.as_ref().and_then(parse_verdict) else {
        return (None, audit_block::AuditExtras { failure: Some("reply not parseable".into()), ..extras }, None);
    };
    let mut note = truncate_chars(raw_note.trim(), NOTE_CHAR_LIMIT);
    if introduces_foreign_script(&note, reference) {
        note.clear();
    }
    let audit = Audit { verdict, note, provider_id: reply.provider_id.clone(), model_id: reply.model_id.clone() };
    (Some(audit), extras, object)
}

/// The decision after the audit, the evidence review and the grading, with the trail's line.
#[allow(clippy::too_many_arguments)]
fn conclude(
    at: &Decide<'_>,
    basis: &Basis,
    objective: &str,
    evidence: &Evidence,
    answer: Result<&SmallModelReply, &String>,
    answered_at: f64,
    derive: bool,
    items: usize,
) -> Concluded {
    let reference = format!("{objective}\n{}", basis.assistant_text);
    let (audit, mut extras, object) = read_reply(answer, &reference);
    let person = evidence.person.last().map(|m| m.text.as_str());
    let mut decision = after_audit(at.goal, basis, audit.clone(), person);
    if let AfterAudit::Settle(settlement) = &mut decision {
        if settlement.detail.is_none() {
            settlement.detail = extras.failure.clone();
        }
    }
    // Graded completion: only an audit that answered grades (or derives) anything.
    let graded = audit.as_ref().map(|_| {
        let answer: GradingAnswer = object.as_ref().map(grading::parse_answer).unwrap_or_default();
        let update = grading::conclude(at.goal, derive, &answer, items, objective, answered_at);
        let blocker = answer.blocker.as_ref().and_then(|b| grading::blocker_cause(b, &reference, &at.seen.session_id));
        (update, blocker)
    });
    if let Some((update, _)) = &graded {
        decision = hold_completion(decision, &update.criteria);
        extras.criteria = Some(grading::trail_value(update));
    }
    let (decision, overrides) = override_complete(at, basis, evidence, decision);
    let line = trail_entry(at, basis, evidence, audit.as_ref(), &extras, &decision, overrides.is_some());
    let decision = match decision {
        AfterAudit::Continue(mut reservation) => {
            reservation.evidence.progress = evidence.state.to_value().as_object().cloned();
            reservation.evidence.overrides = overrides.clone();
            AfterAudit::Continue(reservation)
        }
        settle => settle,
    };
    let (update, blocker) = graded.map_or((None, None), |(update, blocker)| (Some(update), blocker));
    let decision = match &update {
        Some(update) => finish(update, blocker.as_ref(), decision),
        None => decision,
    };
    Concluded { decision, update, blocker_fix: blocker.map(|(_, fix)| fix), line }
}

/// A `complete` while a command's latest run failed goes on instead; the override set used.
fn override_complete(
    at: &Decide<'_>,
    basis: &Basis,
    evidence: &Evidence,
    decision: AfterAudit,
) -> (AfterAudit, Option<Vec<String>>) {
    let AfterAudit::Settle(settlement) = decision else { return (decision, None) };
    if settlement.status != GoalStatus::Complete {
        return (AfterAudit::Settle(settlement), None);
    }
    let used = complete_override::overrides_of(at.goal);
    match complete_override::complete_override(&evidence.digest, &used) {
        Some((note, used)) => {
            let reservation = Reservation {
                accounting: basis.accounting.clone(),
                blocked_streak: 0,
                audit_fail_streak: 0,
                note: Some(note),
                evaluation: settlement.evaluation,
                evidence: Default::default(),
                appendix: None,
                wrap_up: None,
            };
            (AfterAudit::Continue(reservation), Some(used))
        }
        None => (AfterAudit::Settle(settlement), None),
    }
}

/// The decision with the criteria's progress: the note's `k/n criteria met`, the open criteria
/// named in a continuation, a blocker's kind as a blocked settle's detail.
fn finish(update: &CriteriaUpdate, blocker: Option<&(String, String)>, decision: AfterAudit) -> AfterAudit {
    let criteria = &update.criteria;
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
                if let Some((detail, _)) = blocker {
                    settlement.detail = Some(detail.clone());
                }
            }
            AfterAudit::Settle(settlement)
        }
    }
}

/// The trail line of an audited decision: verdict, note, digest, citations, cost, auditor.
fn trail_entry(
    at: &Decide<'_>,
    basis: &Basis,
    evidence: &Evidence,
    audit: Option<&Audit>,
    extras: &audit_block::AuditExtras,
    decision: &AfterAudit,
    overridden: bool,
) -> Map<String, Value> {
    let (action, reason, note) = match decision {
        AfterAudit::Settle(s) => (s.status.as_str().to_string(), s.reason.clone(), s.note.clone().unwrap_or_default()),
        AfterAudit::Continue(r) => {
            let unfounded = audit.is_some_and(|a| a.verdict == Verdict::Pause);
            let action = match (overridden, unfounded) {
                (true, _) => "continue (complete overridden)",
                (false, true) => ACTION_PAUSE_UNFOUNDED,
                (false, false) => "continue",
            };
            (action.to_string(), String::new(), r.note.clone().unwrap_or_default())
        }
    };
    let mut entry = trail_line(at.goal, &basis.tail_message_id, &action, &reason, at.now);
    entry.insert("verdict".into(), audit.map_or(Value::Null, |a| json!(a.verdict.as_str())));
    if !evidence.person.is_empty() {
        entry.insert("personMessages".into(), json!(evidence.person.iter().map(|m| &m.id).collect::<Vec<_>>()));
    }
    entry.insert("note".into(), json!(note));
    entry.insert("digest".into(), evidence.digest.summary());
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

/// Ends the audit stage on its decision: a `complete` runs the checks first (when the goal has
/// any) and the review (when it asks for one); another settle is written; a continuation goes on
/// to its reservation.
fn decided(
    at: &Decide<'_>,
    objective: &str,
    basis: Basis,
    evidence: &Evidence,
    concluded: Concluded,
) -> Flow<(Basis, Reservation)> {
    let Concluded { decision, update, blocker_fix, .. } = concluded;
    match decision {
        // Proof before the claim: a goal with checks settles complete only once they pass, and
        // a goal that asks for review only once a reviewer approves (after the checks).
        AfterAudit::Settle(settlement)
            if settlement.status == GoalStatus::Complete
                && (!at.goal.checks.is_empty() || at.goal.review_wanted().is_some()) =>
        {
            let items = grading::evidence_items(&evidence.digest);
            let input = super::proof::Input { basis: &basis, settlement, criteria: update, items };
            let mut reservation = super::acceptance::accept(at, objective, input)?;
            // A failed check is a turn like any other: the no-progress breaker counts it.
            reservation.evidence.progress = evidence.state.to_value().as_object().cloned();
            ControlFlow::Continue((basis, reservation))
        }
        AfterAudit::Settle(settlement) => {
            let extras = Extras { criteria: update, blocker_fix, ..Extras::default() };
            ControlFlow::Break(at.settle(settlement, extras, Guard::Tick, None))
        }
        AfterAudit::Continue(mut reservation) => {
            reservation.evidence.criteria = update;
            ControlFlow::Continue((basis, reservation))
        }
    }
}
