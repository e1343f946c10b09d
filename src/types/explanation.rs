//! What `explain(sessionId)` resolves to: the core's typed report (`goal_core::ExplainReport`)
//! mirrored part by part, each part built from the core's own value (the goal's cause, lease,
//! checks and criteria as the record holds them, `goal_parts.rs`; a check run as the trail
//! records it), so index.d.ts describes exactly what is returned and cannot drift from the core.

use napi_derive::napi;

use goal_core::{ExplainReport, LastReview, RecordedCheckRun};

use crate::types::goal_parts::{GoalCause, GoalCheck, GoalCriterion};
use crate::types::nullable::Nullable;

/// Declares [`GoalExplanation`] with the TypeScript union of its `fixAction`, which `build.rs`
/// writes from goal-core's closed list (`FixAction`, one line each in its `record/cause.rs`).
macro_rules! declare_goal_explanation {
    ($fix_action_union:tt) => {
        /// What `explain(sessionId)` resolves to (and `session-goal doctor --json` prints): why the
        /// session's goal is where it is. `null` where a part is unknown.
        #[napi(object, object_from_js = false)]
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
            /// The typed cause: stored, or for an active goal what holds it now (a pending request,
            /// working hours, another host's lease).
            #[napi(ts_type = "GoalCause | null")]
            pub cause: Nullable<GoalCause>,
            /// What `doctor --fix` would apply.
            #[napi(ts_type = $fix_action_union)]
            pub fix_action: Nullable<String>,
            /// When the goal goes on by itself (ms since epoch), for a goal that waits.
            #[napi(ts_type = "number | null")]
            pub next_wake_at: Nullable<f64>,
            /// The multi-host lease.
            #[napi(ts_type = "GoalLease | null")]
            pub lease: Nullable<GoalLease>,
            /// Open permission and question requests of the session.
            pub pending: Vec<PendingUserRequest>,
            /// The newest audited decision of the trail.
            #[napi(ts_type = "GoalAuditSummary | null")]
            pub last_audit: Nullable<GoalAuditSummary>,
            /// The check runs of the newest round.
            pub last_checks: Vec<GoalCheckRun>,
            /// The goal's acceptance checks.
            #[napi(ts_type = "Array<GoalCheck> | null")]
            pub checks: Nullable<Vec<GoalCheck>>,
            /// The goal's cost in US dollars: its budget and what it spent.
            #[napi(ts_type = "GoalCost | null")]
            pub cost: Nullable<GoalCost>,
            /// The goal's acceptance criteria with their latest grades.
            #[napi(ts_type = "Array<GoalCriterion> | null")]
            pub criteria: Nullable<Vec<GoalCriterion>>,
            /// The goal's review setting, when it asks for a review before `complete`.
            #[napi(ts_type = "true | { agent?: string, model?: string } | null")]
            pub review: Nullable<serde_json::Value>,
            /// The goal's last review: the reviewer's child session, its verdict, findings and cited files.
            #[napi(ts_type = "GoalLastReview | null")]
            pub last_review: Nullable<GoalLastReview>,
            /// Inconsistencies worth a human look.
            pub findings: Vec<GoalFinding>,
        }
    };
}

include!(concat!(env!("OUT_DIR"), "/fix_actions_union.rs"));

/// The last review of a goal (see docs/review.md).
#[napi(object, object_from_js = false)]
pub struct GoalLastReview {
    /// The reviewer's child session (open it to read what it looked at).
    pub session_id: String,
    /// `approved`, `rejected` or `unavailable`.
    #[napi(ts_type = "'approved' | 'rejected' | 'unavailable'")]
    pub verdict: String,
    /// What it found wrong or missing (empty when approved).
    pub findings: Vec<String>,
    /// The files it cited, each with whether it exists in the project.
    pub cited: Vec<GoalCitedFile>,
    /// The reply it reviewed.
    pub tail: String,
    /// US dollars the reviewer session cost (counted in the goal's `costUsed`).
    pub cost: f64,
    /// When it ended (ms since epoch).
    pub at: f64,
}

/// A file a reviewer cited.
#[napi(object, object_from_js = false)]
pub struct GoalCitedFile {
    /// Relative to the project root.
    pub path: String,
    /// Whether the project's directory listing holds it.
    pub exists: bool,
}

/// The multi-host lease: which runtime drives the goal, and until when.
#[napi(object, object_from_js = false)]
pub struct GoalLease {
    /// The holder id of the runtime.
    pub holder: String,
    /// Expiry (ms since epoch).
    pub expires_at: f64,
}

/// An open request of the session that waits for the user (never its text or a command).
#[napi(object, object_from_js = false)]
pub struct PendingUserRequest {
    /// Permission or question.
    #[napi(ts_type = "'permission' | 'question'")]
    pub kind: String,
    /// OpenCode's id of the request.
    pub id: String,
    /// The permission asked for (permission requests).
    pub permission: Option<String>,
}

