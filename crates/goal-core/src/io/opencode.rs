//! The OpenCode HTTP client: timeouts on every call, `?directory=` on every call, tolerant JSON.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::io::locks::WriteSlots;
use crate::io::shared::SharedContext;
use crate::io::transport::{HttpTransport, Transport, WireAnswer, WireRequest};
use crate::record::session::{is_addressable_session_id, Message, SessionView};
use crate::time::clock::Clock;

pub use crate::io::transport::BoxFuture;

/// Where a request goes: a full URL and the headers to send.
#[derive(Debug, Clone, Default)]
pub struct RequestTarget {
    /// Absolute URL without the query string.
    pub url: String,
    /// Headers (e.g. authorization); never logged.
    pub headers: Vec<(String, String)>,
}

/// Resolves an OpenCode API path (`/session/x`) to a URL and headers. Hosts that move OpenCode
/// between ports (OpenChamber restarts it) resolve per request.
pub trait Endpoint: Send + Sync {
    /// Resolves one path.
    fn resolve<'a>(&'a self, path: &'a str) -> BoxFuture<'a, Result<RequestTarget, String>>;
    /// A stable key for grouping runtimes that talk to the same server.
    fn key(&self) -> String;
    /// Resolves once the endpoint is closed for good. Every request holds this future for its
    /// whole course (resolution, waiting for a connection, sending, reading the answer) and
    /// gives up as soon as it resolves: a request not yet handed to a connection then never
    /// reaches the server (hyper does not write a request whose caller is gone). An
    /// implementation may count the futures alive, to wait on close until every request has
    /// given up. Never resolves by default.
    fn closing(&self) -> BoxFuture<'static, ()> {
        Box::pin(std::future::pending())
    }
}

/// A fixed base URL and fixed headers.
#[derive(Debug, Clone)]
pub struct StaticEndpoint {
    base: String,
    headers: Vec<(String, String)>,
}

impl StaticEndpoint {
    /// A base like `http://127.0.0.1:4096` (a trailing slash is dropped).
    pub fn new(base: &str, headers: Vec<(String, String)>) -> Self {
        Self { base: base.trim_end_matches('/').to_string(), headers }
    }
}

impl Endpoint for StaticEndpoint {
    fn resolve<'a>(&'a self, path: &'a str) -> BoxFuture<'a, Result<RequestTarget, String>> {
        Box::pin(
            async move { Ok(RequestTarget { url: format!("{}{}", self.base, path), headers: self.headers.clone() }) },
        )
    }

    fn key(&self) -> String {
        self.base.clone()
    }
}

pub use crate::error::HttpError;
pub use crate::io::prompt_outcome::DispatchOutcome;

/// Why a request to a closed endpoint failed (see [`Endpoint::closing`]).
const ENDPOINT_CLOSED: &str = "the endpoint was closed";

/// Timeout of one OpenCode call when the host sets none.
pub const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_millis(10_000);

/// The answer when its status is 2xx; any other status is [`HttpError::Status`].
fn success(answer: WireAnswer) -> Result<WireAnswer, HttpError> {
    if (200..300).contains(&answer.status) {
        Ok(answer)
    } else {
        Err(HttpError::Status(answer.status))
    }
}

/// One request: method, API path, the `?directory=` it is routed to, further query parameters
/// and an optional JSON body.
struct Call<'a> {
    method: &'static str,
    path: &'a str,
    directory: &'a str,
    query: &'a [(&'a str, String)],
    body: Option<&'a dyn JsonBody>,
}

impl<'a> Call<'a> {
    /// `method path?directory=` with no further parameters and no body.
    fn new(method: &'static str, path: &'a str, directory: &'a str) -> Self {
        Call { method, path, directory, query: &[], body: None }
    }

    /// A `GET` of `path`.
    fn get(path: &'a str, directory: &'a str) -> Self {
        Call::new("GET", path, directory)
    }

    /// A `POST` to `path`.
    fn post(path: &'a str, directory: &'a str) -> Self {
        Call::new("POST", path, directory)
    }

    /// The same call with query parameters besides `directory`.
    fn with_query(self, query: &'a [(&'a str, String)]) -> Self {
        Call { query, ..self }
    }

    /// The same call with a JSON body.
    fn with_body(self, body: &'a dyn JsonBody) -> Self {
        Call { body: Some(body), ..self }
    }
}

