//! The explain report as typed values: each part is the core's own type (the goal's cause,
//! lease, checks and criteria as the record holds them; a check run as the trail records it), so
//! a host's mirror of the report (the napi binding's `GoalExplanation`) is built field by field
//! and cannot drift from it. [`ExplainReport::to_value`] is its JSON form. Pure.

use serde_json::{json, Map, Value};

use crate::goal::decide::check_rules::CheckRun;
use crate::record::cause::Cause;
use crate::record::cause::FixAction;
use crate::record::criteria::Criterion;
pub use crate::record::review::LastReview;
use crate::record::{AcceptanceCheck, GoalStatus, Lease};

/// Why a session's goal is where it is (see `control/explain.rs`). `None` where a part is
/// unknown (no goal, no lease, no audit yet).
#[derive(Debug, Clone, PartialEq)]
pub struct ExplainReport {
    /// The session asked about.
    pub session_id: String,
    /// The goal's id.
    pub goal_id: Option<String>,
    /// The goal's status.
    pub status: Option<GoalStatus>,
    /// The human reason beside the status.
    pub status_reason: Option<String>,
    /// The stored cause, or for an active goal what holds it now.
    pub cause: Option<Cause>,
    /// What `doctor --fix` would apply for the cause.
    pub fix_action: Option<FixAction>,
    /// When the goal goes on by itself (ms since epoch), for an active goal that waits.
    pub next_wake_at: Option<f64>,
    /// The multi-host lease.
    pub lease: Option<Lease>,
    /// Open permission and question requests of the session.
    pub pending: Vec<PendingRequest>,
    /// The newest audited decision of the trail.
    pub last_audit: Option<AuditSummary>,
    /// The check runs of the newest round in the trail.
    pub last_checks: Vec<RecordedCheckRun>,
    /// The goal's acceptance checks.
    pub checks: Option<Vec<AcceptanceCheck>>,
    /// The goal's cost in US dollars.
    pub cost: Option<GoalCost>,
    /// The goal's acceptance criteria with their latest grades.
    pub criteria: Option<Vec<Criterion>>,
    /// The goal's review setting (`review`: `true` or `{agent?, model?}`), when it asks for one.
    pub review: Option<Value>,
    /// The goal's last review: reviewer session, verdict, findings, cited files.
    pub last_review: Option<LastReview>,
    /// Inconsistencies worth a human look.
    pub findings: Vec<Finding>,
}

crate::wire::wire_enum! {
    /// What kind of request waits for the user.
    pub enum PendingKind {
        #[doc = "A permission request."] Permission = "permission",
        #[doc = "A question."] Question = "question",
    }
}

/// One open request of the session (never the question's text or a command).
#[derive(Debug, Clone, PartialEq)]
pub struct PendingRequest {
    /// Permission or question.
    pub kind: PendingKind,
    /// OpenCode's id of the request.
    pub id: String,
    /// The permission asked for (permission requests).
    pub permission: Option<String>,
}

/// The newest audited decision of the trail, reduced to what a human reads.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AuditSummary {
    /// When (ms since epoch).
    pub time: f64,
    /// Continuations sent before the decision.
    pub turn: f64,
    /// The auditor's verdict; `None` when the audit failed.
    pub verdict: Option<String>,
    /// The note written with the decision.
    pub note: Option<String>,
    /// What the runtime did.
    pub action: String,
    /// The status reason written, when the goal settled or waits.
    pub reason: Option<String>,
    /// `provider/model` of the auditor.
    pub auditor: Option<String>,
    /// What the auditor could not verify.
    pub missing: Option<Vec<String>>,
}

/// One check run as the trail recorded it, with the record's time.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedCheckRun {
    /// The run.
    pub run: CheckRun,
    /// When it was recorded (ms since epoch).
    pub time: f64,
}

/// A goal's cost in US dollars.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GoalCost {
    /// The cost budget, when there is one.
    pub budget: Option<f64>,
    /// What the goal's replies cost so far.
    pub used: f64,
}