/// The newest audited decision of a goal's trail, reduced to what a human reads.
#[napi(object, object_from_js = false)]
pub struct GoalAuditSummary {
    /// When (ms since epoch).
    pub time: f64,
    /// Continuations sent before the decision.
    pub turn: f64,
    /// The auditor's verdict (`null`: the audit failed).
    #[napi(ts_type = "'continue' | 'complete' | 'blocked' | null")]
    pub verdict: Nullable<String>,
    /// The note written with the decision.
    pub note: Option<String>,
    /// What the runtime did: `continue`, a settled status, `wait`…
    pub action: String,
    /// The status reason written, when the goal settled or waits.
    pub reason: Option<String>,
    /// `provider/model` of the auditor.
    pub auditor: Option<String>,
    /// What the auditor could not verify.
    pub missing: Option<Vec<String>>,
}

/// One run of an acceptance check, as the trail recorded it (explain's last round, a history
/// record's run).
#[napi(object, object_from_js = false)]
pub struct GoalCheckRun {
    /// Position in the goal's list of checks (0-based).
    pub index: u32,
    /// The command.
    pub command: String,
    /// How it ended.
    #[napi(ts_type = "'passed' | 'failed' | 'timedOut' | 'aborted' | 'unknown'")]
    pub result: String,
    /// Its exit status, when known.
    #[napi(ts_type = "number | null")]
    pub exit_status: Nullable<i32>,
    /// How long it ran (ms).
    pub duration_ms: f64,
    /// The end of its output.
    pub output_tail: String,
    /// The run's user message id.
    #[napi(js_name = "messageID")]
    pub message_id: String,
    /// Found in the transcript from an earlier run (not run again).
    pub reused: bool,
    /// When it was recorded (ms since epoch).
    pub time: f64,
}

/// A goal's cost in US dollars.
#[napi(object, object_from_js = false)]
pub struct GoalCost {
    /// The cost budget (`null`: none).
    #[napi(ts_type = "number | null")]
    pub budget: Nullable<f64>,
    /// What the goal's replies cost so far.
    pub used: f64,
}

/// An inconsistency worth a human look.
#[napi(object, object_from_js = false)]
pub struct GoalFinding {
    /// What it is.
    #[napi(
        ts_type = "'sessionMissing' | 'noGoal' | 'goalUnreadable' | 'objectiveFileMissing' | 'inherited' | 'checksUnreadable' | 'guardUnreadable' | 'providerReportsNoCost'"
    )]
    pub code: String,
    /// One sentence for a person.
    pub message: String,
}

impl From<ExplainReport> for GoalExplanation {
    fn from(report: ExplainReport) -> Self {
        GoalExplanation {
            session_id: report.session_id,
            goal_id: Nullable(report.goal_id),
            status: Nullable(report.status.map(|s| s.as_str().to_string())),
            status_reason: Nullable(report.status_reason),
            cause: Nullable(report.cause.as_ref().map(GoalCause::from)),
            fix_action: Nullable(report.fix_action.map(|f| f.as_str().to_string())),
            next_wake_at: Nullable(report.next_wake_at),
            lease: Nullable(report.lease.map(|l| GoalLease { holder: l.holder, expires_at: l.expires_at })),
            pending: report
                .pending
                .into_iter()
                .map(|p| PendingUserRequest { kind: p.kind.as_str().to_string(), id: p.id, permission: p.permission })
                .collect(),
            last_audit: Nullable(report.last_audit.map(|a| GoalAuditSummary {
                time: a.time,
                turn: a.turn,
                verdict: Nullable(a.verdict),
                note: a.note,
                action: a.action,
                reason: a.reason,
                auditor: a.auditor,
                missing: a.missing,
            })),
            last_checks: report.last_checks.into_iter().map(GoalCheckRun::from).collect(),
            checks: Nullable(report.checks.map(|list| list.iter().map(GoalCheck::from).collect())),
            cost: Nullable(report.cost.map(|c| GoalCost { budget: Nullable(c.budget), used: c.used })),
            criteria: Nullable(report.criteria.map(|list| list.iter().map(GoalCriterion::from).collect())),
            review: Nullable(report.review),
            last_review: Nullable(report.last_review.map(GoalLastReview::from)),
            findings: report
                .findings
                .into_iter()
                .map(|f| GoalFinding { code: f.code.to_string(), message: f.message })
                .collect(),
        }
    }
}

/// A review as the goal (or the trail) recorded it.
impl From<LastReview> for GoalLastReview {
    fn from(r: LastReview) -> Self {
        GoalLastReview {
            session_id: r.session_id,
            verdict: r.verdict,
            findings: r.findings,
            cited: r.cited.into_iter().map(|(path, exists)| GoalCitedFile { path, exists }).collect(),
            tail: r.tail,
            cost: r.cost,
            at: r.at,
        }
    }
}

/// A check run as the trail recorded it, with the record's time.
impl From<RecordedCheckRun> for GoalCheckRun {
    fn from(RecordedCheckRun { run, time }: RecordedCheckRun) -> Self {
        GoalCheckRun {
            index: u32::try_from(run.index).unwrap_or(u32::MAX),
            result: run.result.as_str().to_string(),
            exit_status: Nullable(run.result.exit_status()),
            duration_ms: run.duration_ms.max(0.0).floor(),
            command: run.command,
            output_tail: run.output_tail,
            message_id: run.message_id,
            reused: run.reused,
            time,
        }
    }
}