/// A request body, written as JSON by its own `Serialize`: a `Value`, or a type that fixes the
/// order of its keys on the wire (the reviewer's prompt, `ReviewerBody` in
/// `goal/decide/review_rules.rs`), which a `Value` object would not keep.
pub trait JsonBody: Sync {
    /// The body's JSON text.
    fn to_json(&self) -> serde_json::Result<Vec<u8>>;
}

impl<T: serde::Serialize + Sync> JsonBody for T {
    fn to_json(&self) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec(self)
    }
}

/// The OpenCode API client. It carries its context's connection pool and metadata write slots,
/// so every metadata write made through it queues behind the other writes of that context.
#[derive(Clone)]
pub struct OpenCodeClient {
    transport: Arc<dyn Transport>,
    write_slots: WriteSlots,
    endpoint: Arc<dyn Endpoint>,
    timeout: Duration,
    clock: Clock,
}

/// Slack past a request's timeout before the client gives up on the transport itself.
const TIMEOUT_SLACK: Duration = Duration::from_millis(250);

impl OpenCodeClient {
    /// A client of `context` (its pool and write slots) with the given per-request timeout.
    pub fn new(context: &SharedContext, endpoint: Arc<dyn Endpoint>, timeout: Duration) -> Self {
        Self {
            transport: Arc::new(HttpTransport::new(context.http().opencode())),
            write_slots: context.write_slots().clone(),
            endpoint,
            timeout,
            clock: context.clock(),
        }
    }

    /// The same client sending through `transport` instead of HTTP (a simulated OpenCode; see
    /// `io/transport.rs`).
    pub fn with_transport(&self, transport: Arc<dyn Transport>) -> Self {
        Self { transport, ..self.clone() }
    }

    /// How long one request may take in all: its timeout and the slack past it.
    pub fn request_bound(&self) -> Duration {
        self.timeout + TIMEOUT_SLACK
    }

    /// The wall clock of the client's context (`io/shared.rs`).
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// The same endpoint with another per-request timeout (a synchronous command call runs a
    /// whole turn before it answers).
    pub fn with_timeout(&self, timeout: Duration) -> Self {
        Self { timeout, ..self.clone() }
    }

    /// The metadata write slots of the client's context (see `io/writer.rs`).
    pub fn write_slots(&self) -> &WriteSlots {
        &self.write_slots
    }

    /// The endpoint's grouping key.
    pub fn key(&self) -> String {
        self.endpoint.key()
    }

    /// One request, given up when the endpoint closes (see [`Endpoint::closing`]). `closing` is
    /// dropped last, after the request.
    async fn send(&self, call: Call<'_>) -> Result<WireAnswer, HttpError> {
        let mut closing = self.endpoint.closing();
        tokio::select! {
            biased;
            () = &mut closing => Err(HttpError::Resolve(ENDPOINT_CLOSED.to_string())),
            answer = self.send_open(call) => answer,
        }
    }

    /// Resolves the endpoint and sends through the transport, the whole of it within the
    /// request's timeout: a host's resolver or a transport that never answers cannot hold a tick.
    async fn send_open(&self, call: Call<'_>) -> Result<WireAnswer, HttpError> {
        let work = async {
            let Call { method, path, directory, query, body } = call;
            let target = self.endpoint.resolve(path).await.map_err(HttpError::Resolve)?;
            let mut params: Vec<(&str, String)> = query.to_vec();
            if !directory.is_empty() {
                params.push(("directory", directory.to_string()));
            }
            let mut url = target.url;
            for (index, (name, value)) in params.iter().enumerate() {
                let separator = if index == 0 && !url.contains('?') { '?' } else { '&' };
                url.push(separator);
                url.push_str(&percent_encode(name));
                url.push('=');
                url.push_str(&percent_encode(value));
            }
            // The body's own serialisation (key order included); one that cannot be written was
            // never sent.
            let body = match body {
                Some(body) => {
                    Some(body.to_json().map_err(|error| HttpError::Resolve(format!("request body: {error}")))?)
                }
                None => None,
            };
            let request =
                WireRequest { method: method.to_string(), url, headers: target.headers, body, timeout: self.timeout };
            self.transport.send(request).await
        };
        match tokio::time::timeout(self.timeout + TIMEOUT_SLACK, work).await {
            Ok(result) => result,
            Err(_) => Err(HttpError::Timeout),
        }
    }

