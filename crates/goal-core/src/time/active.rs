//! Time budget: active time is the wall clock since `createdAt` minus the time the goal spent
//! paused, waiting for the user or waiting for working hours. The runtime keeps the closed part
//! of that sum in the goal (`inactiveMs`) and marks an open waiting period with
//! `inactiveSince`; a pause counts from the paused goal's `updatedAt` to its resume. Pure: the
//! clock value is passed in.

use crate::record::{Goal, GoalStatus};

/// Smallest accepted time budget (one second).
pub const MIN_TIME_BUDGET_MS: u64 = 1000;
/// Largest accepted time budget (one year).
pub const MAX_TIME_BUDGET_MS: u64 = 366 * 24 * 3600 * 1000;

/// A time field of the goal, 0 when absent or unreadable.
fn ms(field: &crate::record::Stored<f64>) -> f64 {
    field.get().copied().unwrap_or(0.0)
}

/// The goal's time budget, when it has a valid one.
pub fn time_budget_ms(goal: &Goal) -> Option<u64> {
    goal.time_budget_ms.get().copied()
}

/// Active time at `now_ms` (never negative).
pub fn active_ms(goal: &Goal, now_ms: f64) -> f64 {
    if goal.created_at <= 0.0 || now_ms <= goal.created_at {
        return 0.0;
    }
    let open = match ms(&goal.inactive_since) {
        since if since > 0.0 && since <= now_ms => now_ms - since,
        _ => 0.0,
    };
    (now_ms - goal.created_at - ms(&goal.inactive_ms) - open).max(0.0)
}

/// Whether the goal's active time has reached its budget.
pub fn time_budget_reached(goal: &Goal, now_ms: f64) -> bool {
    time_budget_ms(goal).is_some_and(|budget| active_ms(goal, now_ms) >= budget as f64)
}

/// Opens a waiting period (no-op when one is open). Returns whether the goal changed.
pub fn begin_inactive(goal: &mut Goal, now_ms: f64) -> bool {
    if ms(&goal.inactive_since) > 0.0 {
        return false;
    }
    goal.inactive_since.set(now_ms.max(goal.created_at));
    true
}

/// Closes an open waiting period into `inactiveMs`. Returns whether the goal changed.
pub fn end_inactive(goal: &mut Goal, now_ms: f64) -> bool {
    let since = ms(&goal.inactive_since);
    if !goal.inactive_since.clear() {
        return false;
    }
    if since > 0.0 && since < now_ms {
        add_inactive(goal, now_ms - since);
    }
    true
}

fn add_inactive(goal: &mut Goal, ms: f64) {
    let total = self::ms(&goal.inactive_ms) + ms.max(0.0);
    goal.inactive_ms.set(total.floor());
}

/// A goal that was not active becomes active again: the time since it stopped (its
/// `inactiveSince` mark, else its `updatedAt`) was not spent working. Call before the resume
/// changes `status`/`updatedAt`.
pub fn count_stopped_time(goal: &mut Goal, now_ms: f64) {
    if goal.status == GoalStatus::Active {
        return;
    }
    // The runtime marks when it stopped a goal (settle, pause after an abort); otherwise the
    // last write is when it stopped.
    if end_inactive(goal, now_ms) {
        return;
    }
    if goal.updated_at > 0.0 && goal.updated_at < now_ms {
        add_inactive(goal, now_ms - goal.updated_at);
    }
}

/// Validates a time budget in milliseconds.
pub fn check_time_budget_ms(ms: f64) -> Result<u64, String> {
    if !ms.is_finite() || ms <= 0.0 {
        return Err("the time budget must be positive".into());
    }
    if ms < MIN_TIME_BUDGET_MS as f64 || ms > MAX_TIME_BUDGET_MS as f64 {
        return Err(format!("the time budget must be between {MIN_TIME_BUDGET_MS} ms (1s) and 366 days"));
    }
    Ok(ms.floor() as u64)
}

/// Parses a duration such as `90m`, `2h`, `1h30m`, `45s` or `1d` (units d, h, m, s, ms; no
/// unit is refused, so `90` cannot be misread). Returns milliseconds.
pub fn parse_duration(text: &str) -> Result<u64, String> {
    let source = text.trim().to_ascii_lowercase();
    let refuse = || format!("invalid duration {text:?}: use a number with a unit, e.g. 90m, 2h, 1h30m, 45s");
    if source.is_empty() {
        return Err(refuse());
    }
    let mut total: f64 = 0.0;
    let mut rest = source.as_str();
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(refuse)?;
        if digits == 0 {
            return Err(refuse());
        }
        let amount: f64 = rest[..digits].parse().map_err(|_| refuse())?;
        rest = &rest[digits..];
        let unit_len = rest.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(rest.len());
        let factor = match &rest[..unit_len] {
            "ms" => 1.0,
            "s" | "sec" => 1000.0,
            "m" | "min" => 60_000.0,
            "h" | "hr" => 3_600_000.0,
            "d" => 86_400_000.0,
            _ => return Err(refuse()),
        };
        total += amount * factor;
        rest = rest[unit_len..].trim_start();
    }
    check_time_budget_ms(total)
}