/// An inconsistency worth a human look: `sessionMissing`, `noGoal`, `goalUnreadable`,
/// `objectiveFileMissing`, `inherited`, `checksUnreadable`, `guardUnreadable` (criteria or a
/// budget or hours the runtime cannot read), `providerReportsNoCost`.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// The finding's code.
    pub code: &'static str,
    /// One sentence for a person.
    pub message: String,
}

impl AuditSummary {
    /// The summary of a trail record that has a verdict (possibly `null`: a failed audit).
    pub(crate) fn of_record(record: &Value) -> AuditSummary {
        let text = |key: &str| record.get(key).and_then(Value::as_str).map(str::to_string);
        let number = |key: &str| record.get(key).and_then(Value::as_f64).unwrap_or(0.0);
        let missing = record
            .get("missing")
            .and_then(Value::as_array)
            .map(|list| list.iter().filter_map(Value::as_str).map(str::to_string).collect());
        AuditSummary {
            time: number("time"),
            turn: number("turn"),
            verdict: text("verdict"),
            note: text("note"),
            action: text("action").unwrap_or_default(),
            reason: text("reason"),
            auditor: text("auditor"),
            missing,
        }
    }
}

impl ExplainReport {
    /// The report's JSON form: every key present, `null` where a part is unknown.
    pub fn to_value(&self) -> Value {
        let or_null = |value: Option<Value>| value.unwrap_or(Value::Null);
        json!({
            "sessionId": self.session_id,
            "goalId": self.goal_id,
            "status": self.status.map(GoalStatus::as_str),
            "statusReason": self.status_reason,
            "cause": or_null(self.cause.as_ref().map(Cause::to_value)),
            "fixAction": self.fix_action.map(FixAction::as_str),
            "nextWakeAt": self.next_wake_at,
            "lease": or_null(self.lease.as_ref().map(|l| json!({"holder": l.holder, "expiresAt": l.expires_at}))),
            "pending": self.pending.iter().map(PendingRequest::to_value).collect::<Vec<_>>(),
            "lastAudit": or_null(self.last_audit.as_ref().map(AuditSummary::to_value)),
            "lastChecks": self.last_checks.iter().map(RecordedCheckRun::to_value).collect::<Vec<_>>(),
            "checks": or_null(self.checks.as_ref().map(|list| list.iter().map(AcceptanceCheck::to_value).collect())),
            "cost": or_null(self.cost.map(|c| json!({"budget": c.budget, "used": c.used}))),
            "criteria": or_null(self.criteria.as_ref().map(|list| list.iter().map(Criterion::to_value).collect())),
            "review": or_null(self.review.clone()),
            "lastReview": or_null(self.last_review.as_ref().map(LastReview::to_value)),
            "findings": self.findings.iter().map(|f| json!({"code": f.code, "message": f.message})).collect::<Vec<_>>(),
        })
    }
}

impl PendingRequest {
    fn to_value(&self) -> Value {
        let mut object = json!({"kind": self.kind.as_str(), "id": self.id});
        if let Some(permission) = &self.permission {
            object["permission"] = json!(permission);
        }
        object
    }
}

impl AuditSummary {
    fn to_value(&self) -> Value {
        let mut object = Map::new();
        object.insert("time".into(), json!(self.time));
        object.insert("turn".into(), json!(self.turn));
        object.insert("verdict".into(), json!(self.verdict));
        object.insert("action".into(), json!(self.action));
        let optional = [("note", &self.note), ("reason", &self.reason), ("auditor", &self.auditor)];
        for (key, value) in optional {
            if let Some(value) = value {
                object.insert(key.into(), json!(value));
            }
        }
        if let Some(missing) = &self.missing {
            object.insert("missing".into(), json!(missing));
        }
        Value::Object(object)
    }
}

impl RecordedCheckRun {
    fn to_value(&self) -> Value {
        let mut value = self.run.to_value();
        value["time"] = json!(self.time);
        value
    }
}
