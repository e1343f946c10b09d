//! The rule for guards that cannot be read: a guard the user set (`checks`, `criteria`,
//! `costBudget`, `timeBudgetMs`, `activeHours`) that is stored in a shape this version cannot
//! read, even leniently (`record/guard_read.rs`), is never treated as absent. The tick stops the
//! goal before its next continuation (`goal/guarding/guards.rs`), `blocked` with cause `invalidGoal`: the
//! detail names the field, the fix gives the call that corrects it, and the stored value stays as
//! it was. A `complete` verdict never settles a goal whose checks or criteria cannot be read.
//! `tokenBudget` keeps the reference reading (anything but a positive number is no budget). Pure.

use serde_json::Value;

use crate::goal::planning::plan::Settlement;
use crate::record::cause::CauseCode;
use crate::record::reasons::REASON_INVALID_GOAL;
use crate::record::{parse_checks, Goal, GoalStatus, Stored, CHECKS_FIELD, CRITERIA_FIELD};
use crate::time::hours::ActiveHours;

/// The guard fields this package added, in the order they are reported.
pub const GUARD_FIELDS: [&str; 5] = [CHECKS_FIELD, CRITERIA_FIELD, "costBudget", "timeBudgetMs", "activeHours"];

/// One guard that cannot be read: its field and what is wrong with it (no stored text quoted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadableGuard {
    /// The goal field (`costBudget`, …).
    pub field: &'static str,
    /// What is wrong, e.g. `is text, not a number of US dollars above 0`.
    pub problem: String,
}

/// Every guard of `goal` that is stored but cannot be read, in [`GUARD_FIELDS`] order. A stored
/// `null` is no guard (it is how JSON says "none"), and stays as it is.
pub fn unreadable_guards(goal: &Goal) -> Vec<UnreadableGuard> {
    let mut found = Vec::new();
    let mut push = |field: &'static str, problem: Option<String>| {
        if let Some(problem) = problem {
            found.push(UnreadableGuard { field, problem });
        }
    };
    push(CHECKS_FIELD, goal.unreadable_checks().filter(|v| !v.is_null()).map(checks_problem));
    push(CRITERIA_FIELD, goal.unreadable_criteria().filter(|v| !v.is_null()).map(criteria_problem));
    push("costBudget", number_problem(&goal.cost_budget, "a number of US dollars above 0"));
    push("timeBudgetMs", number_problem(&goal.time_budget_ms, "a whole number of milliseconds, at least 1"));
    push("activeHours", hours_problem(&goal.active_hours));
    found
}

/// Whether a `complete` settlement may be written over `goal`: its checks and its criteria can
/// be read (an unreadable list could hold a check that fails or a criterion that is unmet).
pub fn may_settle_complete(goal: &Goal) -> bool {
    unreadable_guards(goal).iter().all(|guard| guard.field != CHECKS_FIELD && guard.field != CRITERIA_FIELD)
}

/// The `blocked` (`invalidGoal`) settlement a `complete` one becomes when `goal`'s checks or
/// criteria cannot be read; `None` for any other settlement, or when they can.
pub fn instead_of_complete(goal: &Goal, settlement: &Settlement) -> Option<Settlement> {
    if settlement.status != GoalStatus::Complete || may_settle_complete(goal) {
        return None;
    }
    Some(Settlement {
        status: GoalStatus::Blocked,
        reason: REASON_INVALID_GOAL.into(),
        note: None,
        cause: CauseCode::InvalidGoal,
        detail: detail_of(&unreadable_guards(goal)),
        ..settlement.clone()
    })
}

/// The cause's detail: the first unreadable field and its problem, then the others' names
/// (`costBudget: is text, not a number of US dollars above 0 (also: activeHours)`).
pub fn detail_of(guards: &[UnreadableGuard]) -> Option<String> {
    let (first, rest) = guards.split_first()?;
    let mut detail = format!("{}: {}", first.field, first.problem);
    if !rest.is_empty() {
        let others: Vec<&str> = rest.iter().map(|guard| guard.field).collect();
        detail.push_str(&format!(" (also: {})", others.join(", ")));
    }
    Some(detail)
}

/// The field a detail written by [`detail_of`] names first.
pub fn field_of_detail(detail: &str) -> Option<&'static str> {
    let name = detail.split(':').next()?.trim();
    GUARD_FIELDS.into_iter().find(|field| *field == name)
}

