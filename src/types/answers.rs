//! Typed answers: what `history` resolves to, read field by field from the core's trail
//! records (the nested parts by the core's own readers), so index.d.ts describes exactly what
//! is returned (`explain`: `explanation.rs`).

use napi_derive::napi;
use serde_json::Value;

use goal_core::{CheckRun, DigestSummary, LastReview, RecordedGrade};

use crate::types::explanation::{GoalCheckRun, GoalLastReview};
use crate::types::nullable::Nullable;
use crate::types::stored_fields::{Misshapen, StoredFields};

/// One record of a goal's audit trail (`history(sessionId)`). Written for every verdict and
/// for every decision the runtime made without one (time budget, working hours, breaker).
/// Built from the stored record field by field, so what JavaScript gets is exactly what this
/// type (and index.d.ts) says.
#[napi(object, object_from_js = false)]
#[derive(Default)]
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
    /// What the runtime did: `continue`, `continue (complete overridden)`, `continue (turn cut)`,
    /// a settled status, or `wait`.
    pub action: String,
    /// The status reason written, when the goal settled or waits.
    pub reason: Option<String>,
    /// Counts from the evidence digest the audit read.
    pub digest: Option<GoalDigestSummary>,
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
    pub check: Option<GoalCheckRun>,
    /// For a check run: how many checks the round has.
    pub checks: Option<f64>,
    /// For an audit that graded criteria: each criterion's grade.
    pub criteria: Option<Vec<GoalCriterionGrade>>,
    /// For a review (`action: "review"`): the reviewer session, verdict, findings, cited files
    /// and cost (`tail` and `at` are the record's own `tail` and `time`).
    pub review: Option<GoalLastReview>,
    /// For a provider-limit park (`action: "park"`): when the wait ends (ms since epoch).
    pub until: Option<f64>,
    /// For a park: how many parks in a row this is.
    pub park: Option<f64>,
    /// For a park: the cause's detail (the provider, the HTTP status).
    pub detail: Option<String>,
    /// For a continuation over a turn cut by a restart (`action: "continue (turn cut)"`): its
    /// number in the row of cut turns.
    pub cut: Option<f64>,
    /// For the settle after a wrap-up turn: the limit it wrapped up before.
    #[napi(ts_type = "'tokenBudget' | 'costBudget' | 'timeBudget' | 'turnCap'")]
    pub wrap_up: Option<String>,
    /// For the settle after a wrap-up turn: the agent's whole handoff (at most 20,000
    /// characters; the note holds its start).
    pub handoff: Option<String>,
    /// For the settle after a wrap-up turn: the files the session changed, from OpenCode's diff
    /// (absent when the diff could not be read).
    pub changed_files: Option<Vec<String>>,
    /// For a goal stopped before a limit because not even a wrap-up turn fit: why.
    pub no_room_for_wrap_up: Option<String>,
}

/// A host's `limit` for the history, as the core reads it: a whole count of at least one (at
/// most 100,000), or no limit.
pub(crate) struct HistoryLimit(pub Option<usize>);

impl From<Option<f64>> for HistoryLimit {
    fn from(limit: Option<f64>) -> Self {
        HistoryLimit(limit.filter(|n| n.is_finite() && *n >= 1.0).map(|n| n.min(100_000.0) as usize))
    }
}

/// The trail's records as [`GoalHistoryRecord`]s; a record that does not have the record's shape
/// (a hand-edited line) is left out rather than failing the whole read.
pub(crate) struct GoalHistory(pub Vec<GoalHistoryRecord>);

impl From<Vec<Value>> for GoalHistory {
    fn from(records: Vec<Value>) -> Self {
        GoalHistory(records.iter().filter_map(|stored| GoalHistoryRecord::try_from(stored).ok()).collect())
    }
}

/// One stored trail record; fails when it does not have the record's shape: not an object, or
/// a field of another type than its own (a field absent or `null` is unset).
impl TryFrom<&Value> for GoalHistoryRecord {
    type Error = Misshapen;

