//! The notification a goal runtime emits (OpenChamber's `emitGoalNotification` argument). The
//! core builds it as JSON (`goal/decide/notify.rs`); this declares it for TypeScript, and
//! `__test__/types.test.mjs` holds what a host receives to it member for member.

use napi_derive::napi;

use crate::types::goal_parts::GoalCause;
use crate::types::nullable::Nullable;

/// What `emitGoalNotification` receives when a goal settles.
#[napi(object, object_from_js = false)]
pub struct GoalNotification {
    /// The session whose goal settled.
    pub session_id: String,
    /// Its project directory.
    pub directory: String,
    /// `complete`, `blocked` or `budgetLimited`.
    pub status: String,
    /// The written goal; `goal.objective` carries the effective objective, file-backed or not.
    #[napi(ts_type = "Record<string, unknown>")]
    pub goal: serde_json::Value,
    /// Ready-made title ("Goal complete", "Goal blocked", "Goal reached its token budget").
    pub title: String,
    /// Ready-made body: objective and detail, ≤ 240 chars.
    pub body: String,
    /// `goal-<sessionId>`: the same for every notification of one session, so a host can let a
    /// newer one replace the older.
    pub tag: String,
    /// Always `goal`: which feature a host's notification came from.
    pub kind: String,
    /// Why the goal settled, with the fix a user can act on when it stopped (`null` when the goal
    /// records no cause).
    #[napi(ts_type = "GoalCause | null")]
    pub cause: Nullable<GoalCause>,
}
