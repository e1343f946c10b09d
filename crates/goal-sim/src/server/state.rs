//! The simulated OpenCode's store: sessions with their metadata and messages, live statuses,
//! and the ids OpenCode hands out. Shapes follow OpenCode 1.18.33 as `docs/opencode.md`
//! describes them (the whole metadata is replaced by a PATCH; a repeated `messageID` adds its
//! parts to the stored message). Plain data: the routes (`routes.rs`) and the turns
//! (`turns.rs`) change it, and every change an event would announce is emitted through
//! [`State::emit`].

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

/// One session.
#[derive(Debug, Clone)]
pub struct Session {
    /// `ses_…`.
    pub id: String,
    /// Its project directory.
    pub directory: String,
    /// The parent of a child session (a reviewer).
    pub parent: Option<String>,
    /// Its title.
    pub title: String,
    /// `time.created`.
    pub created: f64,
    /// `time.updated`.
    pub updated: f64,
    /// The whole metadata object.
    pub metadata: Map<String, Value>,
    /// Messages, oldest first: `{info, parts}`.
    pub messages: Vec<Value>,
}

impl Session {
    /// The session as OpenCode answers it.
    pub fn to_value(&self) -> Value {
        let mut value = json!({
            "id": self.id,
            "slug": self.id,
            "projectID": "sim",
            "directory": self.directory,
            "title": self.title,
            "version": "1.18.33",
            "time": { "created": self.created, "updated": self.updated },
        });
        if let Some(parent) = &self.parent {
            value["parentID"] = Value::from(parent.clone());
        }
        if !self.metadata.is_empty() {
            value["metadata"] = Value::Object(self.metadata.clone());
        }
        value
    }

    /// The goal record, when there is one.
    pub fn goal(&self) -> Option<&Value> {
        self.metadata.get("openchamber")?.get("goal")
    }

    /// The goal record, to change it (created when missing).
    pub fn goal_mut(&mut self) -> Option<&mut Value> {
        self.metadata.get_mut("openchamber")?.get_mut("goal")
    }

    /// The message with this id.
    pub fn message(&self, id: &str) -> Option<&Value> {
        self.messages.iter().find(|m| m["info"]["id"] == id)
    }

    /// The message with this id, to change it.
    pub fn message_mut(&mut self, id: &str) -> Option<&mut Value> {
        self.messages.iter_mut().find(|m| m["info"]["id"] == id)
    }
}

/// An event the server emits, with the directory of its envelope.
#[derive(Debug, Clone)]
pub struct Event {
    /// `{type, properties}`.
    pub payload: Value,
    /// The envelope's directory.
    pub directory: String,
}

/// The store.
#[derive(Debug, Default)]
pub struct State {
    /// Sessions by id (ordered: iteration is the same on every run).
    pub sessions: BTreeMap<String, Session>,
    /// Busy (or retrying) sessions; idle is absence.
    pub busy: BTreeMap<String, Value>,
    /// Ids handed out so far.
    pub counter: u64,
    /// Where emitted events go (the event bus, `bus.rs`).
    pub events: Option<tokio::sync::mpsc::UnboundedSender<Event>>,
    /// The server is up (down: every request is refused, nothing is emitted).
    pub up: bool,
}

/// Base-62 characters of an id's tail.
const B62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

impl State {
    /// An ascending id (`msg_`, `prt_`): 12 hex digits of time and counter, as OpenCode's, so
    /// ids made later sort after and leave room between them.
    pub fn ascending(&mut self, prefix: &str, now_ms: f64) -> String {
        self.counter += 1;
        let number = (now_ms.max(0.0) as u64).wrapping_mul(0x1000).wrapping_add(self.counter & 0xfff);
        format!("{prefix}_{:012x}{}", number & 0xffff_ffff_ffff, self.tail(self.counter))
    }

    /// A descending id (`ses_`): newer sorts first.
    pub fn descending(&mut self, prefix: &str) -> String {
        self.counter += 1;
        format!("{prefix}_{:012x}{}", 0xffff_ffff_ffff - self.counter, self.tail(self.counter))
    }

