//! The time budget: milliseconds of active time a goal may run (`timeBudgetMs`; active time is
//! `time/active.rs`'s: the wall clock since the goal began, less its pauses and waits). Its rule
//! is the one check of a host's value, in milliseconds or as text (`90m`, `2h`); its check is
//! read by the time stage (`goal/decide/planning.rs`, and again on the clock of the post in
//! `goal/decide/delivery.rs`), which settles a spent budget `budgetLimited`. Pure: the clock
//! value is passed in.

use crate::record::Goal;
use crate::time::active::active_ms;

/// Smallest accepted time budget (one second).
pub const MIN_TIME_BUDGET_MS: u64 = 1000;
/// Largest accepted time budget (one year).
pub const MAX_TIME_BUDGET_MS: u64 = 366 * 24 * 3600 * 1000;

/// The goal's time budget, when it has a valid one.
pub fn budget(goal: &Goal) -> Option<u64> {
    goal.time_budget_ms.get().copied()
}

/// The check: whether the goal's active time at `now_ms` has reached its budget (never without
/// one; waiting never spends it).
pub fn budget_reached(goal: &Goal, now_ms: f64) -> bool {
    budget(goal).is_some_and(|budget| active_ms(goal, now_ms) >= budget as f64)
}

/// The rule: a time budget is a whole number of milliseconds of active time in
/// [`MIN_TIME_BUDGET_MS`, `MAX_TIME_BUDGET_MS`] (a fraction is dropped).
pub fn check_budget(ms: f64) -> Result<u64, String> {
    if !ms.is_finite() || ms <= 0.0 {
        return Err("the time budget must be positive".into());
    }
    if ms < MIN_TIME_BUDGET_MS as f64 || ms > MAX_TIME_BUDGET_MS as f64 {
        return Err(format!("the time budget must be between {MIN_TIME_BUDGET_MS} ms (1s) and 366 days"));
    }
    Ok(ms.floor() as u64)
}

/// The rule for a time budget written as text: a duration such as `90m`, `2h`, `1h30m`, `45s`
/// or `1d` (units d, h, m, s, ms; no unit is refused, so `90` cannot be misread). Returns
/// milliseconds.
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
    check_budget(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_budget_is_reached_on_active_time_only() {
        let created = json!({"id": "g", "status": "active", "objective": "x", "createdAt": 1_000_000.0});
        let budget = json!({"timeBudgetMs": 60_000, "inactiveMs": 10_000});
        let waiting = json!({"timeBudgetMs": 60_000, "inactiveMs": 10_000, "inactiveSince": 1_030_000.0});
        // (fields over the goal, now, reached, why)
        let rows = [
            (&budget, 1_069_999.0, false, "a millisecond short"),
            (&budget, 1_070_000.0, true, "at the budget counts as reached"),
            (&waiting, 1_200_000.0, false, "waiting never spends the budget"),
            (&json!({}), 9e12, false, "no budget, never reached"),
        ];
        for (fields, now, reached, why) in rows {
            let goal = crate::record::test_goal::goal_over(created.clone(), fields.clone());
            assert_eq!(budget_reached(&goal, now), reached, "{why}");
        }
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
    }

    #[test]
    fn time_budgets_are_whole_positive_milliseconds() {
        assert_eq!(check_budget(7_200_000.5), Ok(7_200_000));
        assert!(check_budget(0.0).unwrap_err().contains("positive"));
        assert!(check_budget(-5.0).is_err());
        assert!(check_budget(999.0).is_err());
    }
}
