//! Typed answers: what `history` resolves to, read field by field from the core's trail
//! records, so index.d.ts describes exactly what is returned (`explain`: `explanation.rs`).

use napi_derive::napi;

use goal_core::CheckRun;

use crate::types::explanation::{check_run_of, GoalCheckRun};

/// One record of a goal's audit trail (`history(sessionId)`). Written for every verdict and
/// for every decision the runtime made without one (time budget, working hours, breaker).
/// Built from the stored record field by field ([`history_records`]), so what JavaScript gets
/// is exactly what this type (and index.d.ts) says.
#[napi(object, object_from_js = false)]
#[derive(Default, serde::Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct GoalHistoryRecord {
    /// When (ms since epoch).
    pub time: f64,
    /// Continuations sent before this decision.
    pub turn: f64,
    /// The assistant message judged.
    pub tail: String,
    /// The auditor's verdict (`null`: no audit, or the audit failed).
    #[napi(ts_type = "'continue' | 'complete' | 'blocked' | null")]
    pub verdict: Option<String>,
    /// The note written with the decision.
    pub note: Option<String>,
    /// What the runtime did: `continue`, `continue (complete overridden)`, a settled status, or `wait`.
    pub action: String,
    /// The status reason written, when the goal settled or waits.
    pub reason: Option<String>,
    /// Counts from the evidence digest: tool calls, successful ones, failing commands, files
    /// changed, additions, deletions, todos.
    #[napi(ts_type = "Record<string, unknown>")]
    pub digest: Option<serde_json::Value>,
    /// The recorded facts the auditor said it relied on.
    pub evidence: Option<Vec<String>>,
    /// What the auditor could not verify.
    pub missing: Option<Vec<String>>,
    /// Tokens the audit cost, when the small model reported its usage.
    pub audit_tokens: Option<f64>,
    /// `provider/model` of the auditor.
    pub auditor: Option<String>,
    /// Active time so far (ms).
    pub active_ms: f64,
    /// The goal's time budget (ms), when set.
    pub time_budget_ms: Option<f64>,
    /// For an acceptance check run (`action: "check"`): the run.
    #[serde(skip)]
    pub check: Option<GoalCheckRun>,
    /// For a check run: how many checks the round has.
    pub checks: Option<f64>,
    /// For an audit that graded criteria: each criterion's id, source, state and cited evidence ids.
    #[napi(
        ts_type = "Array<{ id: string; source: 'user' | 'derived'; state: 'unmet' | 'met' | 'unclear'; evidence: string[] }>"
    )]
    pub criteria: Option<serde_json::Value>,
    /// For a provider-limit park (`action: "park"`): when the wait ends (ms since epoch).
    pub until: Option<f64>,
    /// For a park: how many parks in a row this is.
    pub park: Option<f64>,
    /// For a park: the cause's detail (the provider, the HTTP status).
    pub detail: Option<String>,
}

/// The trail's records as [`GoalHistoryRecord`]s; a record that does not have the record's shape
/// (a hand-edited line) is left out rather than failing the whole read.
pub(crate) fn history_records(records: Vec<serde_json::Value>) -> Vec<GoalHistoryRecord> {
    records.into_iter().filter_map(|stored| history_record(&stored)).collect()
}

fn history_record(stored: &serde_json::Value) -> Option<GoalHistoryRecord> {
    let record: GoalHistoryRecord = serde::Deserialize::deserialize(stored).ok()?;
    // A check run is read by the core's own reader of the run it recorded.
    let check = stored.get("check").and_then(CheckRun::from_value).map(|run| check_run_of(run, record.time));
    Some(GoalHistoryRecord { check, ..record })
}
