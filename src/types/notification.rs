//! The notification a goal runtime emits (OpenChamber's `emitGoalNotification` argument).

use napi_derive::napi;

/// What `emitGoalNotification` receives when a goal settles.
#[napi(object)]
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
}
