//! The goal record stored under `metadata.openchamber.goal`: its fields, status, limits and the
//! revision that compare-and-set writes check. Parsing never fails loudly: a field of the wrong
//! type is treated as absent, exactly as the reference parser does.

pub mod cause;
pub mod check_id;
pub mod continuation_id;
pub mod criteria;
mod fields;
pub mod guard_read;
pub mod lease;
pub mod metadata;
pub mod part_id;
pub mod provider_error;
pub use cause::reasons;
pub mod review;
pub mod session;
/// One small-model call as plain data: the query, the reply, the failure.
pub mod small_model_call;
#[cfg(test)]
pub(crate) mod test_goal;

use serde_json::{Map, Value};

use crate::record::cause::Cause;

pub use fields::{
    FieldState, Goal, Guard, GuardShape, Lease, Reposted, Stored, WrappedUp, CAUSE_FIELD, CHECKS_FIELD, CRITERIA_FIELD,
    GUARDS, KNOWN_GOAL_FIELDS, OBJECTIVE_REVISION_FIELD, REVISION_LIST_FIELDS, SESSION_ID_FIELD, TIME_BUDGET_FIELD,
};

/// Maximum characters of an inline objective (and of an objective file).
pub const GOAL_OBJECTIVE_CHAR_LIMIT: usize = 5000;
/// Maximum characters of an audit note.
pub const NOTE_CHAR_LIMIT: usize = 280;
/// Maximum characters of a status reason.
pub const REASON_CHAR_LIMIT: usize = 200;

crate::wire::wire_enum! {
    /// The lifecycle status of a goal.
    #[derive(Default)]
    pub enum GoalStatus {
        #[doc = "The loop keeps the session working."] #[default] Active = "active",
        #[doc = "The user stopped the loop (pause button or abort)."] Paused = "paused",
        #[doc = "The loop cannot go on without the user."] Blocked = "blocked",
        #[doc = "The token budget is spent."] BudgetLimited = "budgetLimited",
        #[doc = "The auditor (or the user) verified the objective."] Complete = "complete",
    }
}

/// At most this many acceptance checks per goal.
pub const MAX_CHECKS: usize = 8;
/// At most this many characters per check command.
pub const CHECK_COMMAND_CHAR_LIMIT: usize = 2000;
/// A check's time limit when it names none: 10 minutes.
pub const DEFAULT_CHECK_TIMEOUT_MS: u64 = 600_000;

/// One acceptance check: a shell command run in the session before the goal may settle
/// `complete`. Only user actions set them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AcceptanceCheck {
    /// The command, run through OpenCode's shell endpoint.
    pub command: String,
    /// Time limit in ms; `None` means [`DEFAULT_CHECK_TIMEOUT_MS`].
    pub timeout_ms: Option<u64>,
}

impl AcceptanceCheck {
    /// The time limit that applies.
    pub fn effective_timeout_ms(&self) -> u64 {
        self.timeout_ms.unwrap_or(DEFAULT_CHECK_TIMEOUT_MS)
    }

    /// The stored shape.
    pub fn to_value(&self) -> Value {
        let mut object = Map::new();
        object.insert("command".into(), Value::from(self.command.clone()));
        if let Some(timeout) = self.timeout_ms {
            object.insert("timeoutMs".into(), Value::from(timeout));
        }
        Value::Object(object)
    }
}

/// Why a list of checks was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChecksError(pub String);

impl std::fmt::Display for ChecksError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ChecksError {}

/// Parses a list of checks strictly: an array of at most [`MAX_CHECKS`] objects, each with a
/// non-empty `command` of at most [`CHECK_COMMAND_CHAR_LIMIT`] characters and an optional
/// positive integer `timeoutMs`. The same rule serves user input (where the error is shown)
/// and stored values (where a failure keeps the value verbatim and runs no check).
pub fn parse_checks(value: &Value) -> Result<Vec<AcceptanceCheck>, ChecksError> {
    let items = value.as_array().ok_or_else(|| ChecksError("checks must be an array".into()))?;
    if items.len() > MAX_CHECKS {
        return Err(ChecksError(format!("at most {MAX_CHECKS} checks")));
    }
    items.iter().enumerate().map(|(index, item)| parse_check(index, item)).collect()
}

