//! The tick's gates, as pure functions of what the tick observed and the clock value passed in:
//! whether the session (or a child) is working or waiting on the user, whether another runtime
//! holds the lease, and how much of the quiet window is left. The tick only wires them to I/O.

use std::time::Duration;

use serde_json::Value;

use crate::record::lease::{held_by_other, lease_of, LEASE_HORIZON_MS};
use crate::record::session::{live_status, LiveStatus, Message, SessionView};
use crate::record::Goal;

/// What the live state says about acting now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveGate {
    /// Idle, no busy child, nobody waiting on the user: go on.
    Proceed,
    /// The session itself is working: its idle brings the next wake-up.
    Busy,
    /// A child session is working: look again after a quiet window.
    ChildBusy,
    /// A permission or question waits on the user.
    WaitingForUser,
}

/// Judges the live state: the status map, the children, and whether a session id waits on the
/// user.
pub fn live_gate(
    status: &Value,
    session_id: &str,
    children: &[SessionView],
    waiting_for_user: impl Fn(&str) -> bool,
) -> LiveGate {
    if live_status(status, session_id) == LiveStatus::Working {
        return LiveGate::Busy;
    }
    if children.iter().any(|child| live_status(status, &child.id) == LiveStatus::Working) {
        return LiveGate::ChildBusy;
    }
    if waiting_for_user(session_id) || children.iter().any(|c| waiting_for_user(&c.id)) {
        return LiveGate::WaitingForUser;
    }
    LiveGate::Proceed
}

/// How long to back off while another runtime's lease is live (`None`: not held by another).
pub fn lease_wait(goal: &Goal, holder: &str, now_ms: f64) -> Option<Duration> {
    if !held_by_other(goal, holder, now_ms) {
        return None;
    }
    let (_, expires) = lease_of(goal)?;
    let remaining = (expires - now_ms).clamp(0.0, LEASE_HORIZON_MS) as u64;
    Some(Duration::from_millis(remaining.saturating_add(50)))
}

/// The quiet window, from data: how long until `quiet` has passed since the tail reply
/// completed (or, without a completion time, since it was created, or since `last_activity_ms`
/// the runtime saw, whichever is later). `None` once the window has passed. Whatever order the
/// events arrived in, no continuation goes out inside the window. A time less than one window in
/// the future (a little clock skew) waits until one window from it has passed; a time further
/// ahead (a server clock far ahead of ours, our clock set back, bad data) is not trusted and waits
/// nothing: the scheduler's own timer, on a monotonic clock, already kept the window, while
/// waiting for the wall clock to catch up would stall the goal for as long as the skew.
pub fn quiet_remaining(
    tail: Option<&Message>,
    last_activity_ms: Option<f64>,
    now_ms: f64,
    quiet: Duration,
) -> Option<Duration> {
    let finished = tail.and_then(|m| m.completed.or(m.created));
    let since = match (finished, last_activity_ms.filter(|t| t.is_finite() && *t > 0.0)) {
        (Some(a), Some(b)) => a.max(b),
        (Some(a), None) | (None, Some(a)) => a,
        (None, None) => return None,
    };
    let quiet_ms = quiet.as_millis() as f64;
    let elapsed = now_ms - since;
    if elapsed >= quiet_ms || elapsed < -quiet_ms {
        return None;
    }
    let left = (quiet_ms - elapsed.max(0.0)).ceil();
    Some(Duration::from_millis(left as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reply(created: Option<f64>, completed: Option<f64>) -> Message {
        let mut time = serde_json::Map::new();
        if let Some(c) = created {
            time.insert("created".into(), json!(c));
        }
        if let Some(c) = completed {
            time.insert("completed".into(), json!(c));
        }
        let value = json!([{"info": {"id": "msg_1", "role": "assistant", "time": time}, "parts": []}]);
        Message::list_from_value(&value).unwrap().remove(0)
    }

    const Q: Duration = Duration::from_millis(400);

    #[test]
    fn quiet_window_counts_from_the_completion() {
        let tail = reply(Some(1_000.0), Some(2_000.0));
        assert_eq!(quiet_remaining(Some(&tail), None, 2_153.0, Q), Some(Duration::from_millis(247)));
        assert_eq!(quiet_remaining(Some(&tail), None, 2_400.0, Q), None);
        assert_eq!(quiet_remaining(Some(&tail), None, 9_000.0, Q), None);
    }

    #[test]
    fn without_a_completion_the_creation_or_the_last_activity_counts() {
        let errored = reply(Some(1_000.0), None);
        assert_eq!(quiet_remaining(Some(&errored), None, 1_100.0, Q), Some(Duration::from_millis(300)));
        assert_eq!(quiet_remaining(Some(&errored), Some(1_300.0), 1_400.0, Q), Some(Duration::from_millis(300)));
        assert_eq!(quiet_remaining(None, Some(1_300.0), 1_400.0, Q), Some(Duration::from_millis(300)));
        assert_eq!(quiet_remaining(None, None, 1_400.0, Q), None);
        assert_eq!(quiet_remaining(None, Some(f64::NAN), 1_400.0, Q), None);
    }

    #[test]
    fn a_stamp_far_in_the_future_is_not_waited_for() {
        // Far ahead (bad data, or a clock set back): waiting for the wall clock would never end.
        let tail = reply(Some(1_000.0), Some(1e15));
        assert_eq!(quiet_remaining(Some(&tail), None, 2_000.0, Q), None);
        let ahead = Q.as_millis() as f64 + 1.0;
        let tail = reply(Some(1_000.0), Some(2_000.0 + ahead));
        assert_eq!(quiet_remaining(Some(&tail), None, 2_000.0, Q), None);
        // A little ahead (skew under one window): the window counts from the stamp, capped at one.
        let tail = reply(Some(1_000.0), Some(2_100.0));
        assert_eq!(quiet_remaining(Some(&tail), None, 2_000.0, Q), Some(Q));
    }

    #[test]
    fn live_gate_order() {
        let children: Vec<SessionView> =
            vec![SessionView::from_value(&json!({"id": "ses_child", "parentID": "ses_p"})).unwrap()];
        let nobody = |_: &str| false;
        assert_eq!(live_gate(&json!({}), "ses_p", &children, nobody), LiveGate::Proceed);
        assert_eq!(live_gate(&json!({"ses_p": {"type": "busy"}}), "ses_p", &children, nobody), LiveGate::Busy);
        assert_eq!(live_gate(&json!({"ses_p": {"type": "retry"}}), "ses_p", &children, nobody), LiveGate::Busy);
        assert_eq!(live_gate(&json!({"ses_child": {"type": "busy"}}), "ses_p", &children, nobody), LiveGate::ChildBusy);
        assert_eq!(
            live_gate(&json!({"ses_p": {"type": "idle"}}), "ses_p", &children, |s| s == "ses_child"),
            LiveGate::WaitingForUser
        );
        assert_eq!(live_gate(&json!({}), "ses_p", &[], |s| s == "ses_p"), LiveGate::WaitingForUser);
    }

    #[test]
    fn lease_wait_backs_off_until_expiry() {
        let goal = Goal::from_value(&json!({"id": "g", "status": "active", "objective": "o", "lease": {"holder": "other", "expiresAt": 10_000.0}})).unwrap();
        assert_eq!(lease_wait(&goal, "me", 9_000.0), Some(Duration::from_millis(1_050)));
        assert_eq!(lease_wait(&goal, "other", 9_000.0), None);
        assert_eq!(lease_wait(&goal, "me", 10_001.0), None);
    }
}