/// `1h 30m`-style text for a duration, for status lines.
pub fn format_duration(ms: f64) -> String {
    let total_minutes = (ms.max(0.0) / 60_000.0).floor() as u64;
    let (hours, minutes) = (total_minutes / 60, total_minutes % 60);
    match (hours, minutes) {
        (0, 0) => format!("{}s", (ms.max(0.0) / 1000.0).floor() as u64),
        (0, m) => format!("{m}m"),
        (h, 0) => format!("{h}h"),
        (h, m) => format!("{h}h {m}m"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn goal(extra: serde_json::Value) -> Goal {
        let mut base = json!({"id": "g", "status": "active", "objective": "x", "createdAt": 1_000_000.0, "updatedAt": 1_000_000.0});
        for (k, v) in extra.as_object().unwrap() {
            base[k] = v.clone();
        }
        Goal::from_value(&base).unwrap()
    }

    #[test]
    fn active_time_subtracts_closed_and_open_waiting() {
        let g = goal(json!({"timeBudgetMs": 60_000, "inactiveMs": 10_000}));
        assert_eq!(active_ms(&g, 1_050_000.0), 40_000.0);
        assert!(!time_budget_reached(&g, 1_069_999.0));
        assert!(time_budget_reached(&g, 1_070_000.0), "at the budget counts as reached");
        let waiting = goal(json!({"timeBudgetMs": 60_000, "inactiveMs": 10_000, "inactiveSince": 1_030_000.0}));
        assert_eq!(active_ms(&waiting, 1_050_000.0), 20_000.0, "the open wait is not active time");
        assert!(!time_budget_reached(&waiting, 1_200_000.0), "waiting never spends the budget");
        assert_eq!(active_ms(&goal(json!({})), 900_000.0), 0.0, "a clock behind createdAt is zero, not negative");
        assert!(!time_budget_reached(&goal(json!({})), 9e12), "no budget, never reached");
    }

    #[test]
    fn waiting_periods_fold_once() {
        let mut g = goal(json!({}));
        assert!(begin_inactive(&mut g, 1_010_000.0));
        assert!(!begin_inactive(&mut g, 1_020_000.0), "the first start of the wait is kept");
        assert!(end_inactive(&mut g, 1_040_000.0));
        assert_eq!(g.to_value()["inactiveMs"], json!(30_000.0));
        assert!(!end_inactive(&mut g, 1_050_000.0), "nothing open, nothing added");
        assert_eq!(active_ms(&g, 1_050_000.0), 20_000.0);
    }

    #[test]
    fn a_pause_counts_from_updated_at_to_resume() {
        let mut g = goal(json!({"status": "paused", "updatedAt": 1_020_000.0, "inactiveMs": 5000}));
        count_stopped_time(&mut g, 1_080_000.0);
        assert_eq!(g.to_value()["inactiveMs"], json!(65_000.0));
        let mut marked = goal(json!({"status": "blocked", "updatedAt": 1_050_000.0, "inactiveSince": 1_020_000.0}));
        count_stopped_time(&mut marked, 1_080_000.0);
        assert_eq!(marked.to_value()["inactiveMs"], json!(60_000.0), "the mark wins; nothing counted twice");
        let mut active = goal(json!({"updatedAt": 1_020_000.0}));
        count_stopped_time(&mut active, 1_080_000.0);
        assert!(!active.inactive_ms.is_present(), "an active goal was not stopped");
    }

    #[test]
    fn budgets_parse_and_refuse() {
        assert_eq!(parse_duration("90m"), Ok(5_400_000));
        assert_eq!(parse_duration("2h"), Ok(7_200_000));
        assert_eq!(parse_duration("1h30m"), Ok(5_400_000));
        assert_eq!(parse_duration("1h 30m"), Ok(5_400_000));
        assert_eq!(parse_duration("45s"), Ok(45_000));
        assert_eq!(parse_duration("1.5h"), Ok(5_400_000));
        assert_eq!(parse_duration("1d"), Ok(86_400_000));
        for bad in ["", "90", "0m", "-5m", "m", "2 hours", "1x", "1e3s", "5ms"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert_eq!(format_duration(5_400_000.0), "1h 30m");
        assert_eq!(format_duration(42_000.0), "42s");
    }

    #[test]
    fn time_budgets_are_whole_positive_milliseconds() {
        assert_eq!(check_time_budget_ms(7_200_000.5), Ok(7_200_000));
        assert!(check_time_budget_ms(0.0).unwrap_err().contains("positive"));
        assert!(check_time_budget_ms(-5.0).is_err());
        assert!(check_time_budget_ms(999.0).is_err());
    }
}
