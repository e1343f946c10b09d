//! The one seam the simulator replaces: each host's OpenCode transport (goal-core's
//! `io/transport.rs`) hands its requests to the simulated server here. On the way, the world's
//! faults apply (the server down, a route answering 404, 5xx, late, never, or with garbage),
//! every request is recorded, and the invariants that judge a request look at it before the
//! server acts on it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use goal_core::{BoxFuture, HttpError, Transport, WireAnswer, WireRequest};
use parking_lot::Mutex;

use crate::invariants;
use crate::mutation::Mutation;
use crate::server::routes::Parsed;
use crate::server::Server;
use crate::world::{BadAnswer, Route, Timing};

/// A route failing until `until` (the server's clock).
#[derive(Debug, Clone, Copy)]
pub struct RouteFault {
    /// Which routes.
    pub route: Route,
    /// How they answer.
    pub answer: BadAnswer,
    /// Until when.
    pub until: f64,
}

/// The world's faults now, shared by every host's transport and the driver.
#[derive(Debug, Default)]
pub struct Faults {
    /// Routes failing now.
    pub routes: Vec<RouteFault>,
    /// The server is down until then.
    pub down_until: f64,
}

impl Faults {
    /// How a request on `route` is answered now (`None`: normally).
    fn bad_answer(&self, route: Route, now: f64) -> Option<BadAnswer> {
        self.routes
            .iter()
            .rev()
            .find(|f| f.until > now && (f.route == route || f.route == Route::All))
            .map(|f| f.answer)
    }

    /// Whether the world is healthy now: the server up and no route failing.
    pub fn healthy(&self, now: f64) -> bool {
        self.down_until <= now && self.routes.iter().all(|f| f.until <= now)
    }

    /// When the last fault in effect at or before `now` ended.
    pub fn healed_at(&self, now: f64) -> f64 {
        self.routes
            .iter()
            .map(|f| f.until)
            .chain(std::iter::once(self.down_until))
            .filter(|t| *t <= now)
            .fold(0.0, f64::max)
    }
}

/// One host's transport.
pub struct SimTransport {
    /// The server.
    pub server: Arc<Server>,
    /// The world's faults.
    pub faults: Arc<Mutex<Faults>>,
    /// The host's number.
    pub host: usize,
    /// The world's timings (for the invariants).
    pub timing: Timing,
    /// Requests sent so far (each gets a latency derived from its number).
    pub sent: Mutex<u64>,
    /// A defect planted here (`mutation.rs`).
    pub mutation: Option<Mutation>,
    /// The host's process lives: once it is killed, nothing it sends reaches the server.
    pub alive: Arc<AtomicBool>,
}

/// The route family of a request.
fn route_of(parsed: &Parsed) -> Route {
    let tail = parsed.session_id().map(|id| &parsed.path[("/session/".len() + id.len())..]);
    match (parsed.method.as_str(), tail) {
        ("GET", None) if is_list(parsed) => Route::List,
        ("GET", None) if parsed.path == "/session/status" => Route::Status,
        ("GET", Some("")) => Route::Session,
        ("PATCH", Some("")) => Route::Patch,
        ("GET", Some("/message")) => Route::Messages,
        ("POST", Some("/prompt_async")) => Route::Prompt,
        _ => Route::All,
    }
}

/// A session list: one directory's, or every directory's (a census).
fn is_list(parsed: &Parsed) -> bool {
    parsed.method == "GET" && (parsed.path == "/session" || parsed.path == "/experimental/session")
}

/// Times a defective loop sends a failed request again at once (`Mutation::RetryStorm`).
const STORM: usize = 12;

impl SimTransport {
    /// Under `DroppedGuards` the loop never sees the budgets, yet its writes carry the stored
    /// ones: the defect is a blind check, not a lost field (which the echo repair would fight,
    /// breaking (d) before (c) could show).
    fn keep_guards(&self, request: &mut WireRequest) {
        let Some(mut body) = request.body.as_deref().and_then(|b| serde_json::from_slice::<serde_json::Value>(b).ok())
        else {
            return;
        };
        let Some(session) = Parsed::of(request).session_id().map(str::to_string) else { return };
        let stored = self.server.state.lock().sessions.get(&session).and_then(|s| s.goal().cloned());
        let (Some(stored), Some(written)) = (stored, body.pointer_mut("/metadata/openchamber/goal")) else { return };
        if stored.get("id") != written.get("id") {
            return;
        }
        for field in Mutation::GUARD_FIELDS {
            match stored.get(field) {
                Some(value) => written[field] = value.clone(),
                None => {
                    written.as_object_mut().map(|g| g.remove(field));
                }
            }
        }
        request.body = serde_json::to_vec(&body).ok();
    }

