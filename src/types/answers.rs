//! Typed answers: what `explain` and `history` resolve to, built field by field from the
//! core's report and trail records, so index.d.ts describes exactly what is returned.

use napi_derive::napi;

use crate::types::nullable::Nullable;

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
    #[napi(
        ts_type = "{ index: number; command: string; result: 'passed' | 'failed' | 'timedOut' | 'aborted' | 'unknown'; exitStatus: number | null; durationMs: number; outputTail: string; messageID: string; reused: boolean }"
    )]
    pub check: Option<serde_json::Value>,
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

/// What `explain(sessionId)` resolves to (and `session-goal doctor --json` prints): why the
/// session's goal is where it is. `null` where a part is unknown. Built from the core's report
/// field by field ([`explanation_of`]).
#[napi(object, object_from_js = false)]
#[derive(Default, serde::Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct GoalExplanation {
    /// The session asked about.
    pub session_id: String,
    /// The goal's id (`null`: no goal).
    #[napi(ts_type = "string | null")]
    pub goal_id: Nullable<String>,
    /// The goal's status (`null`: no goal).
    #[napi(ts_type = "'active' | 'paused' | 'blocked' | 'budgetLimited' | 'complete' | null")]
    pub status: Nullable<String>,
    /// The human reason beside the status.
    #[napi(ts_type = "string | null")]
    pub status_reason: Nullable<String>,
    /// The typed cause `{code, since, detail?, until?, fix?}`: stored, or for an active goal what
    /// holds it now (a pending request, working hours, another host's lease).
    #[napi(ts_type = "{ code: string; since: number; detail?: string; until?: number; fix?: string } | null")]
    pub cause: Nullable<serde_json::Value>,
    /// What `doctor --fix` would apply.
    #[napi(
        ts_type = "'none' | 'resume' | 'resumeWithTokenBudget' | 'resumeWithTimeBudget' | 'resumeWithCostBudget' | null"
    )]
    pub fix_action: Nullable<String>,
    /// When the goal goes on by itself (ms since epoch), for a goal that waits.
    #[napi(ts_type = "number | null")]
    pub next_wake_at: Nullable<f64>,
    /// The multi-host lease.
    #[napi(ts_type = "{ holder: string; expiresAt: number } | null")]
    pub lease: Nullable<serde_json::Value>,
    /// Open permission and question requests of the session.
    #[napi(ts_type = "Array<{ kind: 'permission' | 'question'; id: string; permission?: string }>")]
    pub pending: serde_json::Value,
    /// The newest audited decision of the trail.
    #[napi(ts_type = "Record<string, unknown> | null")]
    pub last_audit: Nullable<serde_json::Value>,
    /// The check runs of the newest round.
    #[napi(ts_type = "Array<Record<string, unknown>>")]
    pub last_checks: serde_json::Value,
    /// The goal's acceptance checks.
    #[napi(ts_type = "Array<{ command: string; timeoutMs?: number }> | null")]
    pub checks: Nullable<serde_json::Value>,
    /// The goal's cost in US dollars: its budget (`null` without one) and what it spent.
    #[napi(ts_type = "{ budget: number | null; used: number } | null")]
    pub cost: Nullable<serde_json::Value>,
    /// The goal's acceptance criteria with their latest grades.
    #[napi(
        ts_type = "Array<{ id: string; text: string; source: 'user' | 'derived'; state: 'unmet' | 'met' | 'unclear'; evidence?: string[]; since?: number }> | null"
    )]
    pub criteria: Nullable<serde_json::Value>,
    /// Inconsistencies worth a human look: `sessionMissing`, `noGoal`, `goalUnreadable`,
    /// `objectiveFileMissing`, `inherited`, `checksUnreadable`, `providerReportsNoCost`.
    #[napi(ts_type = "Array<{ code: string; message: string }>")]
    pub findings: serde_json::Value,
}

/// The trail's records as [`GoalHistoryRecord`]s; a record that does not have the record's shape
/// (a hand-edited line) is left out rather than failing the whole read.
pub(crate) fn history_records(records: Vec<serde_json::Value>) -> Vec<GoalHistoryRecord> {
    records.into_iter().filter_map(|record| serde_json::from_value(record).ok()).collect()
}

/// The core's explain report as a [`GoalExplanation`].
pub(crate) fn explanation_of(report: serde_json::Value) -> std::result::Result<GoalExplanation, goal_core::GoalError> {
    serde_json::from_value(report).map_err(|error| {
        goal_core::GoalError::new(goal_core::ErrorKind::Local, format!("explain: unreadable report ({error})"))
    })
}
