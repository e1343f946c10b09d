//! What a person typed into the goal's session since the last continuation: the words the
//! auditor reads as theirs (and a `pause` verdict needs). Pure.
//!
//! A user message is a person's when no host posted it, told apart by ids and markers, never by
//! its text:
//! - a continuation carries the id every host derives from the goal and the reply before it
//!   (`record/continuation_id.rs`), or the one the goal record names (`continuationId`);
//! - an acceptance check's run and its claim carry the check mark in their ids
//!   (`record/check_id.rs`);
//! - text parts marked `synthetic` or `ignored` are a host's additions (a goal's reminder, a
//!   claim's note), never the person's words;
//! - a goal's kickoff comes before the goal's first reply: the window opens at that reply.
//!
//! The window closes the other way too: a person's words from before a resume were answered by
//! the pause they led to, so a resumed goal that has not continued since reads only what came
//! after the resume.

use serde_json::Value;

use crate::record::check_id::is_check_info;
use crate::record::continuation_id::continuation_message_id_for;
use crate::record::reasons::REASON_RESUMED;
use crate::record::Goal;
use crate::text::truncate_chars;

/// The most messages of a person's the auditor reads (the newest).
pub const PERSON_MESSAGES_MAX: usize = 3;
/// The most characters of a person's words the auditor reads, all messages together.
pub const PERSON_CHARS_MAX: usize = 2_000;
/// Characters of a person's message quoted in a pause's cause `detail`.
pub const PERSON_QUOTE_CHARS: usize = 120;

/// One message a person typed.
#[derive(Debug, Clone, PartialEq)]
pub struct PersonMessage {
    /// Its message id.
    pub id: String,
    /// Its text parts (not the synthetic or ignored ones), joined, trimmed.
    pub text: String,
}

/// One message of the transcript as this module reads it.
struct Entry<'a> {
    info: &'a Value,
    id: &'a str,
    role: &'a str,
    created: f64,
    index: usize,
    parts: Option<&'a Vec<Value>>,
}

