//! The complete override: a `complete` verdict while a shell command's latest run failed
//! becomes one `continue` naming the command; the goal remembers the commands it was used for
//! (`evidenceOverrides`), so the same failure holds completion back only once. Pure.

use serde_json::Value;

use super::digest::{hex64, Digest};
use crate::record::check_id::fnv1a_bytes;
use crate::record::{Goal, Stored};
use crate::text::truncate_chars;

/// Failing commands remembered per goal.
const MAX_OVERRIDES: usize = 32;

/// The key a failing command is remembered by.
fn command_key(command: &str) -> String {
    hex64(fnv1a_bytes(command.as_bytes()))
}

/// The failing commands already used for an override.
pub fn overrides_of(goal: &Goal) -> Vec<String> {
    match &goal.evidence_overrides {
        Stored::Valid(used) | Stored::Lenient(used, _) => used.clone(),
        // A list with entries that are not commands: the commands in it still count.
        Stored::Unreadable(raw) => {
            raw.as_array().map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect()).unwrap_or_default()
        }
        Stored::Absent => Vec::new(),
    }
}

/// A `complete` verdict with a failing command that was not used before: the note for the
/// `continue` it becomes, and the override set to store. `None`: no override.
pub fn complete_override(digest: &Digest, used: &[String]) -> Option<(String, Vec<String>)> {
    let fresh: Vec<&(String, Option<i64>)> =
        digest.failing_commands.iter().filter(|(c, _)| !used.contains(&command_key(c))).collect();
    if fresh.is_empty() {
        return None;
    }
    let named: Vec<String> = fresh
        .iter()
        .take(3)
        .map(|(command, code)| {
            let code = code.map_or("an error".to_string(), |c| format!("exit code {c}"));
            format!("`{}` ({code})", truncate_chars(command, 80))
        })
        .collect();
    let note = truncate_chars(
        &format!("Not complete yet: the latest run failed for {}.", named.join(", ")),
        crate::record::NOTE_CHAR_LIMIT,
    );
    let mut set: Vec<String> = used.to_vec();
    for (command, _) in fresh.iter().take(3) {
        set.push(command_key(command));
    }
    let overflow = set.len().saturating_sub(MAX_OVERRIDES);
    set.drain(..overflow);
    Some((note, set))
}
