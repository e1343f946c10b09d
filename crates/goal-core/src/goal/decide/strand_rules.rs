//! A stranded message: OpenCode stored a user message but its turn never began (the server was
//! killed between the two). The newest message is then that user message, unanswered, and the
//! session idle. OpenCode starts the turn of a stored, unanswered message when the same
//! `messageID` is posted again, and a part posted with the id it already has replaces that part
//! (docs/opencode.md, "Idempotent prompts"). So the loop posts the message again under its own
//! ids, the same parts with their ids, once the session has been idle a quiet window since the
//! message (or since the last re-post), at most [`MAX_REPOSTS`] times; then the goal settles
//! `blocked` (`dispatchFailed`). This holds for the loop's own continuation and for the user's
//! first prompt alike, and no new continuation is ever posted over such a tail. Pure.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::goal::decide::gates::quiet_remaining;
use crate::record::session::{chronological, Message, Role};
use crate::record::Reposted;

/// Re-posts of one stranded message before the goal settles `blocked`.
pub const MAX_REPOSTS: u64 = 3;

/// The newest message when it is a user message no reply answers.
pub fn stranded_tail(messages: &[Message]) -> Option<&Message> {
    let tail = *chronological(messages).last()?;
    let answered = messages.iter().any(|m| m.role == Role::Assistant && m.parent_id == tail.id);
    (tail.role == Role::User && !tail.id.is_empty() && !answered).then_some(tail)
}

/// What to do about a stranded tail.
#[derive(Debug, Clone, PartialEq)]
pub enum StrandStep {
    /// Inside the quiet window (since the message, or since the last re-post): look again then.
    Wait(Duration),
    /// Post it again; this is post number `posts` of it.
    Repost {
        /// The count to record with this post.
        posts: u64,
    },
    /// Posted [`MAX_REPOSTS`] times and still unanswered: settle `blocked`.
    GiveUp,
}

/// Decides for the stranded `tail`, given the re-posts recorded so far (of any message) and the
/// clock. A record of another message counts nothing for this one.
pub fn next_step(tail: &Message, recorded: Option<&Reposted>, now_ms: f64, quiet: Duration) -> StrandStep {
    let ours = recorded.filter(|r| r.message_id == tail.id);
    let posts = ours.map_or(0, |r| r.posts);
    let last_post = ours.map(|r| r.at).filter(|at| *at > 0.0);
    if let Some(wait) = quiet_remaining(Some(tail), last_post, now_ms, quiet) {
        return StrandStep::Wait(wait);
    }
    if posts >= MAX_REPOSTS {
        StrandStep::GiveUp
    } else {
        StrandStep::Repost { posts: posts + 1 }
    }
}

/// The `prompt_async` body that posts the stored message `entry` (`{info, parts}`) again: its id,
/// every part with its own id (in the shape a prompt takes), its agent, model and variant.
/// `None` when the entry is not a user message with an id, or a part has no id (its re-post
/// would add a second copy of that part instead of replacing it).
pub fn repost_body(entry: &Value) -> Option<Value> {
    let info = entry.get("info")?.as_object()?;
    let id = info.get("id")?.as_str().filter(|id| id.starts_with("msg"))?;
    let parts: Vec<Value> = entry.get("parts")?.as_array()?.iter().map(part_input).collect::<Option<_>>()?;
    let mut body = Map::new();
    body.insert("messageID".into(), Value::from(id));
    body.insert("parts".into(), Value::Array(parts));
    if let Some(agent) = info.get("agent").and_then(Value::as_str).filter(|a| !a.is_empty()) {
        body.insert("agent".into(), Value::from(agent));
    }
    let model = info.get("model");
    let text =
        |value: Option<&Value>, key: &str| value.and_then(|v| v.get(key)).and_then(Value::as_str).map(str::to_string);
    if let (Some(provider), Some(model_id)) = (text(model, "providerID"), text(model, "modelID")) {
        body.insert("model".into(), serde_json::json!({ "providerID": provider, "modelID": model_id }));
    }
    if let Some(variant) = text(Some(&Value::Object(info.clone())), "variant").or_else(|| text(model, "variant")) {
        body.insert("variant".into(), Value::from(variant));
    }
    for key in ["system", "tools"] {
        if let Some(value) = info.get(key).filter(|v| !v.is_null()) {
            body.insert(key.into(), value.clone());
        }
    }
    Some(Value::Object(body))
}

