//! Event intake: turns an OpenCode payload into the few events the features read (the intake
//! contract, [`INTAKE_PAYLOADS`]), and fans each one out to every runtime registered with the
//! same [`IntakeRegistry`] that talks to the same OpenCode server.

use std::sync::{Arc, Weak};

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
        /// The session's whole metadata, only while a runtime watches the session's writes for
        /// lost updates (see `echo_watch`); a binding reads it only then ([`WATCHED_METADATA_KEY`]).
        metadata: Option<Value>,
    },
    /// `session.deleted`: the session is gone.
    SessionDeleted {
        /// Session.
        session_id: String,
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
        /// The message's id (empty when the event names none).
        message_id: String,
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
    /// `server.heartbeat`: OpenCode sends one every 10 s on its event streams, so a host whose
    /// payloads stop for longer is a host whose stream is down (`sched/silence.rs`).
    Heartbeat,
}

/// Where a binding puts a watched session's whole metadata in the reduced `session.updated` info
/// (beside the goal-only `metadata` it always reads).
pub const WATCHED_METADATA_KEY: &str = "watchedMetadata";

/// How the binding reads one payload type off the host's object: it never walks a whole
/// payload (a `session.updated` can carry megabytes of metadata), only what [`parse_payload`]
/// looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadReading {
    /// The session's `id`, `parentID`, `directory` and the known fields of its goal.
    SessionInfo,
    /// The message's `role`, ids, `time` and `error`, and only when
    /// [`message_update_matters`] says so.
    MessageInfo,
    /// `properties` whole (small payloads).
    Whole,
}

/// The intake contract: every payload type a runtime reads, with how it is read. Everything
/// else is dropped before parsing. The package entry's JS prefilter is built from this list at
/// load (`intakePayloadTypes()`), so adding a type here and an arm to [`parse_payload`] is the
/// whole change.
pub const INTAKE_PAYLOADS: &[(&str, PayloadReading)] = &[
    ("session.status", PayloadReading::Whole),
    ("session.updated", PayloadReading::SessionInfo),
    // A fork is announced by `session.created` with the copied metadata (a goal included).
    ("session.created", PayloadReading::SessionInfo),
    // A deleted session is forgotten (a long-running host keeps nothing of it).
    ("session.deleted", PayloadReading::SessionInfo),
    ("message.updated", PayloadReading::MessageInfo),
    ("server.connected", PayloadReading::Whole),
    // Proof that the host's stream is alive (every 10 s, a tiny payload).
    ("server.heartbeat", PayloadReading::Whole),
    ("permission.asked", PayloadReading::Whole),
    ("permission.v2.asked", PayloadReading::Whole),
    ("permission.replied", PayloadReading::Whole),
    ("permission.v2.replied", PayloadReading::Whole),
    ("question.asked", PayloadReading::Whole),
    ("question.v2.asked", PayloadReading::Whole),
    ("question.replied", PayloadReading::Whole),
    ("question.v2.replied", PayloadReading::Whole),
    ("question.rejected", PayloadReading::Whole),
    ("question.v2.rejected", PayloadReading::Whole),
];

/// The payload types of the intake contract, in order.
pub fn intake_payload_types() -> impl Iterator<Item = &'static str> {
    INTAKE_PAYLOADS.iter().map(|(kind, _)| *kind)
}

/// How a payload type is read, or `None` when no runtime reads it.
pub fn reading_of(kind: &str) -> Option<PayloadReading> {
    INTAKE_PAYLOADS.iter().find(|(listed, _)| *listed == kind).map(|(_, reading)| *reading)
}

/// Which `message.updated` payloads matter: most are updates of an assistant reply while it
/// streams, and only a reply that ended with an error (the abort) is an event; user messages
/// always are. The binding applies this before copying anything else off the message.
pub fn message_update_matters(role: Option<&str>, has_error: bool) -> bool {
    role != Some("assistant") || has_error
}

fn text(value: Option<&Value>) -> &str {
    value.and_then(Value::as_str).map(str::trim).unwrap_or("")
}

/// A session id from a payload, trimmed; `None` when it cannot name a session.
fn session_id(value: Option<&Value>) -> Option<&str> {
    Some(text(value)).filter(|id| crate::record::session::is_addressable_session_id(id))
}

