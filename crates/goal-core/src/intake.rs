//! Event intake: turns an OpenCode payload into the few events the features read, and fans each
//! one out to every runtime of the process that talks to the same OpenCode server.

use std::sync::{Arc, OnceLock, Weak};

use parking_lot::RwLock;
use serde_json::Value;

/// An event a feature reacts to.
#[derive(Debug, Clone, PartialEq)]
pub enum IntakeEvent {
    /// `session.status`: `working` for busy/retry, false for idle.
    Status {
        /// Session.
        session_id: String,
        /// Directory (payload, else envelope hint).
        directory: String,
        /// Busy or retry.
        working: bool,
    },
    /// `session.updated` of a top-level or child session, with its raw goal value.
    SessionUpdated {
        /// Session.
        session_id: String,
        /// Directory.
        directory: String,
        /// Has a parent (sub-agent).
        is_child: bool,
        /// `metadata.openchamber.goal` as sent (may be anything).
        goal: Option<Value>,
    },
    /// An assistant message ended with `MessageAbortedError`.
    Aborted {
        /// Session.
        session_id: String,
        /// Directory.
        directory: String,
        /// When the abort happened: `time.completed`, else `time.created` (0 unknown). A
        /// re-emitted old message carries its old time, so it cannot undo a later resume.
        at: f64,
    },
    /// A user message was created or updated.
    UserMessage {
        /// Session.
        session_id: String,
        /// Directory.
        directory: String,
        /// `time.created` (0 unknown).
        created: f64,
    },
    /// A permission or question was asked (`pending`) or answered.
    UserInput {
        /// Session.
        session_id: String,
        /// Directory.
        directory: String,
        /// Request id.
        request_id: String,
        /// Asked (true) or answered (false).
        pending: bool,
    },
    /// OpenCode (re)connected.
    Connected,
}

/// The payload types any feature reads; everything else is dropped before parsing.
pub const INTERESTING_TYPES: &[&str] = &[
    "session.status",
    "session.updated",
    "message.updated",
    "server.connected",
    "permission.asked",
    "permission.v2.asked",
    "permission.replied",
    "permission.v2.replied",
    "question.asked",
    "question.v2.asked",
    "question.replied",
    "question.v2.replied",
    "question.rejected",
    "question.v2.rejected",
];

fn text(value: Option<&Value>) -> &str {
    value.and_then(Value::as_str).map(str::trim).unwrap_or("")
}

/// A session id from a payload, trimmed; `None` when it cannot name a session.
fn session_id(value: Option<&Value>) -> Option<&str> {
    Some(text(value)).filter(|id| crate::opencode::is_addressable_session_id(id))
}

fn number(value: Option<&Value>) -> f64 {
    value.and_then(Value::as_f64).filter(|n| n.is_finite() && *n > 0.0).unwrap_or(0.0)
}

/// Parses one payload (`{type, properties}`; the global envelope already unwrapped). Anything
/// it cannot read is `None`, never an error.
pub fn parse_payload(payload: &Value, directory_hint: &str) -> Option<IntakeEvent> {
    let kind = payload.get("type")?.as_str()?;
    let properties = payload.get("properties");
    let info = properties.and_then(|p| p.get("info"));
    let directory = {
        let own = text(properties.and_then(|p| p.get("directory")));
        let from_info = text(info.and_then(|i| i.get("directory")));
        let chosen = if !own.is_empty() { own } else if !from_info.is_empty() { from_info } else { directory_hint.trim() };
        if chosen == "global" { String::new() } else { chosen.to_string() }
    };
    match kind {
        "session.status" => {
            let session_id = session_id(properties?.get("sessionID"))?;
            let status_type = properties?
                .get("status")
                .and_then(|s| s.get("type"))
                .and_then(Value::as_str)
                .or_else(|| info.and_then(|i| i.get("type")).and_then(Value::as_str))?;
            let working = match status_type {
                "idle" => false,
                "busy" | "retry" => true,
                _ => return None,
            };
            Some(IntakeEvent::Status { session_id: session_id.to_string(), directory, working })
        }
        "session.updated" => {
            let info = info?;
            let session_id = session_id(info.get("id"))?;
            let is_child = !text(info.get("parentID")).is_empty();
            let goal = info.get("metadata").and_then(|m| m.get("openchamber")).and_then(|n| n.get("goal")).cloned();
            Some(IntakeEvent::SessionUpdated { session_id: session_id.to_string(), directory, is_child, goal })
        }
        "message.updated" => {
            let info = info?;
            let session_id = session_id(info.get("sessionID")).or_else(|| session_id(properties?.get("sessionID")))?;
            let created = number(info.get("time").and_then(|t| t.get("created")));
            match info.get("role").and_then(Value::as_str) {
                Some("assistant") => {
                    let aborted = info.get("error").and_then(|e| e.get("name")).and_then(Value::as_str)
                        == Some(crate::model::ABORTED_ERROR);
                    let completed = number(info.get("time").and_then(|t| t.get("completed")));
                    let at = if completed > 0.0 { completed } else { created };
                    aborted.then(|| IntakeEvent::Aborted { session_id: session_id.to_string(), directory, at })
                }
                Some("user") => Some(IntakeEvent::UserMessage { session_id: session_id.to_string(), directory, created }),
                _ => None,
            }
        }
        "server.connected" => Some(IntakeEvent::Connected),
        kind if kind.starts_with("permission.") || kind.starts_with("question.") => {
            let properties = properties?;
            let session_id = session_id(properties.get("sessionID"))?;
            let request_id = [properties.get("id"), properties.get("requestID"), properties.get("permissionID")]
                .into_iter()
                .map(text)
                .find(|s| !s.is_empty())
                .unwrap_or("")
                .to_string();
            let pending = kind.ends_with(".asked");
            Some(IntakeEvent::UserInput { session_id: session_id.to_string(), directory, request_id, pending })
        }
        _ => None,
    }
}

