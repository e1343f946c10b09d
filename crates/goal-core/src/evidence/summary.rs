//! The digest's counts as the audit trail keeps them (`digest` of a trail record): written by
//! [`Digest::summary`], read back by [`DigestSummary::from_value`], one
//! typed value for both. Pure.

use serde_json::{json, Value};

use super::digest::Digest;
use crate::text::truncate_chars;

impl Digest {
    /// The counts kept in the audit trail.
    pub fn summary(&self) -> Value {
        self.summary_counts().to_value()
    }

    /// The counts kept in the audit trail, as a typed value.
    pub fn summary_counts(&self) -> DigestSummary {
        let files = self.files.as_deref().unwrap_or(&[]);
        let todos = self.todos.as_deref().unwrap_or(&[]);
        DigestSummary {
            assistant_messages: self.messages as u64,
            tool_calls: (self.tool_calls.len() + self.omitted_tool_calls) as u64,
            successful_tool_calls: self.successful_tool_calls as u64,
            failing_commands: self
                .failing_commands
                .iter()
                .map(|(command, code)| FailingCommand { command: truncate_chars(command, 120), exit_code: *code })
                .collect(),
            files_changed: self.files.as_ref().map(|_| (files.len() + self.omitted_files) as u64),
            additions: files.iter().map(|f| f.additions).sum::<u64>(),
            deletions: files.iter().map(|f| f.deletions).sum::<u64>(),
            todos: self.todos.as_ref().map(|_| TodoCounts {
                total: (todos.len() + self.omitted_todos) as u64,
                completed: todos.iter().filter(|t| t.status == "completed").count() as u64,
            }),
        }
    }
}

/// The counts of one audit's evidence.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DigestSummary {
    /// Assistant messages read.
    pub assistant_messages: u64,
    /// Tool calls, the ones left out of the digest included.
    pub tool_calls: u64,
    /// Tool calls that succeeded.
    pub successful_tool_calls: u64,
    /// Shell commands that failed, with their exit code when known.
    pub failing_commands: Vec<FailingCommand>,
    /// Files changed (`None`: the session's diff could not be read).
    pub files_changed: Option<u64>,
    /// Lines added.
    pub additions: u64,
    /// Lines deleted.
    pub deletions: u64,
    /// The todo list's counts (`None`: it could not be read).
    pub todos: Option<TodoCounts>,
}

/// A shell command that failed.
#[derive(Debug, Clone, PartialEq)]
pub struct FailingCommand {
    /// The command (bounded).
    pub command: String,
    /// Its exit code, when known.
    pub exit_code: Option<i64>,
}

/// How many todos there are and how many are done.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TodoCounts {
    /// All todos.
    pub total: u64,
    /// Completed ones.
    pub completed: u64,
}

impl DigestSummary {
    /// The trail's shape.
    pub fn to_value(&self) -> Value {
        json!({
            "assistantMessages": self.assistant_messages,
            "toolCalls": self.tool_calls,
            "successfulToolCalls": self.successful_tool_calls,
            "failingCommands": self.failing_commands.iter().map(|f| json!({"command": f.command, "exitCode": f.exit_code})).collect::<Vec<_>>(),
            "filesChanged": self.files_changed,
            "additions": self.additions,
            "deletions": self.deletions,
            "todos": self.todos.map(|t| json!({"total": t.total, "completed": t.completed})),
        })
    }

    /// Reads the trail's shape; a count missing from a hand-edited line reads as 0 (or unknown,
    /// for the files and todos), and anything that is not an object is no summary.
    pub fn from_value(value: &Value) -> Option<DigestSummary> {
        let object = value.as_object()?;
        let count = |v: Option<&Value>| v.and_then(Value::as_u64);
        let failing_commands = object.get("failingCommands").and_then(Value::as_array).map_or_else(Vec::new, |list| {
            list.iter()
                .filter_map(|f| {
                    let command = f.get("command")?.as_str()?.to_string();
                    Some(FailingCommand { command, exit_code: f.get("exitCode").and_then(Value::as_i64) })
                })
                .collect()
        });
        let todos = object.get("todos").filter(|t| t.is_object()).map(|t| TodoCounts {
            total: count(t.get("total")).unwrap_or(0),
            completed: count(t.get("completed")).unwrap_or(0),
        });
        Some(DigestSummary {
            assistant_messages: count(object.get("assistantMessages")).unwrap_or(0),
            tool_calls: count(object.get("toolCalls")).unwrap_or(0),
            successful_tool_calls: count(object.get("successfulToolCalls")).unwrap_or(0),
            failing_commands,
            files_changed: count(object.get("filesChanged")),
            additions: count(object.get("additions")).unwrap_or(0),
            deletions: count(object.get("deletions")).unwrap_or(0),
            todos,
        })
    }
}
