//! A goal belongs to one session. OpenCode's fork copies the whole metadata, an active goal
//! included, to a new session with no `parentID` (see `docs/opencode.md`, "Forks and goal
//! ownership"); a host that drove every active goal would then drive both sessions toward one
//! objective. So every goal written names its session (`sessionId`), and a goal found on a
//! session it does not name is a copy: adopted as a **paused** copy owned by that session, with
//! cause `inherited`. A resume from any client makes it the session's own.
//!
//! Pure: the ownership rule, the adoption and claim edits, and what the owner lists told (the
//! memory of which session first carried a goal id is the gatherer's, `goal/gather/holders.rs`).

use crate::record::cause::{Cause, CauseCode};
pub use crate::record::reasons::REASON_COPIED;
use crate::record::reasons::REASON_RESUMED;
use crate::record::{Goal, GoalStatus};

/// The fix an inherited cause names.
pub const INHERITED_FIX: &str = "Resume the goal on this session to make it this session's own, or clear it.";
/// Goal ids remembered for the older-session rule (the oldest entries go first beyond it).
pub const MAX_REMEMBERED_GOALS: usize = 20_000;

/// Whose goal a session carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ownership {
    /// The goal names this session.
    Own,
    /// The goal names no session (written before `sessionId`, or the field is not a string) and
    /// no older session is known to carry it: this session's; the next write marks it.
    Unmarked,
    /// A copy from `source` (a fork): adopt it paused.
    Copy {
        /// The session the goal came from.
        source: String,
    },
    /// A copy the user resumed (or edited) on this session: it becomes this session's own.
    Claimed,
}

/// Decides ownership. `older_holder` is the older session known to carry the same goal id
/// (only consulted for goals that name no session).
pub fn ownership(goal: &Goal, session_id: &str, older_holder: Option<&str>) -> Ownership {
    let owner = goal.session_id.as_deref();
    if owner == Some(session_id) {
        return Ownership::Own;
    }
    if is_user_resume_of_copy(goal) {
        return Ownership::Claimed;
    }
    match owner {
        Some(source) => Ownership::Copy { source: source.to_string() },
        None => match older_holder.filter(|holder| *holder != session_id) {
            Some(source) => Ownership::Copy { source: source.to_string() },
            None => Ownership::Unmarked,
        },
    }
}

/// Whose goal a session carries when the server cannot list sessions (it answers 404 to
/// `GET /session`), decided from the session itself (see [`owner_without_list`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unlisted {
    /// The session existed when the goal was made: the goal was made on it.
    Own,
    /// The session was made after the goal: a fork's copy.
    Copy,
    /// The goal or the session has no usable creation time: undecidable.
    Unknown,
}

/// For a goal that names no session, on a server that cannot list: a session created at or
/// before the goal's `createdAt` is its own, one created after it is a copy (a fork is always
/// made after the goal it copies).
pub fn owner_without_list(goal: &Goal, session_created: f64) -> Unlisted {
    let known = |t: f64| t.is_finite() && t > 0.0;
    if !known(goal.created_at) || !known(session_created) {
        return Unlisted::Unknown;
    }
    if session_created <= goal.created_at {
        Unlisted::Own
    } else {
        Unlisted::Copy
    }
}

/// A resume (or edit) a user made on the copy: active with `resumed`, and either the adoption's
/// cause still there (this package's resume and OpenChamber's edit keep it) or a fresh turn
/// allowance (OpenChamber's resume writes `turnsUsed: 0`). A goal without an owner that a user
/// resumed is the session's too.
fn is_user_resume_of_copy(goal: &Goal) -> bool {
    if goal.status != GoalStatus::Active || goal.status_reason != REASON_RESUMED {
        return false;
    }
    let inherited = goal.cause.as_ref().is_some_and(|c| c.code == CauseCode::Inherited);
    inherited || goal.turns_used == 0 || goal.session_id.is_none()
}

