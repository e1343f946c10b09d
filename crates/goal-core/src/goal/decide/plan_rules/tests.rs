//! Branch-by-branch tests of the tick decisions.

use super::*;
use crate::record::cause::CauseCode;
use crate::record::reasons::{
    REASON_AUDIT_UNAVAILABLE, REASON_BLOCKED_PER_AUDIT, REASON_BUDGET, REASON_COST_BUDGET, REASON_DISPATCH_FAILED,
    REASON_REPEATED_TRUNCATION, REASON_TURN_CAP, REASON_TURN_FAILED, REASON_VERIFIED,
};
use crate::record::session::Tokens;
use serde_json::json;

fn goal_with(extra: serde_json::Value) -> Goal {
    let mut base = json!({"id": "g1", "status": "active", "objective": "Build it", "createdAt": 100});
    for (k, v) in extra.as_object().unwrap() {
        base[k] = v.clone();
    }
    Goal::from_value(&base).unwrap()
}

fn user(id: &str, created: f64) -> Message {
    Message {
        id: id.into(),
        role: Role::User,
        parent_id: String::new(),
        created: Some(created),
        completed: None,
        error: None,
        finish: String::new(),
        summary: false,
        tokens: Tokens::default(),
        selection: Default::default(),
        text: "do it".into(),
        cost: 0.0,
        provider_error: None,
        produced_output: false,
        index: 0,
    }
}

fn reply(id: &str, created: f64) -> Message {
    Message {
        role: Role::Assistant,
        completed: Some(created + 1.0),
        finish: "stop".into(),
        selection: Selection {
            provider_id: "prov".into(),
            model_id: "model".into(),
            agent: "build".into(),
            ..Default::default()
        },
        text: "did it".into(),
        tokens: Tokens { input: 1000, ..Tokens::default() },
        ..user(id, created)
    }
}

fn window(mut messages: Vec<Message>) -> Vec<Message> {
    for (index, message) in messages.iter_mut().enumerate() {
        message.index = index;
    }
    messages
}

fn settled(plan: &Plan) -> (GoalStatus, String) {
    match plan {
        Plan::Settle(s) => (s.status, s.reason.clone()),
        other => panic!("expected settle, got {other:?}"),
    }
}

#[test]
fn waits_on_trailing_user_running_reply_or_no_reply() {
    let goal = goal_with(json!({}));
    assert_eq!(plan_tick(&goal, &[], 20), Plan::Wait(WaitReason::NoReplyYet));
    let w = window(vec![reply("a1", 200.0), user("u2", 300.0)]);
    assert_eq!(plan_tick(&goal, &w, 20), Plan::Wait(WaitReason::TrailingUserMessage));
    let mut running = reply("a1", 200.0);
    running.completed = None;
    assert_eq!(plan_tick(&goal, &window(vec![user("u", 150.0), running]), 20), Plan::Wait(WaitReason::ReplyRunning));
    let mut nameless = reply("", 200.0);
    nameless.error = None;
    assert_eq!(plan_tick(&goal, &window(vec![nameless]), 20), Plan::Wait(WaitReason::NoReplyYet));
}

