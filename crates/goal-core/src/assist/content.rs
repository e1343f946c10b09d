//! The pure half of the session assist: which exchange the small model sees, how its answer is
//! read (tolerant JSON, clamps, a per-field language guard), whether the session tail still
//! shows the same reply, and the payload stored in metadata. No I/O, no clock.

use serde_json::{json, Map, Value};

use crate::config::settings_file::SettingsFlags;
use crate::record::session::{chronological, Message, Role};
use crate::text::jsonx::extract_json_object;
use crate::text::prompts::clamp_chars;
use crate::text::script_guard::introduces_foreign_script;
use crate::text::truncate_chars;

/// Most characters of each side of the exchange sent to the small model.
pub const TRANSCRIPT_PART_CHAR_LIMIT: usize = 6000;
/// Most characters of a stored recap. The payload rides every `session.updated`: keep it small.
pub const RECAP_CHAR_LIMIT: usize = 320;
/// Most characters of a stored suggestion.
pub const SUGGESTION_CHAR_LIMIT: usize = 500;

/// Which fields the user wants generated, read from the settings at fire time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Targets {
    /// Generate the recap.
    pub recap: bool,
    /// Generate the suggestion.
    pub suggestion: bool,
}

impl Targets {
    /// `sessionAssistEnabled` is the master switch; below it each field has its own switch.
    pub fn from_flags(flags: &SettingsFlags) -> Targets {
        Targets {
            recap: flags.assist_enabled && flags.recap_enabled,
            suggestion: flags.assist_enabled && flags.suggestion_enabled,
        }
    }

    /// Anything to generate at all (when not, there is no model call and no write).
    pub fn any(self) -> bool {
        self.recap || self.suggestion
    }
}

/// The newest reply at the session's tail, unless the user has spoken since.
///
/// Walks the messages newest first (by `time.created`, fetch order breaking ties): a user
/// message means the conversation moved past any reply, so there is nothing to recap; the
/// first assistant message is the tail reply. Used both to pick the exchange and, right before
/// writing, to check that the tail has not moved on while the model was thinking.
pub fn tail_reply(messages: &[Message]) -> Option<&Message> {
    for message in chronological(messages).into_iter().rev() {
        match message.role {
            Role::User => return None,
            Role::Assistant => return Some(message),
            Role::Other => continue,
        }
    }
    None
}

/// The last exchange: the tail reply and the user message it answered.
#[derive(Debug, Clone, PartialEq)]
pub struct LastExchange {
    /// Id of the reply; stored as `forMessageID` so clients show the payload only while this
    /// reply is still the newest.
    pub assistant_id: String,
    /// The session's provider (the small model must stay on it).
    pub provider_id: String,
    /// The session's model.
    pub model_id: String,
    /// Text of the user message the reply answered (empty when it is outside the window).
    pub user_text: String,
    /// Text of the reply.
    pub assistant_text: String,
}

impl LastExchange {
    /// Picks the last exchange from a message window. `None` when the tail is a user message,
    /// the reply has no id or is still being written, or neither side has any text.
    ///
    /// Only the reply's own parent is quoted, never older history: the recap is about the
    /// latest answer, and less conversation text leaves the machine.
    pub fn from_messages(messages: &[Message]) -> Option<LastExchange> {
        let reply = tail_reply(messages)?;
        if reply.id.is_empty() {
            return None;
        }
        // A reply with neither a completion time nor an error is still streaming.
        if reply.completed.is_none() && reply.error.is_none() {
            return None;
        }
        let user_text = messages
            .iter()
            .find(|m| m.role == Role::User && !reply.parent_id.is_empty() && m.id == reply.parent_id)
            .map(|m| truncate_chars(&m.text, TRANSCRIPT_PART_CHAR_LIMIT))
            .unwrap_or_default();
        let exchange = LastExchange {
            assistant_id: reply.id.clone(),
            provider_id: reply.selection.provider_id.clone(),
            model_id: reply.selection.model_id.clone(),
            user_text,
            assistant_text: truncate_chars(&reply.text, TRANSCRIPT_PART_CHAR_LIMIT),
        };
        (!exchange.transcript().is_empty()).then_some(exchange)
    }

    /// `User:\n…` and `Assistant:\n…`, separated by a blank line; a side without text is left
    /// out.
    pub fn transcript(&self) -> String {
        let mut sections = Vec::with_capacity(2);
        if !self.user_text.trim().is_empty() {
            sections.push(format!("User:\n{}", self.user_text));
        }
        if !self.assistant_text.trim().is_empty() {
            sections.push(format!("Assistant:\n{}", self.assistant_text));
        }
        sections.join("\n\n")
    }

