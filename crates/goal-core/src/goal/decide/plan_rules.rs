//! The pure goal-loop decisions: given what a tick observed, what to do. No I/O, no clock.
//!
//! The branch order is the reference runtime's (OpenChamber's JavaScript goal loop), plus
//! recovery from length-truncated replies and the cost budget, so the decisions match it branch
//! for branch.

use crate::goal::decide::accounting::{account, Accounting};
use crate::record::cause::CauseCode;
use crate::record::reasons::{
    NOTE_ASKED_TO_PAUSE, REASON_ASKED_TO_PAUSE, REASON_AUDIT_UNAVAILABLE, REASON_BLOCKED_PER_AUDIT,
    REASON_DISPATCH_FAILED, REASON_REPEATED_TRUNCATION, REASON_RESUMED, REASON_TURN_CAP, REASON_TURN_FAILED,
    REASON_VERIFIED,
};
use crate::record::session::{chronological, Message, Role, Selection};
use crate::record::{Goal, GoalStatus, NOTE_CHAR_LIMIT};
use crate::text::truncate_chars;

/// Consecutive `blocked` verdicts that settle a goal.
pub const BLOCKED_STREAK_LIMIT: u64 = 3;
/// Consecutive audit failures that settle a goal.
pub const AUDIT_FAIL_LIMIT: u64 = 2;
/// Assistant text sent to the auditor, in characters.
pub const TRANSCRIPT_PART_CHAR_LIMIT: usize = 6000;

/// Why a tick ends without acting (the next idle transition re-arms it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitReason {
    /// The newest message is from the user: a turn is about to run.
    TrailingUserMessage,
    /// The newest reply is still streaming.
    ReplyRunning,
    /// No reply yet: nothing to continue with.
    NoReplyYet,
}

/// A terminal write.
#[derive(Debug, Clone, PartialEq)]
pub struct Settlement {
    /// New status.
    pub status: GoalStatus,
    /// Why.
    pub reason: String,
    /// A new note, when there is one.
    pub note: Option<String>,
    /// Accounting to persist with it.
    pub accounting: Accounting,
    /// The auditor that decided, when one did.
    pub evaluation: Option<(String, String)>,
    /// The typed cause written beside the reason (see `goal/decide/causes.rs`).
    pub cause: CauseCode,
    /// The cause's detail (an error name, an HTTP status), when there is one.
    pub detail: Option<String>,
}

impl Settlement {
    /// A settlement to `status` with its reason, cause and accounting, and nothing else: no new
    /// note, no auditor, no detail (a caller that has them sets those fields).
    pub fn new(status: GoalStatus, reason: impl Into<String>, cause: CauseCode, accounting: Accounting) -> Self {
        Settlement { status, reason: reason.into(), note: None, accounting, evaluation: None, cause, detail: None }
    }
}

/// What the tick's audit-free part decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// End the tick; the next idle re-arms.
    Wait(WaitReason),
    /// The tail was aborted by the user: pause (no notification).
    Pause(Accounting),
    /// Settle with a notification.
    Settle(Settlement),
    /// Ask the auditor, then call [`after_audit`].
    Audit(Basis),
    /// Continue without an audit (compaction summary, resume over an abort, truncation).
    ContinueUnaudited(Basis),
}

/// Everything needed to continue after this tick.
#[derive(Debug, Clone, PartialEq)]
pub struct Basis {
    /// Fresh accounting.
    pub accounting: Accounting,
    /// Where to send the continuation.
    pub target: Selection,
    /// The reply the tick judged (the tail re-check compares against it).
    pub tail_message_id: String,
    /// The reply's text for the auditor (≤ 6000 chars).
    pub assistant_text: String,
    /// The tail's `time.created`: with its id, what the continuation id is derived from when the
    /// id is not in OpenCode's format.
    pub tail_created: Option<f64>,
    /// The judged reply produced output (text, a tool call, output tokens): it ends the rows of
    /// provider parks and cut turns.
    pub tail_output: bool,
    /// Set when the tail is a turn cut by a server restart: its number in the row.
    pub cut_turn: Option<u64>,
}