/// Something that consumes intake events (a goal or assist runtime).
pub trait Consumer: Send + Sync {
    /// Receives one event; must return at once.
    fn accept(&self, event: &IntakeEvent);
    /// Grouping key: consumers with the same key share events.
    fn group(&self) -> String;
    /// Whether the consumer still wants events.
    fn is_live(&self) -> bool;
}

type Registry = RwLock<Vec<Weak<dyn Consumer>>>;

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| RwLock::new(Vec::new()))
}

/// Registers a consumer for fan-out (held weakly: a dropped runtime stops receiving).
pub fn register(consumer: &Arc<dyn Consumer>) {
    let mut list = registry().write();
    list.retain(|c| c.upgrade().is_some_and(|c| c.is_live()));
    list.push(Arc::downgrade(consumer));
}

/// Delivers an event to every live consumer of the group.
pub fn dispatch(group: &str, event: &IntakeEvent) {
    let consumers: Vec<Arc<dyn Consumer>> = registry()
        .read()
        .iter()
        .filter_map(Weak::upgrade)
        .filter(|c| c.is_live() && c.group() == group)
        .collect();
    for consumer in consumers {
        consumer.accept(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn status_events() {
        let p = json!({"type": "session.status", "properties": {"sessionID": " s1 ", "status": {"type": "idle"}}});
        assert_eq!(
            parse_payload(&p, "/dir"),
            Some(IntakeEvent::Status { session_id: "s1".into(), directory: "/dir".into(), working: false })
        );
        let fallback = json!({"type": "session.status", "properties": {"sessionID": "s1", "info": {"type": "retry"}, "directory": "/own"}});
        assert_eq!(
            parse_payload(&fallback, "global"),
            Some(IntakeEvent::Status { session_id: "s1".into(), directory: "/own".into(), working: true })
        );
        assert_eq!(parse_payload(&json!({"type": "session.status", "properties": {"status": {"type": "idle"}}}), ""), None);
    }

    #[test]
    fn ids_that_cannot_be_addressed_are_ignored() {
        for id in ["", "  ", ".", "..", " .. "] {
            let status = json!({"type": "session.status", "properties": {"sessionID": id, "status": {"type": "idle"}}});
            assert_eq!(parse_payload(&status, ""), None, "{id:?}");
            let updated = json!({"type": "session.updated", "properties": {"info": {"id": id}}});
            assert_eq!(parse_payload(&updated, ""), None, "{id:?}");
        }
    }

    #[test]
    fn hostile_shapes_are_ignored() {
        for p in [
            json!(null),
            json!([]),
            json!({"type": 5}),
            json!({"type": "session.updated", "properties": "x"}),
            json!({"type": "session.updated", "properties": {"info": {"id": 3}}}),
            json!({"type": "message.updated", "properties": {"info": {"role": "assistant", "sessionID": "s", "error": "x"}}}),
            json!({"type": "message.part.delta", "properties": {}}),
        ] {
            assert_eq!(parse_payload(&p, ""), None, "{p}");
        }
    }

    #[test]
    fn abort_user_and_input_events() {
        let abort = json!({"type": "message.updated", "properties": {"sessionID": "s", "info": {"role": "assistant", "sessionID": "s", "time": {"created": 9}, "error": {"name": "MessageAbortedError"}}}});
        assert!(matches!(parse_payload(&abort, "d"), Some(IntakeEvent::Aborted { at, .. }) if at == 9.0));
        let user = json!({"type": "message.updated", "properties": {"info": {"role": "user", "sessionID": "s", "time": {"created": 3}}}});
        assert!(matches!(parse_payload(&user, "d"), Some(IntakeEvent::UserMessage { .. })));
        let asked = json!({"type": "permission.asked", "properties": {"sessionID": "s", "id": "per_1"}});
        assert!(matches!(parse_payload(&asked, ""), Some(IntakeEvent::UserInput { pending: true, .. })));
        let replied = json!({"type": "question.v2.replied", "properties": {"sessionID": "s", "requestID": "q"}});
        assert!(matches!(parse_payload(&replied, ""), Some(IntakeEvent::UserInput { pending: false, .. })));
    }
}
