//! Tolerant views of OpenCode data (sessions, messages) and the goal payload stored under
//! `metadata.openchamber.goal`. Parsing never fails loudly: a field of the wrong type is treated
//! as absent, exactly as the reference parser does.

use serde_json::{Map, Value};

/// Maximum characters of an inline objective (and of an objective file).
pub const GOAL_OBJECTIVE_CHAR_LIMIT: usize = 5000;
/// Maximum characters of an audit note.
pub const NOTE_CHAR_LIMIT: usize = 280;
/// Maximum characters of a status reason.
pub const REASON_CHAR_LIMIT: usize = 200;

/// The lifecycle status of a goal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GoalStatus {
    /// The loop keeps the session working.
    Active,
    /// The user stopped the loop (pause button or abort).
    Paused,
    /// The loop cannot go on without the user.
    Blocked,
    /// The token budget is spent.
    BudgetLimited,
    /// The auditor (or the user) verified the objective.
    Complete,
}

impl GoalStatus {
    /// Parses the wire name; anything else is not a status.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "active" => Some(Self::Active),
            "paused" => Some(Self::Paused),
            "blocked" => Some(Self::Blocked),
            "budgetLimited" => Some(Self::BudgetLimited),
            "complete" => Some(Self::Complete),
            _ => None,
        }
    }

    /// The wire name stored in metadata.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Paused => "paused",
            Self::Blocked => "blocked",
            Self::BudgetLimited => "budgetLimited",
            Self::Complete => "complete",
        }
    }
}

/// A normalized goal. `extra` keeps fields this version does not know, so a write never drops
/// data another writer (a newer UI, a lease) put there.
#[derive(Debug, Clone, PartialEq)]
pub struct Goal {
    /// Opaque id of one logical goal; the stale-write guard compares it.
    pub id: String,
    /// Inline objective (fallback when the file is unreadable), ≤ 5000 chars.
    pub objective: String,
    /// The objective text lives in `<dataDir>/goals/<sessionId>.md`.
    pub objective_file: bool,
    /// Lifecycle status.
    pub status: GoalStatus,
    /// Optional token budget.
    pub token_budget: Option<u64>,
    /// Tokens charged to the goal so far.
    pub tokens_used: u64,
    /// Snapshot subtracted from the current segment (pre-goal context; 0 after compaction).
    pub tokens_baseline: u64,
    /// Total of the segments closed by compactions.
    pub tokens_committed: u64,
    /// Automatic continuations sent (reserved).
    pub turns_used: u64,
    /// Consecutive `blocked` verdicts.
    pub blocked_streak: u64,
    /// Consecutive failed audits.
    pub audit_fail_streak: u64,
    /// Latest audit note.
    pub note: String,
    /// Why the goal is in its status; `resumed` is the UI's kickoff signal.
    pub status_reason: String,
    /// Provider of the latest successful audit.
    pub evaluation_provider_id: String,
    /// Model of the latest successful audit.
    pub evaluation_model_id: String,
    /// Accounting cursor: the newest assistant message already counted.
    pub last_accounted_message_id: String,
    /// `time.created` of the cursor message (chronological cursor; 0 when unknown).
    pub last_accounted_created: f64,
    /// Creation time (ms since epoch).
    pub created_at: f64,
    /// Last write time (ms since epoch).
    pub updated_at: f64,
    /// Unknown fields, preserved across writes.
    pub extra: Map<String, Value>,
}

/// Every goal field this version reads; anything else is kept in [`Goal::extra`]. The event path
/// reads only these from a payload (a goal object of any size costs the same).
pub const KNOWN_GOAL_FIELDS: &[&str] = &[
    "id",
    "objective",
    "objectiveFile",
    "status",
    "tokenBudget",
    "tokensUsed",
    "tokensBaseline",
    "tokensCommitted",
    "turnsUsed",
    "blockedStreak",
    "auditFailStreak",
    "note",
    "statusReason",
    "evaluationProviderID",
    "evaluationModelID",
    "lastAccountedMessageID",
    "lastAccountedCreated",
    "createdAt",
    "updatedAt",
];

/// A finite number > 0, floored; anything else is 0 (the reference rule for counters).
pub fn positive_count(value: Option<&Value>) -> u64 {
    match value.and_then(Value::as_f64) {
        Some(n) if n.is_finite() && n > 0.0 => n.floor().min(u64::MAX as f64) as u64,
        _ => 0,
    }
}