/// The call that corrects `field` of the goal in session `session_id` (an edit resumes the goal).
pub fn fix_for(field: &str, session_id: &str) -> String {
    let edit = |change: &str| format!("`editGoal({{sessionId: '{session_id}', {change}}})`");
    match field {
        CHECKS_FIELD => format!(
            "Replace the unreadable checks: {}, or remove them with {}; the edit resumes the goal.",
            edit("checks: [{command: 'npm test'}]"),
            edit("clearChecks: true")
        ),
        CRITERIA_FIELD => format!(
            "Replace the unreadable criteria: {}, or remove them with {}; the edit resumes the goal.",
            edit("criteria: ['tests pass']"),
            edit("clearCriteria: true")
        ),
        "costBudget" => format!(
            "Set the cost budget in US dollars: `session-goal resume {session_id} --goal-cost-budget 5`, or remove it with {}.",
            edit("clearCostBudget: true")
        ),
        "timeBudgetMs" => format!(
            "Set the time budget: `session-goal resume {session_id} --goal-time-budget 2h`, or remove it with {}.",
            edit("clearTimeBudget: true")
        ),
        "activeHours" => format!(
            "Set the working hours: {}, or remove them with {}.",
            edit("activeHours: {start: '09:00', end: '17:00', timeZone: 'Europe/Berlin'}"),
            edit("clearActiveHours: true")
        ),
        _ => format!("Correct the goal's unreadable field with {}; the edit resumes the goal.", edit("…")),
    }
}

/// What a stored value is, in words (the value itself is not quoted: it may be long).
fn shape_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "true or false",
        Value::Number(_) => "a number out of range",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn number_problem<T>(stored: &Stored<T>, wanted: &str) -> Option<String> {
    match stored {
        Stored::Unreadable(raw) if !raw.is_null() => Some(format!("is {}, not {wanted}", shape_of(raw))),
        _ => None,
    }
}

fn hours_problem(stored: &Stored<serde_json::Map<String, Value>>) -> Option<String> {
    match stored {
        Stored::Unreadable(raw) if !raw.is_null() => {
            Some(format!("is {}, not an object {{start, end, timeZone}}", shape_of(raw)))
        }
        Stored::Valid(object) | Stored::Lenient(object, _) => ActiveHours::from_object(object).err(),
        _ => None,
    }
}

fn checks_problem(raw: &Value) -> String {
    match parse_checks(raw) {
        Err(error) => error.0,
        // Kept verbatim yet strictly readable cannot happen; say what it is all the same.
        Ok(_) => format!("is {}", shape_of(raw)),
    }
}

fn criteria_problem(raw: &Value) -> String {
    use crate::record::criteria::{CriterionSource, CriterionState, MAX_CRITERIA};
    let Some(items) = raw.as_array() else {
        return format!("is {}, not a list of criteria", shape_of(raw));
    };
    if items.len() > MAX_CRITERIA {
        return format!("holds {} criteria, at most {MAX_CRITERIA}", items.len());
    }
    let mut ids = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let text = |key: &str| item.get(key).and_then(Value::as_str);
        let numbered = text("id").and_then(|id| id.strip_prefix('c')).is_some_and(|n| n.parse::<u64>().is_ok());
        let why = if !item.is_object() {
            Some("is not an object {id, text, source, state}")
        } else if text("text").is_none() {
            Some("has no text")
        } else if !numbered {
            Some("has no id c<n>")
        } else if text("source").and_then(CriterionSource::parse).is_none() {
            Some("has no source user or derived")
        } else if text("state").and_then(CriterionState::parse).is_none() {
            Some("has no state unmet, met or unclear")
        } else if ids.contains(&text("id")) {
            Some("repeats an id")
        } else {
            None
        };
        if let Some(why) = why {
            return format!("criterion {} {why}", index + 1);
        }
        ids.push(text("id"));
    }
    "holds evidence that cannot be read".into()
}

#[cfg(test)]
mod tests {
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
        for field in GUARD_FIELDS {
            let fix = fix_for(field, "ses_7");
            assert!(fix.contains("ses_7") && fix.chars().count() < crate::record::cause::CAUSE_FIX_CHAR_LIMIT, "{fix}");
        }
        assert!(fix_for("costBudget", "ses_7").contains("--goal-cost-budget"));
        assert!(fix_for("checks", "ses_7").contains("checks: [{command"));
        assert!(fix_for("activeHours", "ses_7").contains("clearActiveHours: true"));
    }

    #[test]
    fn complete_over_unreadable_checks_or_criteria_becomes_blocked() {
        let complete = Settlement {
            status: GoalStatus::Complete,
            reason: "verified by audit".into(),
            note: Some("done".into()),
            accounting: crate::goal::planning::accounting::Accounting::of(&goal(json!({}))),
            evaluation: None,
            cause: CauseCode::Verified,
            detail: None,
        };
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
}
