//! The settle notification: the reference's `{sessionId, directory, status, goal}` plus a
//! ready-made `{title, body, tag}` for hosts that do not build their own.

use serde_json::{json, Value};

use crate::record::reasons::{REASON_REPORTED_BY_AGENT, REASON_TIME_BUDGET, REASON_VERIFIED};
use crate::record::{truncate_chars, Goal, GoalStatus};

/// The title the reference shows for a status.
pub fn notification_title(status: GoalStatus) -> &'static str {
    match status {
        GoalStatus::Complete => "Goal complete",
        GoalStatus::BudgetLimited => "Goal reached its token budget",
        _ => "Goal blocked",
    }
}

/// Builds the notification event. `objective` is the effective objective (file text for
/// file-backed goals, which the reference left empty).
pub fn goal_notification(session_id: &str, directory: &str, goal: &Goal, objective: &str) -> Value {
    let mut goal_value = goal.to_value();
    goal_value["objective"] = Value::from(objective.to_string());
    let checks_passed = goal.cause.as_ref().filter(|c| c.code == crate::record::cause::CauseCode::ChecksPassed);
    let detail = if goal.status_reason == REASON_VERIFIED || goal.status_reason == REASON_REPORTED_BY_AGENT {
        goal.note.clone()
    } else if let Some(detail) = checks_passed.and_then(|c| c.detail.clone()) {
        // How many checks passed ("2 of 2 checks passed").
        detail
    } else {
        goal.status_reason.clone()
    };
    let detail = criteria_detail(goal, detail);
    let short_objective = truncate_chars(objective.trim(), 140);
    let body = [short_objective.as_str(), detail.as_str()]
        .iter()
        .filter(|s| !s.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" — ");
    json!({
        "sessionId": session_id,
        "directory": directory,
        "status": goal.status.as_str(),
        "goal": goal_value,
        "title": if goal.status_reason == REASON_TIME_BUDGET { "Goal reached its time budget" } else { notification_title(goal.status) },
        "body": truncate_chars(&body, 240),
        "tag": format!("goal-{session_id}"),
        "kind": "goal",
        "cause": goal.cause.as_ref().map_or(Value::Null, crate::record::cause::Cause::to_value),
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_backed_objective_is_shown() {
        let goal = Goal::from_value(&json!({
            "id": "g", "status": "complete", "objectiveFile": true, "statusReason": "verified by audit", "note": "all tests pass"
        }))
        .unwrap();
        let event = goal_notification("ses_1", "/p", &goal, "Ship the parser");
        assert_eq!(event["goal"]["objective"], "Ship the parser");
        assert_eq!(event["title"], "Goal complete");
        assert_eq!(event["body"], "Ship the parser — all tests pass");
        assert_eq!(event["tag"], "goal-ses_1");
        let blocked = Goal::from_value(
            &json!({"id": "g", "status": "budgetLimited", "objective": "x", "statusReason": "token budget reached"}),
        )
        .unwrap();
        let event = goal_notification("s", "", &blocked, "x");
        assert_eq!(event["body"], "x — token budget reached");
        assert_eq!(event["title"], "Goal reached its token budget");
    }

    #[test]
    fn a_complete_goal_with_criteria_says_all_were_met() {
        let met = json!({"id": "c1", "text": "a", "source": "user", "state": "met"});
        let goal = Goal::from_value(&json!({
            "id": "g", "status": "complete", "objective": "x", "statusReason": "verified by audit",
            "note": "2/2 criteria met — docs and tests done",
            "criteria": [met, {"id": "c2", "text": "b", "source": "user", "state": "met"}]
        }))
        .unwrap();
        assert_eq!(goal_notification("s", "", &goal, "x")["body"], "x — all 2 criteria met — docs and tests done");
    }
}

#[cfg(test)]
mod cause_tests {
    use super::*;

    #[test]
    fn the_notification_carries_the_cause_and_names_the_checks_that_passed() {
        let goal = Goal::from_value(&json!({
            "id": "g", "status": "complete", "objective": "x", "statusReason": "checks passed",
            "cause": {"code": "checksPassed", "since": 5, "detail": "2 of 2 checks passed"}
        }))
        .unwrap();
        let event = goal_notification("ses_1", "/p", &goal, "Ship it");
        assert_eq!(event["body"], "Ship it — 2 of 2 checks passed");
        assert_eq!(event["cause"]["code"], "checksPassed");
        let running = Goal::from_value(&json!({"id": "g", "status": "blocked", "objective": "x"})).unwrap();
        assert_eq!(goal_notification("s", "", &running, "x")["cause"], Value::Null);
    }
}
