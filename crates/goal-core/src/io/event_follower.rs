//! Follows OpenCode's event stream (`GET /global/event`, server-sent events) for a host, so that
//! no host writes a reader of its own. Each event is parsed once, through the intake
//! contract ([`IntakeRegistry::read`]), and delivered to every runtime of the context that talks
//! to the same server, as a payload a host forwards would be.
//!
//! A stream that ends or cannot be opened is opened again after the loop's one backoff
//! (`time/backoff.rs`, from [`EventFollowerBuilder::first_retry`]); a connection that stayed up
//! for the backoff's cap starts it over. Every connection is announced to the runtimes as
//! [`IntakeEvent::Connected`], on which a goal runtime scans its directories for goals whose
//! events were missed while no stream was open (the first connection too: a runtime may have
//! started before it). OpenCode's own first event, `server.connected`, says the same and is not
//! delivered a second time.
//!
//! A host that wants each payload as the stream carried it (to forward it itself, as OpenChamber's
//! server forwards to `processPayload`) sets [`EventFollowerBuilder::on_payload`], and with
//! [`EventFollowerBuilder::deliver_to_runtimes`]`(false)` the follower delivers nothing itself.
//!
//! It is the one reader of the stream in this repository: a Rust host (`examples/tauri-goals`)
//! starts it from [`EmbeddedGoalRuntime::event_follower`](crate::EmbeddedGoalRuntime::event_follower),
//! and the Node package exposes it as `createEventFollower` (`src/event_follower.rs`), which the
//! CLI's `watch`, the examples, the tests and the fault suite's hosts use.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tracing::debug;

use crate::intake::{unwrap_envelope, IntakeEvent};
use crate::io::opencode::Endpoint;
use crate::io::shared::SharedContext;
use crate::time::backoff::{retry_delay, MAX_RETRY_DELAY};

/// The API path of the stream (every directory's events, each in a `{directory, payload}` envelope).
const EVENT_PATH: &str = "/global/event";
/// The wait before the first reconnect, unless the host sets one.
pub const DEFAULT_FIRST_RETRY: Duration = Duration::from_millis(250);
/// How long an attempt waits for the answer's headers, unless the host sets another: OpenCode
/// sends them at once when it is up, and accepts but never answers a request that reaches it
/// while it is still starting.
pub const DEFAULT_ANSWER_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest single event read (a `session.updated` carries the session's whole metadata); a
/// larger one ends the connection, so a broken server cannot exhaust memory.
const MAX_EVENT_BYTES: usize = 64 * 1024 * 1024;

/// What became of the stream, for a host's status line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamStatus {
    /// The server accepted a connection; events flow.
    Connected,
    /// The stream ended or could not be opened; the next attempt is `retry_in` from now.
    Disconnected {
        /// What ended it: an HTTP status, the server closing it, a network error, a timeout.
        reason: String,
        /// The wait before the next attempt.
        retry_in: Duration,
    },
}

type EventHook = Arc<dyn Fn(&IntakeEvent) + Send + Sync>;
type StatusHook = Arc<dyn Fn(&StreamStatus) + Send + Sync>;
type PayloadHook = Arc<dyn Fn(Value, String) + Send + Sync>;

/// Settings of an [`EventFollower`]: the server (an [`Endpoint`], which also gives the headers)
/// and the context whose runtimes receive the events. A host that runs an
/// [`EmbeddedGoalRuntime`](crate::EmbeddedGoalRuntime) gets one for that runtime's server and
/// context from its `event_follower()`.
pub struct EventFollowerBuilder {
    shared: SharedContext,
    endpoint: Arc<dyn Endpoint>,
    on_event: Option<EventHook>,
    on_status: Option<StatusHook>,
    on_payload: Option<PayloadHook>,
    deliver: bool,
    first_retry: Duration,
    answer_timeout: Duration,
}

impl EventFollowerBuilder {
    /// A follower of `endpoint`'s event stream delivering to the runtimes of `shared` that talk
    /// to the same server.
    pub fn new(shared: &SharedContext, endpoint: Arc<dyn Endpoint>) -> Self {
        Self {
            shared: shared.clone(),
            endpoint,
            on_event: None,
            on_status: None,
            on_payload: None,
            deliver: true,
            first_retry: DEFAULT_FIRST_RETRY,
            answer_timeout: DEFAULT_ANSWER_TIMEOUT,
        }
    }

    /// Called with each event after the runtimes have it (a window reloading its list, say),
    /// [`IntakeEvent::Connected`] included. It runs on the follower's task: it must return at
    /// once. A panic in it is caught and the stream goes on.
    pub fn on_event(mut self, hook: impl Fn(&IntakeEvent) + Send + Sync + 'static) -> Self {
        self.on_event = Some(Arc::new(hook));
        self
    }

    /// Called when a connection is accepted and when the stream ends or fails (with why, and when
    /// the next attempt is). The same rules as [`on_event`](Self::on_event).
    pub fn on_status(mut self, hook: impl Fn(&StreamStatus) + Send + Sync + 'static) -> Self {
        self.on_status = Some(Arc::new(hook));
        self
    }