/// Decides steps 7–12 of a tick from the goal and the message window (already fetched).
pub fn plan_tick(goal: &Goal, messages: &[Message], max_auto_turns: u64) -> Plan {
    let ordered = chronological(messages);
    let Some(last) = ordered.last() else {
        return Plan::Wait(WaitReason::NoReplyYet);
    };
    if last.role == Role::User {
        return Plan::Wait(WaitReason::TrailingUserMessage);
    }
    let Some(tail) = ordered.iter().rev().find(|m| m.role == Role::Assistant).copied() else {
        return Plan::Wait(WaitReason::NoReplyYet);
    };
    if !tail.is_completed() && tail.error.is_none() {
        return Plan::Wait(WaitReason::ReplyRunning);
    }
    if tail.id.is_empty() {
        return Plan::Wait(WaitReason::NoReplyYet);
    }

    let accounting = account(goal, messages);
    let resumed = goal.status_reason == REASON_RESUMED;
    let aborted = tail.is_aborted();
    let settlement = |status, reason: &str, cause| Settlement::new(status, reason, cause, accounting.clone());
    let settle = |status, reason: &str, cause: CauseCode| Plan::Settle(settlement(status, reason, cause));

    if aborted && !resumed {
        return Plan::Pause(accounting);
    }
    // The provider stage (`goal/decide/provider.rs`) has already parked or settled every error its table
    // names. Any other error (an unknown name, an `APIError` without a status, a non-retryable
    // 5xx, an unnamed error object) settles `blocked` here, before the budgets and never audited;
    // it wins over a `length` finish. A length error is the truncation recovery below.
    let truncated = tail.is_length_truncated();
    if let Some(failed) = turn_failure(tail) {
        return Plan::Settle(Settlement {
            detail: Some(failed.detail),
            ..settlement(GoalStatus::Blocked, &failed.reason, CauseCode::TurnFailed)
        });
    }
    let per_turn = crate::goal::decide::budgets::PER_TURN;
    if let Some(spent) = per_turn.iter().find(|budget| (budget.reached)(goal, &accounting)) {
        return settle(GoalStatus::BudgetLimited, spent.reason, spent.code);
    }
    // A turn reserved after this tail already counts itself: its post (lost, or its answer
    // never came) goes out under its id and is no turn past the cap. The last allowed turn,
    // often the wrap-up, is not lost to a write whose answer never came.
    let reserved_here = !resumed && goal.continuation_for.get() == Some(&last.id) && goal.continuation_id.is_present();
    let counted = if reserved_here { goal.turns_used.saturating_sub(1) } else { goal.turns_used };
    if counted >= max_auto_turns {
        return settle(GoalStatus::Blocked, REASON_TURN_CAP, CauseCode::TurnCap);
    }
    if truncated && !resumed && has_repeated_length_tail(&ordered, tail, goal.created_at) {
        return settle(GoalStatus::Blocked, REASON_REPEATED_TRUNCATION, CauseCode::NoProgress);
    }

    let execution = ordered.iter().rev().find(|m| m.role == Role::Assistant && !m.summary).copied().unwrap_or(tail);
    if !execution.selection.names_model() {
        return settle(GoalStatus::Blocked, REASON_DISPATCH_FAILED, CauseCode::DispatchFailed);
    }
    let basis = Basis {
        accounting: accounting.clone(),
        target: execution.selection.clone(),
        tail_message_id: last.id.clone(),
        assistant_text: crate::text::truncate_chars(&tail.text, TRANSCRIPT_PART_CHAR_LIMIT),
        tail_created: last.created,
        tail_output: tail.produced_output,
        cut_turn: None,
    };
    if tail.summary || aborted || truncated {
        Plan::ContinueUnaudited(basis)
    } else {
        Plan::Audit(basis)
    }
}

/// A `blocked` settlement for `goal` with the given reason and cause, its accounting unchanged.
pub fn blocked(goal: &Goal, reason: &str, cause: CauseCode) -> Settlement {
    Settlement::new(GoalStatus::Blocked, reason, cause, Accounting::of(goal))
}

/// Characters of an error's name kept as the status reason.
pub const TURN_ERROR_NAME_CHAR_LIMIT: usize = 80;
/// Characters of the error's message kept in the cause's detail.
pub const TURN_ERROR_MESSAGE_CHAR_LIMIT: usize = 120;

/// A turn that ended with an error the provider table does not name: the status reason and the
/// cause's detail it settles with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnFailure {
    /// The error's non-empty `name`, else [`REASON_TURN_FAILED`].
    pub reason: String,
    /// The name and, bounded, the error's message (`APIError: bad request`).
    pub detail: String,
}

/// The failure `tail` ended with, when it settles the goal: any error but an abort or a length
/// cut (the provider table's errors never reach the plan; see `goal/decide/provider.rs`).
pub fn turn_failure(tail: &Message) -> Option<TurnFailure> {
    let name = tail.error.as_deref()?;
    if tail.is_aborted() || tail.is_length_truncated() {
        return None;
    }
    let name = crate::text::truncate_chars(name.trim(), TURN_ERROR_NAME_CHAR_LIMIT);
    let reason = if name.is_empty() { REASON_TURN_FAILED } else { name.as_str() };
    let message = tail.provider_error.as_ref().map(|e| e.message.trim()).unwrap_or("");
    let message = crate::text::truncate_chars(message, TURN_ERROR_MESSAGE_CHAR_LIMIT);
    let detail = if message.is_empty() { reason.to_string() } else { format!("{reason}: {message}") };
    Some(TurnFailure { reason: reason.to_string(), detail })
}