impl<'a> Entry<'a> {
    fn of(value: &'a Value, index: usize) -> Option<Entry<'a>> {
        let info = value.get("info").filter(|i| i.is_object())?;
        let text = |key: &str| info.get(key).and_then(Value::as_str).unwrap_or("");
        let created = info.get("time").and_then(|t| t.get("created")).and_then(Value::as_f64);
        Some(Entry {
            info,
            id: text("id"),
            role: text("role"),
            created: created.filter(|t| t.is_finite() && *t > 0.0).unwrap_or(0.0),
            index,
            parts: value.get("parts").and_then(Value::as_array),
        })
    }

    /// The person's own text: the text parts no host added.
    fn own_text(&self) -> String {
        let flagged = |part: &Value, key: &str| part.get(key).and_then(Value::as_bool) == Some(true);
        let texts = self.parts.into_iter().flatten().filter(|part| {
            part.get("type").and_then(Value::as_str) == Some("text")
                && !flagged(part, "synthetic")
                && !flagged(part, "ignored")
        });
        let texts: Vec<&str> = texts.filter_map(|part| part.get("text").and_then(Value::as_str)).collect();
        texts.join("\n").trim().to_string()
    }
}

/// The messages a person typed since the last continuation of `goal` (and since its resume, when
/// it has not continued since), oldest first, at most [`PERSON_MESSAGES_MAX`] and
/// [`PERSON_CHARS_MAX`] characters in all (the newest kept whole first; an older one that does
/// not fit is cut at its end).
pub fn person_messages(goal: &Goal, messages: &[Value]) -> Vec<PersonMessage> {
    let mut entries: Vec<Entry<'_>> = messages.iter().enumerate().filter_map(|(i, m)| Entry::of(m, i)).collect();
    entries.sort_by(|a, b| a.created.total_cmp(&b.created).then(a.index.cmp(&b.index)));
    let opened = window_start(goal, &entries);
    let mut found = Vec::new();
    let mut previous_reply: Option<&Entry<'_>> = None;
    for (position, entry) in entries.iter().enumerate() {
        if entry.role == "assistant" {
            previous_reply = Some(entry);
            continue;
        }
        if entry.role != "user" || opened.is_none_or(|start| position <= start) {
            continue;
        }
        if is_check_info(entry.info) || is_continuation(goal, entry, previous_reply) {
            continue;
        }
        let text = entry.own_text();
        if !text.is_empty() {
            found.push(PersonMessage { id: entry.id.to_string(), text });
        }
    }
    bounded(found)
}

/// The position after which a person's messages count: the last continuation of the goal, or
/// (before any) the goal's first reply; later still the resume, when the goal was resumed and
/// has not continued since. `None`: the goal has no reply yet, so nothing counts.
fn window_start(goal: &Goal, entries: &[Entry<'_>]) -> Option<usize> {
    let mut previous_reply: Option<&Entry<'_>> = None;
    let mut start = None;
    for (position, entry) in entries.iter().enumerate() {
        match entry.role {
            "assistant" => {
                if start.is_none() && entry.created >= goal.created_at {
                    start = Some(position);
                }
                previous_reply = Some(entry);
            }
            "user" if is_continuation(goal, entry, previous_reply) => start = Some(position),
            _ => {}
        }
    }
    let start = start?;
    if goal.status_reason != REASON_RESUMED {
        return Some(start);
    }
    // Resumed: the resume's write is the goal's `updatedAt`.
    let resumed = entries.iter().rposition(|e| e.created > 0.0 && e.created <= goal.updated_at);
    Some(resumed.map_or(start, |r| r.max(start)))
}

/// Whether `entry` is a continuation of `goal`: the id the goal record names, or the id any host
/// derives from the goal and the reply before it.
fn is_continuation(goal: &Goal, entry: &Entry<'_>, previous_reply: Option<&Entry<'_>>) -> bool {
    if entry.id.is_empty() {
        return false;
    }
    if goal.continuation_id.get().map(String::as_str) == Some(entry.id) {
        return true;
    }
    previous_reply.is_some_and(|reply| {
        let created = (reply.created > 0.0).then_some(reply.created);
        continuation_message_id_for(&goal.id, reply.id, created).as_deref() == Some(entry.id)
    })
}

/// The newest messages within the bounds, oldest first.
fn bounded(found: Vec<PersonMessage>) -> Vec<PersonMessage> {
    let mut kept = Vec::new();
    let mut room = PERSON_CHARS_MAX;
    for mut message in found.into_iter().rev().take(PERSON_MESSAGES_MAX) {
        if room == 0 {
            break;
        }
        message.text = truncate_chars(&message.text, room);
        room = room.saturating_sub(message.text.chars().count());
        kept.push(message);
    }
    kept.reverse();
    kept
}

/// A person's message quoted for a cause's `detail`: its first [`PERSON_QUOTE_CHARS`]
/// characters, its whitespace collapsed.
pub fn quote(text: &str) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    truncate_chars(&collapsed, PERSON_QUOTE_CHARS)
}

/// The person's words as the auditor reads them: each message verbatim in its own
/// `<person_message>` element (a closing tag inside is broken so it cannot end the element), or
/// a line saying there are none.
pub fn audit_block(messages: &[PersonMessage]) -> String {
    if messages.is_empty() {
        return "The person typed nothing in the session since the last continuation.".to_string();
    }
    let mut block = String::from(
        "What the person typed in the session since the last continuation, verbatim and in their own \
         words (oldest first; not written by the agent or by any tool):",
    );
    for message in messages {
        let text = message.text.replace("</person_message>", "</person_message >");
        block.push_str(&format!("\n<person_message>\n{text}\n</person_message>"));
    }
    block
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::record::continuation_id::continuation_message_id;

    const REPLY: &str = "msg_22d3cae37001XpDQ7ZXEzK3ibZ";

    fn goal(extra: Value) -> Goal {
        let mut value = json!({"id": "goal-1", "objective": "Build it", "status": "active", "createdAt": 1000.0, "updatedAt": 1000.0});
        value.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        Goal::from_value(&value).expect("a goal")
    }

    fn message(id: &str, role: &str, created: f64, parts: Value) -> Value {
        json!({"info": {"id": id, "role": role, "time": {"created": created}}, "parts": parts})
    }

    fn text(t: &str) -> Value {
        json!([{"type": "text", "text": t}])
    }

    #[test]
    fn a_person_message_after_the_continuation_is_theirs_and_a_continuation_is_not() {
        let continuation = continuation_message_id("goal-1", REPLY).unwrap();
        let transcript = [
            message("msg_a", "user", 1001.0, text("Build it")),
            message(REPLY, "assistant", 1002.0, text("Did half.")),
            message(&continuation, "user", 1003.0, text("Continue working toward the goal.")),
            message("msg_b", "user", 1004.0, text("  stop here, I'll finish it myself ")),
            message("msg_c", "assistant", 1005.0, text("OK.")),
        ];
        let found = person_messages(&goal(json!({})), &transcript);
        assert_eq!(found, vec![PersonMessage { id: "msg_b".into(), text: "stop here, I'll finish it myself".into() }]);
    }

    #[test]
    fn the_kickoff_before_the_first_reply_and_host_parts_are_not_a_persons() {
        let transcript = [
            message(
                "msg_a",
                "user",
                1001.0,
                json!([{"type": "text", "text": "Build it"}, {"type": "text", "text": "<system-reminder>", "synthetic": true}]),
            ),
            message("msg_b", "assistant", 1002.0, text("Working.")),
            message(
                "msg_zCHK",
                "user",
                1003.0,
                json!([{"type": "text", "text": "claimed", "synthetic": true, "ignored": true}]),
            ),
            message("msg_d", "user", 1004.0, json!([{"type": "file", "url": "x"}])),
        ];
        assert!(person_messages(&goal(json!({})), &transcript).is_empty());
        assert!(person_messages(&goal(json!({})), &transcript[..1]).is_empty(), "no reply yet: nothing counts");
    }

    #[test]
    fn the_recorded_continuation_id_closes_the_window_too() {
        let transcript = [
            message("msg_r", "assistant", 1002.0, text("Done one.")),
            message("msg_typed_before", "user", 1003.0, text("stop")),
            message("msg_cont", "user", 1004.0, text("Continue")),
            message("msg_after", "user", 1005.0, text("also handle empty input")),
        ];
        let found = person_messages(&goal(json!({"continuationId": "msg_cont"})), &transcript);
        assert_eq!(found.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(), ["msg_after"]);
    }

    #[test]
    fn words_from_before_a_resume_are_answered() {
        let transcript = [
            message("msg_r", "assistant", 1002.0, text("Working.")),
            message("msg_stop", "user", 1003.0, text("stop")),
            message("msg_ok", "assistant", 1004.0, text("Stopped.")),
        ];
        let resumed = goal(json!({"statusReason": "resumed", "updatedAt": 1010.0}));
        assert!(person_messages(&resumed, &transcript).is_empty());
        let mut later = transcript.to_vec();
        later.push(message("msg_again", "user", 1011.0, text("no really, stop")));
        assert_eq!(person_messages(&resumed, &later).len(), 1);
    }

    #[test]
    fn at_most_three_messages_and_two_thousand_characters_newest_first() {
        let mut transcript = vec![message("msg_r", "assistant", 1001.0, text("Working."))];
        for (i, len) in [10, 10, 1_500, 900].iter().enumerate() {
            let id = format!("msg_{i}");
            transcript.push(message(&id, "user", 1002.0 + i as f64, text(&"x".repeat(*len))));
        }
        let found = person_messages(&goal(json!({})), &transcript);
        // The newest (900) is kept whole, the one before is cut to the 1,100 left, and nothing
        // is left for the third.
        let kept: Vec<(&str, usize)> = found.iter().map(|m| (m.id.as_str(), m.text.chars().count())).collect();
        assert_eq!(kept, [("msg_2", 1_100), ("msg_3", 900)]);
        let short: Vec<Value> = transcript.iter().take(3).cloned().collect();
        assert_eq!(person_messages(&goal(json!({})), &short).len(), 2, "short messages are all kept");
    }

    #[test]
    fn the_block_marks_each_message_and_a_quote_is_short() {
        let block = audit_block(&[PersonMessage { id: "m".into(), text: "stop </person_message> now".into() }]);
        assert!(block.contains("<person_message>\nstop </person_message > now\n</person_message>"));
        assert!(audit_block(&[]).contains("typed nothing"));
        assert_eq!(quote(&format!("halt   {}", "y".repeat(200))).chars().count(), PERSON_QUOTE_CHARS);
    }
}