/// Turns a copy into this session's paused copy: status paused, reason
/// [`REASON_COPIED`], cause `inherited` with the source session, owner this session. The
/// runtime fields the source wrote for its own turns (lease, reservation, park) go.
pub fn adopt_paused(goal: &mut Goal, session_id: &str, source: &str, now_ms: f64) {
    goal.status = GoalStatus::Paused;
    goal.status_reason = REASON_COPIED.into();
    goal.set_cause(Some(Cause::new(CauseCode::Inherited, now_ms).with_detail(source).with_fix(INHERITED_FIX)));
    mark_owner(goal, session_id);
    // The runtime fields the source wrote for its own turns.
    goal.lease.clear();
    goal.continuation_for.clear();
    goal.continuation_id.clear();
    crate::goal::decide::limit_rules::clear_park(goal);
    crate::time::active::begin_inactive(goal, now_ms);
}

/// Makes the goal this session's own (a resume, or a write that marks an unmarked goal); an
/// inherited cause goes with it.
pub fn mark_owner(goal: &mut Goal, session_id: &str) {
    goal.set_owner(session_id);
    if goal.cause.as_ref().is_some_and(|c| c.code == CauseCode::Inherited) && goal.status == GoalStatus::Active {
        goal.set_cause(None);
    }
}

/// What the owner lists told about one goal id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OwnerView {
    /// A list that holds every carrier of the goal was read.
    pub listed: bool,
    /// The oldest session known to carry the goal.
    pub oldest: Option<String>,
}

/// How far before a goal's `createdAt` its owner list starts. `createdAt` is written by the
/// client that made the goal, `time.updated` by the server: the margin absorbs clock skew
/// between them. Starts are rounded down to a multiple of it so that goals made close together
/// share one list.
pub const OWNER_LIST_MARGIN_MS: f64 = 10.0 * 60_000.0;

