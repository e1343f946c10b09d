//! The ids of the parts the runtime posts. OpenCode appends the parts of a repeated post of one
//! `messageID` to the stored message, unless a part carries an `id` it already holds, which it
//! replaces (docs/opencode.md, "Idempotent prompts"). So every part of a message the runtime may
//! post again (a retry, or a second host deriving the same message id) carries an id derived from
//! the message id: a re-post then leaves the message as it was. Pure.

use crate::record::check_id::{
    base62_fill, fnv1a, FNV_OFFSET_BASIS, FNV_SECOND_BASIS, HEX_DIGITS, ID_PREFIX, SUFFIX_CHARS,
};

/// What every OpenCode part id starts with.
const PART_PREFIX: &str = "prt_";

/// The id of part `index` (0-based) of the message `message_id`. The first part takes `prt_` and
/// the same 26 characters as the message id; a later part keeps the message id's 12-hex part and
/// takes 14 base-62 characters hashed from the message id and the index, so the parts of one
/// message differ and every host derives the same ids. `None` when the message id is not `msg_`
/// plus 26 ASCII letters and digits (a part id derived from it could be malformed).
pub fn part_id_for(message_id: &str, index: usize) -> Option<String> {
    let rest = message_id.strip_prefix(ID_PREFIX)?;
    if rest.len() != HEX_DIGITS + SUFFIX_CHARS || !rest.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    if index == 0 {
        return Some(format!("{PART_PREFIX}{rest}"));
    }
    let index_text = index.to_string();
    let parts: [&[u8]; 2] = [message_id.as_bytes(), index_text.as_bytes()];
    let value = u128::from(fnv1a(FNV_OFFSET_BASIS, &parts)) << 64 | u128::from(fnv1a(FNV_SECOND_BASIS, &parts));
    let mut suffix = [0u8; SUFFIX_CHARS];
    base62_fill(value, &mut suffix);
    Some(format!("{PART_PREFIX}{}{}", &rest[..HEX_DIGITS], std::str::from_utf8(&suffix).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "msg_22d3cae37002XpDQ7ZXEzK3ibZ";

    #[test]
    fn the_first_part_shares_the_message_ids_characters() {
        assert_eq!(part_id_for(ID, 0).as_deref(), Some("prt_22d3cae37002XpDQ7ZXEzK3ibZ"));
    }

    #[test]
    fn later_parts_are_distinct_and_stable() {
        let ids: Vec<String> = (0..4).map(|i| part_id_for(ID, i).unwrap()).collect();
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(id.len(), ID.len(), "{id}");
            assert!(id.starts_with("prt_22d3cae37002"), "{id}");
            assert_eq!(part_id_for(ID, i).as_ref(), Some(id), "every host derives the same id");
            assert!(ids.iter().filter(|other| *other == id).count() == 1, "distinct: {ids:?}");
        }
        assert_ne!(part_id_for("msg_22d3cae37002XpDQ7ZXEzK3ibY", 1), part_id_for(ID, 1));
    }

    #[test]
    fn malformed_message_ids_get_none() {
        for id in [
            "",
            "msg_",
            "msg_short",
            "prt_22d3cae37002XpDQ7ZXEzK3ibZ",
            "msg_22d3cae37002XpDQ7ZXEzK3ib-",
            "msg_22d3cae37002XpDQ7ZXEzK3ibZZ",
        ] {
            assert_eq!(part_id_for(id, 0), None, "{id}");
        }
    }
}