fn parse_check(index: usize, item: &Value) -> Result<AcceptanceCheck, ChecksError> {
    let refuse = |why: &str| ChecksError(format!("check {}: {why}", index + 1));
    let (command, timeout) = match item {
        Value::String(command) => (command.as_str(), None),
        Value::Object(object) => (
            object.get("command").and_then(Value::as_str).ok_or_else(|| refuse("command must be a string"))?,
            object.get("timeoutMs").filter(|v| !v.is_null()),
        ),
        _ => return Err(refuse("must be an object with a command")),
    };
    if command.trim().is_empty() {
        return Err(refuse("command is empty"));
    }
    // OpenCode places the command in a JSON-quoted `eval`: a newline or a tab arrives as a
    // letter and breaks it (docs/opencode.md), so a check is one line.
    if command.chars().any(char::is_control) {
        return Err(refuse("command must be one line (no newline, tab or control character)"));
    }
    if command.chars().count() > CHECK_COMMAND_CHAR_LIMIT {
        return Err(refuse(&format!("command is longer than {CHECK_COMMAND_CHAR_LIMIT} characters")));
    }
    let timeout_ms = match timeout {
        None => None,
        Some(value) => match value.as_f64() {
            Some(n) if n.is_finite() && n >= 1.0 && n.fract() == 0.0 && n <= u64::MAX as f64 => Some(n as u64),
            _ => return Err(refuse("timeoutMs must be a positive whole number of milliseconds")),
        },
    };
    Ok(AcceptanceCheck { command: command.to_string(), timeout_ms })
}

/// A finite number > 0, floored; anything else is 0 (the reference rule for counters).
pub fn positive_count(value: Option<&Value>) -> u64 {
    match value.and_then(Value::as_f64) {
        Some(n) if n.is_finite() && n > 0.0 => n.floor().min(u64::MAX as f64) as u64,
        _ => 0,
    }
}

/// A string field; empty when absent or not a string.
pub(crate) fn string_field(value: Option<&Value>) -> String {
    value.and_then(Value::as_str).unwrap_or("").to_string()
}

impl Goal {
    /// Parses `metadata.openchamber.goal` from a session's metadata value. `None` when the
    /// goal is absent or invalid (no id, unknown status, no objective at all).
    pub fn from_metadata(metadata: Option<&Value>) -> Option<Goal> {
        let goal = metadata?.get("openchamber")?.get("goal")?;
        Goal::from_value(goal)
    }

    /// Parses a goal object (the value of `openchamber.goal`): `None` without an id, a status
    /// or any objective. Every field is read by its entry in the field table.
    pub fn from_value(goal: &Value) -> Option<Goal> {
        let object = goal.as_object()?;
        let id = object.get("id")?.as_str()?;
        GoalStatus::parse(object.get("status")?.as_str()?)?;
        let goal = Goal::read_fields(object);
        let has_objective = !goal.objective.is_empty() || goal.objective_file;
        (!id.is_empty() && has_objective).then_some(goal)
    }

    /// The goal as stored in metadata (unknown fields kept), written by the field table.
    pub fn to_value(&self) -> Value {
        Value::Object(self.write_fields())
    }

    /// Sets or clears the cause, dropping any unreadable stored one it replaces.
    pub fn set_cause(&mut self, cause: Option<Cause>) {
        self.extra.remove(CAUSE_FIELD);
        self.cause = cause;
    }

    /// Replaces the checks (empty clears them), dropping any unreadable stored value.
    pub fn set_checks(&mut self, checks: Vec<AcceptanceCheck>) {
        self.extra.remove(CHECKS_FIELD);
        self.verbatim.remove(CHECKS_FIELD);
        self.checks = checks;
    }

    /// Replaces the criteria (empty clears them), dropping any unreadable stored value.
    pub fn set_criteria(&mut self, criteria: Vec<criteria::Criterion>) {
        self.extra.remove(CRITERIA_FIELD);
        self.criteria = criteria;
    }

    /// Whether a `criteria` field is stored but unreadable: the tick then neither grades nor
    /// derives (the value is kept verbatim until the user replaces or clears it).
    pub fn criteria_unreadable(&self) -> bool {
        self.unreadable_criteria().is_some()
    }

    /// The stored `criteria` value when it cannot be read (kept verbatim).
    pub fn unreadable_criteria(&self) -> Option<&Value> {
        self.unreadable(CRITERIA_FIELD)
    }

    /// The stored `checks` value when it cannot be read (kept verbatim).
    pub fn unreadable_checks(&self) -> Option<&Value> {
        self.unreadable(CHECKS_FIELD)
    }

