//! The digest: what OpenCode recorded since the previous audit, bounded (tool calls with their
//! status, shell commands with exit codes and the tail of failing output, the session diff, the
//! todo list), built from the messages after a cursor. Everything read from tool output is
//! untrusted: it is bounded and stripped of control characters here, and binary output is
//! replaced by a marker. How the auditor reads it is `audit_block.rs`. Pure.

use serde_json::Value;

use crate::config::EvidenceLimits;
use crate::record::check_id::fnv1a_bytes;
use crate::text::truncate_chars;

/// A 64-bit hash as 16 hex digits (the stored form of reply and command hashes).
pub(super) fn hex64(value: u64) -> String {
    format!("{value:016x}")
}

/// One tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// Tool name (`bash`, `edit`, `read`, …).
    pub tool: String,
    /// `completed`, `error`, `pending`, `running` (or whatever OpenCode said, bounded).
    pub status: String,
    /// For shell tools: the command.
    pub command: Option<String>,
    /// For shell tools: the exit code, when OpenCode reported one.
    pub exit_code: Option<i64>,
    /// For failed calls: the last lines of output or the error text (sanitised).
    pub output_tail: Option<String>,
}

impl ToolCall {
    /// Completed without an error and, for a shell command, with exit code 0 (or none reported).
    pub fn succeeded(&self) -> bool {
        self.status == "completed" && self.exit_code.is_none_or(|code| code == 0)
    }

    /// A shell command that failed: non-zero exit, or the tool itself errored.
    pub fn failed_command(&self) -> bool {
        self.command.is_some() && (self.status == "error" || self.exit_code.is_some_and(|code| code != 0))
    }
}

/// One file of the session diff.
#[derive(Debug, Clone, PartialEq)]
pub struct FileChange {
    /// The file's path as OpenCode reports it (relative to the project), sanitised.
    pub path: String,
    /// Lines added.
    pub additions: u64,
    /// Lines deleted.
    pub deletions: u64,
    /// `added`, `modified`, `deleted`… when reported.
    pub status: String,
}

/// One todo.
#[derive(Debug, Clone, PartialEq)]
pub struct Todo {
    /// Text.
    pub content: String,
    /// `pending`, `in_progress`, `completed`, `cancelled`.
    pub status: String,
}

/// What happened since the previous audit.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Digest {
    /// Assistant messages covered (tool-call steps included).
    pub messages: usize,
    /// Tool calls, oldest first (bounded: the newest kept).
    pub tool_calls: Vec<ToolCall>,
    /// Tool calls left out of `tool_calls`.
    pub omitted_tool_calls: usize,
    /// Successful tool calls (all of them, listed or not).
    pub successful_tool_calls: usize,
    /// Shell commands whose latest run in the window failed: (command, exit code).
    pub failing_commands: Vec<(String, Option<i64>)>,
    /// Session diff (bounded). `None`: the diff could not be read.
    pub files: Option<Vec<FileChange>>,
    /// Files left out.
    pub omitted_files: usize,
    /// A key of the whole diff (changes when any file's counts change).
    pub files_key: String,
    /// Todos (bounded). `None`: not available.
    pub todos: Option<Vec<Todo>>,
    /// Todos left out.
    pub omitted_todos: usize,
}

/// Shell tool names across OpenCode versions and forks.
const SHELL_TOOLS: &[&str] =
    &["bash", "shell", "sh", "zsh", "powershell", "pwsh", "cmd", "terminal", "run_command", "exec"];
/// Metadata fields that carry a shell exit code (`exit` on OpenCode 1.18; the others for forks).
const EXIT_FIELDS: &[&str] = &["exit", "exitCode", "exit_code", "code", "status"];

fn str_at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut node = value;
    for key in path {
        node = node.get(*key)?;
    }
    node.as_str()
}

/// Removes control characters (keeps newlines and tabs) so terminal escapes and NULs cannot
/// reach the auditor; text that looks binary becomes a marker.
pub fn sanitize(text: &str) -> String {
    let total = text.chars().count();
    if total == 0 {
        return String::new();
    }
    // Terminal escapes (ESC) are common in real output and are stripped below, not counted.
    let odd = text
        .chars()
        .filter(|c| *c == '\u{FFFD}' || (c.is_control() && !matches!(c, '\n' | '\t' | '\r' | '\u{1b}')))
        .count();
    if odd * 10 > total {
        return format!("[binary output omitted: {total} characters]");
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // Skip an ANSI escape sequence: ESC [ … final byte.
            if chars.peek() == Some(&'[') {
                chars.next();
                for next in chars.by_ref() {
                    if ('@'..='~').contains(&next) {
                        break;
                    }
                }
            }
            continue;
        }
        if c == '\r' {
            continue;
        }
        if c.is_control() && c != '\n' && c != '\t' {
            continue;
        }
        out.push(c);
    }
    out
}