    async fn json(&self, call: Call<'_>) -> Result<Value, HttpError> {
        let answer = success(self.send(call).await?)?;
        parse_server_json(&answer.body).ok_or(HttpError::Body(answer.status))
    }

    /// `GET /session/:id`.
    pub async fn get_session(&self, session_id: &str, directory: &str) -> Result<SessionView, HttpError> {
        let value = self.json(Call::get(&session_path(session_id, "")?, directory)).await?;
        SessionView::from_value(&value).ok_or(HttpError::Body(200))
    }

    /// `GET path` with `query`, its JSON array read one element at a time into what `read` keeps
    /// (the session lists: `io/session_lists.rs`).
    pub(crate) async fn list_with<T>(
        &self,
        path: &str,
        directory: &str,
        query: &[(&str, String)],
        read: fn(&Value) -> Option<T>,
    ) -> Result<Vec<T>, HttpError> {
        let answer = success(self.send(Call::get(path, directory).with_query(query)).await?)?;
        parse_server_list(&answer.body, read).ok_or(HttpError::Body(answer.status))
    }

    /// `PATCH /session/:id` with a whole metadata object (OpenCode replaces it).
    pub async fn put_metadata(
        &self,
        session_id: &str,
        directory: &str,
        metadata: Map<String, Value>,
    ) -> Result<(), HttpError> {
        let body = serde_json::json!({ "metadata": Value::Object(metadata) });
        let path = session_path(session_id, "")?;
        let answer = success(self.send(Call::new("PATCH", &path, directory).with_body(&body)).await?)?;
        // A 2xx that is not JSON did not come from OpenCode (a proxy page): not a write.
        if !answer.body.is_empty() && parse_server_json(&answer.body).is_none() {
            return Err(HttpError::Body(answer.status));
        }
        Ok(())
    }

    /// `GET /session/status` — the raw map (absent = idle).
    pub async fn status_map(&self, directory: &str) -> Result<Value, HttpError> {
        let value = self.json(Call::get("/session/status", directory)).await?;
        if value.is_object() {
            Ok(value)
        } else {
            Err(HttpError::Body(200))
        }
    }

    /// `GET /session/:id/children`.
    pub async fn children(&self, session_id: &str, directory: &str) -> Result<Vec<SessionView>, HttpError> {
        let value = self.json(Call::get(&session_path(session_id, "/children")?, directory)).await?;
        let list = value.as_array().ok_or(HttpError::Body(200))?;
        Ok(list.iter().filter_map(SessionView::from_value).collect())
    }

    /// `POST /session` with `{title, parentID}`: a child session of `parent_id` (OpenCode's UIs
    /// show it under its parent). The new session's id.
    pub async fn create_child_session(
        &self,
        parent_id: &str,
        directory: &str,
        title: &str,
    ) -> Result<String, HttpError> {
        let body = serde_json::json!({ "title": title, "parentID": parent_id });
        let value = self.json(Call::post("/session", directory).with_body(&body)).await?;
        value.get("id").and_then(Value::as_str).map(str::to_string).ok_or(HttpError::Body(200))
    }

    /// `GET /file?path=<dir>`: the names of the files and directories in one directory of the
    /// project (`.` is its root). A path that does not exist answers an error status.
    pub async fn list_directory(&self, directory: &str, path: &str) -> Result<Vec<(String, bool)>, HttpError> {
        let value = self.json(Call::get("/file", directory).with_query(&[("path", path.to_string())])).await?;
        let list = value.as_array().ok_or(HttpError::Body(200))?;
        Ok(list
            .iter()
            .filter_map(|node| {
                let name = node.get("name")?.as_str()?.to_string();
                Some((name, node.get("type").and_then(Value::as_str) == Some("directory")))
            })
            .collect())
    }

    /// `GET /session/:id/message?limit=N`.
    pub async fn messages(&self, session_id: &str, directory: &str, limit: usize) -> Result<Vec<Message>, HttpError> {
        Ok(self.messages_with_raw(session_id, directory, limit).await?.0)
    }

    /// [`messages`](Self::messages) together with the list as OpenCode sent it, from one request
    /// (the evidence digest reads the tool parts the tolerant `Message` view leaves out).
    pub async fn messages_with_raw(
        &self,
        session_id: &str,
        directory: &str,
        limit: usize,
    ) -> Result<(Vec<Message>, Vec<Value>), HttpError> {
        let path = session_path(session_id, "/message")?;
        let value = self.json(Call::get(&path, directory).with_query(&[("limit", limit.to_string())])).await?;
        let messages = Message::list_from_value(&value).ok_or(HttpError::Body(200))?;
        match value {
            Value::Array(list) => Ok((messages, list)),
            _ => Err(HttpError::Body(200)),
        }
    }