fn finite_non_negative(value: Option<&Value>) -> f64 {
    match value.and_then(Value::as_f64) {
        Some(n) if n.is_finite() && n > 0.0 => n,
        _ => 0.0,
    }
}

fn string_field(value: Option<&Value>) -> String {
    value.and_then(Value::as_str).unwrap_or("").to_string()
}

/// Keeps at most `max` characters (not bytes).
pub fn truncate_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((byte, _)) => text[..byte].to_string(),
        None => text.to_string(),
    }
}

impl Goal {
    /// Parses `metadata.openchamber.goal` from a session's metadata value. `None` when the
    /// goal is absent or invalid (no id, unknown status, no objective at all).
    pub fn from_metadata(metadata: Option<&Value>) -> Option<Goal> {
        let goal = metadata?.get("openchamber")?.get("goal")?;
        Goal::from_value(goal)
    }

    /// Parses a goal object (the value of `openchamber.goal`).
    pub fn from_value(goal: &Value) -> Option<Goal> {
        let object = goal.as_object()?;
        let id = object.get("id")?.as_str()?;
        if id.is_empty() {
            return None;
        }
        let status = GoalStatus::parse(object.get("status")?.as_str()?)?;
        let objective_raw = string_field(object.get("objective"));
        let objective = truncate_chars(objective_raw.trim(), GOAL_OBJECTIVE_CHAR_LIMIT);
        let objective_file = object.get("objectiveFile") == Some(&Value::Bool(true));
        if objective.is_empty() && !objective_file {
            return None;
        }
        let budget = positive_count(object.get("tokenBudget"));
        let extra = object
            .iter()
            .filter(|(key, _)| !KNOWN_GOAL_FIELDS.contains(&key.as_str()))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        Some(Goal {
            id: id.to_string(),
            objective,
            objective_file,
            status,
            token_budget: (budget > 0).then_some(budget),
            tokens_used: positive_count(object.get("tokensUsed")),
            tokens_baseline: positive_count(object.get("tokensBaseline")),
            tokens_committed: positive_count(object.get("tokensCommitted")),
            turns_used: positive_count(object.get("turnsUsed")),
            blocked_streak: positive_count(object.get("blockedStreak")),
            audit_fail_streak: positive_count(object.get("auditFailStreak")),
            note: truncate_chars(&string_field(object.get("note")), NOTE_CHAR_LIMIT),
            status_reason: truncate_chars(&string_field(object.get("statusReason")), REASON_CHAR_LIMIT),
            evaluation_provider_id: string_field(object.get("evaluationProviderID")),
            evaluation_model_id: string_field(object.get("evaluationModelID")),
            last_accounted_message_id: string_field(object.get("lastAccountedMessageID")),
            last_accounted_created: finite_non_negative(object.get("lastAccountedCreated")),
            created_at: finite_non_negative(object.get("createdAt")),
            updated_at: finite_non_negative(object.get("updatedAt")),
            extra,
        })
    }

    /// The goal as stored in metadata (unknown fields kept).
    pub fn to_value(&self) -> Value {
        let mut object = self.extra.clone();
        let mut put = |key: &str, value: Value| {
            object.insert(key.to_string(), value);
        };
        put("id", Value::from(self.id.clone()));
        put("objective", Value::from(self.objective.clone()));
        put("objectiveFile", Value::from(self.objective_file));
        put("status", Value::from(self.status.as_str()));
        put("tokenBudget", self.token_budget.map(Value::from).unwrap_or(Value::Null));
        put("tokensUsed", Value::from(self.tokens_used));
        put("tokensBaseline", Value::from(self.tokens_baseline));
        put("tokensCommitted", Value::from(self.tokens_committed));
        put("turnsUsed", Value::from(self.turns_used));
        put("blockedStreak", Value::from(self.blocked_streak));
        put("auditFailStreak", Value::from(self.audit_fail_streak));
        put("note", Value::from(self.note.clone()));
        put("statusReason", Value::from(self.status_reason.clone()));
        put("evaluationProviderID", Value::from(self.evaluation_provider_id.clone()));
        put("evaluationModelID", Value::from(self.evaluation_model_id.clone()));
        put("lastAccountedMessageID", Value::from(self.last_accounted_message_id.clone()));
        put("lastAccountedCreated", Value::from(self.last_accounted_created));
        put("createdAt", Value::from(self.created_at));
        put("updatedAt", Value::from(self.updated_at));
        Value::Object(object)
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
            objective_revision: positive_count(self.extra.get(OBJECTIVE_REVISION_FIELD)),
        }
    }

    /// Marks an objective edit: a file-backed goal's text changes only on disk, so the counter
    /// is what tells ticks in flight that the objective they read is stale.
    pub fn bump_objective_revision(&mut self) {
        let next = positive_count(self.extra.get(OBJECTIVE_REVISION_FIELD)) + 1;
        self.extra.insert(OBJECTIVE_REVISION_FIELD.to_string(), Value::from(next));
    }
}