    /// The text whose language the output must match: the user's words, else the reply's.
    pub fn language_sample(&self) -> &str {
        if self.user_text.trim().is_empty() {
            &self.assistant_text
        } else {
            &self.user_text
        }
    }

    /// Everything the model was shown, for the script guard.
    pub fn script_reference(&self) -> String {
        format!("{}\n{}", self.user_text, self.assistant_text)
    }
}

/// The two stored fields; an empty string means "not generated" (off, missing or dropped).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AssistFields {
    /// Recap of the reply, ≤ [`RECAP_CHAR_LIMIT`] chars.
    pub recap: String,
    /// One message the user could send next, ≤ [`SUGGESTION_CHAR_LIMIT`] chars.
    pub suggestion: String,
}

impl AssistFields {
    /// Nothing worth writing.
    pub fn is_empty(&self) -> bool {
        self.recap.is_empty() && self.suggestion.is_empty()
    }
}

/// What was made of the model's answer. Carries no text beyond the fields themselves, so the
/// diagnostics can be logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedReply {
    /// A JSON object was found in the output.
    pub object_found: bool,
    /// The usable fields.
    pub fields: AssistFields,
    /// Fields dropped because they are in a script the conversation does not use.
    pub dropped_for_script: Vec<&'static str>,
}

/// Reads the model's answer: the first JSON object (prose and fences tolerated), only the
/// requested fields, each trimmed and clamped, each dropped on its own when it introduces a
/// script absent from `reference` (the user text and the reply: a model that followed an
/// account-level language preference instead of the conversation).
pub fn parse_reply(text: &str, targets: Targets, reference: &str) -> ParsedReply {
    let Some(object) = extract_json_object(text) else {
        return ParsedReply { object_found: false, fields: AssistFields::default(), dropped_for_script: Vec::new() };
    };
    let mut dropped_for_script = Vec::new();
    let mut field = |key: &'static str, wanted: bool, limit: usize| -> String {
        if !wanted {
            return String::new();
        }
        let value = clamp_text(&object, key, limit);
        if introduces_foreign_script(&value, reference) {
            dropped_for_script.push(key);
            return String::new();
        }
        value
    };
    let fields = AssistFields {
        recap: field("recap", targets.recap, RECAP_CHAR_LIMIT),
        suggestion: field("suggestion", targets.suggestion, SUGGESTION_CHAR_LIMIT),
    };
    ParsedReply { object_found: true, fields, dropped_for_script }
}

fn clamp_text(object: &Map<String, Value>, key: &str, limit: usize) -> String {
    object.get(key).and_then(Value::as_str).map(|s| clamp_chars(s, limit)).unwrap_or_default()
}

