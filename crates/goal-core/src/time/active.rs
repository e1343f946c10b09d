//! Active time: the wall clock since `createdAt` minus the time the goal spent paused, waiting
//! for the user or waiting for working hours (what the time budget, `goal/decide/budgets/time.rs`,
//! counts). The runtime keeps the closed part
//! of that sum in the goal (`inactiveMs`) and marks an open waiting period with
//! `inactiveSince`; a pause counts from the paused goal's `updatedAt` to its resume. Pure: the
//! clock value is passed in.

use crate::record::{Goal, GoalStatus};

/// A time field of the goal, 0 when absent or unreadable.
fn ms(field: &crate::record::Stored<f64>) -> f64 {
    field.get().copied().unwrap_or(0.0)
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

    /// An active goal created at 1,000,000 ms, with `fields` over it.
    fn goal(fields: serde_json::Value) -> Goal {
        let base = json!({"id": "g", "status": "active", "objective": "x", "createdAt": 1_000_000.0, "updatedAt": 1_000_000.0});
        crate::record::test_goal::goal_over(base, fields)
    }

    #[test]
    fn active_time_subtracts_closed_and_open_waiting() {
        let g = goal(json!({"timeBudgetMs": 60_000, "inactiveMs": 10_000}));
        assert_eq!(active_ms(&g, 1_050_000.0), 40_000.0);
        let waiting = goal(json!({"timeBudgetMs": 60_000, "inactiveMs": 10_000, "inactiveSince": 1_030_000.0}));
        assert_eq!(active_ms(&waiting, 1_050_000.0), 20_000.0, "the open wait is not active time");
        assert_eq!(active_ms(&goal(json!({})), 900_000.0), 0.0, "a clock behind createdAt is zero, not negative");
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
    fn durations_read_as_people_write_them() {
        assert_eq!(format_duration(5_400_000.0), "1h 30m");
        assert_eq!(format_duration(42_000.0), "42s");
    }
}
