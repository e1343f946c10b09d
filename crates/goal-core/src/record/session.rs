//! Tolerant views of OpenCode data: sessions, messages, token counts, the live status map, and
//! the whole-metadata merge a write sends. A field of the wrong type is treated as absent.

use serde_json::{Map, Value};

use crate::record::provider_error::ProviderError;
use crate::record::{positive_count, string_field, Goal, GoalRevision, GoalStatus};

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
    /// Who sent it: the user (our continuations too), the assistant, or neither (`Other`).
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
    /// The model, agent and variant it ran with (a reply) or asked for (a user message).
    pub selection: Selection,
    /// Text parts joined with `\n` (synthetic parts included, reasoning and tools ignored).
    pub text: String,
    /// `info.cost`: what this reply cost in US dollars (0 when absent, negative or not finite).
    pub cost: f64,
    /// The error's details, read for the provider-failure table (`None` when no error object).
    pub provider_error: Option<ProviderError>,
    /// The reply produced something: a non-empty text part, a tool part, or output tokens.
    pub produced_output: bool,
    /// Position in the fetched window (tie-break for equal timestamps).
    pub index: usize,
}

/// The model, agent and variant a message ran with, or a prompt runs with: the one selection of
/// the package (a continuation, a check run's claim, a host's prompt and command). An empty field
/// names none (OpenCode's default).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selection {
    /// Provider id.
    pub provider_id: String,
    /// Model id.
    pub model_id: String,
    /// Agent (or mode).
    pub agent: String,
    /// Variant.
    pub variant: String,
}

impl Selection {
    /// What a message's `info` names: a reply's `providerID`, `modelID` and `variant`, a user
    /// message's `model: {providerID, modelID, variant}`; its `agent`, else its `mode`.
    pub fn of_info(info: &Map<String, Value>) -> Selection {
        let text = |value: Option<&Value>| value.and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
        let model = info.get("model");
        let field = |key: &str| text(info.get(key)).or_else(|| text(model.and_then(|m| m.get(key))));
        Selection {
            provider_id: field("providerID").unwrap_or_default(),
            model_id: field("modelID").unwrap_or_default(),
            agent: text(info.get("agent")).or_else(|| text(info.get("mode"))).unwrap_or_default(),
            variant: text(model.and_then(|m| m.get("variant")))
                .or_else(|| text(info.get("variant")))
                .unwrap_or_default(),
        }
    }

    /// `provider/model`, when it names a model.
    pub fn model_path(&self) -> Option<String> {
        self.names_model().then(|| format!("{}/{}", self.provider_id, self.model_id))
    }

    /// Whether it names a model (a provider and a model id).
    pub fn names_model(&self) -> bool {
        !self.provider_id.is_empty() && !self.model_id.is_empty()
    }

