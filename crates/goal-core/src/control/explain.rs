//! `explain(sessionId)`: one report of why a goal is where it is — status, cause and fix, the
//! next wake-up, the lease, pending permission and question requests, the last audit and check
//! runs, and findings worth a human look. Read only: nothing is written. The report is a typed
//! value (`explain/parts.rs`) built by a pure function ([`report`]) from what [`explain`] reads.

use crate::io::services::DataDir;

use serde_json::Value;

use crate::goal::decide::causes::{cause_of, fix_action};
use crate::goal::decide::check_rules::CheckRun;
use crate::goal::decide::guard_rules::{unreadable_guards, UnreadableGuard};
use crate::io::opencode::OpenCodeClient;
use crate::record::cause::{Cause, CauseCode};
use crate::record::lease::{held_by_other, lease_of};
use crate::record::session::SessionView;
use crate::record::{Goal, GoalStatus, CHECKS_FIELD};
use crate::time::hours::{self, HoursGate};

mod parts;

pub use parts::{
    AuditSummary, ExplainReport, Finding, GoalCost, LastReview, PendingKind, PendingRequest, RecordedCheckRun,
};

/// Trail records read to find the last audit and the last check runs.
const TRAIL_WINDOW: usize = 200;

/// What [`report`] is built from.
pub struct Observed<'a> {
    /// The session asked about.
    pub session_id: &'a str,
    /// The session as read; `None` when OpenCode says it does not exist.
    pub session: Option<&'a SessionView>,
    /// Open permission and question requests of the session.
    pub pending: Vec<PendingRequest>,
    /// The newest trail records, oldest first.
    pub trail: Vec<Value>,
    /// Whether the objective file could be read (`None`: not file-backed).
    pub objective_file_readable: Option<bool>,
    /// The asking runtime's lease holder id (`None` for a reader that drives no goal).
    pub own_holder: Option<&'a str>,
    /// Now (ms since epoch).
    pub now: f64,
}

/// The report of what was observed. Pure.
pub fn report(observed: &Observed<'_>) -> ExplainReport {
    let goal = observed.session.and_then(SessionView::goal);
    let cause = goal.as_ref().and_then(|g| effective_cause(g, observed));
    ExplainReport {
        session_id: observed.session_id.to_string(),
        goal_id: goal.as_ref().map(|g| g.id.clone()),
        status: goal.as_ref().map(|g| g.status),
        status_reason: goal.as_ref().map(|g| g.status_reason.clone()),
        fix_action: cause.as_ref().map(|c| fix_action(c.code)),
        next_wake_at: next_wake(goal.as_ref(), cause.as_ref()),
        cause,
        lease: goal.as_ref().and_then(|g| g.lease.get().cloned()),
        pending: observed.pending.clone(),
        last_audit: last_audit(&observed.trail),
        last_checks: last_checks(&observed.trail),
        checks: goal.as_ref().map(|g| g.checks.clone()),
        cost: goal.as_ref().map(cost_of),
        criteria: goal.as_ref().map(|g| g.criteria.clone()),
        review: goal.as_ref().and_then(review_setting),
        last_review: goal.as_ref().and_then(|g| g.last_review.get()).and_then(LastReview::from_value),
        findings: findings(observed, goal.as_ref()),
    }
}

/// The stored cause, or for an active goal without one, what holds it now: a pending request,
/// closed working hours, or (seen by a runtime) another host's lease.
fn effective_cause(goal: &Goal, observed: &Observed<'_>) -> Option<Cause> {
    if goal.cause.is_some() || goal.status != GoalStatus::Active {
        return goal.cause.clone();
    }
    let (id, now) = (observed.session_id, observed.now);
    if !observed.pending.is_empty() {
        return Some(cause_of(CauseCode::WaitingForUser, now, id, None));
    }
    if let HoursGate::WaitUntil(opens) = hours::goal_gate(goal, now) {
        return Some(cause_of(CauseCode::WaitingForHours, now, id, None).with_until(opens));
    }
    let holder = observed.own_holder?;
    if held_by_other(goal, holder, now) {
        let (other, expires) = lease_of(goal)?;
        return Some(cause_of(CauseCode::WaitingForLease, now, id, Some(&other)).with_until(expires));
    }
    None
}

/// When the goal goes on by itself: the end of its wait, for an active goal that waits.
fn next_wake(goal: Option<&Goal>, cause: Option<&Cause>) -> Option<f64> {
    goal.filter(|g| g.status == GoalStatus::Active)?;
    cause.filter(|c| c.code.is_wait()).and_then(|c| c.until)
}

/// The goal's review setting as stored, when it asks for a review (an unreadable value is shown
/// as written: it asks for one too).
fn review_setting(goal: &Goal) -> Option<Value> {
    match &goal.review {
        crate::record::Stored::Valid(crate::record::review::ReviewSetting::On(_)) => {
            goal.review.get().map(|r| r.to_value())
        }
        crate::record::Stored::Unreadable(raw) => Some(raw.clone()),
        _ => None,
    }
}

/// The goal's budget (none without one) and spending, in US dollars.
fn cost_of(goal: &Goal) -> GoalCost {
    GoalCost {
        budget: crate::goal::decide::budgets::cost::budget(goal),
        used: crate::goal::decide::accounting::cost_used(goal),
    }
}

/// The newest trail record with a verdict (or an audit failure), reduced to what a human reads.
fn last_audit(trail: &[Value]) -> Option<AuditSummary> {
    trail.iter().rev().find(|r| r.get("verdict").is_some()).map(AuditSummary::of_record)
}