    /// `GET /session/:id/diff` (the session's file changes) or `GET /session/:id/todo`; any
    /// failure (404 on a server without the route included) is `None`: evidence is optional.
    /// `message_id` narrows the diff to the turn one user message started.
    pub async fn session_evidence(
        &self,
        session_id: &str,
        directory: &str,
        suffix: &str,
        message_id: Option<&str>,
    ) -> Option<Value> {
        let path = session_path(session_id, suffix).ok()?;
        let query: Vec<(&str, String)> = message_id.map(|id| vec![("messageID", id.to_string())]).unwrap_or_default();
        self.json(Call::get(&path, directory).with_query(&query)).await.ok().filter(Value::is_array)
    }

    /// `POST /session/:id/prompt_async`, classified.
    /// The body is any [`JsonBody`], written as it serialises itself (key order included).
    pub async fn prompt_async(&self, session_id: &str, directory: &str, body: &dyn JsonBody) -> DispatchOutcome {
        let path = match session_path(session_id, "/prompt_async") {
            Ok(path) => path,
            Err(_) => return DispatchOutcome::NotAdmitted(0),
        };
        let answer = self.send(Call::post(&path, directory).with_body(body)).await;
        crate::io::prompt_outcome::classify(match &answer {
            Ok(answer) => Ok(crate::io::prompt_outcome::PromptAnswer {
                status: answer.status,
                blank_body: answer.body.iter().all(u8::is_ascii_whitespace),
                json_body: parse_server_json(&answer.body).is_some(),
                html: answer.content_type.contains("text/html"),
            }),
            Err(error) => Err(error),
        })
    }

    /// `POST /session/:id/shell`: runs a command in the session through the user's shell and
    /// answers (with the recorded assistant message) only once it finished, so the call gets its
    /// own time limit. Not idempotent: posting the same `messageID` again runs it again.
    pub async fn shell(
        &self,
        session_id: &str,
        directory: &str,
        body: &Value,
        timeout: Duration,
    ) -> Result<Value, HttpError> {
        let path = session_path(session_id, "/shell")?;
        self.with_timeout(timeout).json(Call::post(&path, directory).with_body(body)).await
    }

    /// `POST /session/:id/abort`.
    pub async fn abort(&self, session_id: &str, directory: &str) -> Result<(), HttpError> {
        let path = session_path(session_id, "/abort")?;
        self.json(Call::post(&path, directory)).await.map(|_| ())
    }

    /// Any JSON call (used by the creation helpers and the CLI).
    pub async fn call(
        &self,
        method: &str,
        path: &str,
        directory: &str,
        body: Option<&Value>,
    ) -> Result<Value, HttpError> {
        let method = ["GET", "POST", "PATCH", "PUT", "DELETE"]
            .into_iter()
            .find(|known| known.eq_ignore_ascii_case(method))
            .ok_or(HttpError::Status(405))?;
        let body = body.map(|b| b as &dyn JsonBody);
        let answer = success(self.send(Call { method, path, directory, query: &[], body }).await?)?;
        if answer.body.iter().all(u8::is_ascii_whitespace) {
            return Ok(Value::Null);
        }
        parse_server_json(&answer.body).ok_or(HttpError::Body(answer.status))
    }
}

/// Parses a JSON body from OpenCode. OpenCode is JavaScript: a string cut in the middle of a
/// surrogate pair (an emoji sliced by a JS `slice`) is serialised as a lone `\ud83d` escape,
/// which serde_json rejects. One such character anywhere in a session (an objective, a note, a
/// model's reply) would make the whole session unreadable and its goal unreachable, so lone
/// surrogate escapes are read as U+FFFD (what JavaScript's own UTF-8 conversion does).
fn parse_server_json(body: &[u8]) -> Option<Value> {
    match serde_json::from_slice(body) {
        Ok(value) => Some(value),
        Err(_) => serde_json::from_slice(&replace_lone_surrogates(body)?).ok(),
    }
}