/// The last `lines` lines of `text`, at most `chars` characters (the end kept).
pub fn tail_lines(text: &str, lines: usize, chars: usize) -> String {
    let clean = sanitize(text);
    let trimmed = clean.trim_end();
    let kept: Vec<&str> = trimmed.lines().rev().take(lines.max(1)).collect();
    let joined = kept.into_iter().rev().collect::<Vec<_>>().join("\n");
    let count = joined.chars().count();
    if count <= chars {
        return joined;
    }
    let skip = count - chars;
    format!("…{}", joined.chars().skip(skip).collect::<String>())
}

fn exit_code_of(state: &Value) -> Option<i64> {
    let metadata = state.get("metadata")?;
    EXIT_FIELDS.iter().find_map(|key| {
        let value = metadata.get(*key)?;
        value.as_i64().or_else(|| value.as_f64().filter(|n| n.fract() == 0.0 && n.is_finite()).map(|n| n as i64))
    })
}

/// Collapses white space so the same command typed twice compares equal.
pub fn normalize_command(command: &str) -> String {
    command.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Reads one `{type: "tool"}` part; `None` for any other part or an unknown shape.
pub fn tool_call_of(part: &Value, limits: &EvidenceLimits) -> Option<ToolCall> {
    if part.get("type").and_then(Value::as_str) != Some("tool") {
        return None;
    }
    let tool = truncate_chars(&sanitize(part.get("tool").and_then(Value::as_str)?), 60);
    let state = part.get("state").filter(|s| s.is_object())?;
    let status = truncate_chars(&sanitize(state.get("status").and_then(Value::as_str).unwrap_or("unknown")), 20);
    let raw_command = str_at(state, &["input", "command"]);
    let exit_code = exit_code_of(state);
    let is_shell =
        SHELL_TOOLS.contains(&tool.to_ascii_lowercase().as_str()) || (raw_command.is_some() && exit_code.is_some());
    let command = raw_command
        .filter(|_| is_shell)
        .map(|c| truncate_chars(&sanitize(&normalize_command(c)), limits.max_command_chars));
    let mut call =
        ToolCall { tool, status, command, exit_code: if is_shell { exit_code } else { None }, output_tail: None };
    let failed = call.status == "error" || call.failed_command();
    if failed {
        let output = state
            .get("error")
            .and_then(Value::as_str)
            .or_else(|| state.get("output").and_then(Value::as_str))
            .or_else(|| str_at(state, &["metadata", "output"]))
            .unwrap_or("");
        let tail = tail_lines(output, limits.output_tail_lines, limits.output_tail_chars);
        call.output_tail = (!tail.is_empty()).then_some(tail);
    }
    Some(call)
}

/// Where the digest window starts: after this assistant message (the previously audited tail),
/// or, when it is unknown or no longer in the window, after this creation time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cursor {
    /// Previously audited tail's id ("" for the first audit).
    pub after_id: String,
    /// Its `time.created`, or the goal's `createdAt` for the first audit.
    pub after_created: f64,
}

fn created_of(entry: &Value) -> f64 {
    entry
        .get("info")
        .and_then(|i| i.get("time"))
        .and_then(|t| t.get("created"))
        .and_then(Value::as_f64)
        .filter(|n| n.is_finite())
        .unwrap_or(0.0)
}

/// The assistant messages after the cursor, in chronological order (`time.created`, index as
/// tie-break), up to and including `tail_id`.
pub fn window<'a>(messages: &'a [Value], cursor: &Cursor, tail_id: &str) -> Vec<&'a Value> {
    let mut ordered: Vec<(f64, usize, &Value)> =
        messages.iter().enumerate().map(|(i, m)| (created_of(m), i, m)).collect();
    ordered.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let id_of = |m: &Value| m.get("info").and_then(|i| i.get("id")).and_then(Value::as_str).unwrap_or("").to_string();
    let start = if cursor.after_id.is_empty() {
        None
    } else {
        ordered.iter().position(|(_, _, m)| id_of(m) == cursor.after_id)
    };
    let end = ordered.iter().position(|(_, _, m)| id_of(m) == tail_id).map_or(ordered.len(), |p| p + 1);
    ordered[..end]
        .iter()
        .enumerate()
        .filter(|(position, (created, _, _))| match start {
            Some(start) => *position > start,
            None => *created > cursor.after_created,
        })
        .map(|(_, (_, _, m))| *m)
        .filter(|m| m.get("info").and_then(|i| i.get("role")).and_then(Value::as_str) == Some("assistant"))
        .collect()
}

