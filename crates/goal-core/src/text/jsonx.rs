//! Tolerant extraction of one JSON object from small-model output.
//!
//! Small models wrap their JSON in prose, markdown fences or trailing commentary even when told
//! not to. Both the goal audit and the session assist share this one extractor so that they
//! accept exactly the same replies.
//!
//! Algorithm (longest suffix first):
//! 1. trim the text and keep at most [`MAX_INPUT_BYTES`] of it (cut on a char boundary);
//! 2. if a fence (```` ```json ```` or ```` ``` ````) is present, use its body;
//! 3. find the first `{`;
//! 4. walk `end` from the end of the text down towards that `{`; every time the byte just before
//!    `end` is `}`, try to parse `text[start..end]`; the first slice that parses wins.
//!
//! Bounds: at most [`MAX_PARSE_ATTEMPTS`] parse attempts are made per candidate text, each on at
//! most [`MAX_INPUT_BYTES`], so hostile or huge input costs a bounded, small amount of work
//! instead of growing quadratically. serde_json's own recursion limit protects against deeply
//! nested input.

use serde_json::{Map, Value};

/// Maximum number of bytes of the (trimmed) model output that the extractor looks at.
///
/// A verdict or an assist payload is a few hundred bytes; anything past 64 KiB is noise.
pub const MAX_INPUT_BYTES: usize = 64 * 1024;

/// Maximum number of `JSON` parse attempts per candidate text.
///
/// Each attempt is linear in the slice length, so this cap keeps the worst case linear too.
pub const MAX_PARSE_ATTEMPTS: usize = 256;

/// Extracts the first JSON object embedded in `text`, scanning the longest candidate first.
///
/// Returns `None` when no `{ ... }` slice parses as a JSON object (top-level arrays, plain
/// prose and broken JSON all give `None`). When a fence is present its body is tried first and,
/// if that yields nothing, the whole text is tried as a fallback (a model sometimes fences an
/// example and prints the real answer outside it). Never panics, whatever the input.
pub fn extract_json_object(text: &str) -> Option<Map<String, Value>> {
    let trimmed = truncate_to_boundary(text.trim(), MAX_INPUT_BYTES);
    if let Some(body) = fence_body(trimmed) {
        if let Some(found) = scan_object(body) {
            return Some(found);
        }
    }
    scan_object(trimmed)
}

