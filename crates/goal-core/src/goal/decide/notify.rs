//! What a tick reports: the settle notification (the reference's `{sessionId, directory, status,
//! goal}` plus a ready-made `{title, body, tag}` for hosts that do not build their own), and the
//! audit trail's lines (appended by the executor to `goals/<sessionId>.history.jsonl`, which the
//! API reads back as `history`).

use serde_json::{json, Map, Value};

use crate::record::reasons::{
    REASON_ASKED_TO_PAUSE, REASON_COST_BUDGET, REASON_REPORTED_BY_AGENT, REASON_TIME_BUDGET, REASON_VERIFIED,
};
use crate::record::{FieldState, Goal, GoalStatus, TIME_BUDGET_FIELD};
use crate::text::truncate_chars;
use crate::time::active::active_ms;

/// The title the reference shows for a status.
pub fn notification_title(status: GoalStatus) -> &'static str {
    match status {
        GoalStatus::Complete => "Goal complete",
        GoalStatus::BudgetLimited => "Goal reached its token budget",
        GoalStatus::Paused => "Goal paused",
        _ => "Goal blocked",
    }
}

/// Builds the notification event. `objective` is the effective objective (file text for
/// file-backed goals, which the reference left empty).
pub fn goal_notification(session_id: &str, directory: &str, goal: &Goal, objective: &str) -> Value {
    let mut goal_value = goal.to_value();
    goal_value["objective"] = Value::from(objective.to_string());
    let checks_passed = goal.cause.as_ref().filter(|c| c.code == crate::record::cause::CauseCode::ChecksPassed);
    let quoted = goal.status_reason == REASON_ASKED_TO_PAUSE;
    // A goal settled after its wrap-up turn: the handoff's start, which its note holds.
    let handed_off = goal.status != GoalStatus::Active
        && goal.wrapped_up.get().zip(goal.cause.as_ref()).is_some_and(|(wrapped, cause)| wrapped.cause == cause.code);
    let detail = if handed_off
        || quoted
        || goal.status_reason == REASON_VERIFIED
        || goal.status_reason == REASON_REPORTED_BY_AGENT
    {
        goal.note.clone()
    } else if let Some(detail) = checks_passed.and_then(|c| c.detail.clone()) {
        // How many checks passed ("2 of 2 checks passed").
        detail
    } else {
        goal.status_reason.clone()
    };
    let detail = criteria_detail(goal, detail);
    let stopped = matches!(goal.status, GoalStatus::Blocked | GoalStatus::BudgetLimited);
    let fix = goal.cause.as_ref().and_then(|c| c.fix.as_deref()).filter(|_| stopped).unwrap_or("");
    let body = notification_body(objective, &detail, fix);
    json!({
        "sessionId": session_id,
        "directory": directory,
        "status": goal.status.as_str(),
        "goal": goal_value,
        "title": match goal.status_reason.as_str() {
            REASON_TIME_BUDGET => "Goal reached its time budget",
            REASON_COST_BUDGET => "Goal reached its cost budget",
            _ => notification_title(goal.status),
        },
        "body": body,
        "tag": format!("goal-{session_id}"),
        "kind": "goal",
        "cause": goal.cause.as_ref().map_or(Value::Null, crate::record::cause::Cause::to_value),
    })
}

/// Characters of a notification body.
pub const BODY_CHAR_LIMIT: usize = 240;
/// Characters of the objective quoted at the start of a body.
const BODY_OBJECTIVE_CHAR_LIMIT: usize = 140;

/// `objective — detail`, then the cause's `fix` when there is one, within [`BODY_CHAR_LIMIT`]
/// characters. The fix is what a person acts on, so it keeps its end: the objective gives way
/// first (dropped when too little of it would be left), then the detail, then the fix itself.
pub fn notification_body(objective: &str, detail: &str, fix: &str) -> String {
    let join = |parts: &[&str], separator: &str| {
        parts.iter().filter(|s| !s.trim().is_empty()).map(|s| s.trim()).collect::<Vec<_>>().join(separator)
    };
    let fix = truncate_chars(fix.trim(), BODY_CHAR_LIMIT);
    if fix.is_empty() {
        return truncate_chars(
            &join(&[&truncate_chars(objective.trim(), BODY_OBJECTIVE_CHAR_LIMIT), detail], " — "),
            BODY_CHAR_LIMIT,
        );
    }
    let room = |used: &str| BODY_CHAR_LIMIT.saturating_sub(used.chars().count() + 3);
    let detail = truncate_chars(detail.trim(), room(&fix));
    let tail = join(&[&detail, &fix], " — ");
    let objective_room = room(&tail).min(BODY_OBJECTIVE_CHAR_LIMIT);
    // Fewer than 20 characters of an objective say nothing; leave it out.
    let objective = if objective_room < 20 { String::new() } else { truncate_chars(objective.trim(), objective_room) };
    join(&[&objective, &tail], " — ")
}

/// A goal completed with criteria says all of them were met, ahead of the rest of the detail
/// (whose own `n/n criteria met` lead, from the note, is not repeated).
fn criteria_detail(goal: &Goal, detail: String) -> String {
    let total = goal.criteria.len();
    let met = goal.criteria.iter().filter(|c| c.state == crate::record::criteria::CriterionState::Met).count();
    if goal.status != GoalStatus::Complete || total == 0 || met < total {
        return detail;
    }
    let lead = format!("{total}/{total} criteria met");
    let rest = detail.strip_prefix(lead.as_str()).map(|r| r.trim_start_matches(" — ")).unwrap_or(&detail);
    let all = format!("all {total} criteria met");
    if rest.trim().is_empty() {
        all
    } else {
        format!("{all} — {rest}")
    }
}

/// A trail line: when, which turn and tail, what the tick did and why, and the time spent.
pub fn trail_line(goal: &Goal, tail: &str, action: &str, reason: &str, now: f64) -> Map<String, Value> {
    let mut record = Map::new();
    record.insert("time".into(), json!(now));
    record.insert("turn".into(), json!(goal.turns_used));
    record.insert("tail".into(), json!(tail));
    record.insert("action".into(), json!(action));
    if !reason.is_empty() {
        record.insert("reason".into(), json!(reason));
    }
    record.insert("activeMs".into(), json!(active_ms(goal, now).floor()));
    // The time budget then, as the goal record names and writes it (a budget that cannot be
    // read is left out).
    if let FieldState::Readable(budget) = goal.field_state(TIME_BUDGET_FIELD) {
        record.insert(TIME_BUDGET_FIELD.into(), budget);
    }
    record
}

#[cfg(test)]
mod tests;
