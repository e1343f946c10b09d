//! The park decisions, case by case.

use super::*;
use crate::record::test_goal::goal_over;
use serde_json::{json, Value};

const NOW: f64 = 1_800_000_000_000.0;

fn goal(fields: Value) -> Goal {
    let base = json!({"id": "g1", "status": "active", "objective": "Build it", "turnsUsed": 3,
        "continuationId": "msg_user2", "sessionId": "ses_a"});
    goal_over(base, fields)
}

fn tail(info: Value, parts: Value) -> Message {
    let mut base = json!({"id": "msg_tail", "role": "assistant", "parentID": "msg_user2", "providerID": "openai",
        "modelID": "gpt", "time": {"created": NOW - 40_000.0, "completed": NOW - 1_000.0}});
    for (k, v) in info.as_object().unwrap() {
        base[k] = v.clone();
    }
    Message::from_value(&json!({"info": base, "parts": parts}), 0).unwrap()
}

fn limited(headers: Value) -> Message {
    tail(
        json!({"error": {"name": "APIError", "data": {"statusCode": 429, "isRetryable": true, "responseHeaders": headers}}}),
        json!([]),
    )
}

fn waits(goal: &Goal) -> u64 {
    goal.provider_waits.get().copied().unwrap_or(0)
}

fn cuts(goal: &Goal) -> u64 {
    goal.cut_turns.get().copied().unwrap_or(0)
}

fn step(goal: &Goal, tail: &Message) -> TailStep {
    tail_step(goal, tail, NOW, ParkLimits::default(), false)
}

#[test]
fn a_resetting_limit_parks_until_the_reset_and_gives_the_turn_back() {
    let TailStep::Park(park) = step(&goal(json!({})), &limited(json!({"retry-after": "30"}))) else { panic!() };
    assert_eq!(park.nth, 1);
    assert!(park.give_back);
    let earliest = NOW - 1_000.0 + 32_000.0;
    assert!(park.until >= earliest && park.until <= earliest + 3_200.0, "{}", park.until - NOW);
    assert_eq!(park.cause.code, CauseCode::WaitingForProviderLimit);
    assert_eq!(park.cause.until, Some(park.until));
    assert_eq!(park.cause.detail.as_deref(), Some("openai 429"));
    let mut parked = goal(json!({}));
    apply_park(&mut parked, &park, NOW);
    assert_eq!(parked.turns_used, 2);
    assert_eq!(parked.status_reason, REASON_WAITING_FOR_PROVIDER);
    assert_eq!(parked_for(&parked), Some("msg_tail"));
    assert_eq!(wake_at(&parked), Some(park.until));
    assert!(!parked.continuation_id.is_present());
    assert!(parked.inactive_since.get().is_some(), "parked time is not active time");
    // A reply to the user's own message gives nothing back.
    let users =
        tail(json!({"parentID": "msg_typed", "error": {"name": "APIError", "data": {"statusCode": 429}}}), json!([]));
    let TailStep::Park(park) = step(&goal(json!({})), &users) else { panic!() };
    assert!(!park.give_back);
    // No header: the first backoff (1 minute) from the failed reply.
    let TailStep::Park(park) = step(&goal(json!({})), &limited(json!({}))) else { panic!() };
    assert!(park.until >= NOW - 1_000.0 + 62_000.0 && park.until <= NOW - 1_000.0 + 62_000.0 * 1.1);
}

#[test]
fn a_park_waits_then_resumes_once_due_or_resumed() {
    let failed = limited(json!({"retry-after": "30"}));
    let TailStep::Park(park) = step(&goal(json!({})), &failed) else { panic!() };
    let mut parked = goal(json!({}));
    apply_park(&mut parked, &park, NOW);
    assert_eq!(step(&parked, &failed), TailStep::Parked { until: park.until });
    assert_eq!(tail_step(&parked, &failed, park.until, ParkLimits::default(), false), TailStep::Resume);
    let mut resumed = parked.clone();
    resumed.status_reason = REASON_RESUMED.into();
    assert_eq!(step(&resumed, &failed), TailStep::Resume);
    // Resumed over a failed reply it never parked for: no park, one continuation.
    let fresh = goal(json!({"statusReason": "resumed"}));
    assert_eq!(step(&fresh, &failed), TailStep::Resume);
    // A park without a readable wake-up time is due.
    let mut broken = parked.clone();
    broken.set_cause(None);
    assert_eq!(step(&broken, &failed), TailStep::Resume);
}

