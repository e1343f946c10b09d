//! The rule for guards that cannot be read: a guard the user set (a field the goal record's
//! table marks `guard`, [`GUARDS`], `record/fields.rs`) that is stored in a shape this version
//! cannot read, even leniently (`record/guard_read.rs`), is never treated as absent. The tick
//! stops the goal before its next continuation (`goal/decide/start.rs`), `blocked` with cause
//! `invalidGoal`: the detail names the field, the fix gives the call that corrects it (the
//! guard's own), and the stored value stays as it was. A `complete` verdict never settles a goal
//! whose checks or criteria cannot be read. `tokenBudget` keeps the reference reading (anything
//! but a positive number is no budget). Pure.

use serde_json::Value;

use crate::goal::decide::plan_rules::Settlement;
use crate::record::cause::CauseCode;
use crate::record::reasons::REASON_INVALID_GOAL;
use crate::record::{parse_checks, FieldState, Goal, GoalStatus, Guard, GuardShape, GUARDS};
use crate::time::hours::ActiveHours;

/// One guard that cannot be read: its field and what is wrong with it (no stored text quoted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadableGuard {
    /// The goal field, as the guard names it.
    pub field: &'static str,
    /// What is wrong, e.g. `is text, not a number of US dollars above 0`.
    pub problem: String,
    /// The guard's shape (a list of checks or criteria may hold an unmet requirement).
    pub shape: GuardShape,
}

/// Every guard of `goal` that is stored but cannot be read, in [`GUARDS`] order. A stored
/// `null` is no guard (it is how JSON says "none"), and stays as it is.
pub fn unreadable_guards(goal: &Goal) -> Vec<UnreadableGuard> {
    GUARDS
        .iter()
        .filter_map(|guard| {
            let problem = problem_of(guard.shape, goal.field_state(guard.field))?;
            Some(UnreadableGuard { field: guard.field, problem, shape: guard.shape })
        })
        .collect()
}

/// What is wrong with a guard's stored value of `shape`; `None` when it can be used.
fn problem_of(shape: GuardShape, state: FieldState<'_>) -> Option<String> {
    match (state, shape) {
        (FieldState::Unreadable(raw), _) if raw.is_null() => None,
        (FieldState::Unreadable(raw), GuardShape::Number(wanted)) => {
            Some(format!("is {}, not {wanted}", shape_of(raw)))
        }
        (FieldState::Unreadable(raw), GuardShape::Hours) => {
            Some(format!("is {}, not an object {{start, end, timeZone}}", shape_of(raw)))
        }
        (FieldState::Unreadable(raw), GuardShape::Checks) => Some(checks_problem(raw)),
        (FieldState::Unreadable(raw), GuardShape::Criteria) => Some(criteria_problem(raw)),
        (FieldState::Readable(window), GuardShape::Hours) => ActiveHours::from_value(&window).err(),
        _ => None,
    }
}

/// Whether a guard of `shape` that cannot be read forbids `complete`: a list of checks or
/// criteria could hold a check that fails or a criterion that is unmet.
fn forbids_complete(shape: GuardShape) -> bool {
    matches!(shape, GuardShape::Checks | GuardShape::Criteria)
}

/// Whether a `complete` settlement may be written over `goal`: its checks and its criteria can
/// be read (an unreadable list could hold a check that fails or a criterion that is unmet).
pub fn may_settle_complete(goal: &Goal) -> bool {
    !unreadable_guards(goal).iter().any(|guard| forbids_complete(guard.shape))
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
/// (`<field>: is text, not a number of US dollars above 0 (also: <field>, <field>)`).
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
    guard_named(name).map(|guard| guard.field)
}

fn guard_named(field: &str) -> Option<&'static Guard> {
    GUARDS.iter().find(|guard| guard.field == field)
}

/// The call that corrects `field` of the goal in session `session_id` (an edit resumes the goal):
/// the guard's own fix, or a general one for a field that is not a guard.
pub fn fix_for(field: &str, session_id: &str) -> String {
    let edit = |change: &str| format!("`editGoal({{sessionId: '{session_id}', {change}}})`");
    match guard_named(field) {
        Some(guard) => (guard.fix)(&edit, session_id),
        None => format!("Correct the goal's unreadable field with {}; the edit resumes the goal.", edit("…")),
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
        } else if text("state").and_then(CriterionState::parse_any_case).is_none() {
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
mod tests;