    /// Called with each payload the stream carries, as a host that forwards payloads would hand
    /// it on: the global envelope unwrapped, its directory (`global` read as `""`). OpenCode's
    /// `sync` twins (each repeats another event) and data that is no JSON object are left out.
    /// It runs after the runtimes have the event, with the payload the event was parsed into (no
    /// second parse, no copy). The same rules as [`on_event`](Self::on_event).
    pub fn on_payload(mut self, hook: impl Fn(Value, String) + Send + Sync + 'static) -> Self {
        self.on_payload = Some(Arc::new(hook));
        self
    }

    /// Whether the follower delivers the events to the context's runtimes (the default). A host
    /// that forwards each payload itself (from [`on_payload`](Self::on_payload), to drop, hold
    /// or repeat some) turns it off: then no event reaches a runtime from the follower, the
    /// connections' [`IntakeEvent::Connected`] included.
    pub fn deliver_to_runtimes(mut self, deliver: bool) -> Self {
        self.deliver = deliver;
        self
    }

    /// The wait before the first reconnect after a failure (default 250 ms); each failure in a
    /// row doubles it, up to the loop's cap of 10 s.
    pub fn first_retry(mut self, delay: Duration) -> Self {
        self.first_retry = delay;
        self
    }

    /// How long one attempt waits for the server's answer before it counts as failed (default 5 s).
    pub fn answer_timeout(mut self, timeout: Duration) -> Self {
        self.answer_timeout = timeout;
        self
    }

    /// Starts following on `handle`; returns at once. The stream is followed until the
    /// [`EventFollower`] is stopped or dropped, or the endpoint closes.
    pub fn start(self, handle: &tokio::runtime::Handle) -> EventFollower {
        // OpenCode is never reached through a proxy (as for every OpenCode call); a dead peer is
        // noticed by TCP keepalive, which reqwest turns on.
        let http = crate::io::http::client_builder().no_proxy().build().unwrap_or_else(|_| reqwest::Client::new());
        let follow = Follow {
            group: self.endpoint.key(),
            shared: self.shared,
            endpoint: self.endpoint,
            http,
            on_event: self.on_event,
            on_status: self.on_status,
            on_payload: self.on_payload,
            deliver: self.deliver,
            first_retry: self.first_retry,
            answer_timeout: self.answer_timeout,
        };
        EventFollower { task: handle.spawn(follow.run()) }
    }
}

/// A running follower of OpenCode's event stream (see the module documentation). Stopping it,
/// or dropping it, closes the stream.
pub struct EventFollower {
    task: tokio::task::JoinHandle<()>,
}

impl EventFollower {
    /// Stops following: the connection is closed and no attempt is made again. Idempotent.
    pub fn stop(&self) {
        self.task.abort();
    }

    /// Whether it still follows (false once stopped, or once its endpoint has closed).
    pub fn is_running(&self) -> bool {
        !self.task.is_finished()
    }
}

impl Drop for EventFollower {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The follower's task.
struct Follow {
    group: String,
    shared: SharedContext,
    endpoint: Arc<dyn Endpoint>,
    http: reqwest::Client,
    on_event: Option<EventHook>,
    on_status: Option<StatusHook>,
    on_payload: Option<PayloadHook>,
    deliver: bool,
    first_retry: Duration,
    answer_timeout: Duration,
}

/// How one connection ended: when it had been accepted (`None`: it never was), and why.
struct Ended {
    accepted_at: Option<Instant>,
    reason: String,
}

impl Follow {
    /// Connects, reads, reconnects after the backoff, until the endpoint closes.
    async fn run(self) {
        let closing = self.endpoint.closing();
        tokio::select! {
            biased;
            () = closing => debug!(target: "session_goal", "event stream: the endpoint closed; no longer following"),
            () = self.reconnecting() => {}
        }
    }

    async fn reconnecting(&self) {
        let mut failures = 0u32;
        loop {
            let ended = self.follow_once().await;
            // A connection that stayed up a while starts the backoff over; a short one (a server
            // that accepts and at once closes) counts as one more failure in a row.
            if ended.accepted_at.is_some_and(|at| at.elapsed() >= MAX_RETRY_DELAY) {
                failures = 0;
            }
            failures = failures.saturating_add(1);
            let retry_in = retry_delay(self.first_retry, failures);
            self.status(&StreamStatus::Disconnected { reason: ended.reason, retry_in });
            tokio::time::sleep(retry_in).await;
        }
    }