/// Parses a JSON array body from OpenCode (lone surrogates as in [`parse_server_json`]) one
/// element at a time, each read into what the caller keeps: a directory's session list can be
/// megabytes, and as one `Value` tree it would cost several times that at once.
fn parse_server_list<T>(body: &[u8], read: fn(&Value) -> Option<T>) -> Option<Vec<T>> {
    match parse_list(body, read) {
        Ok(list) => Some(list),
        Err(_) => parse_list(&replace_lone_surrogates(body)?, read).ok(),
    }
}

fn parse_list<T>(body: &[u8], read: fn(&Value) -> Option<T>) -> serde_json::Result<Vec<T>> {
    use serde::de::{Deserializer as _, SeqAccess, Visitor};
    struct Elements<T>(fn(&Value) -> Option<T>);
    impl<'de, T> Visitor<'de> for Elements<T> {
        type Value = Vec<T>;
        fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
            formatter.write_str("an array")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
            let mut kept = Vec::new();
            while let Some(element) = seq.next_element::<Value>()? {
                kept.extend((self.0)(&element));
            }
            Ok(kept)
        }
    }
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let list = (&mut deserializer).deserialize_seq(Elements(read))?;
    deserializer.end()?;
    Ok(list)
}

/// `body` with every lone UTF-16 surrogate escape replaced by `\ufffd`; `None` when there is
/// none (nothing to retry). Backslashes only occur inside JSON strings, so escapes can be walked
/// without tracking string boundaries.
fn replace_lone_surrogates(body: &[u8]) -> Option<Vec<u8>> {
    fn escape_at(body: &[u8], at: usize) -> Option<u32> {
        let digits = body.get(at..at + 6)?;
        if digits[0] != b'\\' || digits[1] != b'u' {
            return None;
        }
        u32::from_str_radix(std::str::from_utf8(&digits[2..]).ok()?, 16).ok()
    }
    let mut out = Vec::with_capacity(body.len());
    let mut changed = false;
    let mut i = 0;
    while i < body.len() {
        if body[i] != b'\\' {
            out.push(body[i]);
            i += 1;
            continue;
        }
        match escape_at(body, i) {
            Some(0xD800..=0xDBFF) => {
                if matches!(escape_at(body, i + 6), Some(0xDC00..=0xDFFF)) {
                    out.extend_from_slice(&body[i..i + 12]);
                    i += 12;
                } else {
                    out.extend_from_slice(b"\\ufffd");
                    changed = true;
                    i += 6;
                }
            }
            Some(0xDC00..=0xDFFF) => {
                out.extend_from_slice(b"\\ufffd");
                changed = true;
                i += 6;
            }
            _ => {
                // Any other escape (including `\\`): copy it whole so its second byte is never
                // mistaken for the start of an escape.
                let end = (i + 2).min(body.len());
                out.extend_from_slice(&body[i..end]);
                i = end;
            }
        }
    }
    changed.then_some(out)
}

/// What a path segment or query value escapes: everything but RFC 3986's unreserved characters
/// (letters, digits, `-`, `_`, `.`, `~`).
const ESCAPED: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

/// Percent-encodes everything but RFC 3986 unreserved characters (UTF-8 bytes as `%XX`).
pub fn percent_encode(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, ESCAPED).to_string()
}