/// True when `latest` is truncated and so was the previous completed, non-summary reply made
/// after the goal was created (chronological order; summaries neither break nor satisfy it).
pub fn has_repeated_length_tail(ordered: &[&Message], latest: &Message, goal_created_at: f64) -> bool {
    if latest.summary || !latest.is_completed() || latest.created.is_none() || !latest.is_length_truncated() {
        return false;
    }
    let Some(position) = ordered.iter().position(|m| std::ptr::eq(*m, latest)) else {
        return false;
    };
    let predecessor = ordered[..position]
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant && m.is_completed() && !m.summary && m.created.is_some());
    match predecessor {
        Some(previous) => previous.created.unwrap_or(0.0) > goal_created_at && previous.is_length_truncated(),
        None => false,
    }
}

crate::wire::wire_enum! {
    /// The auditor's verdict (its wire name the auditor answers, in any case, and the trail
    /// records).
    pub enum Verdict {
        #[doc = "Keep going."] Continue = "continue",
        #[doc = "Verified done."] Complete = "complete",
        #[doc = "Cannot go on without the user."] Blocked = "blocked",
        #[doc = "A person asked in the chat to stop (obeyed only after one: `evidence/person_words.rs`)."] Pause = "pause",
    }
}

/// A successful audit.
#[derive(Debug, Clone, PartialEq)]
pub struct Audit {
    /// Verdict.
    pub verdict: Verdict,
    /// Note (already clamped and language-guarded; empty when dropped).
    pub note: String,
    /// Auditor provider.
    pub provider_id: String,
    /// Auditor model.
    pub model_id: String,
}

/// The reservation written before a continuation is sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Reservation {
    /// Accounting to persist.
    pub accounting: Accounting,
    /// New blocked streak.
    pub blocked_streak: u64,
    /// New audit failure streak.
    pub audit_fail_streak: u64,
    /// New note (None keeps the old one).
    pub note: Option<String>,
    /// Auditor ids to record.
    pub evaluation: Option<(String, String)>,
    /// The evidence review's progress state and override set, written with the reservation so
    /// they ride on the one guarded write instead of a write of their own.
    pub evidence: EvidenceFields,
    /// A paragraph appended to the continuation (a failed acceptance check, quoted as data).
    pub appendix: Option<String>,
    /// The turn is the wrap-up before this limit (`goal/decide/wrap_up.rs`): its prompt asks for
    /// a handoff, and its reservation records that one is out.
    pub wrap_up: Option<CauseCode>,
}

/// Evidence fields a reservation writes (`None`: left as they are).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EvidenceFields {
    /// The no-progress breaker's state.
    pub progress: Option<serde_json::Map<String, serde_json::Value>>,
    /// The failing commands already used for a complete override.
    pub overrides: Option<Vec<String>>,
    /// The criteria the audit graded or derived (see `goal/decide/grading.rs`).
    pub criteria: Option<crate::goal::decide::grading::CriteriaUpdate>,
    /// The last review (`lastReview`), after a review that did not approve.
    pub last_review: Option<serde_json::Value>,
}

/// The outcome after the audit (or its absence).
#[derive(Debug, Clone, PartialEq)]
pub enum AfterAudit {
    /// Settle.
    Settle(Settlement),
    /// Reserve a turn and continue.
    Continue(Reservation),
}

/// Continuation without an audit keeps the blocked streak (compaction, resume over abort,
/// truncation recovery).
pub fn unaudited_reservation(goal: &Goal, basis: &Basis) -> Reservation {
    Reservation {
        accounting: basis.accounting.clone(),
        blocked_streak: goal.blocked_streak,
        audit_fail_streak: goal.audit_fail_streak,
        note: None,
        evaluation: None,
        evidence: EvidenceFields::default(),
        appendix: None,
        wrap_up: None,
    }
}

