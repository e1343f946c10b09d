//! The files a goal's turns changed, for the wrap-up's handoff (`goal/decide/wrap_up.rs`).
//! OpenCode 1.18 records each turn's changes on the user message that started it
//! (`info.summary.diffs`, the list `GET /session/:id/diff?messageID=` returns); its session-wide
//! `/diff` answers `[]` (docs/opencode.md). So the list is the union over the goal's prompts:
//! their summaries, and the diff route for the newest prompts without one (a turn OpenCode has
//! not summed up yet); the session-wide route only where no prompt has a summary (a server that
//! keeps none). A few requests, since a settle that fails to write reads them again.

use serde_json::Value;

use super::Reader;
use crate::goal::decide::seen::Seen;
use crate::record::check_id::is_check_message;

/// Messages read to reach back to the goal's first prompt when the tick's window does not.
const WHOLE_SESSION: usize = 1_000;
/// Prompts without a summary whose diff is read (the newest first).
const DIFF_READS: usize = 2;

impl Reader<'_> {
    /// The files the goal's turns changed, in the order first changed; `None` when nothing
    /// could be read.
    pub(super) async fn changed_files(&self, seen: &Seen) -> Option<Vec<String>> {
        let (goal, live) = (seen.goal()?, seen.live()?);
        let (id, dir) = (seen.session_id.as_str(), seen.directory.as_str());
        let whole;
        let messages = if reaches_before(&live.raw, goal.created_at) {
            &live.raw
        } else {
            whole = self.client.messages_with_raw(id, dir, WHOLE_SESSION).await.map(|(_, raw)| raw);
            whole.as_ref().unwrap_or(&live.raw)
        };
        let prompts = goal_prompts(messages, goal.created_at);
        let mut files: Option<Vec<String>> = None;
        let mut unrecorded = Vec::new();
        for (message_id, recorded) in &prompts {
            match recorded {
                Some(diffs) => add(&mut files, diffs),
                None => unrecorded.push(message_id.as_str()),
            }
        }
        let summed_up = files.is_some();
        for message_id in unrecorded.iter().rev().take(DIFF_READS) {
            if let Some(diff) = self.client.session_evidence(id, dir, "/diff", Some(message_id)).await {
                add(&mut files, &diff);
            }
        }
        if !summed_up {
            if let Some(diff) = self.client.session_evidence(id, dir, "/diff", None).await {
                add(&mut files, &diff);
            }
        }
        files
    }
}

/// Whether `messages` reach back before `created_at` (so every prompt since is among them).
fn reaches_before(messages: &[Value], created_at: f64) -> bool {
    messages.iter().filter_map(created).any(|at| at < created_at)
}

fn created(message: &Value) -> Option<f64> {
    message.get("info")?.get("time")?.get("created")?.as_f64()
}

/// The goal's prompts (user messages since it began, check runs left out), oldest first: each
/// id with the diff list its summary recorded, if any.
fn goal_prompts(messages: &[Value], created_at: f64) -> Vec<(String, Option<Value>)> {
    messages
        .iter()
        .filter(|m| m.get("info").and_then(|i| i.get("role")).and_then(Value::as_str) == Some("user"))
        .filter(|m| !is_check_message(m) && created(m).is_some_and(|at| at >= created_at))
        .filter_map(|m| {
            let info = m.get("info")?;
            let id = info.get("id")?.as_str()?.to_string();
            let diffs = info.get("summary").and_then(|s| s.get("diffs")).filter(|d| d.is_array()).cloned();
            Some((id, diffs))
        })
        .collect()
}

/// Adds the paths a diff list names to `files` (each once, in order of first change).
fn add(files: &mut Option<Vec<String>>, diff: &Value) {
    let files = files.get_or_insert_with(Vec::new);
    for entry in diff.as_array().into_iter().flatten() {
        let path = entry.get("file").or_else(|| entry.get("path")).and_then(Value::as_str);
        if let Some(path) = path.filter(|p| !p.is_empty() && !files.iter().any(|f| f == p)) {
            files.push(path.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user(id: &str, created: f64, diffs: Option<Value>) -> Value {
        let mut info = json!({"id": id, "role": "user", "time": {"created": created}});
        if let Some(diffs) = diffs {
            info["summary"] = json!({"diffs": diffs});
        }
        json!({"info": info, "parts": []})
    }

    #[test]
    fn the_goal_s_prompts_carry_what_their_turns_changed() {
        let messages = vec![
            user("msg_before", 5.0, Some(json!([{"file": "old.rs"}]))),
            user("msg_a", 10.0, Some(json!([{"file": "src/parser.rs"}, {"file": "src/lib.rs"}]))),
            json!({"info": {"id": "msg_r", "role": "assistant", "time": {"created": 11.0}}, "parts": []}),
            user("msg_b", 20.0, None),
        ];
        assert!(reaches_before(&messages, 10.0));
        assert!(!reaches_before(&messages[1..], 10.0));
        let prompts = goal_prompts(&messages, 10.0);
        assert_eq!(prompts.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(), ["msg_a", "msg_b"]);
        assert!(prompts[1].1.is_none(), "a prompt whose turn recorded no summary yet");
        let mut files = None;
        add(&mut files, prompts[0].1.as_ref().expect("recorded"));
        add(&mut files, &json!([{"file": "src/lib.rs"}, {"path": "README.md"}, {"file": ""}]));
        assert_eq!(files, Some(vec!["src/parser.rs".into(), "src/lib.rs".into(), "README.md".into()]));
        let mut nothing = None;
        add(&mut nothing, &json!([]));
        assert_eq!(nothing, Some(vec![]), "an empty list read is no change, not unknown");
    }
}