/// Found by the simulator: two hosts parked the same failed reply at once, and the second
/// write gave the turn back a second time.
#[test]
fn a_park_written_over_the_same_park_changes_nothing() {
    let failed = limited(json!({"retry-after": "30"}));
    let TailStep::Park(park) = step(&goal(json!({})), &failed) else { panic!() };
    let mut parked = goal(json!({}));
    apply_park(&mut parked, &park, NOW);
    let once = parked.clone();
    apply_park(&mut parked, &park, NOW + 10.0);
    assert_eq!(parked.turns_used, once.turns_used, "the turn goes back once");
    assert_eq!(waits(&parked), 1);
}

/// Found by the simulator (a park ended, the continuation's posts then failed with 5xx): the
/// next look saw the same failed reply with the park cleared by the reservation, parked again
/// and counted the same limit twice; six such rounds settled a goal `providerQuota`.
#[test]
fn a_reserved_continuation_over_the_failed_reply_goes_on_and_is_no_second_park() {
    let failed = limited(json!({"retry-after": "30"}));
    let TailStep::Park(park) = step(&goal(json!({})), &failed) else { panic!() };
    let mut parked = goal(json!({}));
    apply_park(&mut parked, &park, NOW);
    let mut reserved = parked.clone();
    on_reserve(&mut reserved, failed.produced_output, None);
    reserved.continuation_for.set("msg_tail".to_string());
    assert_eq!(parked_for(&reserved), None, "the reservation cleared the park");
    assert_eq!(tail_step(&reserved, &failed, park.until + 5_000.0, ParkLimits::default(), false), TailStep::Resume);
    assert_eq!(waits(&reserved), 1, "still the one park");
}

#[test]
fn parks_in_a_row_are_bounded_and_output_resets_them() {
    let limits = ParkLimits { max_waits: 6, max_wait_ms: 1000 };
    let failed = limited(json!({}));
    let TailStep::Park(sixth) = tail_step(&goal(json!({"providerWaits": 5})), &failed, NOW, limits, false) else {
        panic!()
    };
    assert_eq!(sixth.nth, 6);
    assert!(sixth.until <= NOW - 1_000.0 + 1_000.0, "capped");
    let TailStep::Block(stop) = tail_step(&goal(json!({"providerWaits": 6})), &failed, NOW, limits, false) else {
        panic!()
    };
    assert_eq!((stop.reason, stop.cause.code), (REASON_PROVIDER_QUOTA, CauseCode::ProviderQuota));
    let mut counted = goal(json!({"providerWaits": 4, "cutTurns": 1}));
    on_reserve(&mut counted, failed.produced_output, None);
    assert_eq!(waits(&counted), 4, "an empty reply ends no row of parks");
    let productive = tail(json!({"tokens": {"output": 12}}), json!([]));
    on_reserve(&mut counted, productive.produced_output, None);
    assert_eq!((waits(&counted), cuts(&counted)), (0, 0));
    let tool_only = tail(json!({}), json!([{"type": "tool", "tool": "bash", "state": {"status": "completed"}}]));
    assert!(tool_only.produced_output && !failed.produced_output);
    let blank_text = tail(json!({}), json!([{"type": "text", "text": "  "}]));
    assert!(!blank_text.produced_output);
}