/// Applies the audit result (`None` = unavailable or unparseable). `person`: the newest message a
/// person typed since the last continuation, which a `pause` needs to be obeyed; without one a
/// `pause` counts as `continue`.
pub fn after_audit(goal: &Goal, basis: &Basis, audit: Option<Audit>, person: Option<&str>) -> AfterAudit {
    let Some(audit) = audit else {
        let failures = goal.audit_fail_streak.saturating_add(1);
        if failures >= AUDIT_FAIL_LIMIT {
            let accounting = basis.accounting.clone();
            let unavailable =
                Settlement::new(GoalStatus::Blocked, REASON_AUDIT_UNAVAILABLE, CauseCode::AuditUnavailable, accounting);
            return AfterAudit::Settle(unavailable);
        }
        return AfterAudit::Continue(Reservation {
            accounting: basis.accounting.clone(),
            blocked_streak: 0,
            audit_fail_streak: failures,
            note: None,
            evaluation: None,
            evidence: EvidenceFields::default(),
            appendix: None,
            wrap_up: None,
        });
    };
    let evaluation =
        Some((audit.provider_id.clone(), audit.model_id.clone())).filter(|(p, m)| !p.is_empty() || !m.is_empty());
    let note = (!audit.note.is_empty()).then(|| audit.note.clone());
    match audit.verdict {
        Verdict::Complete => AfterAudit::Settle(Settlement {
            note,
            evaluation,
            ..Settlement::new(GoalStatus::Complete, REASON_VERIFIED, CauseCode::Verified, basis.accounting.clone())
        }),
        Verdict::Blocked if goal.blocked_streak.saturating_add(1) >= BLOCKED_STREAK_LIMIT => {
            let reason = if audit.note.is_empty() { REASON_BLOCKED_PER_AUDIT.to_string() } else { audit.note.clone() };
            AfterAudit::Settle(Settlement {
                note,
                evaluation,
                ..Settlement::new(GoalStatus::Blocked, reason, CauseCode::AuditorBlocked, basis.accounting.clone())
            })
        }
        Verdict::Pause if person.is_some() => {
            let quote = crate::evidence::person_words::quote(person.unwrap_or_default());
            let accounting = basis.accounting.clone();
            AfterAudit::Settle(Settlement {
                note: Some(truncate_chars(&format!("{NOTE_ASKED_TO_PAUSE} “{quote}”"), NOTE_CHAR_LIMIT)),
                evaluation,
                detail: Some(quote),
                ..Settlement::new(GoalStatus::Paused, REASON_ASKED_TO_PAUSE, CauseCode::UserAskedToPause, accounting)
            })
        }
        verdict => AfterAudit::Continue(Reservation {
            accounting: basis.accounting.clone(),
            blocked_streak: if verdict == Verdict::Blocked { goal.blocked_streak.saturating_add(1) } else { 0 },
            audit_fail_streak: 0,
            note,
            evaluation,
            evidence: EvidenceFields::default(),
            appendix: None,
            wrap_up: None,
        }),
    }
}

/// A `complete` decision while any criterion is open goes on instead (its note and auditor
/// kept); anything else is unchanged.
pub fn hold_completion(decision: AfterAudit, criteria: &[crate::record::criteria::Criterion]) -> AfterAudit {
    match decision {
        AfterAudit::Settle(s)
            if s.status == GoalStatus::Complete
                && crate::goal::decide::grading::met_count(criteria) < criteria.len() =>
        {
            AfterAudit::Continue(continuing(s))
        }
        other => other,
    }
}

/// The reservation of one more turn after `settlement`'s audit: its accounting, note and auditor
/// kept, the blocked and audit-failure streaks reset, no evidence fields and no appendix (a
/// caller that has them sets them on the result).
pub fn continuing(settlement: Settlement) -> Reservation {
    Reservation {
        accounting: settlement.accounting,
        blocked_streak: 0,
        audit_fail_streak: 0,
        note: settlement.note,
        evaluation: settlement.evaluation,
        evidence: Default::default(),
        appendix: None,
        wrap_up: None,
    }
}

/// Parses the auditor's JSON object into a verdict and a raw note.
pub fn parse_verdict(object: &serde_json::Map<String, serde_json::Value>) -> Option<(Verdict, String)> {
    let verdict = Verdict::parse_any_case(object.get("verdict")?.as_str()?)?;
    let note = object.get("note").and_then(|n| n.as_str()).unwrap_or("").to_string();
    Some((verdict, note))
}

#[cfg(test)]
impl Settlement {
    /// The `complete` settlement an audit's `complete` verdict (note `done`) makes over `goal`,
    /// for the tests of what may stand in its way.
    pub(crate) fn verified_for_test(goal: &Goal) -> Self {
        let verified =
            Settlement::new(GoalStatus::Complete, REASON_VERIFIED, CauseCode::Verified, Accounting::of(goal));
        Settlement { note: Some("done".into()), ..verified }
    }
}

#[cfg(test)]
mod tests;