    /// One request as the (possibly defective) loop sends it.
    async fn send_mutated(&self, mut request: WireRequest) -> Result<WireAnswer, HttpError> {
        if !self.alive.load(Ordering::SeqCst) {
            return Err(HttpError::Network("the host's process is gone".into()));
        }
        let Some(mutation) = self.mutation else { return self.exchange(request).await };
        if mutation == Mutation::CensusBlind {
            let parsed = Parsed::of(&request);
            if parsed.method == "GET" && (parsed.path == "/experimental/session" || parsed.path == "/project") {
                return Ok(crate::server::routes::json_answer(200, &serde_json::json!([])));
            }
        }
        if mutation == Mutation::UnknownStatus && request.method == "PATCH" {
            if let Some(mut body) =
                request.body.as_deref().and_then(|b| serde_json::from_slice::<serde_json::Value>(b).ok())
            {
                mutation.write_session(&mut body);
                request.body = serde_json::to_vec(&body).ok();
            }
        }
        if mutation == Mutation::DroppedGuards && request.method == "PATCH" {
            self.keep_guards(&mut request);
        }
        let mut answer = self.exchange(request.clone()).await;
        if mutation == Mutation::RetryStorm {
            for _ in 0..STORM {
                if answer.as_ref().is_ok_and(|a| a.status < 500) {
                    break;
                }
                answer = self.exchange(request.clone()).await;
            }
        }
        let parsed = Parsed::of(&request);
        let Ok(mut answer) = answer else { return answer };
        match mutation {
            Mutation::StaleStop | Mutation::DroppedGuards | Mutation::WrapUpForgotten
                if route_of(&parsed) == Route::Session =>
            {
                if let Ok(mut session) = serde_json::from_slice::<serde_json::Value>(&answer.body) {
                    mutation.read_session(&mut session);
                    answer.body = serde_json::to_vec(&session).unwrap_or_default();
                }
            }
            Mutation::WrapUpForgotten if route_of(&parsed) == Route::Messages => {
                if let Ok(mut messages) = serde_json::from_slice::<serde_json::Value>(&answer.body) {
                    mutation.read_messages(&mut messages);
                    answer.body = serde_json::to_vec(&messages).unwrap_or_default();
                }
            }
            Mutation::BusyForever if route_of(&parsed) == Route::Status => {
                let sessions = self.server.goal_sessions.lock().clone();
                let busy: serde_json::Map<String, serde_json::Value> =
                    sessions.into_iter().flatten().map(|id| (id, serde_json::json!({"type": "busy"}))).collect();
                answer.body = serde_json::to_vec(&busy).unwrap_or_default();
            }
            Mutation::SecondContinuation if parsed.path.ends_with("/prompt_async") && answer.status == 204 => {
                self.post_again_under_a_new_id(&parsed, request).await;
            }
            _ => {}
        }
        Ok(answer)
    }

    /// `Mutation::SecondContinuation`: a turn-starting post to a goal's session, sent once more
    /// under another message id.
    async fn post_again_under_a_new_id(&self, parsed: &Parsed, mut request: WireRequest) {
        let main =
            parsed.session_id().is_some_and(|id| self.server.goal_sessions.lock().iter().flatten().any(|s| s == id));
        let body = &parsed.body;
        let (Some(id), false) =
            (body.get("messageID").and_then(serde_json::Value::as_str), body.get("noReply").is_some())
        else {
            return;
        };
        if !main {
            return;
        }
        let mut again = body.clone();
        again["messageID"] = format!("{}{}", &id[..id.len() - 1], if id.ends_with('z') { 'y' } else { 'z' }).into();
        if let Some(parts) = again["parts"].as_array_mut() {
            for part in parts {
                if let Some(part) = part.as_object_mut() {
                    part.remove("id");
                }
            }
        }
        request.body = serde_json::to_vec(&again).ok();
        let _ = self.exchange(request).await;
    }