    fn unreadable(&self, field: &str) -> Option<&Value> {
        match self.field_state(field) {
            FieldState::Unreadable(raw) => Some(raw),
            _ => None,
        }
    }

    /// Whether a `checks` field is stored but unreadable: the goal then falls back to the
    /// audit alone, and `explain` says so.
    pub fn checks_unreadable(&self) -> bool {
        self.unreadable_checks().is_some()
    }

    /// Who reviews this goal before it settles `complete`, when it asks for a review. A `review`
    /// field that cannot be read asks for one on the goal's own agent and model (fail closed).
    pub fn review_wanted(&self) -> Option<review::ReviewTarget> {
        match &self.review {
            Stored::Absent => None,
            Stored::Valid(setting) | Stored::Lenient(setting, _) => match setting {
                review::ReviewSetting::Off => None,
                review::ReviewSetting::On(target) => Some(target.clone()),
            },
            Stored::Unreadable(_) => Some(review::ReviewTarget::default()),
        }
    }

    /// Every goal written carries its session: a goal that names none (written before the field
    /// existed, or with a value that is not a string) is marked as `session_id`'s. A goal that
    /// names another session keeps it: only adoption or a resume changes an owner.
    pub fn mark_if_unowned(&mut self, session_id: &str) {
        if self.session_id.is_none() && !session_id.is_empty() {
            self.set_owner(session_id);
        }
    }

    /// Names the session the goal belongs to, dropping any unreadable stored value it replaces.
    pub fn set_owner(&mut self, session_id: &str) {
        self.extra.remove(SESSION_ID_FIELD);
        self.session_id = Some(session_id.to_string());
    }

    /// Whether the stored goal names another session as its owner (a copy made by a fork).
    pub fn owned_by_other_session(&self, session_id: &str) -> bool {
        self.session_id.as_deref().is_some_and(|owner| owner != session_id)
    }

    /// Identity of the goal's user-owned content: a change means the user edited or replaced
    /// it, which invalidates any tick in flight.
    pub fn revision(&self) -> GoalRevision {
        GoalRevision {
            id: self.id.clone(),
            objective: self.objective.clone(),
            objective_file: self.objective_file,
            token_budget: self.token_budget,
            created_at_bits: self.created_at.to_bits(),
            objective_revision: self.objective_revision.get().copied().unwrap_or(0),
            checks: self.checks.clone(),
        }
    }

    /// Marks an objective edit: a file-backed goal's text changes only on disk, so the counter
    /// is what tells ticks in flight that the objective they read is stale.
    pub fn bump_objective_revision(&mut self) {
        let next = self.objective_revision.get().copied().unwrap_or(0) + 1;
        self.objective_revision.set(next);
    }
}

/// The compare-and-set key of a goal: id plus every field only the user changes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GoalRevision {
    /// Goal id.
    pub id: String,
    /// Inline objective.
    pub objective: String,
    /// File-backed flag.
    pub objective_file: bool,
    /// The token budget (`tokenBudget`); `None` when the goal has none.
    pub token_budget: Option<u64>,
    /// `createdAt`, compared bit for bit.
    pub created_at_bits: u64,
    /// Objective edits so far (`objectiveRevision`).
    pub objective_revision: u64,
    /// The acceptance checks (only the user sets them: a change invalidates a check round).
    pub checks: Vec<AcceptanceCheck>,
}

