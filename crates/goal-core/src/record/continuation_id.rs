//! The message id of a continuation: every host and every retry derives the same id from the
//! same observed state, the newest assistant reply's id (the tail) advanced by one, plus a
//! suffix hashed from goal id and tail id. OpenCode stores a `prompt_async` under a
//! client-chosen `messageID` and answers a repeated id once (`docs/opencode.md`, "Idempotent
//! prompts"): one message, one turn, whenever the repeat arrives. Pure.

use crate::record::check_id::{
    base62_fill, fnv1a, FNV_OFFSET_BASIS, FNV_SECOND_BASIS, HEX_DIGITS, ID_PREFIX, SUFFIX_CHARS,
};

/// The continuation id for a goal over a tail reply: `msg_` + the tail's 12-hex time-and-counter
/// part advanced by one (lowercase, carrying) + 14 base-62 characters hashed from goal id and
/// tail id. `None` when the tail id is not `msg_` + 12 hex + 14 base-62 characters, or its hex
/// part is `ffffffffffff` (nothing after it): the caller falls back to classified dispatch.
pub fn continuation_message_id(goal_id: &str, tail_id: &str) -> Option<String> {
    let rest = tail_id.strip_prefix(ID_PREFIX)?;
    if rest.len() != HEX_DIGITS + SUFFIX_CHARS || !rest.is_ascii() {
        return None;
    }
    let (hex, suffix) = rest.split_at(HEX_DIGITS);
    if !hex.bytes().all(|b| b.is_ascii_hexdigit()) || !suffix.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    let counter = u64::from_str_radix(hex, 16).ok()?;
    let next = counter.checked_add(1).filter(|n| *n <= 0xffff_ffff_ffff)?;
    // Two independent 64-bit hashes: 128 bits, of which 14 base-62 digits keep about 83.
    let high = fnv1a(FNV_OFFSET_BASIS, &[goal_id.as_bytes(), tail_id.as_bytes()]);
    let low = fnv1a(FNV_SECOND_BASIS, &[tail_id.as_bytes(), goal_id.as_bytes()]);
    Some(format!("{ID_PREFIX}{next:012x}{}", base62_suffix(high, low)))
}

/// The continuation id for a tail of any format (spec: idempotent ids for any tail): the
/// OpenCode-format derivation of [`continuation_message_id`] when the tail id has that format;
/// otherwise, when the tail has an id and a creation time, `msg_` + 12 hex digits made the way
/// OpenCode makes its own (the creation time in ms times 4096, plus one, in 48 bits) + 14
/// base-62 characters hashed from goal id, tail id and creation time. Every host that sees the
/// same tail computes the same id. `None` only for a tail with neither an id nor a creation time:
/// the caller then falls back to classified dispatch.
pub fn continuation_message_id_for(goal_id: &str, tail_id: &str, tail_created: Option<f64>) -> Option<String> {
    if let Some(id) = continuation_message_id(goal_id, tail_id) {
        return Some(id);
    }
    let created = tail_created.filter(|t| t.is_finite() && *t > 0.0 && *t < 1e15)?;
    if tail_id.is_empty() {
        return None;
    }
    let created_ms = created.floor() as u64;
    let counter = (created_ms.wrapping_mul(0x1000).wrapping_add(1)) & 0xffff_ffff_ffff;
    let created_text = created_ms.to_string();
    let parts: [&[u8]; 3] = [goal_id.as_bytes(), tail_id.as_bytes(), created_text.as_bytes()];
    let high = fnv1a(FNV_OFFSET_BASIS, &parts);
    let low = fnv1a(FNV_SECOND_BASIS, &[parts[2], parts[1], parts[0]]);
    Some(format!("{ID_PREFIX}{counter:012x}{}", base62_suffix(high, low)))
}