/// Goal field counting objective edits (part of the revision key).
pub const OBJECTIVE_REVISION_FIELD: &str = "objectiveRevision";

/// The compare-and-set key of a goal: id plus every field only the user changes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GoalRevision {
    /// Goal id.
    pub id: String,
    /// Inline objective.
    pub objective: String,
    /// File-backed flag.
    pub objective_file: bool,
    /// Budget.
    pub token_budget: Option<u64>,
    /// `createdAt`, compared bit for bit.
    pub created_at_bits: u64,
    /// Objective edits so far (`objectiveRevision`).
    pub objective_revision: u64,
}

/// Token counters of one assistant message.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tokens {
    /// Prompt tokens.
    pub input: u64,
    /// Completion tokens.
    pub output: u64,
    /// Reasoning tokens.
    pub reasoning: u64,
    /// Cached prompt tokens read.
    pub cache_read: u64,
    /// Cached prompt tokens written.
    pub cache_write: u64,
}

impl Tokens {
    /// Everything the turn paid for: input + output + reasoning + cache read + cache write.
    pub fn total(&self) -> u64 {
        self.input
            .saturating_add(self.output)
            .saturating_add(self.reasoning)
            .saturating_add(self.cache_read)
            .saturating_add(self.cache_write)
    }
}

/// The role of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Sent by the user (or by us, as a continuation).
    User,
    /// A model reply.
    Assistant,
    /// Anything else.
    Other,
}

/// A message as the loop needs it: the info fields plus its joined text.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Message id (`msg_…`); empty when missing.
    pub id: String,
    /// Role.
    pub role: Role,
    /// For assistant replies: the user message it answers.
    pub parent_id: String,
    /// `time.created` when finite and > 0.
    pub created: Option<f64>,
    /// `time.completed` when finite and > 0.
    pub completed: Option<f64>,
    /// `error` when it is an object: `Some(name)` (name may be empty).
    pub error: Option<String>,
    /// `finish` reason.
    pub finish: String,
    /// A compaction summary.
    pub summary: bool,
    /// Token counters.
    pub tokens: Tokens,
    /// Provider of the reply.
    pub provider_id: String,
    /// Model of the reply.
    pub model_id: String,
    /// Agent (falls back to `mode`).
    pub agent: String,
    /// Variant.
    pub variant: String,
    /// Text parts joined with `\n` (synthetic parts included, reasoning and tools ignored).
    pub text: String,
    /// Position in the fetched window (tie-break for equal timestamps).
    pub index: usize,
}

/// The error name OpenCode uses for a user abort.
pub const ABORTED_ERROR: &str = "MessageAbortedError";
/// The error name OpenCode uses for an output cut at the length limit.
pub const LENGTH_ERROR: &str = "MessageOutputLengthError";

fn positive_time(value: Option<&Value>) -> Option<f64> {
    value.and_then(Value::as_f64).filter(|n| n.is_finite() && *n > 0.0)
}