#[test]
fn failures_that_do_not_reset_block_with_their_cause() {
    let cases = [
        (
            json!({"name": "APIError", "data": {"statusCode": 429, "isRetryable": false}}),
            CauseCode::ProviderQuota,
            Some("openai"),
        ),
        (json!({"name": "APIError", "data": {"statusCode": 402}}), CauseCode::ProviderQuota, Some("openai")),
        (json!({"name": "APIError", "data": {"statusCode": 401}}), CauseCode::ProviderAuth, Some("openai")),
        (
            json!({"name": "ProviderAuthError", "data": {"providerID": "anthropic"}}),
            CauseCode::ProviderAuth,
            Some("anthropic"),
        ),
        (json!({"name": "ContextOverflowError", "data": {}}), CauseCode::ContextOverflow, Some("openai")),
        (json!({"name": "ContentFilterError"}), CauseCode::ContentFilter, Some("openai")),
    ];
    for (error, code, detail) in cases {
        let TailStep::Block(stop) = step(&goal(json!({})), &tail(json!({"error": error}), json!([]))) else {
            panic!("{error}")
        };
        assert_eq!((stop.cause.code, stop.cause.detail.as_deref()), (code, detail), "{error}");
        // The fix sentence is the cause table's, written by the settle (see `goal/decide/causes.rs`).
        assert!(
            crate::goal::decide::causes::fix_sentence(code, "ses_x", detail)
                .is_some_and(|fix| fix.contains(detail.unwrap()))
                || code == CauseCode::ContextOverflow
                || code == CauseCode::ContentFilter
        );
    }
    for usual in [
        json!({"name": "UnknownError"}),
        json!({"name": "APIError", "data": {"statusCode": 500}}),
        json!({"name": "MessageAbortedError"}),
    ] {
        assert_eq!(step(&goal(json!({})), &tail(json!({"error": usual}), json!([]))), TailStep::Usual);
    }
    assert_eq!(
        step(&goal(json!({})), &tail(json!({"finish": "stop"}), json!([{"type": "text", "text": "done"}]))),
        TailStep::Usual
    );
}

#[test]
fn cut_turns_continue_once_then_block() {
    let cut = tail(json!({"time": {"created": NOW - 60_000.0}}), json!([{"type": "text", "text": "half"}]));
    assert!(is_cut(&cut));
    assert_eq!(step(&goal(json!({})), &cut), TailStep::Usual, "not confirmed: may be a turn starting");
    let confirmed = |g: &Goal| tail_step(g, &cut, NOW, ParkLimits::default(), true);
    assert_eq!(confirmed(&goal(json!({}))), TailStep::ContinueCut { nth: 1 });
    let TailStep::Block(stop) = confirmed(&goal(json!({"cutTurns": 1}))) else { panic!() };
    assert_eq!(stop.cause.code, CauseCode::TurnInterrupted);
    assert_eq!(confirmed(&goal(json!({"cutTurns": 1, "statusReason": "resumed"}))), TailStep::ContinueCut { nth: 1 });
    // The continuation reserved for this cut never reached the session (a kill): the same cut,
    // seen again, keeps its number; a cut after another tail is the next in the row.
    let reserved_for_it = goal(json!({"cutTurns": 1, "continuationFor": "msg_tail"}));
    assert_eq!(confirmed(&reserved_for_it), TailStep::ContinueCut { nth: 1 });
    let reserved_for_another = goal(json!({"cutTurns": 1, "continuationFor": "msg_earlier"}));
    assert!(matches!(confirmed(&reserved_for_another), TailStep::Block(_)));
    let mut counted = goal(json!({"cutTurns": 1, "cause": {"code": "waitingForProviderLimit", "since": 1}}));
    on_reserve(&mut counted, false, Some(1));
    assert_eq!(cuts(&counted), 1, "a cut turn's continuation counts it");
    on_reserve(&mut counted, false, None);
    assert_eq!(cuts(&counted), 0, "any other reservation ends the row");
    assert!(counted.cause.is_none(), "a running goal has no cause");
    // Odd stored counts read as zero.
    assert_eq!(confirmed(&goal(json!({"cutTurns": "lots"}))), TailStep::ContinueCut { nth: 1 });
}

#[test]
fn clearing_a_park_keeps_the_row_count() {
    let failed = limited(json!({"retry-after": "5"}));
    let TailStep::Park(park) = step(&goal(json!({})), &failed) else { panic!() };
    let mut parked = goal(json!({}));
    apply_park(&mut parked, &park, NOW);
    clear_park(&mut parked);
    assert!(parked.cause.is_none() && parked.status_reason.is_empty() && parked_for(&parked).is_none());
    assert_eq!(waits(&parked), 1);
    let mut other = goal(json!({"statusReason": "resumed", "cause": {"code": "userPaused", "since": 1}}));
    clear_park(&mut other);
    assert_eq!(other.status_reason, "resumed");
    assert!(other.cause.is_some(), "another cause is not a park's");
}