    fn try_from(stored: &Value) -> Result<Self, Self::Error> {
        let fields = StoredFields::of(stored)?;
        let time = fields.number("time")?.unwrap_or_default();
        let tail = fields.text("tail")?.unwrap_or_default();
        // The nested parts are read by the core's own readers of what it recorded.
        let check = stored
            .get("check")
            .and_then(CheckRun::from_value)
            .map(|run| GoalCheckRun::from(goal_core::RecordedCheckRun { run, time }));
        let digest = stored.get("digest").and_then(DigestSummary::from_value).map(GoalDigestSummary::from);
        let criteria = stored
            .get("criteria")
            .and_then(Value::as_array)
            .map(|grades| grades.iter().filter_map(RecordedGrade::from_value).map(GoalCriterionGrade::from).collect());
        let review = stored.get("review").and_then(LastReview::from_value).map(|r| {
            let mut review = GoalLastReview::from(r);
            review.tail = tail.clone();
            review.at = time;
            review
        });
        Ok(GoalHistoryRecord {
            time,
            turn: fields.number("turn")?.unwrap_or_default(),
            tail,
            verdict: fields.text("verdict")?,
            note: fields.text("note")?,
            action: fields.text("action")?.unwrap_or_default(),
            reason: fields.text("reason")?,
            digest,
            evidence: fields.texts("evidence")?,
            missing: fields.texts("missing")?,
            audit_tokens: fields.number("auditTokens")?,
            auditor: fields.text("auditor")?,
            active_ms: fields.number("activeMs")?.unwrap_or_default(),
            time_budget_ms: fields.number("timeBudgetMs")?,
            check,
            checks: fields.number("checks")?,
            criteria,
            review,
            until: fields.number("until")?,
            park: fields.number("park")?,
            detail: fields.text("detail")?,
            cut: fields.number("cut")?,
            wrap_up: fields.text("wrapUp")?,
            handoff: fields.text("handoff")?,
            changed_files: fields.texts("changedFiles")?,
            no_room_for_wrap_up: fields.text("noRoomForWrapUp")?,
        })
    }
}

/// The counts of one audit's evidence, as the trail keeps them.
#[napi(object, object_from_js = false)]
pub struct GoalDigestSummary {
    /// Assistant messages read.
    pub assistant_messages: f64,
    /// Tool calls.
    pub tool_calls: f64,
    /// Tool calls that succeeded.
    pub successful_tool_calls: f64,
    /// Shell commands that failed.
    pub failing_commands: Vec<GoalFailingCommand>,
    /// Files changed (`null`: the session's diff could not be read).
    #[napi(ts_type = "number | null")]
    pub files_changed: Nullable<f64>,
    /// Lines added.
    pub additions: f64,
    /// Lines deleted.
    pub deletions: f64,
    /// The todo list's counts (`null`: it could not be read).
    #[napi(ts_type = "GoalTodoCounts | null")]
    pub todos: Nullable<GoalTodoCounts>,
}

/// A shell command that failed.
#[napi(object, object_from_js = false)]
pub struct GoalFailingCommand {
    /// The command.
    pub command: String,
    /// Its exit code (`null`: unknown).
    #[napi(ts_type = "number | null")]
    pub exit_code: Nullable<f64>,
}

/// How many todos there are and how many are done.
#[napi(object, object_from_js = false)]
pub struct GoalTodoCounts {
    /// All todos.
    pub total: f64,
    /// Completed ones.
    pub completed: f64,
}

/// A criterion's grade after an audit.
#[napi(object, object_from_js = false)]
pub struct GoalCriterionGrade {
    /// The criterion's id.
    pub id: String,
    /// Who wrote the criterion.
    #[napi(ts_type = "'user' | 'derived'")]
    pub source: String,
    /// The grade.
    #[napi(ts_type = "'unmet' | 'met' | 'unclear'")]
    pub state: String,
    /// The evidence ids the grade cited.
    pub evidence: Vec<String>,
}

impl From<DigestSummary> for GoalDigestSummary {
    fn from(summary: DigestSummary) -> Self {
        GoalDigestSummary {
            assistant_messages: summary.assistant_messages as f64,
            tool_calls: summary.tool_calls as f64,
            successful_tool_calls: summary.successful_tool_calls as f64,
            failing_commands: summary
                .failing_commands
                .into_iter()
                .map(|f| GoalFailingCommand { command: f.command, exit_code: Nullable(f.exit_code.map(|c| c as f64)) })
                .collect(),
            files_changed: Nullable(summary.files_changed.map(|n| n as f64)),
            additions: summary.additions as f64,
            deletions: summary.deletions as f64,
            todos: Nullable(
                summary.todos.map(|t| GoalTodoCounts { total: t.total as f64, completed: t.completed as f64 }),
            ),
        }
    }
}

impl From<RecordedGrade> for GoalCriterionGrade {
    fn from(grade: RecordedGrade) -> Self {
        GoalCriterionGrade {
            id: grade.id,
            source: grade.source.as_str().to_string(),
            state: grade.state.as_str().to_string(),
            evidence: grade.evidence,
        }
    }
}