#[test]
fn audits_an_ordinary_reply_with_its_model() {
    let goal = goal_with(json!({}));
    let mut summary = reply("a2", 300.0);
    summary.summary = true;
    summary.selection.agent = "compaction".into();
    summary.selection.model_id = "summarizer".into();
    let mut ordinary = reply("a1", 200.0);
    ordinary.selection.variant = "high".into();
    let plan = plan_tick(&goal, &window(vec![user("u", 150.0), ordinary.clone()]), 20);
    match plan {
        Plan::Audit(basis) => {
            assert_eq!(basis.target.model_id, "model");
            assert_eq!(basis.target.variant, "high");
            assert_eq!(basis.assistant_text, "did it");
            assert_eq!(basis.tail_message_id, "a1");
        }
        other => panic!("{other:?}"),
    }
    // A compaction summary is continued without audit, with the pre-summary model.
    match plan_tick(&goal, &window(vec![ordinary, summary]), 20) {
        Plan::ContinueUnaudited(basis) => {
            assert_eq!(basis.target.model_id, "model");
            assert_eq!(basis.target.agent, "build");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn abort_pauses_unless_resumed() {
    let mut aborted = reply("a1", 200.0);
    aborted.error = Some(ABORTED.into());
    aborted.completed = None;
    let w = window(vec![user("u", 150.0), aborted]);
    assert!(matches!(plan_tick(&goal_with(json!({})), &w, 20), Plan::Pause(_)));
    let resumed = goal_with(json!({"statusReason": "resumed"}));
    assert!(matches!(plan_tick(&resumed, &w, 20), Plan::ContinueUnaudited(_)));
}
const ABORTED: &str = crate::record::session::ABORTED_ERROR;

/// A reply as OpenCode stores it after the provider gave up, with `error` as given.
fn failed_window(error: serde_json::Value, finish: &str) -> Vec<Message> {
    Message::list_from_value(&json!([
        {"info": {"id": "u1", "role": "user", "time": {"created": 150}}, "parts": [{"type": "text", "text": "go"}]},
        {"info": {"id": "a1", "role": "assistant", "parentID": "u1", "time": {"created": 200, "completed": 201},
            "providerID": "prov", "modelID": "model", "agent": "build", "finish": finish, "error": error,
            "tokens": {"input": 1000, "output": 0}},
         "parts": [{"type": "text", "text": "half done"}]},
    ]))
    .unwrap()
}

/// The errors the provider table does not name, each with the status reason it settles with: an
/// unknown name, a structured-output failure, an `APIError` without a status, a non-retryable
/// 500 (and a 503 not marked retryable), an unnamed error object.
fn unnamed_errors() -> Vec<(&'static str, serde_json::Value)> {
    vec![
        ("UnknownError", json!({"name": "UnknownError", "data": {"message": "boom"}})),
        ("StructuredOutputError", json!({"name": "StructuredOutputError", "data": {"message": "bad json"}})),
        ("APIError", json!({"name": "APIError", "data": {"message": "bad request", "isRetryable": false}})),
        (
            "APIError",
            json!({"name": "APIError", "data": {"message": "internal", "statusCode": 500, "isRetryable": false}}),
        ),
        ("APIError", json!({"name": "APIError", "data": {"statusCode": 503, "isRetryable": false}})),
        (REASON_TURN_FAILED, json!({})),
        (REASON_TURN_FAILED, json!({"name": "  ", "data": "odd"})),
    ]
}

#[test]
fn errors_the_provider_table_does_not_name_block_at_once_with_their_name() {
    use crate::goal::decide::provider::{tail_meaning, TailMeaning};
    let quiet = std::time::Duration::from_millis(400);
    // Over the token budget too: the failure is checked first (cheapest first, as the seed says).
    let goal = goal_with(json!({"tokenBudget": 1000}));
    for finish in ["", "stop", "length"] {
        for (name, error) in unnamed_errors() {
            let messages = failed_window(error.clone(), finish);
            // Not the provider stage's: no park, no provider settle.
            let stage = tail_meaning(&goal, &messages, 10_000.0, Default::default(), 0, quiet);
            assert_eq!(stage, TailMeaning::Usual, "{name} {finish}");
            // Settled blocked at once, never audited; a length finish does not override it.
            match plan_tick(&goal, &messages, 20) {
                Plan::Settle(s) => {
                    assert_eq!(
                        (s.status, s.reason.as_str(), s.cause),
                        (GoalStatus::Blocked, name, CauseCode::TurnFailed)
                    );
                    let message = error.pointer("/data/message").and_then(|m| m.as_str());
                    let detail = match message {
                        Some(message) => format!("{name}: {message}"),
                        None => name.to_string(),
                    };
                    assert_eq!(s.detail.as_deref(), Some(detail.as_str()), "{name} {finish}");
                }
                other => panic!("{name} {finish}: expected a settle, got {other:?}"),
            }
            // A resume does not bypass it (the seed: resume does not bypass assistant errors).
            let resumed = goal_with(json!({"statusReason": "resumed"}));
            assert_eq!(cause_of_plan(&plan_tick(&resumed, &messages, 20)), CauseCode::TurnFailed);
        }
    }
}

#[test]
fn a_failed_turn_is_bounded_and_aborts_or_length_cuts_are_not_failures() {
    let mut failed = reply("a1", 200.0);
    failed.error = Some("N".repeat(500));
    let found = turn_failure(&failed).unwrap();
    assert_eq!(found.reason.chars().count(), TURN_ERROR_NAME_CHAR_LIMIT);
    failed.provider_error = crate::record::provider_error::ProviderError::from_value(
        &json!({"name": "X", "data": {"message": "m".repeat(1000)}}),
    );
    let found = turn_failure(&failed).unwrap();
    assert_eq!(found.detail.chars().count(), TURN_ERROR_NAME_CHAR_LIMIT + 2 + TURN_ERROR_MESSAGE_CHAR_LIMIT);
    for name in [ABORTED, crate::record::session::LENGTH_ERROR] {
        failed.error = Some(name.into());
        assert_eq!(turn_failure(&failed), None, "{name}");
    }
    failed.error = None;
    failed.finish = "length".into();
    assert_eq!(turn_failure(&failed), None);
}

#[test]
fn cost_budget_settles_budget_limited_after_the_token_budget() {
    let mut priced = reply("a1", 200.0);
    priced.cost = 0.3;
    let mut summary = reply("s1", 300.0);
    summary.summary = true;
    summary.cost = 0.25;
    let w = window(vec![priced.clone(), summary]);
    // 0.3 + 0.25 (the summary counts) reaches 0.5.
    let goal = goal_with(json!({"costBudget": 0.5}));
    match plan_tick(&goal, &w, 20) {
        Plan::Settle(s) => {
            assert_eq!(
                (s.status, s.reason.as_str(), s.cause),
                (GoalStatus::BudgetLimited, REASON_COST_BUDGET, CauseCode::CostBudget)
            );
            assert!((s.accounting.cost_used - 0.55).abs() < 1e-9, "{}", s.accounting.cost_used);
        }
        other => panic!("{other:?}"),
    }
    // Below it, the reply is audited; both budgets spent: the token budget names the stop.
    assert!(matches!(
        plan_tick(&goal_with(json!({"costBudget": 0.6})), &w, 20),
        Plan::ContinueUnaudited(_) | Plan::Audit(_)
    ));
    let both = goal_with(json!({"costBudget": 0.5, "tokenBudget": 100}));
    assert_eq!(cause_of_plan(&plan_tick(&both, &w, 20)), CauseCode::TokenBudget);
    // A provider that reports no cost never reaches it.
    let free = window(vec![reply("a1", 200.0), reply("a2", 300.0)]);
    assert!(matches!(plan_tick(&goal_with(json!({"costBudget": 0.01})), &free, 20), Plan::Audit(_)));
}

#[test]
fn budget_then_cap() {
    let w = window(vec![reply("a1", 200.0)]);
    let over = goal_with(json!({"tokenBudget": 1000, "turnsUsed": 50}));
    assert_eq!(settled(&plan_tick(&over, &w, 20)), (GoalStatus::BudgetLimited, REASON_BUDGET.into()));
    let capped = goal_with(json!({"tokenBudget": 5000, "turnsUsed": 7}));
    assert_eq!(settled(&plan_tick(&capped, &w, 7)), (GoalStatus::Blocked, REASON_TURN_CAP.into()));
    assert!(matches!(plan_tick(&capped, &w, 8), Plan::Audit(_)));
}

fn truncated(id: &str, created: f64, by_error: bool) -> Message {
    let mut m = reply(id, created);
    if by_error {
        m.error = Some(crate::record::session::LENGTH_ERROR.into());
    } else {
        m.finish = "length".into();
    }
    m.text = String::new();
    m
}

#[test]
fn one_truncation_continues_without_audit() {
    let goal = goal_with(json!({"turnsUsed": 1}));
    for by_error in [false, true] {
        let w = window(vec![reply("a0", 150.0), truncated("a1", 200.0, by_error)]);
        assert!(matches!(plan_tick(&goal, &w, 20), Plan::ContinueUnaudited(_)));
    }
}

#[test]
fn two_truncations_block_regardless_of_ids() {
    let goal = goal_with(json!({"turnsUsed": 1}));
    let w = window(vec![truncated("z", 200.0, false), truncated("a", 300.0, false)]);
    assert_eq!(settled(&plan_tick(&goal, &w, 20)), (GoalStatus::Blocked, REASON_REPEATED_TRUNCATION.into()));
    // An explicit resume grants one more attempt.
    let resumed = goal_with(json!({"statusReason": "resumed"}));
    assert!(matches!(plan_tick(&resumed, &w, 20), Plan::ContinueUnaudited(_)));
    // A truncation from before the goal does not count.
    let old = window(vec![truncated("z", 50.0, false), truncated("a", 300.0, false)]);
    assert!(matches!(plan_tick(&goal, &old, 20), Plan::ContinueUnaudited(_)));
}

#[test]
fn summaries_do_not_break_the_streak_but_ordinary_turns_do() {
    let goal = goal_with(json!({}));
    let mut summary = truncated("s", 250.0, false);
    summary.summary = true;
    let w = window(vec![truncated("a", 200.0, false), summary.clone(), truncated("b", 300.0, false)]);
    assert_eq!(settled(&plan_tick(&goal, &w, 20)).1, REASON_REPEATED_TRUNCATION);
    // Truncated turn followed by a length-finished summary: the summary continues.
    let w2 = window(vec![truncated("a", 200.0, false), summary]);
    assert!(matches!(plan_tick(&goal, &w2, 20), Plan::ContinueUnaudited(_)));
    let w3 = window(vec![truncated("a", 200.0, false), reply("o", 250.0), truncated("b", 300.0, false)]);
    assert!(matches!(plan_tick(&goal, &w3, 20), Plan::ContinueUnaudited(_)));
}

#[test]
fn budget_and_cap_come_before_truncation_recovery() {
    let w = window(vec![truncated("a", 200.0, false), truncated("b", 300.0, false)]);
    let budget = goal_with(json!({"tokenBudget": 500}));
    assert_eq!(settled(&plan_tick(&budget, &w, 20)).0, GoalStatus::BudgetLimited);
    let cap = goal_with(json!({"turnsUsed": 20}));
    assert_eq!(settled(&plan_tick(&cap, &w, 20)).1, REASON_TURN_CAP);
}

#[test]
fn missing_model_settles_instead_of_stranding() {
    let mut anonymous = reply("a1", 200.0);
    anonymous.selection.provider_id.clear();
    assert_eq!(settled(&plan_tick(&goal_with(json!({})), &window(vec![anonymous]), 20)).1, REASON_DISPATCH_FAILED);
}

fn basis() -> Basis {
    match plan_tick(&goal_with(json!({})), &window(vec![reply("a1", 200.0)]), 20) {
        Plan::Audit(basis) => basis,
        other => panic!("{other:?}"),
    }
}

fn audit(verdict: Verdict, note: &str) -> Option<Audit> {
    Some(Audit { verdict, note: note.into(), provider_id: "small".into(), model_id: "nano".into() })
}

#[test]
fn audit_verdicts() {
    let b = basis();
    let goal = goal_with(json!({"blockedStreak": 1, "auditFailStreak": 1}));
    match after_audit(&goal, &b, audit(Verdict::Complete, "all verified"), None) {
        AfterAudit::Settle(s) => {
            assert_eq!((s.status, s.reason.as_str()), (GoalStatus::Complete, REASON_VERIFIED));
            assert_eq!(s.note.as_deref(), Some("all verified"));
            assert_eq!(s.evaluation, Some(("small".into(), "nano".into())));
        }
        other => panic!("{other:?}"),
    }
    match after_audit(&goal, &b, audit(Verdict::Continue, ""), None) {
        AfterAudit::Continue(r) => assert_eq!((r.blocked_streak, r.audit_fail_streak, r.note), (0, 0, None)),
        other => panic!("{other:?}"),
    }
    match after_audit(&goal, &b, audit(Verdict::Blocked, "needs key"), None) {
        AfterAudit::Continue(r) => assert_eq!(r.blocked_streak, 2),
        other => panic!("{other:?}"),
    }
    let third = goal_with(json!({"blockedStreak": 2}));
    match after_audit(&third, &b, audit(Verdict::Blocked, ""), None) {
        AfterAudit::Settle(s) => assert_eq!(s.reason, REASON_BLOCKED_PER_AUDIT),
        other => panic!("{other:?}"),
    }
    match after_audit(&third, &b, audit(Verdict::Blocked, "missing credentials"), None) {
        AfterAudit::Settle(s) => assert_eq!(s.reason, "missing credentials"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn audit_failures_tolerate_one() {
    let b = basis();
    match after_audit(&goal_with(json!({"blockedStreak": 2})), &b, None, None) {
        AfterAudit::Continue(r) => assert_eq!((r.audit_fail_streak, r.blocked_streak), (1, 0)),
        other => panic!("{other:?}"),
    }
    match after_audit(&goal_with(json!({"auditFailStreak": 1})), &b, None, None) {
        AfterAudit::Settle(s) => assert_eq!(s.reason, REASON_AUDIT_UNAVAILABLE),
        other => panic!("{other:?}"),
    }
}

#[test]
fn verdict_parsing() {
    let parse = |v: serde_json::Value| parse_verdict(v.as_object().unwrap());
    assert_eq!(parse(json!({"verdict": " Complete ", "note": "ok"})), Some((Verdict::Complete, "ok".into())));
    assert_eq!(parse(json!({"verdict": "done"})), None);
    assert_eq!(parse(json!({"verdict": 3})), None);
    assert_eq!(parse(json!({"verdict": "blocked", "note": 5})), Some((Verdict::Blocked, String::new())));
}

#[test]
fn streaks_at_the_numeric_edge_settle_instead_of_overflowing() {
    // 1e308 in metadata parses as u64::MAX; adding one must not overflow (a panic in debug
    // builds, a wrap to 0 in release).
    let b = basis();
    match after_audit(&goal_with(json!({"blockedStreak": 1e308})), &b, audit(Verdict::Blocked, "needs the key"), None) {
        AfterAudit::Settle(s) => assert_eq!(s.reason, "needs the key"),
        other => panic!("{other:?}"),
    }
    match after_audit(&goal_with(json!({"auditFailStreak": 1e308})), &b, None, None) {
        AfterAudit::Settle(s) => assert_eq!(s.reason, REASON_AUDIT_UNAVAILABLE),
        other => panic!("{other:?}"),
    }
}

fn cause_of_plan(plan: &Plan) -> CauseCode {
    match plan {
        Plan::Settle(s) => s.cause,
        other => panic!("expected settle, got {other:?}"),
    }
}

fn cause_after(after: AfterAudit) -> CauseCode {
    match after {
        AfterAudit::Settle(s) => s.cause,
        AfterAudit::Continue(_) => panic!("expected settle"),
    }
}

#[test]
fn every_settle_path_of_the_plan_names_its_cause() {
    let w = window(vec![reply("a1", 200.0)]);
    let over = goal_with(json!({"tokenBudget": 1000}));
    assert_eq!(cause_of_plan(&plan_tick(&over, &w, 20)), CauseCode::TokenBudget);
    let capped = goal_with(json!({"turnsUsed": 7}));
    assert_eq!(cause_of_plan(&plan_tick(&capped, &w, 7)), CauseCode::TurnCap);
    let truncations = window(vec![truncated("z", 200.0, false), truncated("a", 300.0, false)]);
    assert_eq!(cause_of_plan(&plan_tick(&goal_with(json!({})), &truncations, 20)), CauseCode::NoProgress);
    let mut anonymous = reply("a1", 200.0);
    anonymous.selection.provider_id.clear();
    assert_eq!(
        cause_of_plan(&plan_tick(&goal_with(json!({})), &window(vec![anonymous]), 20)),
        CauseCode::DispatchFailed
    );

    let b = basis();
    let goal = goal_with(json!({}));
    assert_eq!(cause_after(after_audit(&goal, &b, audit(Verdict::Complete, "done"), None)), CauseCode::Verified);
    let third = goal_with(json!({"blockedStreak": 2}));
    assert_eq!(
        cause_after(after_audit(&third, &b, audit(Verdict::Blocked, "needs key"), None)),
        CauseCode::AuditorBlocked
    );
    let failing = goal_with(json!({"auditFailStreak": 1}));
    assert_eq!(cause_after(after_audit(&failing, &b, None, None)), CauseCode::AuditUnavailable);
}

#[test]
fn the_last_turn_reserved_after_this_tail_is_no_turn_past_the_cap() {
    let w = window(vec![user("u", 150.0), reply("a1", 200.0)]);
    // The 7th of 7 turns was reserved after a1 (counted then); its post never got its answer.
    let reserved = goal_with(json!({"turnsUsed": 7, "continuationFor": "a1", "continuationId": "msg_c7"}));
    assert!(matches!(plan_tick(&reserved, &w, 7), Plan::Audit(_)), "its post goes out under its id");
    // Reserved after an older tail: the cap stands.
    let older = goal_with(json!({"turnsUsed": 7, "continuationFor": "a0", "continuationId": "msg_c7"}));
    assert_eq!(cause_of_plan(&plan_tick(&older, &w, 7)), CauseCode::TurnCap);
    let resumed = goal_with(
        json!({"turnsUsed": 7, "continuationFor": "a1", "continuationId": "msg_c7", "statusReason": "resumed"}),
    );
    assert_eq!(cause_of_plan(&plan_tick(&resumed, &w, 7)), CauseCode::TurnCap);
}