    /// The one prompt body: `parts`, then `model` (`{providerID, modelID}`), `agent` and `variant`,
    /// each when it is named.
    pub fn prompt_body(&self, parts: Vec<Value>) -> Map<String, Value> {
        let mut body = Map::new();
        body.insert("parts".into(), Value::Array(parts));
        if self.names_model() {
            let model = serde_json::json!({ "providerID": self.provider_id, "modelID": self.model_id });
            body.insert("model".into(), model);
        }
        for (key, value) in [("agent", &self.agent), ("variant", &self.variant)] {
            if !value.is_empty() {
                body.insert(key.into(), Value::from(value.clone()));
            }
        }
        body
    }
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
        let error = info
            .get("error")
            .and_then(Value::as_object)
            .map(|error| error.get("name").and_then(Value::as_str).unwrap_or("").to_string());
        let parts = entry.get("parts").and_then(Value::as_array);
        let output_part = parts.is_some_and(|parts| {
            parts.iter().any(|part| match part.get("type").and_then(Value::as_str) {
                Some("tool") => true,
                Some("text") => part.get("text").and_then(Value::as_str).is_some_and(|t| !t.trim().is_empty()),
                _ => false,
            })
        });
        let text = parts
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
            selection: Selection::of_info(info),
            text,
            cost: info.get("cost").and_then(Value::as_f64).filter(|c| c.is_finite() && *c > 0.0).unwrap_or(0.0),
            provider_error: info.get("error").and_then(ProviderError::from_value),
            produced_output: output_part || count(&["output"]) > 0,
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
            // The runtime's own check runs are neither a user's message nor an agent's reply.
            .filter(|(_, entry)| !crate::record::check_id::is_check_message(entry))
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
/// message without a timestamp keeps its place after its predecessor. A user message never sorts
/// after a reply that answers it (`parentID`): a repeated post of its id (a retry, a second host)
/// can stamp it with a later time than its reply, which would make an answered message look like
/// the newest, unanswered one.
pub fn chronological(messages: &[Message]) -> Vec<&Message> {
    let mut answered_at: std::collections::HashMap<&str, f64> = std::collections::HashMap::new();
    for reply in messages.iter().filter(|m| m.role == Role::Assistant && !m.parent_id.is_empty()) {
        if let Some(created) = reply.created {
            let at = answered_at.entry(reply.parent_id.as_str()).or_insert(created);
            *at = at.min(created);
        }
    }
    let mut last_known = 0.0_f64;
    let mut keyed: Vec<(f64, usize, &Message)> = messages
        .iter()
        .map(|message| {
            if let Some(created) = message.created {
                last_known = created;
            }
            let mut at = message.created.unwrap_or(last_known);
            if message.role == Role::User {
                if let Some(answer) = answered_at.get(message.id.as_str()) {
                    at = at.min(*answer);
                }
            }
            (at, message.index, message)
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
    /// The session's title as OpenCode shows it (empty when absent).
    pub title: String,
    /// `time.created` (epoch ms; 0 when absent): which of two sessions carrying one goal is the
    /// older (a fork is newer than its source).
    pub created: f64,
    /// The whole metadata object (for merging writes).
    pub metadata: Map<String, Value>,
}

impl SessionView {
    /// Parses a session object; `None` when it is not an object.
    pub fn from_value(value: &Value) -> Option<SessionView> {
        let object = value.as_object()?;
        let (id, parent_id, directory, created) = identity(object);
        Some(SessionView {
            id,
            parent_id,
            directory,
            title: string_field(object.get("title")),
            created,
            metadata: object.get("metadata").and_then(Value::as_object).cloned().unwrap_or_default(),
        })
    }

    /// The goal stored on this session, if valid.
    pub fn goal(&self) -> Option<Goal> {
        self.metadata.get("openchamber").and_then(|ns| ns.get("goal")).and_then(Goal::from_value)
    }

    /// A sub-agent session (never carries a goal).
    pub fn is_subagent(&self) -> bool {
        is_subagent(&self.parent_id)
    }
}

/// One entry of a directory's session list, kept compact: a list can hold thousands of
/// sessions, and holding each one's whole metadata (as [`SessionView`] does) for a scan that
/// needs only the goal would cost the metadata many times over.
#[derive(Debug, Clone)]
pub struct ListedSession {
    /// Session id.
    pub id: String,
    /// Parent session (sub-agent sessions have one).
    pub parent_id: String,
    /// Project directory reported by OpenCode.
    pub directory: String,
    /// `time.created` (epoch ms; 0 when absent).
    pub created: f64,
    /// `time.updated` (epoch ms, the server's clock; 0 when absent): a census pages by it.
    pub updated: f64,
    /// The goal stored on the session, if valid: what a scan reads of it.
    pub goal: Option<ListedGoal>,
}

/// What a scan reads of a listed session's goal: the goal is read whole (so an invalid one is
/// no goal) and dropped once these are taken. A sweep of a directory of 10,000 sessions held
/// each one's whole goal, about 1.5 kB apiece, until it had armed them all.
#[derive(Debug, Clone)]
pub struct ListedGoal {
    /// Goal id.
    pub id: String,
    /// Its status.
    pub status: GoalStatus,
    /// Its compare-and-set key (see [`Goal::revision`]).
    pub revision: GoalRevision,
}

impl ListedGoal {
    fn of(goal: Goal) -> ListedGoal {
        ListedGoal { revision: goal.revision(), status: goal.status, id: goal.id }
    }
}

impl ListedSession {
    /// Reads one list entry; `None` when it is not an object. Field rules are
    /// [`SessionView::from_value`]'s.
    pub fn from_value(value: &Value) -> Option<ListedSession> {
        let object = value.as_object()?;
        let (id, parent_id, directory, created) = identity(object);
        Some(ListedSession {
            id,
            parent_id,
            directory,
            created,
            updated: positive_time(object.get("time").and_then(|t| t.get("updated"))).unwrap_or(0.0),
            goal: object
                .get("metadata")
                .and_then(|m| m.get("openchamber"))
                .and_then(|ns| ns.get("goal"))
                .and_then(Goal::from_value)
                .map(ListedGoal::of),
        })
    }

    /// A sub-agent session (never carries a goal).
    pub fn is_subagent(&self) -> bool {
        is_subagent(&self.parent_id)
    }
}

/// A top-level session of an owner list that holds a valid goal: only what deciding a goal's
/// owner reads. A list answers with every session of a directory (10,000 in the scale bench), and
/// a [`ListedSession`] keeps each one's whole goal, about 1.5 kB apiece; the owner lists of a
/// burst of ticks then held tens of MB at once. The goal is read (so an invalid one is no goal)
/// and dropped as soon as its id is taken.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnerCandidate {
    /// Session id.
    pub session_id: String,
    /// The id of the goal stored on the session.
    pub goal_id: String,
    /// `time.created` (epoch ms; 0 when absent).
    pub created: f64,
}

impl OwnerCandidate {
    /// Reads one list entry; `None` for a non-object, a sub-agent session, or a session without
    /// a valid goal. Field rules are [`ListedSession::from_value`]'s.
    pub fn from_value(value: &Value) -> Option<OwnerCandidate> {
        let listed = ListedSession::from_value(value)?;
        if listed.is_subagent() {
            return None;
        }
        let goal_id = listed.goal?.id;
        Some(OwnerCandidate { session_id: listed.id, goal_id, created: listed.created })
    }
}

/// A session object's id, parent id, directory and `time.created` (0 when absent): what
/// [`SessionView`] and [`ListedSession`] both read.
fn identity(object: &Map<String, Value>) -> (String, String, String, f64) {
    (
        string_field(object.get("id")),
        string_field(object.get("parentID")),
        string_field(object.get("directory")),
        positive_time(object.get("time").and_then(|t| t.get("created"))).unwrap_or(0.0),
    )
}

/// Sub-agent sessions are the ones with a parent (they never carry a goal).
fn is_subagent(parent_id: &str) -> bool {
    !parent_id.trim().is_empty()
}

/// Builds the whole-metadata body for a write: the fresh metadata with `openchamber.<key>`
/// replaced (or removed when `value` is `None`), every other key kept.
pub fn merge_namespace_key(fresh: &Map<String, Value>, key: &str, value: Option<Value>) -> Map<String, Value> {
    let mut metadata = fresh.clone();
    let mut namespace = metadata.get("openchamber").and_then(Value::as_object).cloned().unwrap_or_default();
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
    let kind = map.get(session_id).and_then(|entry| entry.get("type")).and_then(Value::as_str);
    match kind {
        Some("busy") | Some("retry") => LiveStatus::Working,
        _ => LiveStatus::Idle,
    }
}

/// Longest session id addressed (bytes). OpenCode's are about 30; a URL of many kilobytes is
/// refused by servers and proxies with a reset or a 414/431, which would look like a flaky server
/// and be retried for ever.
pub const MAX_SESSION_ID_BYTES: usize = 1024;

/// Whether a session id can be put in a URL path. `.` and `..` cannot: URL parsers resolve them
/// (escaped as `%2e` too) as dot segments, so `/session/..` would reach `/` instead. Nor can an id
/// over [`MAX_SESSION_ID_BYTES`].
pub fn is_addressable_session_id(session_id: &str) -> bool {
    !session_id.is_empty() && session_id != "." && session_id != ".." && session_id.len() <= MAX_SESSION_ID_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_selection_is_read_from_a_reply_or_a_user_message_and_names_only_what_it_has() {
        let info = |v: Value| v.as_object().cloned().expect("an object");
        let reply = Selection::of_info(&info(
            serde_json::json!({"providerID": "p", "modelID": "m", "mode": "build", "variant": "high"}),
        ));
        assert_eq!(
            (reply.model_path().as_deref(), reply.agent.as_str(), reply.variant.as_str()),
            (Some("p/m"), "build", "high")
        );
        let user = Selection::of_info(&info(
            serde_json::json!({"agent": "plan", "model": {"providerID": "a", "modelID": "b", "variant": "low"}}),
        ));
        assert_eq!(
            (user.model_path().as_deref(), user.agent.as_str(), user.variant.as_str()),
            (Some("a/b"), "plan", "low")
        );
        let body = user.prompt_body(vec![Value::from("part")]);
        let expected = serde_json::json!({"parts": ["part"], "model": {"providerID": "a", "modelID": "b"}, "agent": "plan", "variant": "low"});
        assert_eq!(Value::Object(body), expected);
        let provider_only = Selection { provider_id: "a".into(), ..Default::default() };
        assert_eq!(
            Value::Object(provider_only.prompt_body(Vec::new())),
            serde_json::json!({"parts": []}),
            "no half a model"
        );
    }
    use serde_json::json;

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
        assert_eq!(messages[1].selection.agent, "build");
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
    fn an_answered_user_message_never_sorts_after_its_reply() {
        // As seen on a real OpenCode under load: a repeated post of the continuation's id stamped
        // it two seconds after the reply that answers it; the list keeps creation order.
        let list = json!([
            {"info": {"id": "u1", "role": "user", "time": {"created": 100}}},
            {"info": {"id": "r1", "role": "assistant", "parentID": "u1", "time": {"created": 110, "completed": 120}}},
            {"info": {"id": "u2", "role": "user", "time": {"created": 1_990}}},
            {"info": {"id": "r2", "role": "assistant", "parentID": "u2", "time": {"created": 1_980, "completed": 2_000}}},
        ]);
        let messages = Message::list_from_value(&list).unwrap();
        let ids: Vec<_> = chronological(&messages).iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["u1", "r1", "u2", "r2"]);
        // An unanswered user message keeps its own time.
        let list = json!([
            {"info": {"id": "r0", "role": "assistant", "time": {"created": 50}}},
            {"info": {"id": "u3", "role": "user", "time": {"created": 40}}},
        ]);
        let messages = Message::list_from_value(&list).unwrap();
        let ids: Vec<_> = chronological(&messages).iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["u3", "r0"]);
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