    async fn exchange(&self, request: WireRequest) -> Result<WireAnswer, HttpError> {
        let server = &self.server;
        let parsed = Parsed::of(&request);
        let route = route_of(&parsed);
        // What the host knew is judged when it sent the request, not when it arrived.
        let issued = server.now();
        let number = {
            let mut sent = self.sent.lock();
            *sent += 1;
            *sent
        };
        // A few ms on the wire, the same for the same request number in every run.
        tokio::time::sleep(Duration::from_millis(1 + (number.wrapping_mul(2_654_435_761) >> 7) % 15)).await;
        let now = server.now();
        let (down, bad, healthy) = {
            let faults = self.faults.lock();
            (faults.down_until > now, faults.bad_answer(route, now), faults.healthy(now))
        };
        let noted = self.note(&parsed, now, healthy, down || bad.is_some());
        if down {
            return Err(HttpError::Network("connect".into()));
        }
        match bad {
            Some(BadAnswer::NotFound) => return Ok(status_answer(404)),
            // One status per failing route, as a real server's failure gives.
            Some(BadAnswer::ServerError) => return Ok(status_answer(if route == Route::Prompt { 500 } else { 503 })),
            Some(BadAnswer::Garbage) => {
                return Ok(WireAnswer {
                    status: 200,
                    body: b"<html>proxy error</html>".to_vec(),
                    content_type: "text/html".into(),
                })
            }
            Some(BadAnswer::Hang) => std::future::pending::<()>().await,
            Some(BadAnswer::Slow(ms)) => tokio::time::sleep(Duration::from_millis(ms)).await,
            Some(BadAnswer::ApplyThenHang) | None => {}
        }
        if parsed.method == "POST" && (parsed.path.ends_with("/prompt_async") || parsed.path.ends_with("/shell")) {
            invariants::on_post(server, &self.timing, self.host, &parsed, issued, server.now());
        }
        let answer = server.handle(self.host, &parsed).await;
        if bad == Some(BadAnswer::ApplyThenHang) {
            std::future::pending::<()>().await;
        }
        let Some(answer) = answer else { return Err(HttpError::Network("connection reset".into())) };
        if let Some(index) = noted.filter(|_| (200..300).contains(&answer.status) && bad != Some(BadAnswer::Garbage)) {
            server.record.with(|r| r.requests[index].failed_list = false);
        }
        if parsed.method == "GET" && route == Route::Session && answer.status == 200 {
            if let Some(session) = parsed.session_id() {
                let (host, at) = (self.host, server.now());
                let goal = serde_json::from_slice::<serde_json::Value>(&answer.body)
                    .ok()
                    .and_then(|s| s.pointer("/metadata/openchamber/goal").cloned());
                server.record.with(|r| {
                    r.reads.insert((host, session.to_string()), at);
                    if let Some(goal) = goal {
                        r.goal_reads.insert((host, session.to_string()), goal);
                    }
                });
            }
        }
        Ok(answer)
    }

    /// Records the request (for the trace, and while a fault is in effect for the rates) and
    /// checks the rates.
    /// Returns the request's index in the record when it was kept.
    fn note(&self, parsed: &Parsed, now: f64, healthy: bool, failing: bool) -> Option<usize> {
        let record = &self.server.record;
        let directory = parsed.param("directory").unwrap_or_default().to_string();
        let list = is_list(parsed);
        let session = parsed.session_id().map(str::to_string);
        let host = self.host;
        record.note(now, format!("host {host}: {} {}", parsed.method, parsed.path));
        // Lists are kept whatever the health (a list that was read ends a failing run); other
        // requests only while a fault is in effect (the budgets are for goals that wait on one).
        if healthy && !list {
            return None;
        }
        // A list counts as failed until its answer says otherwise (a list the client gave up on
        // never comes back to say so).
        let index = record.with(|r| {
            let at = r.ms(now);
            r.requests.push(crate::record::Request {
                host,
                at_ms: at,
                session,
                directory,
                list,
                failed_list: list && failing,
                past_life: false,
            });
            r.requests.len() - 1
        });
        invariants::check_rates(record, now);
        Some(index)
    }
}

fn status_answer(status: u16) -> WireAnswer {
    let body = serde_json::json!({"name": "UnknownError", "data": {"message": "simulated failure"}});
    crate::server::routes::json_answer(status, &body)
}

impl Transport for SimTransport {
    fn send(&self, request: WireRequest) -> BoxFuture<'_, Result<WireAnswer, HttpError>> {
        Box::pin(self.send_mutated(request))
    }
}
