//! The message ids of acceptance-check runs, and how the runtime recognises its own runs in a
//! transcript. A run's user message carries an id derived from the tail it checks (like a
//! continuation's: the tail's 12-hex part advanced by one), so every host computes the same id
//! and a run already in the transcript is found again instead of run twice. The 14-character
//! suffix starts with a fixed mark, so the run's messages (its user message, and the reply whose
//! `parentID` names it) are never taken for a user's message or an agent's reply. Pure.

use serde_json::Value;

/// What every OpenCode message id starts with.
pub(crate) const ID_PREFIX: &str = "msg_";
/// Hex digits after the prefix (time and a per-process counter).
pub(crate) const HEX_DIGITS: usize = 12;
/// Base-62 characters after the hex part.
pub(crate) const SUFFIX_CHARS: usize = 14;
/// The first characters of a check run's id suffix.
pub const CHECK_ID_MARK: &str = "zCHK";
/// The alphabet of id suffixes.
const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// FNV-1a's 64-bit offset basis.
pub(crate) const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
/// A second offset basis, for a second hash independent of the first (128 bits in all).
pub(crate) const FNV_SECOND_BASIS: u64 = 0x6c62_272e_07bb_0142;

/// FNV-1a, 64 bits, of `bytes` from the offset basis: the crate's one stable hash. Written out
/// here (not std's hasher, whose keys are random per process) so every process and host computes
/// the same value: message ids here and in record/continuation_id.rs, evidence keys and reply
/// prints (evidence/), park jitter (goal/decide/limit_rules/reset.rs).
pub(crate) fn fnv1a_bytes(bytes: &[u8]) -> u64 {
    fnv1a_from(FNV_OFFSET_BASIS, bytes)
}

/// FNV-1a over `bytes`, continuing from `hash`.
fn fnv1a_from(mut hash: u64, bytes: &[u8]) -> u64 {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(PRIME);
    }
    hash
}

/// FNV-1a over several `parts` from the offset `basis`, each part closed by a separator byte
/// that cannot occur in an id, which keeps ("ab","c") apart from ("a","bc").
pub(crate) fn fnv1a(basis: u64, parts: &[&[u8]]) -> u64 {
    parts.iter().fold(basis, |hash, part| fnv1a_from(fnv1a_from(hash, part), &[0xff]))
}

/// `out` filled with the base-62 digits of `value`, most significant first (as many low digits
/// as `out` holds).
pub(crate) fn base62_fill(mut value: u128, out: &mut [u8]) {
    for slot in out.iter_mut().rev() {
        *slot = BASE62[(value % 62) as usize];
        value /= 62;
    }
}

/// The id of check `index` (0-based) with `command` for goal `goal_id` over tail `tail_id`:
/// `msg_` + the tail's hex part plus one + [`CHECK_ID_MARK`] + 10 base-62 characters hashed from
/// goal, tail, index and command. `None` when the tail id has an unknown format.
pub fn check_message_id(goal_id: &str, tail_id: &str, index: usize, command: &str) -> Option<String> {
    let rest = tail_id.strip_prefix(ID_PREFIX)?;
    if rest.len() != HEX_DIGITS + SUFFIX_CHARS || !rest.is_ascii() {
        return None;
    }
    let hex = &rest[..HEX_DIGITS];
    if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let next = u64::from_str_radix(hex, 16).ok()?.checked_add(1).filter(|n| *n <= 0xffff_ffff_ffff)?;
    let index_text = index.to_string();
    let parts: [&[u8]; 4] = [goal_id.as_bytes(), tail_id.as_bytes(), index_text.as_bytes(), command.as_bytes()];
    let value = u128::from(fnv1a(FNV_OFFSET_BASIS, &parts)) << 64 | u128::from(fnv1a(FNV_SECOND_BASIS, &parts));
    let mut suffix = [0u8; SUFFIX_CHARS - CHECK_ID_MARK.len()];
    base62_fill(value, &mut suffix);
    Some(format!("{ID_PREFIX}{next:012x}{CHECK_ID_MARK}{}", std::str::from_utf8(&suffix).ok()?))
}

/// The id of the claim of a check run (see `Executor::claim` in `goal/act/runs.rs`): `msg_`, the
/// run's 12-hex part, [`CHECK_ID_MARK`], then 10 base-62 characters hashed from the run's id and
/// `salt` (empty for the first claim; the abandoned claim's winning part id for a later one).
/// Marked like a run, so the tail logic and the evidence digest skip it. `None` when `check_id` is not a run's id.
pub fn check_claim_id(check_id: &str, salt: &str) -> Option<String> {
    if !is_check_message_id(check_id) {
        return None;
    }
    let hex = &check_id[ID_PREFIX.len()..ID_PREFIX.len() + HEX_DIGITS];
    let parts: [&[u8]; 3] = [b"claim", check_id.as_bytes(), salt.as_bytes()];
    let value = u128::from(fnv1a(FNV_OFFSET_BASIS, &parts)) << 64 | u128::from(fnv1a(FNV_SECOND_BASIS, &parts));
    let mut suffix = [0u8; SUFFIX_CHARS - CHECK_ID_MARK.len()];
    base62_fill(value, &mut suffix);
    Some(format!("{ID_PREFIX}{hex}{CHECK_ID_MARK}{}", std::str::from_utf8(&suffix).ok()?))
}

