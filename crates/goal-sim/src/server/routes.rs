//! The routes of the simulated OpenCode: the ones the goal loop calls, with the answers the real
//! server gives (`docs/opencode.md`). An unknown route answers 404, a bad body 400.

use std::sync::Arc;

use goal_core::{WireAnswer, WireRequest};
use serde_json::{json, Map, Value};

use crate::server::state::{answers, Session};
use crate::server::{Script, Server};

/// A request taken apart: method, path segments after the first `/`, query parameters, body.
pub struct Parsed {
    /// `GET`, `POST`, …
    pub method: String,
    /// The path (no query).
    pub path: String,
    /// Query parameters, decoded.
    pub query: Vec<(String, String)>,
    /// The JSON body (`Null` when absent or unreadable).
    pub body: Value,
}

impl Parsed {
    /// The request, read.
    pub fn of(request: &WireRequest) -> Parsed {
        let without_scheme = request.url.split_once("://").map_or(request.url.as_str(), |(_, rest)| rest);
        let path_and_query = without_scheme.find('/').map_or("/", |at| &without_scheme[at..]);
        let (path, query) = path_and_query.split_once('?').unwrap_or((path_and_query, ""));
        let query = query
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                (decode(k), decode(v))
            })
            .collect();
        let body = request.body.as_deref().and_then(|b| serde_json::from_slice(b).ok()).unwrap_or(Value::Null);
        Parsed { method: request.method.clone(), path: decode(path), query, body }
    }

    /// One query parameter.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// The session a `/session/:id…` path names.
    pub fn session_id(&self) -> Option<&str> {
        let rest = self.path.strip_prefix("/session/")?;
        let id = rest.split('/').next()?;
        (id.starts_with("ses_")).then_some(id)
    }
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(byte) = u8::from_str_radix(&text[i + 1..i + 3], 16) {
                out.push(byte);
                i += 3;
                continue;
            }
        }
        out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A JSON answer.
pub fn json_answer(status: u16, value: &Value) -> WireAnswer {
    WireAnswer { status, body: serde_json::to_vec(value).unwrap_or_default(), content_type: "application/json".into() }
}

/// How many sessions a list holds without a `limit` (OpenCode's own default).
const DEFAULT_LIST_LIMIT: usize = 100;

fn not_found(what: &str) -> WireAnswer {
    json_answer(404, &json!({"name": "NotFoundError", "data": {"message": format!("{what} not found")}}))
}

fn bad_request(what: &str) -> WireAnswer {
    json_answer(400, &json!({"_tag": "InvalidRequestError", "message": what, "kind": "Body"}))
}

impl Server {
    /// Answers one request (`None`: the connection broke before an answer, as a cut shell's).
    pub async fn handle(self: &Arc<Self>, host: usize, parsed: &Parsed) -> Option<WireAnswer> {
        let session = parsed.session_id().map(str::to_string);
        let tail = session.as_deref().map(|id| parsed.path[("/session/".len() + id.len())..].to_string());
        let answer = match (parsed.method.as_str(), session.as_deref(), tail.as_deref()) {
            ("GET", None, _) if parsed.path == "/session" => self.list(parsed, false),
            ("GET", None, _) if parsed.path == "/experimental/session" && !self.old_server => self.list(parsed, true),
            ("GET", None, _) if parsed.path == "/project" => self.projects(),
            ("GET", None, _) if parsed.path == "/session/status" => {
                json_answer(200, &Value::Object(self.state.lock().busy.clone().into_iter().collect()))
            }
            ("POST", None, _) if parsed.path == "/session" => self.create_child(parsed),
            ("GET", None, _) if parsed.path == "/permission" || parsed.path == "/question" => {
                json_answer(200, &json!([]))
            }
            ("GET", None, _) if parsed.path == "/file" => json_answer(200, &project_files(parsed.param("path"))),
            ("GET", Some(id), Some("")) => self.with_session(id, |s| json_answer(200, &s.to_value())),
            ("PATCH", Some(id), Some("")) => self.patch(host, id, &parsed.body),
            ("GET", Some(id), Some("/children")) => self.children(id),
            ("GET", Some(id), Some("/message")) => self.messages(id, parsed.param("limit")),
            ("GET", Some(id), Some("/todo" | "/diff")) => self.with_session(id, |_| json_answer(200, &json!([]))),
            ("POST", Some(id), Some("/prompt_async")) => self.prompt(host, id, &parsed.body),
            ("POST", Some(id), Some("/abort")) => {
                self.abort(id);
                json_answer(200, &json!(true))
            }
            ("POST", Some(id), Some("/shell")) => return self.shell(id, &parsed.body).await,
            _ => not_found(&parsed.path),
        };
        Some(answer)
    }