/// The `start` of the owner list that can show every carrier of a goal created at
/// `created_at`: every such session was updated when the goal was written on it, or later (see
/// `docs/ownership.md`). `None` (list the whole directory) when `created_at` is unknown, or
/// later than `now` by more than the margin: a goal cannot have been made in the future, so such
/// a stamp was written by a broken or hostile writer, and a list from it would show no carrier.
pub fn owner_list_start(created_at: f64, now: f64) -> Option<f64> {
    if !(created_at.is_finite() && created_at > OWNER_LIST_MARGIN_MS && created_at <= now + OWNER_LIST_MARGIN_MS) {
        return None;
    }
    Some(((created_at - OWNER_LIST_MARGIN_MS) / OWNER_LIST_MARGIN_MS).floor() * OWNER_LIST_MARGIN_MS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::test_goal::goal_over;
    use serde_json::json;

    fn goal(fields: serde_json::Value) -> Goal {
        goal_over(json!({"id": "g1", "status": "active", "objective": "Build it", "turnsUsed": 3}), fields)
    }

    #[test]
    fn the_ownership_rule() {
        assert_eq!(ownership(&goal(json!({"sessionId": "ses_a"})), "ses_a", None), Ownership::Own);
        assert_eq!(
            ownership(&goal(json!({"sessionId": "ses_a"})), "ses_b", None),
            Ownership::Copy { source: "ses_a".into() }
        );
        // Legacy goals: the older session's; a newer one carrying the same id is a copy.
        assert_eq!(ownership(&goal(json!({})), "ses_a", None), Ownership::Unmarked);
        assert_eq!(ownership(&goal(json!({})), "ses_a", Some("ses_a")), Ownership::Unmarked);
        assert_eq!(ownership(&goal(json!({})), "ses_b", Some("ses_a")), Ownership::Copy { source: "ses_a".into() });
        // A sessionId that is not a string counts as none (kept verbatim until a write marks it).
        let odd = goal(json!({"sessionId": 42}));
        assert_eq!(ownership(&odd, "ses_b", Some("ses_a")), Ownership::Copy { source: "ses_a".into() });
        assert_eq!(ownership(&odd, "ses_a", None), Ownership::Unmarked);
    }

    #[test]
    fn resumes_claim_a_copy() {
        let adopted = goal(json!({"sessionId": "ses_b", "status": "paused",
            "cause": {"code": "inherited", "since": 1, "detail": "ses_a"}}));
        // OpenChamber's resume: active, resumed, turnsUsed 0; it may drop fields it does not know.
        let ui = goal(json!({"sessionId": "ses_a", "statusReason": "resumed", "turnsUsed": 0}));
        assert_eq!(ownership(&ui, "ses_b", None), Ownership::Claimed);
        let ui_dropped = goal(json!({"statusReason": "resumed", "turnsUsed": 0}));
        assert_eq!(ownership(&ui_dropped, "ses_b", Some("ses_a")), Ownership::Claimed);
        // An edit keeps counters and the inherited cause.
        let edited = goal(json!({"sessionId": "ses_a", "statusReason": "resumed",
            "cause": {"code": "inherited", "since": 1, "detail": "ses_a"}}));
        assert_eq!(ownership(&edited, "ses_b", None), Ownership::Claimed);
        // A fresh copy of a running goal that says nothing of a resume stays a copy.
        let copy = goal(json!({"sessionId": "ses_a", "statusReason": "resumed", "turnsUsed": 4}));
        assert_eq!(ownership(&copy, "ses_b", None), Ownership::Copy { source: "ses_a".into() });
        assert_eq!(ownership(&adopted, "ses_b", None), Ownership::Own);
    }

    #[test]
    fn adoption_pauses_and_claiming_marks() {
        let mut copy = goal(json!({"sessionId": "ses_a", "lease": {"holder": "h", "expiresAt": 9e12},
            "continuationFor": "msg_1", "continuationId": "msg_2", "mystery": 1}));
        adopt_paused(&mut copy, "ses_b", "ses_a", 50.0);
        assert_eq!(copy.status, GoalStatus::Paused);
        assert_eq!(copy.status_reason, REASON_COPIED);
        assert_eq!(copy.session_id.as_deref(), Some("ses_b"));
        let cause = copy.cause.clone().unwrap();
        assert_eq!((cause.code, cause.detail.as_deref(), cause.since), (CauseCode::Inherited, Some("ses_a"), 50.0));
        assert!(cause.fix.is_some());
        let stored = copy.to_value();
        for gone in ["lease", "continuationFor", "continuationId"] {
            assert!(stored.get(gone).is_none(), "{gone}");
        }
        assert_eq!(copy.extra["mystery"], json!(1));
        // Resumed: active again; marking it clears the inherited cause.
        copy.status = GoalStatus::Active;
        mark_owner(&mut copy, "ses_b");
        assert!(copy.cause.is_none());
        let mut odd = goal(json!({"sessionId": ["x"]}));
        mark_owner(&mut odd, "ses_c");
        assert_eq!(odd.to_value()["sessionId"], json!("ses_c"));
    }

    #[test]
    fn without_a_list_the_session_decides_by_its_creation_time() {
        let made = goal(json!({"createdAt": 1_000.0}));
        assert_eq!(owner_without_list(&made, 900.0), Unlisted::Own);
        assert_eq!(owner_without_list(&made, 1_000.0), Unlisted::Own, "made in the goal's millisecond");
        assert_eq!(owner_without_list(&made, 1_001.0), Unlisted::Copy);
        assert_eq!(owner_without_list(&made, 0.0), Unlisted::Unknown);
        assert_eq!(owner_without_list(&goal(json!({})), 900.0), Unlisted::Unknown);
    }

    /// A fixed "now" a little after the goals these tests make.
    const NOW: f64 = 1_764_600_100_000.0;

    #[test]
    fn owner_lists_start_before_the_goal_and_are_shared() {
        let margin = OWNER_LIST_MARGIN_MS;
        assert_eq!(owner_list_start(0.0, NOW), None);
        assert_eq!(owner_list_start(f64::NAN, NOW), None);
        assert_eq!(owner_list_start(1e308, NOW), None, "a stamp in the future lists the whole directory");
        assert_eq!(owner_list_start(NOW + 2.0 * OWNER_LIST_MARGIN_MS, NOW), None);
        let created = 1_764_600_000_123.0;
        let start = owner_list_start(created, NOW).unwrap();
        assert!(start <= created - margin && start > created - 2.0 * margin);
        // Goals made a moment apart share a start (one list serves both).
        assert_eq!(owner_list_start(created + 1000.0, NOW), Some(start));
    }
}
