//! Each guard's unreadable shapes, its fix, and a complete over unreadable checks or criteria.

use super::*;
use crate::record::test_goal::goal;
use serde_json::json;

fn fields(goal: &Goal) -> Vec<&'static str> {
    unreadable_guards(goal).iter().map(|guard| guard.field).collect()
}

const HOURS: fn() -> Value = || json!({"start": "09:00", "end": "17:00", "timeZone": "Europe/Berlin"});

#[test]
fn every_guard_field_with_a_bad_shape_is_unreadable_and_kept() {
    let long = "x".repeat(400);
    let cases = [
        ("checks", json!([{"command": 7}])),
        ("checks", json!([{"command": "npm test", "timeoutMs": "soon"}])),
        ("checks", json!("npm test")),
        ("criteria", json!([{"id": "c1", "source": "user", "state": "unmet"}])),
        ("criteria", json!([{"id": "c1", "text": "a", "source": "user", "state": "unmet"}, "b"])),
        ("criteria", json!({"c1": long})),
        ("costBudget", json!("five dollars")),
        ("costBudget", json!(-1)),
        ("costBudget", json!({"usd": 5})),
        ("timeBudgetMs", json!("two hours")),
        ("timeBudgetMs", json!(0.5)),
        ("activeHours", json!("09:00-17:00")),
        ("activeHours", json!({"start": "25:00", "end": "17:00", "timeZone": "Europe/Berlin"})),
        ("activeHours", json!({"start": "09:00", "end": "17:00", "timeZone": "Mars/Olympus"})),
    ];
    for (field, value) in cases {
        let g = goal(json!({ field: value.clone() }));
        assert_eq!(fields(&g), [field], "{field} = {value}");
        assert_eq!(g.to_value()[field], value, "{field} kept verbatim");
        let complete_ok = field != "checks" && field != "criteria";
        assert_eq!(may_settle_complete(&g), complete_ok, "{field}");
    }
}

#[test]
fn readable_shapes_and_null_are_no_problem() {
    let long = "y".repeat(500);
    for (field, value) in [
        ("checks", json!([{"command": "npm test", "timeoutMs": "60000"}])),
        ("criteria", json!([{"id": "c1", "text": long, "source": "user", "state": "unmet"}])),
        ("costBudget", json!("0.5")),
        ("timeBudgetMs", json!("7200000")),
        ("activeHours", HOURS()),
        ("costBudget", json!(null)),
        ("checks", json!(null)),
        ("activeHours", json!(null)),
    ] {
        let g = goal(json!({ field: value.clone() }));
        assert!(fields(&g).is_empty(), "{field} = {value}: {:?}", unreadable_guards(&g));
        assert_eq!(g.to_value()[field], value, "{field} written back unchanged");
    }
    let lenient = goal(json!({"costBudget": "0.5", "timeBudgetMs": "7200000"}));
    assert_eq!(lenient.cost_budget.get(), Some(&0.5), "obeyed as read");
    assert_eq!(lenient.time_budget_ms.get(), Some(&7_200_000));
}

#[test]
fn the_detail_names_the_field_and_the_fix_gives_its_call() {
    let g = goal(json!({"costBudget": "five", "activeHours": "always"}));
    let detail = detail_of(&unreadable_guards(&g)).unwrap();
    assert_eq!(detail, "costBudget: is text, not a number of US dollars above 0 (also: activeHours)");
    assert_eq!(field_of_detail(&detail), Some("costBudget"));
    assert_eq!(detail_of(&[]), None);
    for guard in GUARDS {
        let fix = fix_for(guard.field, "ses_7");
        assert!(fix.contains("ses_7") && fix.chars().count() < crate::record::cause::CAUSE_FIX_CHAR_LIMIT, "{fix}");
    }
    assert!(fix_for("costBudget", "ses_7").contains("--goal-cost-budget"));
    assert!(fix_for("checks", "ses_7").contains("checks: [{command"));
    assert!(fix_for("activeHours", "ses_7").contains("clearActiveHours: true"));
}

#[test]
fn complete_over_unreadable_checks_or_criteria_becomes_blocked() {
    let complete = Settlement::verified_for_test(&goal(json!({})));
    let bad = goal(json!({"criteria": [{"id": "c1", "source": "user", "state": "met"}]}));
    let instead = instead_of_complete(&bad, &complete).expect("never complete");
    assert_eq!((instead.status, instead.cause), (GoalStatus::Blocked, CauseCode::InvalidGoal));
    assert_eq!(instead.detail.as_deref(), Some("criteria: criterion 1 has no text"));
    assert_eq!(instead_of_complete(&goal(json!({})), &complete), None);
    // A budget that cannot be read stops the next continuation, not a completion.
    assert_eq!(instead_of_complete(&goal(json!({"costBudget": "lots"})), &complete), None);
    let blocked = Settlement { status: GoalStatus::Blocked, ..complete };
    assert_eq!(instead_of_complete(&bad, &blocked), None);
}

#[test]
fn criteria_problems_say_which_item() {
    let problem = |value: Value| criteria_problem(&value);
    assert_eq!(problem(json!([{"id": "c1", "source": "user", "state": "met"}])), "criterion 1 has no text");
    let ok = json!({"id": "c1", "text": "a", "source": "user", "state": "met"});
    assert_eq!(problem(json!([ok.clone(), ok.clone()])), "criterion 2 repeats an id");
    assert_eq!(problem(json!(vec![ok; 9])), "holds 9 criteria, at most 8");
    assert_eq!(problem(json!("a")), "is text, not a list of criteria");
}