/// The tail the goal's current reservation answers, if any.
pub fn continuation_for_of(goal: &Goal) -> Option<&str> {
    goal.continuation_for.get().map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn goal_parse_requires_id_status_and_objective() {
        let meta = json!({"openchamber": {"goal": {"id": "g1", "status": "active", "objective": "  ship it  "}}});
        let goal = Goal::from_metadata(Some(&meta)).unwrap();
        assert_eq!(goal.objective, "ship it");
        assert_eq!(goal.status, GoalStatus::Active);
        for bad in [
            json!({"openchamber": {"goal": {"id": "", "status": "active", "objective": "x"}}}),
            json!({"openchamber": {"goal": {"id": "g", "status": "running", "objective": "x"}}}),
            json!({"openchamber": {"goal": {"id": "g", "status": "active", "objective": "  "}}}),
            json!({"openchamber": {"goal": {"id": 7, "status": "active", "objective": "x"}}}),
            json!({"openchamber": {"goal": "nope"}}),
            json!({"openchamber": []}),
            json!(null),
        ] {
            assert!(Goal::from_metadata(Some(&bad)).is_none(), "{bad}");
        }
        let file_backed = json!({"openchamber": {"goal": {"id": "g", "status": "paused", "objectiveFile": true}}});
        assert!(Goal::from_metadata(Some(&file_backed)).unwrap().objective_file);
    }

    #[test]
    fn goal_numbers_are_normalized() {
        let meta = json!({"openchamber": {"goal": {
            "id": "g", "status": "active", "objective": "x",
            "tokenBudget": 0, "tokensUsed": 12.9, "turnsUsed": -3, "blockedStreak": "2",
            "auditFailStreak": "inf", "note": "n".repeat(400), "mystery": {"a": 1}
        }}});
        let goal = Goal::from_metadata(Some(&meta)).unwrap();
        assert_eq!(goal.token_budget, None);
        assert_eq!(goal.tokens_used, 12);
        assert_eq!(goal.turns_used, 0);
        assert_eq!(goal.blocked_streak, 0);
        assert_eq!(goal.audit_fail_streak, 0);
        assert_eq!(goal.note.chars().count(), NOTE_CHAR_LIMIT);
        let stored = goal.to_value();
        assert_eq!(stored["mystery"], json!({"a": 1}));
        assert_eq!(stored["tokenBudget"], Value::Null);
        assert_eq!(Goal::from_value(&stored).unwrap(), goal);
    }

    #[test]
    fn typed_fields_parse_or_stay_verbatim() {
        let meta = json!({"openchamber": {"goal": {
            "id": "g", "status": "paused", "objective": "x", "sessionId": "ses_a",
            "cause": {"code": "userPaused", "since": 4}, "checks": [{"command": "npm test", "timeoutMs": 5000}, "make"]
        }}});
        let goal = Goal::from_metadata(Some(&meta)).unwrap();
        assert_eq!(goal.session_id.as_deref(), Some("ses_a"));
        assert!(goal.owned_by_other_session("ses_b") && !goal.owned_by_other_session("ses_a"));
        assert_eq!(goal.cause.as_ref().unwrap().code, crate::record::cause::CauseCode::UserPaused);
        assert_eq!(goal.checks.len(), 2);
        assert_eq!(goal.checks[1].effective_timeout_ms(), DEFAULT_CHECK_TIMEOUT_MS);
        assert!(goal.extra.is_empty() && !goal.checks_unreadable());
        assert_eq!(Goal::from_value(&goal.to_value()).unwrap(), goal);

        let odd = json!({"openchamber": {"goal": {
            "id": "g", "status": "active", "objective": "x", "sessionId": 7,
            "cause": {"code": "fromTheFuture"}, "checks": "npm test"
        }}});
        let mut goal = Goal::from_metadata(Some(&odd)).unwrap();
        assert!(goal.session_id.is_none() && goal.cause.is_none() && goal.checks.is_empty());
        assert!(goal.checks_unreadable());
        let stored = goal.to_value();
        let original = &odd["openchamber"]["goal"];
        for key in ["sessionId", "cause", "checks"] {
            assert_eq!(stored[key], original[key], "{key} kept verbatim");
        }
        goal.set_checks(Vec::new());
        goal.set_cause(None);
        assert!(goal.to_value().get("checks").is_none() && goal.to_value().get("cause").is_none());
    }

    #[test]
    fn checks_are_bounded() {
        assert!(parse_checks(&json!([{"command": "  "}])).is_err());
        assert!(parse_checks(&json!([{"command": "x".repeat(CHECK_COMMAND_CHAR_LIMIT + 1)}])).is_err());
        assert!(parse_checks(&json!([{"command": "x", "timeoutMs": 0}])).is_err());
        assert!(parse_checks(&json!([{"command": "x", "timeoutMs": 1.5}])).is_err());
        assert!(parse_checks(&json!(vec![json!("x"); MAX_CHECKS + 1])).is_err());
        assert!(parse_checks(&json!([7])).is_err());
        assert!(parse_checks(&json!([{"command": "npm test\nrm -rf x"}])).is_err());
        assert!(parse_checks(&json!([{"command": "npm\ttest"}])).is_err());
        assert_eq!(parse_checks(&json!([])).unwrap(), Vec::new());
        let err = parse_checks(&json!([{"command": "ok"}, {"command": ""}])).unwrap_err();
        assert_eq!(err.to_string(), "check 2: command is empty");
    }
}
