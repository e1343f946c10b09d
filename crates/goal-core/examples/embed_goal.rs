//! Embedding goal-core in a Rust application: start a goal runtime on the application's tokio
//! runtime, follow OpenCode's event stream into it, watch a goal go from `active` to `complete`,
//! stop.
//!
//! To stay self-contained the example starts its own stand-in for OpenCode: a few lines of HTTP
//! over a loopback socket serving one session whose assistant reply is finished, and its event
//! stream (the session, then "idle"), and an auditor that judges the objective met. Against a
//! real server, pass its URL (and its `authorization` header) to the builder.
//!
//! Run: `cargo run -p goal-core --example embed_goal`. `cargo test` runs it too
//! (tests/embed_example.rs).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use goal_core::BoxFuture;
use goal_core::GoalRuntimeBuilder;
use goal_core::{SmallModel, SmallModelError, SmallModelQuery, SmallModelReply};
use parking_lot::Mutex;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const SESSION_ID: &str = "ses_embedexample01";
const DIRECTORY: &str = "/tmp/embed-example";

/// What the example observed.
#[derive(Debug)]
pub struct Outcome {
    /// The goal's final status as stored on the session.
    pub status: String,
    /// Its status reason.
    pub reason: String,
    /// Ticks the runtime ran.
    pub ticks: u64,
    /// Goals it settled.
    pub settled: u64,
    /// The directory's goals as the control API lists them afterwards: `session id: status`.
    pub listed: Vec<String>,
    /// HTTP requests the stand-in served, by `METHOD /path`.
    pub requests: HashMap<String, usize>,
}

/// An auditor that finds the objective met (a real application passes nothing and gets the
/// built-in small model, or wraps its own model client).
struct ApprovingAuditor;

impl SmallModel for ApprovingAuditor {
    fn generate(&self, _request: SmallModelQuery) -> BoxFuture<'_, Result<SmallModelReply, SmallModelError>> {
        Box::pin(async {
            Ok(SmallModelReply {
                text: json!({ "verdict": "complete", "note": "greeting printed and checked" }).to_string(),
                provider_id: "example".into(),
                model_id: "auditor".into(),
                tokens: None,
            })
        })
    }
}

/// The stand-in's state: one session, its messages, the requests seen.
struct StandIn {
    session: Value,
    messages: Value,
    requests: HashMap<String, usize>,
}

fn fresh_goal(now: u64) -> Value {
    json!({
        "id": "goal-embed-example",
        "objective": "Print a greeting and check it",
        "objectiveFile": false,
        "status": "active",
        "tokenBudget": null,
        "tokensUsed": 0,
        "turnsUsed": 0,
        "blockedStreak": 0,
        "auditFailStreak": 0,
        "note": "",
        "statusReason": "",
        "lastAccountedMessageID": "",
        "createdAt": now - 2000,
        "updatedAt": now - 2000,
    })
}

fn messages(now: u64) -> Value {
    json!([
        {
            "info": { "id": "msg_0001user", "sessionID": SESSION_ID, "role": "user", "time": { "created": now - 1500 } },
            "parts": [{ "type": "text", "text": "Print a greeting and check it" }]
        },
        {
            "info": {
                "id": "msg_0002assistant", "sessionID": SESSION_ID, "role": "assistant", "parentID": "msg_0001user",
                "providerID": "example", "modelID": "coder", "finish": "stop",
                "time": { "created": now - 1400, "completed": now - 1000 },
                "tokens": { "input": 1200, "output": 80, "reasoning": 0, "cache": { "read": 0, "write": 0 } }
            },
            "parts": [{ "type": "text", "text": "Done: printed \"hello\". Verified: the output reads hello. Remaining: nothing." }]
        }
    ])
}

/// Answers one request; `None` closes the connection.
fn answer(state: &Mutex<StandIn>, method: &str, path: &str, body: &[u8]) -> (u16, Value) {
    let path = path.split('?').next().unwrap_or("");
    let mut state = state.lock();
    *state.requests.entry(format!("{method} {path}")).or_default() += 1;
    let session_path = format!("/session/{SESSION_ID}");
    match (method, path) {
        ("GET", "/session/status") => (200, json!({})),
        // The directory's sessions: the owner list for a goal that names no session.
        ("GET", "/session") => (200, json!([state.session.clone()])),
        ("GET", p) if p == format!("{session_path}/children") => (200, json!([])),
        ("GET", p) if p == format!("{session_path}/message") => (200, state.messages.clone()),
        ("GET", p) if p == session_path => (200, state.session.clone()),
        ("PATCH", p) if p == session_path => {
            // OpenCode replaces the whole metadata object on PATCH.
            let Ok(update) = serde_json::from_slice::<Value>(body) else {
                return (400, json!({ "error": "bad json" }));
            };
            if let Some(metadata) = update.get("metadata") {
                state.session["metadata"] = metadata.clone();
            }
            (200, state.session.clone())
        }
        ("POST", p) if p == format!("{session_path}/prompt_async") => (204, Value::Null),
        ("POST", p) if p == format!("{session_path}/abort") => (200, json!(true)),
        _ => (404, json!({ "error": "not found" })),
    }
}