    fn with_session(&self, id: &str, answer: impl FnOnce(&Session) -> WireAnswer) -> WireAnswer {
        match self.state.lock().sessions.get(id) {
            Some(session) => answer(session),
            None => not_found(id),
        }
    }

    /// `GET /session` (one directory; `everywhere`: `GET /experimental/session`, every directory,
    /// paged by `cursor`): newest update first, `start` keeping those updated at or after it,
    /// 100 sessions unless `limit` says otherwise, as OpenCode answers (docs/opencode.md).
    fn list(&self, parsed: &Parsed, everywhere: bool) -> WireAnswer {
        let directory = parsed.param("directory").unwrap_or_default();
        let roots = parsed.param("roots") == Some("true");
        let number = |name: &str| parsed.param(name).and_then(|s| s.parse::<f64>().ok());
        let start = number("start").unwrap_or(f64::NEG_INFINITY);
        let cursor = number("cursor").filter(|_| everywhere).unwrap_or(f64::INFINITY);
        let limit = number("limit").map_or(DEFAULT_LIST_LIMIT, |l| l.max(0.0) as usize);
        let state = self.state.lock();
        let mut sessions: Vec<&Session> = state
            .sessions
            .values()
            .filter(|s| directory.is_empty() || s.directory == directory)
            .filter(|s| !roots || s.parent.is_none())
            .filter(|s| s.updated >= start && s.updated < cursor)
            .collect();
        sessions.sort_by(|a, b| b.updated.total_cmp(&a.updated).then(a.id.cmp(&b.id)));
        json_answer(200, &Value::Array(sessions.iter().take(limit).map(|s| s.to_value()).collect()))
    }

    /// `GET /project`: every directory a session lives in is a git project's worktree.
    fn projects(&self) -> WireAnswer {
        let state = self.state.lock();
        let mut directories: Vec<&str> = state.sessions.values().map(|s| s.directory.as_str()).collect();
        directories.sort_unstable();
        directories.dedup();
        let projects = directories.iter().filter(|d| !d.is_empty()).map(
            |d| json!({"id": format!("prj-{d}"), "worktree": d, "vcs": "git", "sandboxes": [], "time": {"created": 0}}),
        );
        json_answer(200, &Value::Array(projects.collect()))
    }

    fn children(&self, id: &str) -> WireAnswer {
        let state = self.state.lock();
        if !state.sessions.contains_key(id) {
            return not_found(id);
        }
        let children: Vec<Value> =
            state.sessions.values().filter(|s| s.parent.as_deref() == Some(id)).map(Session::to_value).collect();
        json_answer(200, &Value::Array(children))
    }

    fn messages(&self, id: &str, limit: Option<&str>) -> WireAnswer {
        let limit: usize = limit.and_then(|l| l.parse().ok()).unwrap_or(0);
        self.with_session(id, |s| {
            let skip = if limit == 0 { 0 } else { s.messages.len().saturating_sub(limit) };
            json_answer(200, &Value::Array(s.messages[skip..].to_vec()))
        })
    }

    /// `PATCH /session/:id {metadata}`: the whole metadata is replaced.
    fn patch(&self, host: usize, id: &str, body: &Value) -> WireAnswer {
        let now = self.now();
        let mut state = self.state.lock();
        let Some(session) = state.sessions.get_mut(id) else { return not_found(id) };
        let before = session.goal().cloned();
        if let Some(metadata) = body.get("metadata") {
            match metadata {
                Value::Object(map) => session.metadata = map.clone(),
                Value::Null => {}
                _ => return bad_request("metadata must be an object"),
            }
        }
        session.updated = now;
        let (answer, after) = (session.to_value(), session.goal().cloned());
        let usage = crate::invariants::Usage::of(session, after.as_ref());
        state.emit_session(id);
        drop(state);
        self.record.goal_written(Some(host), id, before.as_ref(), after.as_ref(), now);
        crate::wrap_up::on_host_write(self, id, before.as_ref(), after.as_ref(), &usage, now);
        json_answer(200, &answer)
    }