/// 14 base-62 characters from two 64-bit hashes.
fn base62_suffix(high: u64, low: u64) -> String {
    let mut out = [0u8; SUFFIX_CHARS];
    base62_fill((u128::from(high) << 64) | u128::from(low), &mut out);
    out.iter().map(|b| *b as char).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_matches_an_independent_derivation() {
        // Computed outside this crate from the documented derivation (FNV-1a over goal and tail
        // from two offset bases, 14 base-62 digits).
        let id = continuation_message_id("g", "msg_0123456789abABCDEFGHIJKLMN");
        assert_eq!(id.as_deref(), Some("msg_0123456789acJPIdZndBs9ulhK"));
    }

    #[test]
    fn the_id_advances_the_counter_and_is_stable() {
        let id = continuation_message_id("goal-1", "msg_22d3cae37001XpDQ7ZXEzK3ibZ").expect("known format");
        assert!(id.starts_with("msg_22d3cae37002"), "{id}");
        assert_eq!(id.len(), 4 + 12 + 14);
        assert!(id[16..].bytes().all(|b| b.is_ascii_alphanumeric()));
        // Every host and every retry derives the same id (these values are fixed: a change of
        // the hash would make two versions of the runtime post different ids).
        assert_eq!(continuation_message_id("goal-1", "msg_22d3cae37001XpDQ7ZXEzK3ibZ").as_deref(), Some(id.as_str()));
        assert_ne!(
            continuation_message_id("goal-2", "msg_22d3cae37001XpDQ7ZXEzK3ibZ"),
            Some(id.clone()),
            "goal id matters"
        );
        assert_ne!(
            continuation_message_id("goal-1", "msg_22d3cae37001XpDQ7ZXEzK3ibY").map(|s| s[16..].to_string()),
            Some(id[16..].to_string())
        );
        // Ids sort after the tail.
        assert!(id.as_str() > "msg_22d3cae37001XpDQ7ZXEzK3ibZ");
    }

    #[test]
    fn the_counter_carries_in_lowercase() {
        let id = continuation_message_id("g", "msg_0000000000ffAAAAAAAAAAAAAA").unwrap();
        assert!(id.starts_with("msg_000000000100"), "{id}");
        let id = continuation_message_id("g", "msg_ABCDEF0FFFFFAAAAAAAAAAAAAA").unwrap();
        assert!(id.starts_with("msg_abcdef100000"), "{id}");
    }

    #[test]
    fn unknown_formats_fall_back() {
        for tail in [
            "",
            "msg_",
            "m1",
            "msg_22d3cae37001XpDQ7ZXEzK3ib",   // 13 suffix chars
            "msg_22d3cae37001XpDQ7ZXEzK3ibZZ", // 15
            "msg_22d3cae3700gXpDQ7ZXEzK3ibZ",  // not hex
            "msg_22d3cae37001XpDQ7ZXEz-3ibZ",  // not base 62
            "ses_22d3cae37001XpDQ7ZXEzK3ibZ",  // not a message id
            "msg_ffffffffffffXpDQ7ZXEzK3ibZ",  // nothing after it
            "msg_22d3cae37001XpDQ7ZXEzK3ibé",  // not ASCII
        ] {
            assert_eq!(continuation_message_id("g", tail), None, "{tail:?}");
        }
    }

    #[test]
    fn tails_of_any_format_get_a_stable_id_from_id_and_creation_time() {
        let known = "msg_22d3cae37001XpDQ7ZXEzK3ibZ";
        assert_eq!(continuation_message_id_for("g", known, Some(5.0)), continuation_message_id("g", known));
        let created = Some(1_764_600_000_123.0);
        let id = continuation_message_id_for("g", "m1", created).expect("derived from id and time");
        assert_eq!(id.len(), 4 + HEX_DIGITS + SUFFIX_CHARS);
        assert!(id.starts_with("msg_") && id[4..16].bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(
            u64::from_str_radix(&id[4..16], 16).unwrap(),
            (1_764_600_000_123u64 * 0x1000 + 1) & 0xffff_ffff_ffff
        );
        assert!(id[16..].bytes().all(|b| b.is_ascii_alphanumeric()));
        // Same tail on two hosts: same id; another goal, tail or time: another id.
        assert_eq!(continuation_message_id_for("g", "m1", created), Some(id.clone()));
        assert_ne!(continuation_message_id_for("h", "m1", created), Some(id.clone()));
        assert_ne!(continuation_message_id_for("g", "m2", created), Some(id.clone()));
        assert_ne!(continuation_message_id_for("g", "m1", Some(1_764_600_000_124.0)), Some(id.clone()));
        // The known format with nothing after it, or any other format: derived the same way.
        assert!(continuation_message_id_for("g", "msg_ffffffffffffXpDQ7ZXEzK3ibZ", created).is_some());
        // Neither a usable id nor a usable time: classified dispatch.
        for (tail, created) in
            [("", Some(5.0)), ("m1", None), ("m1", Some(f64::NAN)), ("m1", Some(-1.0)), ("m1", Some(1e300))]
        {
            assert_eq!(continuation_message_id_for("g", tail, created), None, "{tail:?} {created:?}");
        }
    }
}
