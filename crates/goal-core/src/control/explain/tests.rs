//! The report, from observed states.

use super::*;
use serde_json::json;

fn session(goal: Value) -> SessionView {
    SessionView::from_value(&json!({"id": "ses_a", "directory": "/p", "metadata": {"openchamber": {"goal": goal}}}))
        .unwrap()
}

/// The report's JSON form, which the assertions read.
fn report_json(observed: &Observed<'_>) -> Value {
    report(observed).to_value()
}

fn observed<'a>(session: Option<&'a SessionView>, trail: Vec<Value>) -> Observed<'a> {
    Observed {
        session_id: "ses_a",
        session,
        pending: Vec::new(),
        trail,
        objective_file_readable: None,
        own_holder: None,
        now: 1_000_000.0,
    }
}

fn goal(extra: Value) -> Value {
    let mut base = json!({"id": "g1", "status": "active", "objective": "ship", "createdAt": 1.0, "sessionId": "ses_a"});
    for (k, v) in extra.as_object().unwrap() {
        base[k] = v.clone();
    }
    base
}

#[test]
fn a_stopped_goal_reports_its_cause_fix_and_action() {
    let s = session(goal(json!({"status": "budgetLimited", "statusReason": "token budget reached",
        "cause": {"code": "tokenBudget", "since": 5, "fix": "Resume with a larger token budget"}})));
    let out = report_json(&observed(Some(&s), Vec::new()));
    assert_eq!(out["status"], "budgetLimited");
    assert_eq!(out["cause"]["code"], "tokenBudget");
    assert_eq!(out["fixAction"], "resumeWithTokenBudget");
    assert_eq!(out["nextWakeAt"], Value::Null);
    assert_eq!(out["findings"], json!([]));
    for key in [
        "sessionId",
        "status",
        "statusReason",
        "cause",
        "nextWakeAt",
        "lease",
        "pending",
        "lastAudit",
        "lastChecks",
        "findings",
    ] {
        assert!(out.get(key).is_some(), "{key}");
    }
}

#[test]
fn a_running_goal_shows_what_holds_it() {
    let s = session(goal(json!({"lease": {"holder": "other-host", "expiresAt": 1_060_000.0}})));
    let mut seen = observed(Some(&s), Vec::new());
    assert_eq!(report_json(&seen)["cause"], Value::Null, "a reader that drives nothing sees a lease, not a wait");
    seen.own_holder = Some("me");
    let out = report_json(&seen);
    assert_eq!(out["cause"]["code"], "waitingForLease");
    assert_eq!(out["cause"]["detail"], "other-host");
    assert_eq!(out["nextWakeAt"], 1_060_000.0);
    assert_eq!(out["lease"]["holder"], "other-host");
    seen.pending = vec![PendingRequest { kind: PendingKind::Permission, id: "per_1".into(), permission: None }];
    assert_eq!(report_json(&seen)["cause"]["code"], "waitingForUser");
}

#[test]
fn the_last_audit_and_the_last_round_of_checks() {
    let s = session(goal(json!({"checks": [{"command": "npm test"}]})));
    let trail = vec![
        json!({"time": 1, "tail": "t1", "action": "check", "check": {"index": 0, "result": "failed", "exitStatus": 1}}),
        json!({"time": 2, "tail": "t1", "verdict": "complete", "action": "complete", "note": "done"}),
        json!({"time": 3, "tail": "t2", "verdict": "complete", "action": "complete", "note": "done again"}),
        json!({"time": 4, "tail": "t2", "action": "check", "check": {"index": 0, "result": "passed", "exitStatus": 0}}),
    ];
    let out = report_json(&observed(Some(&s), trail));
    assert_eq!(out["lastAudit"]["note"], "done again");
    assert_eq!(out["lastChecks"].as_array().unwrap().len(), 1, "only the newest round");
    assert_eq!(out["lastChecks"][0]["result"], "passed");
    assert_eq!(out["lastChecks"][0]["exitStatus"], 0);
    assert_eq!(out["lastChecks"][0]["time"], 4.0);
    assert_eq!(out["checks"], json!([{"command": "npm test"}]));
}

#[test]
fn findings_name_what_needs_a_human() {
    let out = report_json(&observed(None, Vec::new()));
    assert_eq!(out["findings"][0]["code"], "sessionMissing");
    assert_eq!(out["status"], Value::Null);

    let copied =
        session(goal(json!({"sessionId": "ses_parent", "objectiveFile": true, "objective": "", "checks": "npm test"})));
    let mut seen = observed(Some(&copied), Vec::new());
    seen.objective_file_readable = Some(false);
    let codes: Vec<Value> =
        report_json(&seen)["findings"].as_array().unwrap().iter().map(|f| f["code"].clone()).collect();
    assert_eq!(codes, vec![json!("objectiveFileMissing"), json!("inherited"), json!("checksUnreadable")]);

    // Every unreadable guard is named, each with what it does to the goal.
    let unreadable =
        session(goal(json!({"costBudget": "half a dollar", "activeHours": {"from": "9"}, "criteria": [{}]})));
    let found = report_json(&observed(Some(&unreadable), Vec::new()))["findings"].clone();
    let named: Vec<(&str, bool)> = found
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["code"].as_str().unwrap(), f["message"].as_str().unwrap().contains("blocked, invalidGoal")))
        .collect();
    assert_eq!(named, vec![("guardUnreadable", true); 3]);
    let messages = found.to_string();
    for field in ["criteria", "costBudget", "activeHours"] {
        assert!(messages.contains(&format!("the goal's {field} ")), "{field} named in {messages}");
    }

    let none = SessionView::from_value(&json!({"id": "ses_a", "directory": "/p"})).unwrap();
    assert_eq!(report_json(&observed(Some(&none), Vec::new()))["findings"][0]["code"], "noGoal");
}

#[test]
fn the_cost_is_shown_and_a_provider_without_prices_is_named() {
    let priced = session(goal(json!({"costBudget": 2.5, "costUsed": 0.75, "tokensUsed": 9000})));
    let out = report_json(&observed(Some(&priced), Vec::new()));
    assert_eq!(out["cost"], json!({"budget": 2.5, "used": 0.75}));
    assert_eq!(out["findings"], json!([]));
    let free = session(goal(json!({"costBudget": 2.5, "tokensUsed": 9000})));
    let out = report_json(&observed(Some(&free), Vec::new()));
    assert_eq!(out["cost"], json!({"budget": 2.5, "used": 0.0}));
    assert_eq!(out["findings"][0]["code"], "providerReportsNoCost");
    let none = report_json(&observed(Some(&session(goal(json!({})))), Vec::new()));
    assert_eq!(none["cost"], json!({"budget": null, "used": 0.0}));
    assert_eq!(none["findings"], json!([]));
}
