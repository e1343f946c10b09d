//! Forwards OpenCode's `GET /global/event` stream (server-sent events) to the goal runtime, and
//! tells the page when a goal may have changed. Reconnects with a growing delay when the stream
//! ends; after a reconnect the runtime rescans the directory for goals it missed meanwhile.

use std::time::Duration;

use goal_core::EmbeddedGoalRuntime;
use serde_json::Value;
use tauri::{AppHandle, Emitter};

/// The event the page listens to: reload the list.
pub const GOALS_CHANGED: &str = "goals-changed";

const FIRST_RETRY: Duration = Duration::from_millis(500);
const LAST_RETRY: Duration = Duration::from_secs(30);

/// Starts the forwarder on Tauri's async runtime; it runs until the app exits.
pub fn spawn_forwarder(app: AppHandle, base_url: String, headers: Vec<(String, String)>, runtime: EmbeddedGoalRuntime) {
    tauri::async_runtime::spawn(async move {
        let client = reqwest::Client::builder().connect_timeout(Duration::from_secs(10)).build();
        let client = match client {
            Ok(client) => client,
            Err(error) => return eprintln!("tauri-goals: no HTTP client for the event stream: {error}"),
        };
        let mut retry = FIRST_RETRY;
        let mut missed_events = false;
        loop {
            let mut connected = false;
            let outcome =
                follow_stream(&client, &base_url, &headers, &runtime, &app, missed_events, &mut connected).await;
            // A stream that was up starts over with a short delay; one that never came up backs off.
            if connected {
                retry = FIRST_RETRY;
            }
            match outcome {
                Ok(()) => eprintln!("tauri-goals: OpenCode's event stream ended; reconnecting in {retry:?}"),
                Err(error) => eprintln!("tauri-goals: OpenCode's event stream failed ({error}); retrying in {retry:?}"),
            }
            missed_events = true;
            tokio::time::sleep(retry).await;
            retry = (retry * 2).min(LAST_RETRY);
        }
    });
}

/// Reads one connection of the stream until it ends; `connected` tells whether it came up.
async fn follow_stream(
    client: &reqwest::Client,
    base_url: &str,
    headers: &[(String, String)],
    runtime: &EmbeddedGoalRuntime,
    app: &AppHandle,
    missed_events: bool,
    connected: &mut bool,
) -> Result<(), String> {
    let mut request = client.get(format!("{base_url}/global/event")).header("accept", "text/event-stream");
    for (name, value) in headers {
        request = request.header(name, value);
    }
    let mut response = request.send().await.map_err(|e| e.without_url().to_string())?;
    if !response.status().is_success() {
        return Err(format!("HTTP {}", response.status()));
    }
    *connected = true;
    if missed_events {
        // Events were lost while the stream was down: look for stranded goals.
        runtime.recover();
        let _ = app.emit(GOALS_CHANGED, ());
    }
    let mut blocks = SseBlocks::default();
    while let Some(chunk) = response.chunk().await.map_err(|e| e.without_url().to_string())? {
        for data in blocks.push(&chunk) {
            let concerns_goals = runtime.feed_json(&data, "");
            if concerns_goals && changes_what_the_page_shows(&data) {
                let _ = app.emit(GOALS_CHANGED, ());
            }
        }
    }
    Ok(())
}

/// Whether an event may change a row of the page: a session's metadata (the goal) or its live
/// status (the "working" mark).
fn changes_what_the_page_shows(data: &str) -> bool {
    let Ok(value) = serde_json::from_str::<Value>(data) else { return false };
    let payload = value.get("payload").unwrap_or(&value);
    matches!(
        payload.get("type").and_then(Value::as_str),
        Some("session.updated" | "session.status" | "session.deleted" | "session.created")
    )
}

/// Splits a byte stream into the `data:` text of each server-sent event (blocks end with a blank
/// line; several `data:` lines of one block join with `\n`).
#[derive(Default)]
struct SseBlocks {
    pending: Vec<u8>,
}

impl SseBlocks {
    fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        self.pending.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some((end, separator)) = block_end(&self.pending) {
            let block: Vec<u8> = self.pending.drain(..end + separator).take(end).collect();
            let text = String::from_utf8_lossy(&block);
            let data: Vec<&str> = text
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(|rest| rest.strip_prefix(' ').unwrap_or(rest))
                .collect();
            if !data.is_empty() {
                events.push(data.join("\n"));
            }
        }
        events
    }
}

/// The end of the first complete block and the length of its separator (`\n\n` or `\r\n\r\n`).
fn block_end(bytes: &[u8]) -> Option<(usize, usize)> {
    let lf = bytes.windows(2).position(|w| w == b"\n\n").map(|at| (at, 2));
    let crlf = bytes.windows(4).position(|w| w == b"\r\n\r\n").map(|at| (at, 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (one, other) => one.or(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_split_across_chunks_come_out_whole() {
        let mut blocks = SseBlocks::default();
        assert!(blocks.push(b"data: {\"a\":").is_empty());
        assert_eq!(blocks.push(b"1}\n\ndata: x\ndata: y\n\n: comment\n\nda"), ["{\"a\":1}", "x\ny"]);
        assert_eq!(blocks.push(b"ta:z\r\n\r\n"), ["z"]);
    }

    #[test]
    fn only_session_events_reload_the_page() {
        let updated = r#"{"directory":"/p","payload":{"type":"session.updated","properties":{}}}"#;
        let part = r#"{"directory":"/p","payload":{"type":"message.part.updated","properties":{}}}"#;
        assert!(changes_what_the_page_shows(updated));
        assert!(!changes_what_the_page_shows(part));
        assert!(!changes_what_the_page_shows("not json"));
    }
}