    fn tail(&self, n: u64) -> String {
        let mut x = n.wrapping_mul(2_654_435_761);
        (0..14)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                B62[((x >> 16) % 62) as usize] as char
            })
            .collect()
    }

    /// Emits an event (dropped while the server is down).
    pub fn emit(&mut self, payload: Value, directory: &str) {
        if let (true, Some(events)) = (self.up, &self.events) {
            let _ = events.send(Event { payload, directory: directory.to_string() });
        }
    }

    /// `session.updated` for a session.
    pub fn emit_session(&mut self, id: &str) {
        if let Some(session) = self.sessions.get(id) {
            let (info, directory) = (session.to_value(), session.directory.clone());
            self.emit(json!({"type": "session.updated", "properties": {"info": info}}), &directory);
        }
    }

    /// `message.updated` and a `message.part.updated` per part, for one message.
    pub fn emit_message(&mut self, session_id: &str, message_id: &str) {
        let Some(session) = self.sessions.get(session_id) else { return };
        let Some(message) = session.message(message_id).cloned() else { return };
        let directory = session.directory.clone();
        self.emit(json!({"type": "message.updated", "properties": {"info": message["info"]}}), &directory);
        for part in message["parts"].as_array().into_iter().flatten() {
            self.emit(json!({"type": "message.part.updated", "properties": {"part": part}}), &directory);
        }
    }

    /// Sets a session's live status and emits it (idle also emits `session.idle`). `silent`:
    /// no event says so (a restart).
    pub fn set_status(&mut self, id: &str, busy: bool, silent: bool) {
        let Some(directory) = self.sessions.get(id).map(|s| s.directory.clone()) else { return };
        if busy {
            self.busy.insert(id.to_string(), json!({"type": "busy"}));
        } else {
            self.busy.remove(id);
        }
        if silent {
            return;
        }
        let kind = if busy { "busy" } else { "idle" };
        self.emit(
            json!({"type": "session.status", "properties": {"sessionID": id, "status": {"type": kind}}}),
            &directory,
        );
        if !busy {
            self.emit(json!({"type": "session.idle", "properties": {"sessionID": id}}), &directory);
        }
    }

    /// Appends a user message with `parts` (each given an id unless it has one) and emits it.
    pub fn add_user_message(
        &mut self,
        session_id: &str,
        id: Option<&str>,
        parts: &[Value],
        body: &Value,
        now: f64,
    ) -> String {
        let id = id.map(str::to_string).unwrap_or_else(|| self.ascending("msg", now));
        let model = body.get("model").cloned().unwrap_or_else(|| json!({"providerID": "sim", "modelID": "sim-model"}));
        let info = json!({
            "id": id,
            "sessionID": session_id,
            "role": "user",
            "time": {"created": now},
            "agent": body.get("agent").and_then(Value::as_str).unwrap_or("build"),
            "model": model,
        });
        let parts = self.parts_of(session_id, &id, parts, now);
        if let Some(session) = self.sessions.get_mut(session_id) {
            session.messages.push(json!({"info": info, "parts": parts}));
            session.updated = now;
        }
        self.emit_message(session_id, &id);
        id
    }

    /// Parts as stored: ids filled in, tied to their message.
    pub fn parts_of(&mut self, session_id: &str, message_id: &str, parts: &[Value], now: f64) -> Vec<Value> {
        parts
            .iter()
            .filter(|p| p.is_object())
            .map(|p| {
                let mut part = p.clone();
                if part.get("id").and_then(Value::as_str).is_none() {
                    part["id"] = Value::from(self.ascending("prt", now));
                }
                part["sessionID"] = Value::from(session_id);
                part["messageID"] = Value::from(message_id);
                part
            })
            .collect()
    }

    /// Starts an unfinished assistant reply to `parent` and emits it; its id.
    pub fn begin_reply(&mut self, session_id: &str, parent: &str, now: f64) -> String {
        let id = self.ascending("msg", now);
        let (agent, model) = self
            .sessions
            .get(session_id)
            .and_then(|s| s.message(parent))
            .map(|m| (m["info"]["agent"].clone(), m["info"]["model"].clone()))
            .unwrap_or((json!("build"), json!({"providerID": "sim", "modelID": "sim-model"})));
        let directory = self.sessions.get(session_id).map(|s| s.directory.clone()).unwrap_or_default();
        let info = json!({
            "id": id,
            "sessionID": session_id,
            "parentID": parent,
            "role": "assistant",
            "mode": agent,
            "agent": agent,
            "path": {"cwd": directory, "root": directory},
            "cost": 0,
            "tokens": {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}},
            "providerID": model["providerID"],
            "modelID": model["modelID"],
            "time": {"created": now},
        });
        let step = self.parts_of(session_id, &id, &[json!({"type": "step-start"})], now);
        if let Some(session) = self.sessions.get_mut(session_id) {
            session.messages.push(json!({"info": info, "parts": step}));
            session.updated = now;
        }
        self.emit_message(session_id, &id);
        id
    }

    /// The newest message of a session (`None`: none).
    pub fn newest(&self, session_id: &str) -> Option<&Value> {
        self.sessions.get(session_id)?.messages.last()
    }
}

/// Whether a message is an assistant reply that answers `parent`.
pub fn answers(message: &Value, parent: &str) -> bool {
    message["info"]["role"] == "assistant" && message["info"]["parentID"] == parent
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascending_ids_sort_in_order_and_sessions_sort_newest_first() {
        let mut state = State { up: true, ..State::default() };
        let a = state.ascending("msg", 1_000.0);
        let b = state.ascending("msg", 1_000.0);
        let c = state.ascending("msg", 2_000.0);
        assert!(a < b && b < c, "{a} {b} {c}");
        assert_eq!(a.len(), "msg_".len() + 12 + 14);
        let (s1, s2) = (state.descending("ses"), state.descending("ses"));
        assert!(s2 < s1);
    }
}
