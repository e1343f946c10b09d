//! The notification's title and body, its fix and its cause.

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

#[test]
fn a_stopped_goal_ends_its_body_with_the_fix_within_the_limit() {
    let fix = "Resume with a larger cost budget in US dollars: `session-goal resume s --goal-cost-budget 5`.";
    let goal = |status: &str| {
        Goal::from_value(&json!({
            "id": "g", "status": status, "objective": "x", "statusReason": "cost budget reached",
            "cause": {"code": "costBudget", "since": 5, "fix": fix}
        }))
        .unwrap()
    };
    let event = goal_notification("s", "", &goal("budgetLimited"), "Ship it");
    assert_eq!(event["body"], format!("Ship it — cost budget reached — {fix}"));
    assert_eq!(event["title"], "Goal reached its cost budget");
    // A long objective gives way; the fix keeps its end.
    let long = goal_notification("s", "", &goal("blocked"), &"o".repeat(500));
    let body = long["body"].as_str().unwrap();
    assert!(body.ends_with(fix) && body.chars().count() <= BODY_CHAR_LIMIT, "{body}");
    assert!(body.starts_with("ooo"), "{body}");
    // A fix longer than the whole body is cut, never overflowing it.
    let huge = notification_body("obj", "reason", &"f".repeat(400));
    assert_eq!(huge, "f".repeat(BODY_CHAR_LIMIT));
    // A goal that is not stopped shows no fix.
    let paused = goal_notification("s", "", &goal("paused"), "Ship it");
    assert_eq!(paused["body"], "Ship it — cost budget reached");
}

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