impl Message {
    /// Parses one `{info, parts}` entry. Returns `None` when it is not an object.
    pub fn from_value(entry: &Value, index: usize) -> Option<Message> {
        let info = entry.get("info")?.as_object()?;
        let role = match info.get("role").and_then(Value::as_str) {
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            _ => Role::Other,
        };
        let time = info.get("time");
        let tokens = info.get("tokens");
        let count = |path: &[&str]| {
            let mut node = tokens;
            for key in path {
                node = node.and_then(|n| n.get(*key));
            }
            positive_count(node)
        };
        let error = info.get("error").and_then(Value::as_object).map(|error| {
            error.get("name").and_then(Value::as_str).unwrap_or("").to_string()
        });
        let agent = info
            .get("agent")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .or_else(|| info.get("mode").and_then(Value::as_str))
            .unwrap_or("")
            .to_string();
        let text = entry
            .get("parts")
            .and_then(Value::as_array)
            .map(|parts| {
                parts
                    .iter()
                    .filter(|part| part.get("type").and_then(Value::as_str) == Some("text"))
                    .filter_map(|part| part.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default();
        Some(Message {
            id: string_field(info.get("id")),
            role,
            parent_id: string_field(info.get("parentID")),
            created: positive_time(time.and_then(|t| t.get("created"))),
            completed: positive_time(time.and_then(|t| t.get("completed"))),
            error,
            finish: string_field(info.get("finish")),
            summary: info.get("summary") == Some(&Value::Bool(true)),
            tokens: Tokens {
                input: count(&["input"]),
                output: count(&["output"]),
                reasoning: count(&["reasoning"]),
                cache_read: count(&["cache", "read"]),
                cache_write: count(&["cache", "write"]),
            },
            provider_id: string_field(info.get("providerID")),
            model_id: string_field(info.get("modelID")),
            agent,
            variant: string_field(info.get("variant")),
            text,
            index,
        })
    }

    /// Parses a `GET /session/:id/message` answer; `None` when it is not an array of messages.
    ///
    /// Fields of the wrong type inside a message are tolerated (read as absent), but an entry that
    /// is not a message at all (not an object, no `info` object, no id) means the answer is not
    /// OpenCode's message list: the read failed. Skipping such entries would let a broken answer
    /// pass for a session without a reply, which ends the tick with nothing armed.
    pub fn list_from_value(value: &Value) -> Option<Vec<Message>> {
        value
            .as_array()?
            .iter()
            .enumerate()
            .map(|(index, entry)| Message::from_value(entry, index).filter(|m| !m.id.is_empty()))
            .collect()
    }

    /// The reply finished (completed time set).
    pub fn is_completed(&self) -> bool {
        self.completed.is_some()
    }

    /// The user aborted this reply.
    pub fn is_aborted(&self) -> bool {
        self.error.as_deref() == Some(ABORTED_ERROR)
    }

    /// Output was cut at the length limit: the length error, or no error and `finish: length`.
    pub fn is_length_truncated(&self) -> bool {
        match self.error.as_deref() {
            Some(name) => name == LENGTH_ERROR,
            None => self.finish == "length",
        }
    }
}

/// Sorts messages chronologically: by `time.created`, the fetched order breaking ties. A
/// message without a timestamp keeps its place after its predecessor.
pub fn chronological(messages: &[Message]) -> Vec<&Message> {
    let mut last_known = 0.0_f64;
    let mut keyed: Vec<(f64, usize, &Message)> = messages
        .iter()
        .map(|message| {
            if let Some(created) = message.created {
                last_known = created;
            }
            (message.created.unwrap_or(last_known), message.index, message)
        })
        .collect();
    keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    keyed.into_iter().map(|(_, _, message)| message).collect()
}

/// The fields of a session the loop reads.
#[derive(Debug, Clone)]
pub struct SessionView {
    /// Session id.
    pub id: String,
    /// Parent session (sub-agent sessions have one).
    pub parent_id: String,
    /// Project directory reported by OpenCode.
    pub directory: String,
    /// Title.
    pub title: String,
    /// The whole metadata object (for merging writes).
    pub metadata: Map<String, Value>,
}

impl SessionView {
    /// Parses a session object; `None` when it is not an object.
    pub fn from_value(value: &Value) -> Option<SessionView> {
        let object = value.as_object()?;
        Some(SessionView {
            id: string_field(object.get("id")),
            parent_id: string_field(object.get("parentID")),
            directory: string_field(object.get("directory")),
            title: string_field(object.get("title")),
            metadata: object
                .get("metadata")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
        })
    }

    /// The goal stored on this session, if valid.
    pub fn goal(&self) -> Option<Goal> {
        self.metadata
            .get("openchamber")
            .and_then(|ns| ns.get("goal"))
            .and_then(Goal::from_value)
    }

    /// A sub-agent session (never carries a goal).
    pub fn is_subagent(&self) -> bool {
        !self.parent_id.trim().is_empty()
    }
}

/// Builds the whole-metadata body for a write: the fresh metadata with `openchamber.<key>`
/// replaced (or removed when `value` is `None`), every other key kept.
pub fn merge_namespace_key(
    fresh: &Map<String, Value>,
    key: &str,
    value: Option<Value>,
) -> Map<String, Value> {
    let mut metadata = fresh.clone();
    let mut namespace = metadata
        .get("openchamber")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    match value {
        Some(value) => {
            namespace.insert(key.to_string(), value);
        }
        None => {
            namespace.remove(key);
        }
    }
    metadata.insert("openchamber".to_string(), Value::Object(namespace));
    metadata
}

/// The busy/idle state of a session as `GET /session/status` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveStatus {
    /// Absent from the map, or `idle`.
    Idle,
    /// `busy` or `retry`: a turn is running.
    Working,
}

/// Reads one session's live status from the status map (absent ⇒ idle).
pub fn live_status(map: &Value, session_id: &str) -> LiveStatus {
    let kind = map
        .get(session_id)
        .and_then(|entry| entry.get("type"))
        .and_then(Value::as_str);
    match kind {
        Some("busy") | Some("retry") => LiveStatus::Working,
        _ => LiveStatus::Idle,
    }
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
    fn messages_parse_tolerantly() {
        let list = json!([
            {"info": {"id": "m1", "role": "user", "time": {"created": 5}}, "parts": [{"type": "text", "text": "hi"}]},
            {"info": {"id": "m2", "role": "assistant", "mode": "build", "time": {"created": 6, "completed": 9},
                      "tokens": {"input": 10, "output": 5, "reasoning": 2, "cache": {"read": 100, "write": 3}},
                      "error": {"name": "APIError"}, "finish": "length"},
             "parts": [{"type": "reasoning", "text": "hmm"}, {"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            {"info": {"id": "m3", "role": "assistant", "error": "not an object", "finish": "length", "time": "now"}, "parts": "none"}
        ]);
        let messages = Message::list_from_value(&list).unwrap();
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[1].text, "a\nb");
        assert_eq!(messages[1].agent, "build");
        assert_eq!(messages[1].tokens.total(), 120);
        assert_eq!(messages[1].error.as_deref(), Some("APIError"));
        assert!(!messages[1].is_length_truncated(), "a non-length error wins over finish length");
        assert!(messages[2].is_length_truncated());
        assert!(!messages[2].is_completed());
        assert!(Message::list_from_value(&json!({"not": "array"})).is_none());
        // An entry that is no message at all: the answer is not a message list.
        for garbage in [json!("garbage"), json!(null), json!({"info": "x"}), json!({"info": {"role": "user"}})] {
            let list = json!([{"info": {"id": "m1", "role": "user"}}, garbage]);
            assert!(Message::list_from_value(&list).is_none(), "{list}");
        }
        assert_eq!(Message::list_from_value(&json!([])).unwrap().len(), 0);
    }

    #[test]
    fn chronology_uses_created_then_index() {
        let list = json!([
            {"info": {"id": "z", "role": "assistant", "time": {"created": 20}}},
            {"info": {"id": "a", "role": "assistant", "time": {"created": 10}}},
            {"info": {"id": "b", "role": "assistant", "time": {"created": 10}}},
        ]);
        let messages = Message::list_from_value(&list).unwrap();
        let ids: Vec<_> = chronological(&messages).iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "z"]);
    }

    #[test]
    fn merge_keeps_foreign_keys() {
        let fresh = json!({"other": 1, "openchamber": {"assist": {"recap": "r"}, "goal": {}}});
        let merged = merge_namespace_key(fresh.as_object().unwrap(), "goal", Some(json!({"id": "g"})));
        assert_eq!(merged["other"], json!(1));
        assert_eq!(merged["openchamber"]["assist"]["recap"], json!("r"));
        assert_eq!(merged["openchamber"]["goal"]["id"], json!("g"));
        let removed = merge_namespace_key(fresh.as_object().unwrap(), "goal", None);
        assert!(removed["openchamber"].get("goal").is_none());
    }
}