/// The check runs of the newest round in the trail (the records sharing its tail).
fn last_checks(trail: &[Value]) -> Vec<RecordedCheckRun> {
    let is_check = |r: &&Value| r.get("action").and_then(Value::as_str) == Some("check") && r.get("check").is_some();
    let Some(newest) = trail.iter().rev().find(is_check) else { return Vec::new() };
    let tail = newest.get("tail");
    trail
        .iter()
        .filter(is_check)
        .filter(|r| r.get("tail") == tail)
        .filter_map(|r| {
            let run = CheckRun::from_value(r.get("check")?)?;
            Some(RecordedCheckRun { run, time: r.get("time").and_then(Value::as_f64).unwrap_or(0.0) })
        })
        .collect()
}

/// The finding of an active goal that nothing will look at again: no timer, no tick, no owner
/// list and no sweep of its directory. A defect (the loop promises every active goal a next
/// look); `doctor` lists it.
pub fn no_next_look() -> Finding {
    finding(
        "noNextLook",
        "defect: this active goal has no next look (no timer, no tick running, no sweep of its directory); \
         resuming it arms one, and the cause belongs in a bug report"
            .into(),
    )
}

fn finding(code: &'static str, message: String) -> Finding {
    Finding { code, message }
}

/// Inconsistencies worth a human look.
fn findings(observed: &Observed<'_>, goal: Option<&Goal>) -> Vec<Finding> {
    let id = observed.session_id;
    let mut out = Vec::new();
    let Some(session) = observed.session else {
        out.push(finding("sessionMissing", format!("session {id} does not exist on this OpenCode server")));
        return out;
    };
    let Some(goal) = goal else {
        if session.metadata.get("openchamber").and_then(|o| o.get("goal")).is_some() {
            out.push(finding("goalUnreadable", "the session's goal field is not a goal this version can read".into()));
        } else {
            out.push(finding("noGoal", "the session has no goal".into()));
        }
        return out;
    };
    if observed.objective_file_readable == Some(false) {
        let fallback = if goal.objective.is_empty() {
            "and there is no inline objective"
        } else {
            "; the inline objective is used"
        };
        out.push(finding(
            "objectiveFileMissing",
            format!("the objective file goals/{id}.md cannot be read {fallback}"),
        ));
    }
    let copied_from = goal.session_id.as_deref().filter(|owner| *owner != id);
    if copied_from.is_some() || goal.cause.as_ref().is_some_and(|c| c.code == CauseCode::Inherited) {
        let from = copied_from.unwrap_or("another session");
        out.push(finding("inherited", format!("this goal was copied from {from} (a fork copies the metadata)")));
    }
    if crate::goal::decide::budgets::cost::provider_reports_no_cost(goal) {
        out.push(finding(
            "providerReportsNoCost",
            "the provider reports no cost for this session's replies (every cost is 0): the cost budget is never reached"
                .into(),
        ));
    }
    out.extend(unreadable_guards(goal).into_iter().map(guard_finding));
    out
}

/// A guard the user set that cannot be read: the goal stops on it (`blocked`, `invalidGoal`)
/// before its next continuation, and never completes past it. Checks keep their own code.
fn guard_finding(guard: UnreadableGuard) -> Finding {
    let code = if guard.field == CHECKS_FIELD { "checksUnreadable" } else { "guardUnreadable" };
    finding(
        code,
        format!(
            "the goal's {} {}: the goal stops (blocked, invalidGoal) before its next continuation until it is corrected",
            guard.field, guard.problem
        ),
    )
}

/// Reads what the report needs (the session, pending requests, the trail, the objective file)
/// and builds it. A session OpenCode does not know reads as missing; other read failures are
/// errors.
pub async fn explain(
    client: &OpenCodeClient,
    data_dir: &DataDir,
    session_id: &str,
    directory: &str,
    own_holder: Option<&str>,
) -> Result<ExplainReport, crate::error::HttpError> {
    let session = match client.get_session(session_id, directory).await {
        Ok(session) => Some(session),
        Err(crate::error::HttpError::Status(404)) => None,
        Err(error) => return Err(error),
    };
    let directory = session.as_ref().map_or(directory.to_string(), |s| {
        if directory.trim().is_empty() {
            s.directory.clone()
        } else {
            directory.to_string()
        }
    });
    let (permissions, questions, trail) = tokio::join!(
        client.call("GET", "/permission", &directory, None),
        client.call("GET", "/question", &directory, None),
        data_dir.trail(session_id, Some(TRAIL_WINDOW)),
    );
    let mut pending = Vec::new();
    for (kind, list) in [(PendingKind::Permission, permissions), (PendingKind::Question, questions)] {
        pending.extend(pending_of(kind, session_id, &list.unwrap_or(Value::Null)));
    }
    let goal = session.as_ref().and_then(SessionView::goal);
    let objective_file_readable = match goal.as_ref().filter(|g| g.objective_file) {
        Some(_) => Some(data_dir.read_objective(session_id).await.is_some()),
        None => None,
    };
    Ok(report(&Observed {
        session_id,
        session: session.as_ref(),
        pending,
        trail,
        objective_file_readable,
        own_holder,
        now: client.clock().now_ms(),
    }))
}

/// The session's open requests of one kind, reduced to their kind, id and permission (never
/// the question's text or a command).
fn pending_of(kind: PendingKind, session_id: &str, list: &Value) -> Vec<PendingRequest> {
    let text = |request: &Value, key: &str| request.get(key).and_then(Value::as_str).map(str::to_string);
    list.as_array()
        .map(|items| {
            items
                .iter()
                .filter(|r| r.get("sessionID").and_then(Value::as_str) == Some(session_id))
                .map(|r| PendingRequest {
                    kind,
                    id: text(r, "id").unwrap_or_default(),
                    permission: text(r, "permission"),
                })
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