    /// One connection, from the request to the end of its stream.
    async fn follow_once(&self) -> Ended {
        let refused = |reason: String| Ended { accepted_at: None, reason };
        let target = match self.endpoint.resolve(EVENT_PATH).await {
            Ok(target) => target,
            Err(reason) => return refused(reason),
        };
        let mut request = self.http.get(&target.url).header("accept", "text/event-stream");
        for (name, value) in &target.headers {
            request = request.header(name.as_str(), value.as_str());
        }
        let mut response = match tokio::time::timeout(self.answer_timeout, request.send()).await {
            Err(_) => return refused(format!("no answer within {} ms", self.answer_timeout.as_millis())),
            Ok(Err(error)) => return refused(reason_of(error)),
            Ok(Ok(response)) => response,
        };
        let status = response.status().as_u16();
        if status != 200 {
            let hint = if status == 401 { " (check the authorization header: OPENCODE_SERVER_PASSWORD)" } else { "" };
            return refused(format!("HTTP {status}{hint}"));
        }
        let accepted_at = Some(Instant::now());
        self.status(&StreamStatus::Connected);
        self.announce(&IntakeEvent::Connected);
        let mut blocks = SseBlocks::default();
        loop {
            let chunk = match response.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => return Ended { accepted_at, reason: "the server closed the stream".into() },
                Err(error) => return Ended { accepted_at, reason: reason_of(error) },
            };
            let Some(events) = blocks.push(&chunk) else {
                return Ended { accepted_at, reason: format!("an event over {MAX_EVENT_BYTES} bytes") };
            };
            for data in events {
                self.deliver(&data);
            }
        }
    }

    /// One event's data: parsed once, read through the intake contract, delivered; then the
    /// payload itself is handed to the host's hook.
    fn deliver(&self, data: &str) {
        let Ok(value) = serde_json::from_str::<Value>(data) else { return };
        let (payload, directory) = unwrap_envelope(&value, "");
        if self.deliver || self.on_event.is_some() {
            if let Some(event) = self.shared.intake().read(&self.group, payload, directory) {
                // Every connection was announced when it was accepted.
                if event != IntakeEvent::Connected {
                    self.announce(&event);
                }
            }
        }
        let Some(hook) = &self.on_payload else { return };
        if !payload.is_object() || payload.get("type").and_then(Value::as_str) == Some("sync") {
            return;
        }
        let directory = directory.to_string();
        let payload = into_payload(value);
        let _ = catch_unwind(AssertUnwindSafe(|| hook(payload, directory)));
    }

    /// Delivers an event to the context's runtimes of this server (unless the host forwards the
    /// payloads itself), then to the host's hook.
    fn announce(&self, event: &IntakeEvent) {
        if self.deliver {
            self.shared.intake().deliver(&self.group, event);
        }
        if let Some(hook) = &self.on_event {
            let _ = catch_unwind(AssertUnwindSafe(|| hook(event)));
        }
    }

    fn status(&self, status: &StreamStatus) {
        if let Some(hook) = &self.on_status {
            let _ = catch_unwind(AssertUnwindSafe(|| hook(status)));
        }
    }
}

/// The payload of an event, moved out of its envelope ([`unwrap_envelope`]'s reading, owned).
fn into_payload(mut event: Value) -> Value {
    if event.get("payload").is_some_and(Value::is_object) {
        return event["payload"].take();
    }
    event
}

/// A failed request in words, its causes included (`error sending request: … Connection
/// refused`), without its URL (a host's URL may carry a token).
fn reason_of(error: reqwest::Error) -> String {
    let error = error.without_url();
    let mut reason = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        reason.push_str(": ");
        reason.push_str(&cause.to_string());
        source = cause.source();
    }
    reason
}

/// Splits a byte stream into the `data:` text of each server-sent event: a block ends with a
/// blank line (`\n\n`, `\r\n\r\n` or `\r\r`), and the `data:` lines of one block join with `\n`.
/// A block without data (a comment, a heartbeat's `: ping`) gives nothing.
#[derive(Default)]
struct SseBlocks {
    pending: Vec<u8>,
    /// How far `pending` has been searched for a block's end (a chunk is searched once).
    searched: usize,
}

impl SseBlocks {
    /// The events `bytes` completes; `None` when an event grows past [`MAX_EVENT_BYTES`].
    fn push(&mut self, bytes: &[u8]) -> Option<Vec<String>> {
        self.pending.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some((end, separator)) = block_end(&self.pending, self.searched) {
            let block = String::from_utf8_lossy(&self.pending[..end]).into_owned();
            self.pending.drain(..end + separator);
            self.searched = 0;
            if let Some(data) = block_data(&block) {
                events.push(data);
            }
        }
        // The last three bytes may begin a separator that the next chunk completes.
        self.searched = self.pending.len().saturating_sub(3);
        (self.pending.len() <= MAX_EVENT_BYTES).then_some(events)
    }
}

/// The end of the first complete block at or after `from`, and the length of its separator.
fn block_end(bytes: &[u8], from: usize) -> Option<(usize, usize)> {
    let mut at = from;
    while at + 1 < bytes.len() {
        match (bytes[at], bytes[at + 1]) {
            (b'\n', b'\n') | (b'\r', b'\r') => return Some((at, 2)),
            (b'\r', b'\n') if bytes.get(at + 2..at + 4) == Some(b"\r\n".as_slice()) => return Some((at, 4)),
            _ => at += 1,
        }
    }
    None
}

/// The `data:` lines of one block, joined with `\n` (a space after the colon is not part of the
/// value); `None` when the block has none.
fn block_data(block: &str) -> Option<String> {
    let lines: Vec<&str> = block
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|value| value.strip_prefix(' ').unwrap_or(value))
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}

#[cfg(test)]
mod tests;