async fn serve_connection(mut stream: TcpStream, state: Arc<Mutex<StandIn>>) {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let Some(head_end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") else {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
            continue;
        };
        let head = String::from_utf8_lossy(&buffer[..head_end]).to_string();
        let mut lines = head.lines();
        let mut request_line = lines.next().unwrap_or("").split_whitespace();
        let (method, path) =
            (request_line.next().unwrap_or("").to_string(), request_line.next().unwrap_or("").to_string());
        let length = lines
            .filter_map(|line| line.split_once(':'))
            .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
            .and_then(|(_, value)| value.trim().parse::<usize>().ok())
            .unwrap_or(0);
        while buffer.len() < head_end + 4 + length {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        }
        let body: Vec<u8> = buffer.drain(..head_end + 4 + length).skip(head_end + 4).collect();
        if path == "/global/event" {
            return serve_events(stream, &state).await;
        }
        let (status, value) = answer(&state, &method, &path, &body);
        let text = if value.is_null() { String::new() } else { value.to_string() };
        let response = format!(
            "HTTP/1.1 {status} OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{text}",
            text.len()
        );
        if stream.write_all(response.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// OpenCode's event stream as the stand-in tells it: the session with its goal, then "idle" (each
/// event in the global envelope, one `data:` line each). Held open until the client goes.
async fn serve_events(mut stream: TcpStream, state: &Mutex<StandIn>) {
    let session = {
        let mut state = state.lock();
        *state.requests.entry("GET /global/event".into()).or_default() += 1;
        state.session.clone()
    };
    let events = [
        json!({ "payload": { "type": "server.connected", "properties": {} } }),
        json!({ "directory": DIRECTORY, "payload": { "type": "session.updated", "properties": { "info": session } } }),
        json!({ "directory": DIRECTORY, "payload": { "type": "session.status", "properties": { "sessionID": SESSION_ID, "status": { "type": "idle" } } } }),
    ];
    let mut text = String::from("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n");
    for event in events {
        text.push_str(&format!("data: {event}\n\n"));
    }
    if stream.write_all(text.as_bytes()).await.is_err() {
        return;
    }
    let mut rest = [0u8; 256];
    while matches!(stream.read(&mut rest).await, Ok(n) if n > 0) {}
}

/// Starts the stand-in; returns its base URL and state.
async fn start_stand_in() -> std::io::Result<(String, Arc<Mutex<StandIn>>)> {
    let now =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
    let session = json!({
        "id": SESSION_ID,
        "directory": DIRECTORY,
        "title": "Embedding example",
        "time": { "created": now - 3000, "updated": now - 2000 },
        "metadata": { "openchamber": { "goal": fresh_goal(now) } },
    });
    let state = Arc::new(Mutex::new(StandIn { session, messages: messages(now), requests: HashMap::new() }));
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let accept_state = state.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve_connection(stream, accept_state.clone()));
        }
    });
    Ok((url, state))
}

fn stored_goal(state: &Mutex<StandIn>) -> Value {
    state.lock().session["metadata"]["openchamber"]["goal"].clone()
}

/// Drives one goal from `active` to `complete` through an embedded runtime.
pub async fn drive_goal_to_completion() -> Result<Outcome, String> {
    let (url, state) = start_stand_in().await.map_err(|e| format!("stand-in did not start: {e}"))?;
    let data_dir = std::env::temp_dir().join(format!("goal-core-embed-example-{}", std::process::id()));

    let handle = tokio::runtime::Handle::current();
    let runtime = GoalRuntimeBuilder::new(&url)
        .header("authorization", "Basic ZXhhbXBsZTpleGFtcGxl")
        .data_dir(&data_dir)
        .small_model(Arc::new(ApprovingAuditor))
        .idle_quiet(Duration::from_millis(50))
        .kickoff_quiet(Duration::from_millis(50))
        .start(&handle);
    // The runtime's events: the server's `GET /global/event` stream, read, reconnected and
    // recovered by goal-core, for as long as `events` is kept.
    let events = runtime.event_follower().start(&handle);

    let deadline = Instant::now() + Duration::from_secs(20);
    let goal = loop {
        let goal = stored_goal(&state);
        if goal["status"] != "active" {
            break goal;
        }
        if Instant::now() > deadline {
            events.stop();
            runtime.stop().await;
            return Err(format!("the goal is still active after 20 s: {goal}"));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // The stored goal changes before the tick that wrote it reports back: wait for the tick to
    // finish, so the counters include it.
    let snapshot = loop {
        let snapshot = runtime.snapshot();
        if snapshot.scheduler.in_flight == 0 || Instant::now() > deadline {
            break snapshot;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    // The control API acts on the runtime's server with its headers and data directory: here it
    // lists the directory's goals, as a desktop shell's window would.
    let listed = match goal_core::list_goals(&runtime.control_context(), DIRECTORY).await {
        Ok(rows) => rows.iter().map(|row| format!("{}: {}", row.session.id, row.goal.status.as_str())).collect(),
        Err(error) => vec![format!("list failed: {error}")],
    };
    events.stop();
    runtime.stop().await;
    let _ = std::fs::remove_dir_all(&data_dir);
    let requests = state.lock().requests.clone();
    Ok(Outcome {
        status: goal["status"].as_str().unwrap_or("").to_string(),
        reason: goal["statusReason"].as_str().unwrap_or("").to_string(),
        ticks: snapshot.scheduler.ticks,
        settled: snapshot.settled,
        listed,
        requests,
    })
}

#[allow(dead_code)] // tests/embed_example.rs includes this file for `drive_goal_to_completion`.
fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
    match runtime.block_on(drive_goal_to_completion()) {
        Ok(outcome) => {
            println!("goal {} ({}) after {} tick(s)", outcome.status, outcome.reason, outcome.ticks);
            println!("listed: {}", outcome.listed.join(", "));
            let mut requests: Vec<_> = outcome.requests.into_iter().collect();
            requests.sort();
            for (request, count) in requests {
                println!("  {count:>2} × {request}");
            }
        }
        Err(error) => {
            eprintln!("embed_goal: {error}");
            std::process::exit(1);
        }
    }
}
