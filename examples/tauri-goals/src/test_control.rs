//! Test hooks, on only with `TAURI_GOALS_TEST_CONTROL=1`: a test drives the window through
//! stdin and reads answers on stdout, one line each.
//!
//! | stdin | effect | stdout |
//! |---|---|---|
//! | `click pause <sessionId>` / `click resume <sessionId>` | the page clicks that row's button (the user's own code path) | `clicked <action> <sessionId>` |
//! | `read <tag>` | the page sends back its visible text | `page <tag> <text as a JSON string>` |
//! | `policy <tag>` | the page sends back the content security policy it runs under (as a refused `eval` reports it; empty if none refused) | `page <tag> <policy as a JSON string>` |
//! | `size` | | `size <width> <height>` (the window's inner size, physical pixels) |
//! | `quit` | the app exits | |
//!
//! Anything else answers `error <why>`. Nothing else is written to stdout in this mode.

use tauri::{AppHandle, Emitter, Manager, State};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::goals::AppState;

/// The page listens to this to click a button as a user would.
const CLICK_EVENT: &str = "test:click";
/// The page listens to this to send back its text with [`report_page_text`].
const READ_EVENT: &str = "test:read-page";
/// The page listens to this to send back its content security policy the same way.
const POLICY_EVENT: &str = "test:read-policy";

/// Starts reading commands from stdin; ends the app when stdin closes.
pub fn spawn(app: AppHandle) {
    tauri::async_runtime::spawn(async move {
        let mut lines = BufReader::new(tokio::io::stdin()).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(answer) = handle(&app, line.trim()) {
                say(&answer);
            }
        }
        app.exit(0);
    });
}

/// Runs one command; `Some` is the line to print now.
fn handle(app: &AppHandle, command: &str) -> Option<String> {
    let words: Vec<&str> = command.split_whitespace().collect();
    match words.as_slice() {
        ["click", action @ ("pause" | "resume"), session_id] => {
            let payload = serde_json::json!({ "action": action, "sessionId": session_id });
            Some(match app.emit_to("main", CLICK_EVENT, payload) {
                Ok(()) => format!("clicked {action} {session_id}"),
                Err(error) => format!("error click: {error}"),
            })
        }
        // The answer comes later, from the page, through `report_page_text`.
        ["read", tag] => {
            app.emit_to("main", READ_EVENT, serde_json::json!({ "tag": tag })).err().map(|e| format!("error read: {e}"))
        }
        ["policy", tag] => app
            .emit_to("main", POLICY_EVENT, serde_json::json!({ "tag": tag }))
            .err()
            .map(|e| format!("error policy: {e}")),
        ["size"] => Some(match app.get_webview_window("main").map(|w| w.inner_size()) {
            Some(Ok(size)) => format!("size {} {}", size.width, size.height),
            Some(Err(error)) => format!("error size: {error}"),
            None => "error size: no main window".into(),
        }),
        ["quit"] => {
            app.exit(0);
            None
        }
        _ => Some(format!("error unknown command {command:?}")),
    }
}

/// One whole line under stdout's lock, so answers from the reader and the page never interleave.
fn say(line: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}").and_then(|()| stdout.flush());
}

/// The page's answer to a `read` or `policy` command, printed on stdout. Refused unless
/// the app runs with its test hooks.
#[tauri::command]
pub async fn report_page_text(state: State<'_, AppState>, tag: String, text: String) -> Result<(), String> {
    if !state.test_control() {
        return Err("the test hooks are off".into());
    }
    let text = serde_json::to_string(&text).map_err(|e| e.to_string())?;
    say(&format!("page {tag} {text}"));
    Ok(())
}