    /// `POST /session/:id/prompt_async`: stores the user message (a repeated `messageID` adds
    /// its parts) and starts its turn, unless `noReply`, or unless the message was answered or
    /// its turn began already.
    fn prompt(self: &Arc<Self>, host: usize, id: &str, body: &Value) -> WireAnswer {
        let Some(parts) = body.get("parts").and_then(Value::as_array) else { return bad_request("parts is required") };
        let now = self.now();
        let message_id = body.get("messageID").and_then(Value::as_str).map(str::to_string);
        let no_reply = body.get("noReply").and_then(Value::as_bool).unwrap_or(false);
        let mut state = self.state.lock();
        if !state.sessions.contains_key(id) {
            return not_found(id);
        }
        let stored = message_id.as_deref().filter(|m| state.sessions[id].message(m).is_some()).map(str::to_string);
        let starts = match &stored {
            Some(existing) => {
                let new_parts = state.parts_of(id, existing, parts, now);
                let session = state.sessions.get_mut(id).expect("checked");
                let message = session.message_mut(existing).expect("checked");
                let list = message["parts"].as_array_mut().expect("parts");
                for part in new_parts {
                    match list.iter_mut().find(|p| p["id"] == part["id"]) {
                        Some(same) => *same = part,
                        None => list.push(part),
                    }
                }
                state.emit_message(id, existing);
                let answered = state.sessions[id].messages.iter().any(|m| answers(m, existing));
                !no_reply && !answered && !self.record.turn_began_for(id, existing)
            }
            None => {
                state.add_user_message(id, message_id.as_deref(), parts, body, now);
                !no_reply
            }
        };
        let stored_id = match (&stored, &message_id) {
            (Some(existing), _) => existing.clone(),
            (None, Some(given)) => given.clone(),
            (None, None) => state.sessions[id]
                .messages
                .last()
                .map(|m| m["info"]["id"].as_str().unwrap_or_default().to_string())
                .unwrap_or_default(),
        };
        drop(state);
        if starts {
            self.prompted(id, &stored_id);
        }
        self.record.prompt_stored(host, id, &stored_id, no_reply, starts, now);
        WireAnswer { status: 204, body: Vec::new(), content_type: String::new() }
    }

    /// `POST /session {parentID, title}`: a reviewer's child session.
    fn create_child(&self, parsed: &Parsed) -> WireAnswer {
        let now = self.now();
        let Some(parent) = parsed.body.get("parentID").and_then(Value::as_str) else {
            return bad_request("the simulator makes child sessions only");
        };
        let Some(goal) = self.goal_of(parent) else { return not_found(parent) };
        let mut state = self.state.lock();
        let directory = parsed.param("directory").unwrap_or_default().to_string();
        let id = state.descending("ses");
        let title = parsed.body.get("title").and_then(Value::as_str).unwrap_or_default().to_string();
        let session = Session {
            id: id.clone(),
            directory,
            parent: Some(parent.to_string()),
            title: title.clone(),
            created: now,
            updated: now,
            metadata: Map::new(),
            messages: Vec::new(),
        };
        let value = session.to_value();
        state.sessions.insert(id.clone(), session);
        state.emit(json!({"type": "session.created", "properties": {"info": value}}), "");
        drop(state);
        self.scripts.lock().insert(id.clone(), Script { goal, ..Script::default() });
        self.record.reviewer_created(goal, &id, &title, now);
        json_answer(200, &value)
    }

    async fn shell(self: &Arc<Self>, id: &str, body: &Value) -> Option<WireAnswer> {
        if self.state.lock().busy.contains_key(id) {
            let busy = json!({"name": "BusyError", "data": {"message": format!("Session {id} is busy")}});
            return Some(json_answer(409, &busy));
        }
        let answer = self.run_shell(id, body).await?;
        Some(json_answer(200, &answer))
    }
}

/// The project's files as `GET /file?path=` lists them: the root holds `src/` and `README.md`,
/// `src/` holds the parser.
fn project_files(path: Option<&str>) -> Value {
    let node = |name: &str, dir: bool| json!({"name": name, "path": name, "absolute": name, "type": if dir { "directory" } else { "file" }, "ignored": false});
    match path.unwrap_or(".") {
        "" | "." => json!([node("src", true), node("README.md", false)]),
        "src" => json!([node("parser.rs", false)]),
        _ => json!([]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_read_back_into_path_query_and_body() {
        let request = WireRequest {
            method: "GET".into(),
            url: "http://sim/session/ses_1/message?limit=40&directory=%2Fsim%2Fp%20x".into(),
            headers: vec![],
            body: None,
            timeout: std::time::Duration::from_secs(1),
        };
        let parsed = Parsed::of(&request);
        assert_eq!(parsed.path, "/session/ses_1/message");
        assert_eq!(parsed.session_id(), Some("ses_1"));
        assert_eq!(parsed.param("directory"), Some("/sim/p x"));
        assert_eq!(parsed.param("limit"), Some("40"));
    }
}