/// Whether `id` is a check run's id (see [`check_message_id`]).
pub fn is_check_message_id(id: &str) -> bool {
    let Some(rest) = id.strip_prefix(ID_PREFIX) else { return false };
    rest.len() == HEX_DIGITS + SUFFIX_CHARS
        && rest.is_ascii()
        && rest[..HEX_DIGITS].bytes().all(|b| b.is_ascii_hexdigit())
        && rest[HEX_DIGITS..].starts_with(CHECK_ID_MARK)
        && rest[HEX_DIGITS..].bytes().all(|b| b.is_ascii_alphanumeric())
}

/// Whether a message `info` belongs to a check run: the run's user message, or the reply to it.
pub fn is_check_info(info: &Value) -> bool {
    let id_of = |key: &str| info.get(key).and_then(Value::as_str).unwrap_or("");
    is_check_message_id(id_of("id")) || is_check_message_id(id_of("parentID"))
}

/// Whether a message `{info, parts}` from a transcript belongs to a check run.
pub fn is_check_message(entry: &Value) -> bool {
    entry.get("info").is_some_and(is_check_info)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TAIL: &str = "msg_22d3cae37001XpDQ7ZXEzK3ibZ";

    #[test]
    fn the_hash_is_standard_fnv1a_and_ids_are_fixed() {
        // Published FNV-1a 64-bit test vectors.
        assert_eq!(fnv1a_bytes(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a_bytes(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a_bytes(b"foobar"), 0x8594_4171_f739_67e8);
        // Ids computed by an independent implementation of the derivation: a change of the hash
        // would make two versions of the runtime post different ids for one tail (record/continuation_id.rs
        // pins a continuation id the same way).
        let tail = "msg_0123456789abABCDEFGHIJKLMN";
        assert_eq!(check_message_id("g", tail, 0, "npm test").as_deref(), Some("msg_0123456789aczCHKkvcMitYRtl"));
    }

    #[test]
    fn ids_follow_the_tail_and_differ_per_check() {
        let first = check_message_id("g", TAIL, 0, "npm test").unwrap();
        assert!(first.starts_with("msg_22d3cae37002zCHK"), "{first}");
        assert_eq!(first.len(), TAIL.len());
        assert_eq!(check_message_id("g", TAIL, 0, "npm test").unwrap(), first, "every host derives the same id");
        assert_ne!(check_message_id("g", TAIL, 1, "npm test").unwrap(), first);
        assert_ne!(check_message_id("g", TAIL, 0, "npm run lint").unwrap(), first);
        assert_ne!(check_message_id("h", TAIL, 0, "npm test").unwrap(), first);
        assert!(is_check_message_id(&first));
        assert!(check_message_id("g", "msg_short", 0, "x").is_none());
        assert!(check_message_id("g", "msg_ffffffffffffXpDQ7ZXEzK3ibZ", 0, "x").is_none());
    }

    #[test]
    fn claims_are_marked_stable_and_distinct() {
        let run = check_message_id("g", TAIL, 0, "npm test").unwrap();
        let claim = check_claim_id(&run, "").unwrap();
        assert!(is_check_message_id(&claim), "{claim}");
        assert_eq!(&claim[..16], &run[..16]);
        assert_ne!(claim, run);
        assert_eq!(check_claim_id(&run, "").unwrap(), claim, "every host derives the same claim");
        assert_ne!(check_claim_id(&run, "prt_1").unwrap(), claim, "a later claim has its own id");
        assert_eq!(check_claim_id(TAIL, ""), None);
    }

    #[test]
    fn only_check_runs_are_recognised() {
        let id = check_message_id("g", TAIL, 2, "make").unwrap();
        assert!(!is_check_message_id(TAIL));
        assert!(!is_check_message_id("msg_22d3cae37002zCH"));
        assert!(!is_check_message_id(""));
        assert!(is_check_message(&json!({"info": {"id": id, "role": "user"}})));
        assert!(is_check_message(&json!({"info": {"id": "msg_x", "parentID": id, "role": "assistant"}})));
        assert!(!is_check_message(&json!({"info": {"id": TAIL, "parentID": "msg_22d3cae37000AAAAAAAAAAAAAA"}})));
        assert!(!is_check_message(&json!({"parts": []})));
    }
}