fn number(value: Option<&Value>) -> f64 {
    value.and_then(Value::as_f64).filter(|n| n.is_finite() && *n > 0.0).unwrap_or(0.0)
}

/// Parses one payload (`{type, properties}`; the global envelope already unwrapped). Anything
/// it cannot read is `None`, never an error.
pub fn parse_payload(payload: &Value, directory_hint: &str) -> Option<IntakeEvent> {
    let kind = payload.get("type")?.as_str()?;
    reading_of(kind)?;
    let properties = payload.get("properties");
    let info = properties.and_then(|p| p.get("info"));
    let directory = {
        let own = text(properties.and_then(|p| p.get("directory")));
        let from_info = text(info.and_then(|i| i.get("directory")));
        let chosen = if !own.is_empty() {
            own
        } else if !from_info.is_empty() {
            from_info
        } else {
            directory_hint.trim()
        };
        if chosen == "global" {
            String::new()
        } else {
            chosen.to_string()
        }
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
        "session.deleted" => {
            let session_id = session_id(info?.get("id"))?;
            Some(IntakeEvent::SessionDeleted { session_id: session_id.to_string() })
        }
        "session.updated" | "session.created" => {
            let info = info?;
            let session_id = session_id(info.get("id"))?;
            let is_child = !text(info.get("parentID")).is_empty();
            let goal = info.get("metadata").and_then(|m| m.get("openchamber")).and_then(|n| n.get("goal")).cloned();
            let metadata = info.get(WATCHED_METADATA_KEY).cloned();
            Some(IntakeEvent::SessionUpdated {
                session_id: session_id.to_string(),
                directory,
                is_child,
                goal,
                metadata,
            })
        }
        "message.updated" => message_event(info?, properties?, directory),
        "server.connected" => Some(IntakeEvent::Connected),
        "server.heartbeat" => Some(IntakeEvent::Heartbeat),
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

/// The payload and its directory out of one event of OpenCode's `GET /global/event` stream: the
/// envelope `{directory, payload}` unwrapped (`global` names no directory), or a bare payload
/// with `directory_hint`.
pub fn unwrap_envelope<'a>(event: &'a Value, directory_hint: &'a str) -> (&'a Value, &'a str) {
    match event.get("payload").filter(|payload| payload.is_object()) {
        Some(payload) => {
            let directory = event.get("directory").and_then(Value::as_str).unwrap_or(directory_hint);
            (payload, if directory == "global" { "" } else { directory })
        }
        None => (event, directory_hint),
    }
}

/// A `message.updated` payload: a user message (activity) or an aborted assistant turn. Other
/// messages, and the runtime's own check runs, are `None`.
fn message_event(info: &Value, properties: &Value, directory: String) -> Option<IntakeEvent> {
    let session_id = session_id(info.get("sessionID")).or_else(|| session_id(properties.get("sessionID")))?;
    let role = info.get("role").and_then(Value::as_str);
    if !message_update_matters(role, info.get("error").is_some_and(|e| !e.is_null())) {
        return None;
    }
    // The runtime's own check runs are no user activity and no user abort.
    if crate::record::check_id::is_check_info(info) {
        return None;
    }
    let created = number(info.get("time").and_then(|t| t.get("created")));
    match role {
        Some("assistant") => {
            let aborted = info.get("error").and_then(|e| e.get("name")).and_then(Value::as_str)
                == Some(crate::record::session::ABORTED_ERROR);
            let completed = number(info.get("time").and_then(|t| t.get("completed")));
            let at = if completed > 0.0 { completed } else { created };
            aborted.then(|| IntakeEvent::Aborted { session_id: session_id.to_string(), directory, at })
        }
        Some("user") => {
            let message_id = info.get("id").and_then(Value::as_str).unwrap_or_default().to_string();
            Some(IntakeEvent::UserMessage { session_id: session_id.to_string(), directory, message_id, created })
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
    /// Whether the consumer watches this session's metadata writes right now, and so wants the
    /// whole metadata of its `session.updated` events.
    fn watches_writes(&self, _session_id: &str) -> bool {
        false
    }
}

/// The consumers events are fanned out to, held weakly (a dropped runtime stops receiving). An
/// explicit object rather than a process-wide static: the host binding keeps the one its
/// runtimes share (in `shared::SharedContext`), and a test or an embedder can keep its own.
/// Each consumer's group is kept beside it (a consumer's group never changes): matching a
/// payload's group then costs a string comparison, not an upgrade and a copy of the key per
/// consumer, on the host's thread for every forwarded payload.
#[derive(Default)]
pub struct IntakeRegistry {
    consumers: RwLock<Vec<(String, Weak<dyn Consumer>)>>,
}

impl IntakeRegistry {
    /// Registers a consumer for fan-out, dropping consumers that are gone or stopped.
    pub fn register(&self, consumer: &Arc<dyn Consumer>) {
        let mut list = self.consumers.write();
        list.retain(|(_, c)| c.upgrade().is_some_and(|c| c.is_live()));
        list.push((consumer.group(), Arc::downgrade(consumer)));
    }

    /// Whether a live consumer of the group watches the session's writes (the binding then reads
    /// the whole metadata of its `session.updated`).
    pub fn watches_writes(&self, group: &str, session_id: &str) -> bool {
        self.consumers
            .read()
            .iter()
            .filter(|(key, _)| key == group)
            .filter_map(|(_, c)| c.upgrade())
            .any(|c| c.is_live() && c.watches_writes(session_id))
    }

    /// Reads one payload (the envelope already unwrapped) as the consumers of `group` take it:
    /// parsed through the contract, and a `session.updated` of a session whose writes one of them
    /// watches carrying the session's whole metadata (the payload is the server's own here, so
    /// it is taken from there). `None` when no consumer reads the payload.
    pub fn read(&self, group: &str, payload: &Value, directory_hint: &str) -> Option<IntakeEvent> {
        let mut event = parse_payload(payload, directory_hint)?;
        if let IntakeEvent::SessionUpdated { session_id, metadata, .. } = &mut event {
            if self.watches_writes(group, session_id) {
                *metadata = payload.pointer("/properties/info/metadata").filter(|m| m.is_object()).cloned();
            }
        }
        Some(event)
    }

    /// Delivers an event to every live consumer of the group.
    pub fn deliver(&self, group: &str, event: &IntakeEvent) {
        let consumers: Vec<Arc<dyn Consumer>> = self
            .consumers
            .read()
            .iter()
            .filter(|(key, _)| key == group)
            .filter_map(|(_, c)| c.upgrade())
            .filter(|c| c.is_live())
            .collect();
        for consumer in consumers {
            consumer.accept(event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_created_session_is_read_like_an_updated_one() {
        let created = json!({"type": "session.created", "properties": {"info": {"id": "ses_fork",
            "metadata": {"openchamber": {"goal": {"id": "g", "status": "active"}}}}}});
        match parse_payload(&created, "/p") {
            Some(IntakeEvent::SessionUpdated { session_id, goal, is_child, .. }) => {
                assert_eq!((session_id.as_str(), is_child), ("ses_fork", false));
                assert_eq!(goal.unwrap()["id"], json!("g"));
            }
            other => panic!("{other:?}"),
        }
    }

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
        assert_eq!(
            parse_payload(&json!({"type": "session.status", "properties": {"status": {"type": "idle"}}}), ""),
            None
        );
    }

    #[test]
    fn ids_that_cannot_be_addressed_are_ignored() {
        let too_long = "x".repeat(crate::record::session::MAX_SESSION_ID_BYTES + 1);
        for id in ["", "  ", ".", "..", " .. ", too_long.as_str()] {
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

    /// A payload of `kind` carrying everything some arm of `parse_payload` needs.
    fn minimal_payload(kind: &str) -> Value {
        json!({"type": kind, "properties": {
            "sessionID": "s", "id": "r1", "status": {"type": "idle"},
            "info": {"id": "s", "sessionID": "s", "role": "user", "time": {"created": 1}},
        }})
    }

    #[test]
    fn every_listed_type_parses_and_no_other_does() {
        for kind in intake_payload_types() {
            assert!(parse_payload(&minimal_payload(kind), "").is_some(), "{kind} is listed but never parsed");
        }
        for kind in
            ["permission.updated", "question.v3.asked", "session.idle", "message.part.updated", "session.status "]
        {
            assert_eq!(reading_of(kind), None);
            assert_eq!(parse_payload(&minimal_payload(kind), ""), None, "{kind} is not listed but parsed");
        }
    }

    #[test]
    fn only_user_messages_and_failed_replies_matter() {
        assert!(message_update_matters(Some("user"), false));
        assert!(message_update_matters(Some("assistant"), true));
        assert!(!message_update_matters(Some("assistant"), false));
        let streaming = json!({"type": "message.updated", "properties": {"info": {"role": "assistant", "sessionID": "s", "error": null}}});
        assert_eq!(parse_payload(&streaming, ""), None);
    }

    struct Counting {
        group: &'static str,
        seen: parking_lot::Mutex<usize>,
    }

    impl Consumer for Counting {
        fn accept(&self, _event: &IntakeEvent) {
            *self.seen.lock() += 1;
        }
        fn group(&self) -> String {
            self.group.to_string()
        }
        fn is_live(&self) -> bool {
            true
        }
    }

    #[test]
    fn a_registry_reaches_its_own_consumers_of_the_group_only() {
        let (first, second) = (IntakeRegistry::default(), IntakeRegistry::default());
        let counting = |group| Arc::new(Counting { group, seen: parking_lot::Mutex::new(0) });
        let (a, b, other) = (counting("g"), counting("g"), counting("h"));
        let as_consumer = |c: &Arc<Counting>| -> Arc<dyn Consumer> { c.clone() };
        first.register(&as_consumer(&a));
        first.register(&as_consumer(&other));
        second.register(&as_consumer(&b));
        first.deliver("g", &IntakeEvent::Connected);
        assert_eq!((*a.seen.lock(), *b.seen.lock(), *other.seen.lock()), (1, 0, 0));
        drop(a);
        first.deliver("g", &IntakeEvent::Connected);
        assert_eq!(*b.seen.lock(), 0, "a dropped consumer is skipped, another registry untouched");
    }

    #[test]
    fn the_global_envelope_is_unwrapped_and_global_names_no_directory() {
        let status = json!({"type": "session.status", "properties": {"sessionID": "s", "status": {"type": "idle"}}});
        let enveloped = json!({"directory": "/p", "payload": status});
        assert_eq!(unwrap_envelope(&enveloped, "/hint"), (&status, "/p"));
        let global = json!({"directory": "global", "payload": status});
        assert_eq!(unwrap_envelope(&global, "/hint"), (&status, ""));
        let no_directory = json!({"payload": status});
        assert_eq!(unwrap_envelope(&no_directory, "/hint"), (&status, "/hint"));
        // A bare payload, and an envelope whose payload is no object, are read as they are.
        assert_eq!(unwrap_envelope(&status, "/hint"), (&status, "/hint"));
        let odd = json!({"directory": "/p", "payload": "x"});
        assert_eq!(unwrap_envelope(&odd, ""), (&odd, ""));
    }

    struct Watching;

    impl Consumer for Watching {
        fn accept(&self, _event: &IntakeEvent) {}
        fn group(&self) -> String {
            "g".into()
        }
        fn is_live(&self) -> bool {
            true
        }
        fn watches_writes(&self, session_id: &str) -> bool {
            session_id == "ses_watched"
        }
    }

    #[test]
    fn a_watched_session_is_read_with_its_whole_metadata() {
        let registry = IntakeRegistry::default();
        let watching: Arc<dyn Consumer> = Arc::new(Watching);
        registry.register(&watching);
        let updated = |id: &str| {
            json!({"type": "session.updated", "properties": {"info": {"id": id,
                "metadata": {"openchamber": {"goal": {"id": "g"}, "assist": {"on": true}}}}}})
        };
        let metadata_of = |event: Option<IntakeEvent>| match event {
            Some(IntakeEvent::SessionUpdated { metadata, .. }) => metadata,
            other => panic!("{other:?}"),
        };
        let watched = metadata_of(registry.read("g", &updated("ses_watched"), ""));
        assert_eq!(watched.unwrap()["openchamber"]["assist"], json!({"on": true}));
        assert_eq!(metadata_of(registry.read("g", &updated("ses_other"), "")), None);
        assert_eq!(metadata_of(registry.read("h", &updated("ses_watched"), "")), None, "another group's watch");
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