/// The value stored at `metadata.openchamber.assist`. Both fields are always present (empty
/// when not generated) so a reader never has to tell "absent" from "empty".
pub fn assist_payload(fields: &AssistFields, for_message_id: &str, generated_at_ms: u64) -> Value {
    json!({
        "recap": fields.recap,
        "suggestion": fields.suggestion,
        "forMessageID": for_message_id,
        "generatedAt": generated_at_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(list: Value) -> Vec<Message> {
        Message::list_from_value(&list).unwrap()
    }

    fn user(id: &str, created: u64, text: &str) -> Value {
        json!({"info": {"id": id, "role": "user", "time": {"created": created}}, "parts": [{"type": "text", "text": text}]})
    }

    fn reply(id: &str, parent: &str, created: u64, text: &str) -> Value {
        json!({"info": {"id": id, "role": "assistant", "parentID": parent, "providerID": "anthropic", "modelID": "claude",
                        "time": {"created": created, "completed": created + 1}},
               "parts": [{"type": "reasoning", "text": "thinking"}, {"type": "text", "text": text}]})
    }

    #[test]
    fn targets_follow_the_master_switch() {
        let on = SettingsFlags::DEFAULT;
        assert_eq!(Targets::from_flags(&on), Targets { recap: true, suggestion: true });
        let master_off = SettingsFlags { assist_enabled: false, ..on };
        assert!(!Targets::from_flags(&master_off).any());
        let recap_off = SettingsFlags { recap_enabled: false, ..on };
        assert_eq!(Targets::from_flags(&recap_off), Targets { recap: false, suggestion: true });
        let both_off = SettingsFlags { recap_enabled: false, suggestion_enabled: false, ..on };
        assert!(!Targets::from_flags(&both_off).any());
    }

    #[test]
    fn exchange_is_the_tail_reply_and_its_own_parent_only() {
        let list = messages(json!([
            user("m1", 1, "Old question about logging"),
            reply("m2", "m1", 2, "Old answer"),
            user("m3", 3, "Why is CI red?"),
            reply("m4", "m3", 4, "A flaky test; I pinned the seed."),
        ]));
        let exchange = LastExchange::from_messages(&list).unwrap();
        assert_eq!(exchange.assistant_id, "m4");
        assert_eq!(exchange.provider_id, "anthropic");
        assert_eq!(exchange.model_id, "claude");
        assert_eq!(exchange.transcript(), "User:\nWhy is CI red?\n\nAssistant:\nA flaky test; I pinned the seed.");
        assert!(!exchange.transcript().contains("Old"));
        assert!(!exchange.transcript().contains("thinking"), "reasoning parts are not text");
        assert_eq!(exchange.language_sample(), "Why is CI red?");
        assert_eq!(exchange.script_reference(), "Why is CI red?\nA flaky test; I pinned the seed.");
    }

    #[test]
    fn exchange_orders_by_creation_time_not_array_position() {
        // Fetched out of order: the newest by time is the reply m4.
        let list = messages(json!([reply("m4", "m3", 40, "new"), user("m3", 30, "q"), reply("m2", "m1", 20, "old")]));
        assert_eq!(LastExchange::from_messages(&list).unwrap().assistant_id, "m4");
    }

    #[test]
    fn exchange_parent_outside_window_or_wrong_role() {
        let list = messages(json!([reply("m9", "m1", 9, "Only the reply is visible")]));
        let exchange = LastExchange::from_messages(&list).unwrap();
        assert_eq!(exchange.transcript(), "Assistant:\nOnly the reply is visible");
        assert_eq!(exchange.language_sample(), "Only the reply is visible");
        // A parentID that names an assistant message is not a user message.
        let list = messages(json!([reply("m1", "", 1, "first"), reply("m2", "m1", 2, "second")]));
        assert_eq!(LastExchange::from_messages(&list).unwrap().user_text, "");
    }

    #[test]
    fn no_exchange_when_user_spoke_last_or_reply_unusable() {
        assert!(
            LastExchange::from_messages(&messages(json!([reply("m2", "m1", 2, "a"), user("m3", 3, "next")]))).is_none()
        );
        assert!(LastExchange::from_messages(&[]).is_none());
        let no_id = json!([{"info": {"role": "assistant", "time": {"created": 1, "completed": 2}}, "parts": [{"type": "text", "text": "x"}]}]);
        // A list holding an entry without an id is a failed read, not an exchange.
        assert!(Message::list_from_value(&no_id).is_none());
        let streaming = json!([{"info": {"id": "m1", "role": "assistant", "time": {"created": 1}}, "parts": [{"type": "text", "text": "x"}]}]);
        assert!(LastExchange::from_messages(&messages(streaming)).is_none());
        let aborted = json!([user("m1", 1, "do it"), {"info": {"id": "m2", "role": "assistant", "parentID": "m1", "time": {"created": 2},
                              "error": {"name": "MessageAbortedError"}}, "parts": []}]);
        let exchange = LastExchange::from_messages(&messages(aborted)).unwrap();
        assert_eq!(exchange.transcript(), "User:\ndo it");
        let empty = json!([user("m1", 1, "  "), reply("m2", "m1", 2, "\n")]);
        assert!(LastExchange::from_messages(&messages(empty)).is_none());
    }

    #[test]
    fn each_side_is_cut_to_the_part_limit() {
        let long = "語".repeat(TRANSCRIPT_PART_CHAR_LIMIT + 50);
        let list = messages(json!([user("m1", 1, &long), reply("m2", "m1", 2, &long)]));
        let exchange = LastExchange::from_messages(&list).unwrap();
        assert_eq!(exchange.user_text.chars().count(), TRANSCRIPT_PART_CHAR_LIMIT);
        assert_eq!(exchange.assistant_text.chars().count(), TRANSCRIPT_PART_CHAR_LIMIT);
    }

    #[test]
    fn tail_reply_skips_other_roles_and_stops_at_user() {
        let list = messages(json!([
            user("m1", 1, "q"),
            reply("m2", "m1", 2, "a"),
            {"info": {"id": "m3", "role": "system", "time": {"created": 3}}},
        ]));
        assert_eq!(tail_reply(&list).map(|m| m.id.as_str()), Some("m2"));
        let moved_on = messages(json!([reply("m2", "m1", 2, "a"), user("m3", 3, "q2")]));
        assert!(tail_reply(&moved_on).is_none());
    }

    const BOTH: Targets = Targets { recap: true, suggestion: true };

    #[test]
    fn parse_tolerates_prose_and_fences_and_clamps() {
        let text = format!(
            "Sure! Here it is:\n```json\n{{\"recap\": \"  {}  \", \"suggestion\": \"{}\"}}\n```\nHope that helps.",
            "r".repeat(400),
            "s".repeat(900)
        );
        let parsed = parse_reply(&text, BOTH, "reference");
        assert!(parsed.object_found);
        assert_eq!(parsed.fields.recap, "r".repeat(RECAP_CHAR_LIMIT));
        assert_eq!(parsed.fields.suggestion, "s".repeat(SUGGESTION_CHAR_LIMIT));
        // Clamped by chars, never splitting one.
        let wide = format!("{{\"recap\": \"{}\", \"suggestion\": \"ok\"}}", "日".repeat(400));
        let parsed = parse_reply(&wide, BOTH, "日本語");
        assert_eq!(parsed.fields.recap.chars().count(), RECAP_CHAR_LIMIT);
    }

    #[test]
    fn parse_reads_only_requested_string_fields() {
        let text = r#"{"recap": "Pinned the seed; CI green.", "suggestion": "Add a regression test for the seed."}"#;
        let recap_only = parse_reply(text, Targets { recap: true, suggestion: false }, "");
        assert_eq!(
            recap_only.fields,
            AssistFields { recap: "Pinned the seed; CI green.".into(), suggestion: String::new() }
        );
        let suggestion_only = parse_reply(text, Targets { recap: false, suggestion: true }, "");
        assert_eq!(suggestion_only.fields.recap, "");
        assert_eq!(suggestion_only.fields.suggestion, "Add a regression test for the seed.");
        let wrong_types = parse_reply(r#"{"recap": 5, "suggestion": ["x"]}"#, BOTH, "");
        assert!(wrong_types.object_found);
        assert!(wrong_types.fields.is_empty());
        let whitespace = parse_reply(r#"{"recap": "   ", "suggestion": "\n"}"#, BOTH, "");
        assert!(whitespace.fields.is_empty());
    }

    #[test]
    fn parse_without_object() {
        for text in ["", "no json here", "[1, 2]", "{broken", "```json\n[]\n```"] {
            let parsed = parse_reply(text, BOTH, "");
            assert!(!parsed.object_found, "{text}");
            assert!(parsed.fields.is_empty());
        }
    }

    #[test]
    fn language_guard_drops_each_field_on_its_own() {
        let reference = "Why is CI red?\nA flaky test; I pinned the seed.";
        let text =
            r#"{"recap": "시드를 고정해 CI가 통과합니다.", "suggestion": "Add a regression test for the seed."}"#;
        let parsed = parse_reply(text, BOTH, reference);
        assert_eq!(parsed.fields.recap, "");
        assert_eq!(parsed.fields.suggestion, "Add a regression test for the seed.");
        assert_eq!(parsed.dropped_for_script, vec!["recap"]);
        // The conversation's own script is fine, and Latin output is never flagged.
        let japanese = "CIが赤いのはなぜ？\nシードを固定しました。";
        let text = r#"{"recap": "シードを固定し、CIは緑です。", "suggestion": "Run cargo test again."}"#;
        let parsed = parse_reply(text, BOTH, japanese);
        assert_eq!(parsed.fields.recap, "シードを固定し、CIは緑です。");
        assert_eq!(parsed.fields.suggestion, "Run cargo test again.");
        assert!(parsed.dropped_for_script.is_empty());
        // Korean for a Japanese conversation is caught (Hangul is its own class).
        let text = r#"{"recap": "시드를 고정했습니다", "suggestion": "Проверьте тесты"}"#;
        let parsed = parse_reply(text, BOTH, japanese);
        assert!(parsed.fields.is_empty());
        assert_eq!(parsed.dropped_for_script, vec!["recap", "suggestion"]);
    }

    #[test]
    fn guard_runs_on_the_clamped_value() {
        // The foreign script sits past the clamp: what is stored is clean, so it is kept.
        let text = format!("{{\"recap\": \"{}Привет\"}}", "a".repeat(RECAP_CHAR_LIMIT));
        let parsed = parse_reply(&text, Targets { recap: true, suggestion: false }, "english");
        assert_eq!(parsed.fields.recap, "a".repeat(RECAP_CHAR_LIMIT));
    }

    #[test]
    fn payload_has_every_field() {
        let fields = AssistFields { recap: "r".into(), suggestion: String::new() };
        let payload = assist_payload(&fields, "msg_9", 1_732_000_000_123);
        assert_eq!(
            payload,
            json!({"recap": "r", "suggestion": "", "forMessageID": "msg_9", "generatedAt": 1_732_000_000_123u64})
        );
        assert_eq!(serde_json::to_string(&payload["generatedAt"]).unwrap(), "1732000000123");
    }
}