/// The file changes of the turns the window covers, as OpenCode 1.18 records them: each user
/// message that started a covered reply carries `summary.diffs` (the same list `GET
/// /session/:id/diff?messageID=` returns). Returns the merged list (newest entry per file) when
/// every such user message has one, and otherwise the ids of those without, newest first, for the
/// caller to fetch.
pub fn turn_diffs(messages: &[Value], covered: &[&Value]) -> Result<Value, Vec<String>> {
    let id_of = |m: &Value| m.get("info").and_then(|i| i.get("id")).and_then(Value::as_str).unwrap_or("").to_string();
    let mut parents: Vec<String> = Vec::new();
    for message in covered {
        let parent = message.get("info").and_then(|i| i.get("parentID")).and_then(Value::as_str).unwrap_or("");
        if !parent.is_empty() && !parents.iter().any(|p| p == parent) {
            parents.push(parent.to_string());
        }
    }
    let mut merged: Vec<Value> = Vec::new();
    let mut missing = Vec::new();
    for parent in &parents {
        let diffs = messages
            .iter()
            .find(|m| id_of(m) == *parent)
            .and_then(|m| m.get("info")?.get("summary")?.get("diffs")?.as_array().cloned());
        match diffs {
            Some(list) => {
                for entry in list {
                    let file = entry.get("file").and_then(Value::as_str).unwrap_or("").to_string();
                    merged.retain(|e| e.get("file").and_then(Value::as_str) != Some(file.as_str()));
                    merged.push(entry);
                }
            }
            None => missing.push(parent.clone()),
        }
    }
    if missing.is_empty() && !parents.is_empty() {
        Ok(Value::Array(merged))
    } else {
        missing.reverse();
        Err(missing)
    }
}

/// Builds the digest from the messages after the cursor, the session diff and the todo list.
pub fn build_digest(
    messages: &[Value],
    cursor: &Cursor,
    tail_id: &str,
    diff: Option<&Value>,
    todos: Option<&Value>,
    limits: &EvidenceLimits,
) -> Digest {
    let covered = window(messages, cursor, tail_id);
    let mut calls = Vec::new();
    for message in &covered {
        if let Some(parts) = message.get("parts").and_then(Value::as_array) {
            calls.extend(parts.iter().filter_map(|part| tool_call_of(part, limits)));
        }
    }
    let successful = calls.iter().filter(|c| c.succeeded()).count();
    // Latest run of each command decides whether it is failing.
    let mut latest: Vec<(String, ToolCall)> = Vec::new();
    for call in calls.iter().filter(|c| c.command.is_some()) {
        let command = call.command.clone().unwrap_or_default();
        latest.retain(|(c, _)| *c != command);
        latest.push((command, call.clone()));
    }
    let mut failing: Vec<(String, Option<i64>)> = latest
        .into_iter()
        .filter(|(_, call)| call.failed_command())
        .map(|(command, call)| (command, call.exit_code))
        .collect();
    let excess = failing.len().saturating_sub(limits.max_tool_calls);
    failing.drain(..excess);
    let omitted = calls.len().saturating_sub(limits.max_tool_calls);
    let tool_calls = calls.split_off(omitted);

    let (files, omitted_files, files_key) = file_changes(diff, limits);
    let (todos, omitted_todos) = todo_list(todos, limits);
    Digest {
        messages: covered.len(),
        tool_calls,
        omitted_tool_calls: omitted,
        successful_tool_calls: successful,
        failing_commands: failing,
        files,
        omitted_files,
        files_key,
        todos,
        omitted_todos,
    }
}

/// The files of the session diff (bounded, sorted by path), how many were left out, and a key
/// of the whole list (for the progress fingerprint).
fn file_changes(diff: Option<&Value>, limits: &EvidenceLimits) -> (Option<Vec<FileChange>>, usize, String) {
    match diff.and_then(Value::as_array) {
        Some(entries) => {
            let mut all: Vec<FileChange> = entries
                .iter()
                .filter_map(|entry| {
                    let path = entry.get("file").or_else(|| entry.get("path")).and_then(Value::as_str)?;
                    let count = |key: &str| {
                        entry
                            .get(key)
                            .and_then(Value::as_f64)
                            .filter(|n| n.is_finite() && *n > 0.0)
                            .map_or(0, |n| n as u64)
                    };
                    Some(FileChange {
                        path: truncate_chars(&sanitize(path), 300),
                        additions: count("additions"),
                        deletions: count("deletions"),
                        status: truncate_chars(
                            &sanitize(entry.get("status").and_then(Value::as_str).unwrap_or("")),
                            20,
                        ),
                    })
                })
                .collect();
            all.sort_by(|a, b| a.path.cmp(&b.path));
            let key = hex64(fnv1a_bytes(
                all.iter()
                    .map(|f| format!("{}\u{0}{}\u{0}{}\n", f.path, f.additions, f.deletions))
                    .collect::<String>()
                    .as_bytes(),
            ));
            let omitted = all.len().saturating_sub(limits.max_files);
            all.truncate(limits.max_files);
            (Some(all), omitted, key)
        }
        None => (None, 0, String::new()),
    }
}

/// The todo list (bounded) and how many items were left out.
fn todo_list(todos: Option<&Value>, limits: &EvidenceLimits) -> (Option<Vec<Todo>>, usize) {
    match todos.and_then(Value::as_array) {
        Some(entries) => {
            let mut all: Vec<Todo> = entries
                .iter()
                .filter_map(|entry| {
                    Some(Todo {
                        content: truncate_chars(&sanitize(entry.get("content").and_then(Value::as_str)?), 200),
                        status: truncate_chars(
                            &sanitize(entry.get("status").and_then(Value::as_str).unwrap_or("")),
                            20,
                        ),
                    })
                })
                .collect();
            let omitted = all.len().saturating_sub(limits.max_todos);
            all.truncate(limits.max_todos);
            (Some(all), omitted)
        }
        None => (None, 0),
    }
}