/// `/session/<escaped id><suffix>`: ids come from payloads, so they are escaped, and an id that
/// cannot be addressed is refused before any request is made.
pub fn session_path(session_id: &str, suffix: &str) -> Result<String, HttpError> {
    if !is_addressable_session_id(session_id) {
        return Err(HttpError::Resolve("the session id cannot be addressed".into()));
    }
    Ok(format!("/session/{}{suffix}", percent_encode(session_id)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::session::{ListedSession, OwnerCandidate};

    /// An endpoint closed by the test.
    struct Closable {
        base: String,
        closed: tokio::sync::watch::Receiver<bool>,
    }

    impl Endpoint for Closable {
        fn resolve<'a>(&'a self, path: &'a str) -> BoxFuture<'a, Result<RequestTarget, String>> {
            Box::pin(async move { Ok(RequestTarget { url: format!("{}{}", self.base, path), headers: Vec::new() }) })
        }

        fn key(&self) -> String {
            self.base.clone()
        }

        fn closing(&self) -> BoxFuture<'static, ()> {
            let mut closed = self.closed.clone();
            Box::pin(async move {
                let _ = closed.wait_for(|closed| *closed).await;
            })
        }
    }

    #[tokio::test]
    async fn a_close_ends_a_request_in_flight_and_nothing_is_sent_after_it() {
        use tokio::io::AsyncReadExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (arrived, mut arrivals) = tokio::sync::mpsc::unbounded_channel::<usize>();
        // Reads each request and never answers it.
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let arrived = arrived.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 4096];
                    while let Ok(n) = socket.read(&mut buf).await {
                        if n == 0 {
                            return;
                        }
                        let _ = arrived.send(n);
                    }
                });
            }
        });
        let (close, closed) = tokio::sync::watch::channel(false);
        let client =
            OpenCodeClient::new(&SharedContext::new(), Arc::new(Closable { base, closed }), Duration::from_secs(30));
        let held = tokio::spawn({
            let client = client.clone();
            async move { client.get_session("ses_a", "").await.map(|_| ()) }
        });
        assert!(arrivals.recv().await.unwrap() > 0, "the first request reached the server");
        close.send_replace(true);
        let ended =
            tokio::time::timeout(Duration::from_secs(5), held).await.expect("ended by the close, not the timeout");
        assert!(matches!(ended.unwrap(), Err(HttpError::Resolve(_))));
        assert!(matches!(client.get_session("ses_b", "").await, Err(HttpError::Resolve(_))));
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(arrivals.try_recv().is_err(), "nothing reached the server after the close");
    }

    #[test]
    fn lone_surrogates_read_as_replacement_characters() {
        let body = br#"{"a":"x\ud800y","b":"\udfff","pair":"\ud83d\ude00","escaped":"\\ud800","high_at_end":"\ud83d"}"#;
        assert!(serde_json::from_slice::<Value>(body).is_err());
        let value = parse_server_json(body).unwrap();
        assert_eq!(value["a"], "x\u{fffd}y");
        assert_eq!(value["b"], "\u{fffd}");
        assert_eq!(value["pair"], "😀");
        assert_eq!(value["escaped"], "\\ud800");
        assert_eq!(value["high_at_end"], "\u{fffd}");
        assert_eq!(parse_server_json(br#"{"ok":"\u00e9"}"#).unwrap()["ok"], "é");
        assert!(parse_server_json(b"<html>").is_none());
        assert!(replace_lone_surrogates(br#"{"plain":"\\u0041"}"#).is_none());
    }

    #[test]
    fn session_lists_are_read_one_entry_at_a_time() {
        let body = br#"[{"id":"ses_b","time":{"created":20},"metadata":{"openchamber":{"goal":{"id":"g1","status":"active","objective":"Fix \ud800 it"}},"other":{"big":[1,2,3]}}},
            7, {"id":"ses_c","parentID":"ses_b"}, {"id":"ses_d","metadata":{"openchamber":{"goal":{"status":"nope"}}}}]"#;
        let listed = parse_server_list(body, ListedSession::from_value).expect("a list");
        let ids: Vec<&str> = listed.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["ses_b", "ses_c", "ses_d"], "a non-object entry is skipped, the rest kept");
        let goal = listed[0].goal.as_ref().expect("the goal is read");
        assert_eq!(
            (goal.id.as_str(), goal.revision.objective.as_str(), listed[0].created),
            ("g1", "Fix \u{fffd} it", 20.0)
        );
        assert!(listed[1].is_subagent() && !listed[0].is_subagent());
        assert!(listed[2].goal.is_none(), "an invalid goal is no goal");
        // The same body as full views keeps the whole metadata.
        let full = parse_server_list(body, SessionView::from_value).unwrap();
        assert_eq!(full[0].metadata["other"]["big"], serde_json::json!([1, 2, 3]));
        for not_a_list in [&b"{}"[..], b"[1,", b"", b"[] x"] {
            assert!(parse_server_list(not_a_list, ListedSession::from_value).is_none());
        }
        // An owner list keeps only the top-level sessions with a valid goal, as three fields.
        let candidates = parse_server_list(body, OwnerCandidate::from_value).unwrap();
        let expected = OwnerCandidate { session_id: "ses_b".into(), goal_id: "g1".into(), created: 20.0 };
        assert_eq!(candidates, [expected]);
    }

    #[test]
    fn session_ids_are_escaped() {
        assert_eq!(session_path("ses_abc-1", "/message").unwrap(), "/session/ses_abc-1/message");
        assert_eq!(session_path("../x?y", "").unwrap(), "/session/..%2Fx%3Fy");
        for id in ["", ".", ".."] {
            assert!(session_path(id, "/message").is_err(), "{id:?}");
        }
    }
}