/// A stored part in the shape a prompt takes, keeping its id: the stored part without the fields
/// OpenCode fills in itself (its session, its message, its times).
fn part_input(part: &Value) -> Option<Value> {
    let stored = part.as_object()?;
    stored.get("id")?.as_str().filter(|id| !id.is_empty())?;
    let mut input = stored.clone();
    for filled in ["sessionID", "messageID", "time"] {
        input.remove(filled);
    }
    Some(Value::Object(input))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const Q: Duration = Duration::from_millis(1000);

    fn list(entries: Value) -> Vec<Message> {
        Message::list_from_value(&entries).unwrap()
    }

    fn user(id: &str, created: f64) -> Value {
        json!({"info": {"id": id, "role": "user", "time": {"created": created}, "agent": "build",
            "model": {"providerID": "p", "modelID": "m"}},
            "parts": [{"id": "prt_1", "sessionID": "ses_1", "messageID": id, "type": "text", "text": "go on", "time": {"start": 1}}]})
    }

    fn reply(id: &str, parent: &str, created: f64) -> Value {
        json!({"info": {"id": id, "role": "assistant", "parentID": parent, "time": {"created": created, "completed": created + 1.0}}, "parts": []})
    }

    #[test]
    fn only_an_unanswered_user_message_at_the_tail_is_stranded() {
        let stranded = list(json!([user("msg_a", 10.0), reply("msg_b", "msg_a", 11.0), user("msg_c", 20.0)]));
        assert_eq!(stranded_tail(&stranded).map(|m| m.id.as_str()), Some("msg_c"));
        let first_prompt = list(json!([user("msg_a", 10.0)]));
        assert_eq!(stranded_tail(&first_prompt).map(|m| m.id.as_str()), Some("msg_a"));
        assert!(stranded_tail(&list(json!([user("msg_a", 10.0), reply("msg_b", "msg_a", 11.0)]))).is_none());
        // A reply that answers it, listed before it (same millisecond), means it is not stranded.
        assert!(stranded_tail(&list(json!([reply("msg_b", "msg_a", 10.0), user("msg_a", 10.0)]))).is_none());
        assert!(stranded_tail(&[]).is_none());
    }

    #[test]
    fn posts_wait_out_the_quiet_window_and_stop_after_three() {
        let messages = list(json!([user("msg_c", 10_000.0)]));
        let tail = &messages[0];
        assert_eq!(next_step(tail, None, 10_400.0, Q), StrandStep::Wait(Duration::from_millis(600)));
        assert_eq!(next_step(tail, None, 11_000.0, Q), StrandStep::Repost { posts: 1 });
        let posted = |posts, at| Reposted { message_id: "msg_c".into(), posts, at };
        // The window counts again from the last post.
        assert_eq!(
            next_step(tail, Some(&posted(1, 20_000.0)), 20_500.0, Q),
            StrandStep::Wait(Duration::from_millis(500))
        );
        assert_eq!(next_step(tail, Some(&posted(2, 20_000.0)), 21_000.0, Q), StrandStep::Repost { posts: 3 });
        assert_eq!(next_step(tail, Some(&posted(3, 20_000.0)), 21_000.0, Q), StrandStep::GiveUp);
        // Another message's record counts nothing here.
        let other = Reposted { message_id: "msg_x".into(), posts: 3, at: 20_000.0 };
        assert_eq!(next_step(tail, Some(&other), 21_000.0, Q), StrandStep::Repost { posts: 1 });
    }

    #[test]
    fn the_repost_carries_the_same_ids_parts_and_model() {
        let mut entry = user("msg_c", 10.0);
        entry["info"]["variant"] = json!("high");
        let body = repost_body(&entry).unwrap();
        assert_eq!(
            body,
            json!({"messageID": "msg_c", "agent": "build", "model": {"providerID": "p", "modelID": "m"}, "variant": "high",
                "parts": [{"id": "prt_1", "type": "text", "text": "go on"}]})
        );
        let mut without_part_id = user("msg_c", 10.0);
        without_part_id["parts"][0].as_object_mut().unwrap().remove("id");
        assert_eq!(repost_body(&without_part_id), None, "a part without its id would be appended twice");
        assert_eq!(repost_body(&json!({"info": {"id": "m1"}, "parts": []})), None, "not a message id");
    }
}