/// Cuts `text` to at most `max` bytes without splitting a UTF-8 sequence.
fn truncate_to_boundary(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    // A char is at most 4 bytes, so this loop runs at most 3 times.
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Returns the body of the first closed markdown fence, without an optional `json` tag.
///
/// Mirrors the reference's ```` /```(?:json)?\s*([\s\S]*?)```/i ````: an unclosed fence does
/// not count (the caller then scans the whole text, which still finds the object).
fn fence_body(text: &str) -> Option<&str> {
    const FENCE: &str = "```";
    let open = text.find(FENCE)?;
    let mut body_start = open + FENCE.len();
    // The tag check works on bytes; "json" is ASCII, so a match ends on a char boundary.
    if text.as_bytes().get(body_start..body_start + 4).is_some_and(|tag| tag.eq_ignore_ascii_case(b"json")) {
        body_start += 4;
    }
    let rest = &text[body_start..];
    let close = rest.find(FENCE)?;
    Some(rest[..close].trim())
}

/// Longest-suffix-first scan from the first `{` of `text`.
fn scan_object(text: &str) -> Option<Map<String, Value>> {
    let start = text.find('{')?;
    let bytes = text.as_bytes();
    let mut attempts = 0usize;
    // `}` is ASCII: when bytes[end - 1] == b'}', `end` is a char boundary, and `start` is one
    // too (it is the position of an ASCII `{`), so the slice below can never panic.
    for end in (start + 1..=bytes.len()).rev() {
        if bytes[end - 1] != b'}' {
            continue;
        }
        if attempts == MAX_PARSE_ATTEMPTS {
            return None;
        }
        attempts += 1;
        if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(&text[start..end]) {
            return Some(map);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn verdict(map: &Map<String, Value>) -> Option<&str> {
        map.get("verdict").and_then(Value::as_str)
    }

    #[test]
    fn plain_object() {
        let map = extract_json_object(r#"{"verdict":"continue","note":"x"}"#).unwrap();
        assert_eq!(verdict(&map), Some("continue"));
        assert_eq!(map.get("note").and_then(Value::as_str), Some("x"));
    }

    #[test]
    fn json_fence_body_is_used() {
        let text = "Here you go:\n```json\n{\"verdict\": \"complete\", \"note\": \"done\"}\n```\nbye";
        assert_eq!(verdict(&extract_json_object(text).unwrap()), Some("complete"));
    }

    #[test]
    fn bare_and_uppercase_fences() {
        let bare = "```\n{\"verdict\": \"blocked\"}\n```";
        assert_eq!(verdict(&extract_json_object(bare).unwrap()), Some("blocked"));
        let upper = "```JSON\n{\"verdict\": \"continue\"}\n```";
        assert_eq!(verdict(&extract_json_object(upper).unwrap()), Some("continue"));
    }

    #[test]
    fn fence_body_wins_over_text_outside() {
        let text = "{\"verdict\":\"outside\"} ```json\n{\"verdict\":\"inside\"}\n```";
        assert_eq!(verdict(&extract_json_object(text).unwrap()), Some("inside"));
    }

    #[test]
    fn falls_back_to_whole_text_when_fence_has_no_object() {
        let text = "```\nnot json\n```\n{\"verdict\":\"continue\"}";
        assert_eq!(verdict(&extract_json_object(text).unwrap()), Some("continue"));
    }

    #[test]
    fn unclosed_fence_still_finds_object() {
        let text = "```json\n{\"verdict\":\"continue\"}";
        assert_eq!(verdict(&extract_json_object(text).unwrap()), Some("continue"));
    }

    #[test]
    fn trailing_prose_with_braces_is_skipped() {
        let text = "{\"verdict\":\"continue\",\"note\":\"ok\"} trailing {junk} }";
        let map = extract_json_object(text).unwrap();
        assert_eq!(verdict(&map), Some("continue"));
        assert_eq!(map.len(), 2);
    }

    #[test]
    fn longest_suffix_first_keeps_nested_object_whole() {
        // A shortest-first scan would stop at the inner `}` and fail or return a fragment;
        // the longest valid slice is the whole outer object.
        let text = "prefix {\"a\":{\"b\":1},\"c\":2} suffix";
        let map = extract_json_object(text).unwrap();
        assert_eq!(map.get("c").and_then(Value::as_i64), Some(2));
        assert!(map.get("a").is_some_and(Value::is_object));
    }

    #[test]
    fn longest_parsable_suffix_wins_over_shorter_one() {
        // Two objects back to back: the slice spanning both does not parse, so the scan
        // moves on to shorter slices and returns the first object, as the reference does.
        let text = "{\"verdict\":\"first\"} {\"verdict\":\"second\"}";
        assert_eq!(verdict(&extract_json_object(text).unwrap()), Some("first"));
    }

    #[test]
    fn arrays_and_scalars_are_rejected() {
        assert!(extract_json_object("[1, 2, 3]").is_none());
        assert!(extract_json_object("[\"continue\"]").is_none());
        assert!(extract_json_object("42").is_none());
        assert!(extract_json_object("\"text\"").is_none());
        assert!(extract_json_object("null").is_none());
    }

    #[test]
    fn garbage_gives_none() {
        assert!(extract_json_object("").is_none());
        assert!(extract_json_object("   \n\t ").is_none());
        assert!(extract_json_object("no json here").is_none());
        assert!(extract_json_object("{ not: json }").is_none());
        assert!(extract_json_object("{\"a\": 1,}").is_none()); // trailing comma
        assert!(extract_json_object("}}}{").is_none());
        assert!(extract_json_object("```json\n```").is_none());
    }

    #[test]
    fn multibyte_text_never_panics() {
        let text = "結論：{\"verdict\":\"continue\",\"note\":\"進行中 — ✓\"}é}ü";
        let map = extract_json_object(text).unwrap();
        assert_eq!(map.get("note").and_then(Value::as_str), Some("進行中 — ✓"));
        for s in ["é{", "{é", "{}é}", "```é```", "```jsoné{}```", "🦀{🦀}🦀"] {
            let _ = extract_json_object(s);
        }
    }

    #[test]
    fn input_cap_cuts_on_char_boundary() {
        // Put a 3-byte char across the 64 KiB boundary.
        let mut text = String::from("{");
        text.push_str(&"a".repeat(MAX_INPUT_BYTES - 2));
        text.push('語');
        text.push('}');
        assert!(extract_json_object(&text).is_none());
        assert_eq!(truncate_to_boundary(&text, MAX_INPUT_BYTES).len(), MAX_INPUT_BYTES - 1);
    }

    #[test]
    fn object_past_the_input_cap_is_ignored() {
        let text = format!("{}{{\"verdict\":\"continue\"}}", " x".repeat(MAX_INPUT_BYTES));
        assert!(extract_json_object(&text).is_none());
    }

    #[test]
    fn huge_hostile_input_is_fast() {
        // Many `}` after an unterminated string: every attempt scans far, so without caps
        // this would be quadratic.
        let mut text = String::from("{\"note\":\"");
        text.push_str(&"x}".repeat(2_000_000));
        let started = Instant::now();
        assert!(extract_json_object(&text).is_none());
        // Deep nesting that fits under the cap: serde_json's recursion limit rejects it.
        let deep = "{".repeat(30_000) + &"}".repeat(30_000);
        assert!(extract_json_object(&deep).is_none());
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn attempt_cap_gives_up_after_many_closing_braces() {
        let text = format!("{{\"verdict\":\"continue\"}}{}", " }".repeat(MAX_PARSE_ATTEMPTS + 1));
        assert!(extract_json_object(&text).is_none());
        let text = format!("{{\"verdict\":\"continue\"}}{}", " }".repeat(MAX_PARSE_ATTEMPTS - 1));
        assert_eq!(verdict(&extract_json_object(&text).unwrap()), Some("continue"));
    }
}
