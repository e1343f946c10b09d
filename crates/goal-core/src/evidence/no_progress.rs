//! The per-turn progress fingerprint and the no-progress breaker: a turn with no successful tool
//! call, no change to the session diff and a reply near-identical to the previous one adds to
//! the streak; the streak is kept in the goal (`progress`) so a second tick over the same tail
//! recomputes the same answer. Pure.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::digest::{hex64, Cursor, Digest};
use crate::record::check_id::fnv1a_bytes;
use crate::record::Goal;
use crate::text::truncate_chars;

/// Trigram hashes kept per reply (bottom-k sketch; exact for replies of up to this many trigrams).
const SKETCH_SIZE: usize = 48;
/// Similarity at or above which two replies are near-identical.
pub const NEAR_IDENTICAL: f64 = 0.9;
/// Lower case, white space collapsed.
pub fn normalize_reply(text: &str) -> String {
    text.split_whitespace().map(str::to_lowercase).collect::<Vec<_>>().join(" ")
}

/// A reply's fingerprint: the hash of its normalised text and a bottom-k sketch of its word
/// trigrams.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReplyPrint {
    /// Hash of the normalised text.
    pub hash: String,
    /// The smallest trigram hashes, ascending.
    pub sketch: Vec<u32>,
}

impl ReplyPrint {
    /// Fingerprints a reply.
    pub fn of(text: &str) -> ReplyPrint {
        let normalized = normalize_reply(text);
        let words: Vec<&str> = normalized.split(' ').filter(|w| !w.is_empty()).collect();
        let mut shingles = BTreeSet::new();
        if words.len() < 3 {
            shingles.insert(fnv1a_bytes(normalized.as_bytes()) as u32);
        } else {
            for trigram in words.windows(3) {
                shingles.insert(fnv1a_bytes(trigram.join(" ").as_bytes()) as u32);
            }
        }
        ReplyPrint {
            hash: hex64(fnv1a_bytes(normalized.as_bytes())),
            sketch: shingles.into_iter().take(SKETCH_SIZE).collect(),
        }
    }

    /// Similarity in [0, 1]: 1 when the normalised texts are equal, else the (estimated) Jaccard
    /// similarity of the word-trigram sets.
    pub fn similarity(&self, other: &ReplyPrint) -> f64 {
        if !self.hash.is_empty() && self.hash == other.hash {
            return 1.0;
        }
        let mut union: Vec<u32> = self.sketch.iter().chain(other.sketch.iter()).copied().collect();
        union.sort_unstable();
        union.dedup();
        union.truncate(SKETCH_SIZE);
        if union.is_empty() {
            return 0.0;
        }
        let both = union
            .iter()
            .filter(|h| self.sketch.binary_search(h).is_ok() && other.sketch.binary_search(h).is_ok())
            .count();
        both as f64 / union.len() as f64
    }

    /// The stored form: the hash and the sketch as hex.
    pub(super) fn to_value(&self) -> Value {
        json!({"hash": self.hash, "sketch": self.sketch.iter().map(|h| format!("{h:08x}")).collect::<String>()})
    }

    /// Reads the stored form back; `None` when it is malformed.
    pub(super) fn from_value(value: Option<&Value>) -> Option<ReplyPrint> {
        let value = value?;
        let hash = value.get("hash")?.as_str()?.to_string();
        let text = value.get("sketch")?.as_str()?;
        if !text.len().is_multiple_of(8) || !text.is_ascii() {
            return None;
        }
        let mut sketch: Vec<u32> =
            (0..text.len()).step_by(8).filter_map(|i| u32::from_str_radix(&text[i..i + 8], 16).ok()).collect();
        sketch.sort_unstable();
        sketch.dedup();
        Some(ReplyPrint { hash, sketch })
    }
}

/// One goal turn's fingerprint.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TurnPrint {
    /// Key of the session diff after the turn ("" when unknown).
    pub files_key: String,
    /// Successful tool calls in the turn.
    pub successful_tools: usize,
    /// The fingerprint of the turn's final reply text.
    pub reply: ReplyPrint,
}

impl TurnPrint {
    /// The fingerprint of the turn a digest covers, with its final reply text.
    pub fn of(digest: &Digest, reply_text: &str) -> TurnPrint {
        TurnPrint {
            files_key: digest.files_key.clone(),
            successful_tools: digest.successful_tool_calls,
            reply: ReplyPrint::of(reply_text),
        }
    }
}

/// The breaker's memory, kept in the goal (`progress`): the streak and print after the turn
/// ending at `tail`, and the ones before it, so a second tick over the same tail recomputes the
/// same answer instead of counting the turn twice.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProgressState {
    /// The tail this state was computed for.
    pub tail: String,
    /// That tail's `time.created`.
    pub tail_created: f64,
    /// The digest window's start for that tail.
    pub cursor: Cursor,
    /// No-progress streak including `tail`'s turn.
    pub streak: u32,
    /// That turn's print.
    pub print: Option<TurnPrint>,
    /// Streak before `tail`'s turn.
    pub previous_streak: u32,
    /// Print of the turn before.
    pub previous: Option<TurnPrint>,
}

fn print_value(print: &Option<TurnPrint>) -> Value {
    match print {
        Some(p) => json!({"files": p.files_key, "tools": p.successful_tools, "reply": p.reply.to_value()}),
        None => Value::Null,
    }
}

fn print_from(value: Option<&Value>) -> Option<TurnPrint> {
    let value = value.filter(|v| v.is_object())?;
    Some(TurnPrint {
        files_key: value.get("files").and_then(Value::as_str).unwrap_or("").to_string(),
        successful_tools: value.get("tools").and_then(Value::as_u64).unwrap_or(0) as usize,
        reply: ReplyPrint::from_value(value.get("reply"))?,
    })
}

impl ProgressState {
    /// Reads the goal's state (absent or malformed: a fresh start).
    pub fn of_goal(goal: &Goal) -> ProgressState {
        let Some(value) = goal.progress.get() else {
            return ProgressState::default();
        };
        let count = |key: &str| value.get(key).and_then(Value::as_u64).unwrap_or(0).min(10_000) as u32;
        ProgressState {
            tail: value.get("tail").and_then(Value::as_str).unwrap_or("").to_string(),
            tail_created: value.get("tailCreated").and_then(Value::as_f64).filter(|n| n.is_finite()).unwrap_or(0.0),
            cursor: Cursor {
                after_id: value.get("since").and_then(Value::as_str).unwrap_or("").to_string(),
                after_created: value
                    .get("sinceCreated")
                    .and_then(Value::as_f64)
                    .filter(|n| n.is_finite())
                    .unwrap_or(0.0),
            },
            streak: count("streak"),
            print: print_from(value.get("print")),
            previous_streak: count("previousStreak"),
            previous: print_from(value.get("previous")),
        }
    }

    /// The stored form.
    pub fn to_value(&self) -> Value {
        json!({
            "tail": self.tail,
            "tailCreated": self.tail_created,
            "since": self.cursor.after_id,
            "sinceCreated": self.cursor.after_created,
            "streak": self.streak,
            "print": print_value(&self.print),
            "previousStreak": self.previous_streak,
            "previous": print_value(&self.previous),
        })
    }

    /// Where the digest for `tail` starts: after the previous turn's tail, or where the same
    /// tail's digest started when it is judged again.
    pub fn cursor_for(&self, tail: &str, goal_created_at: f64) -> Cursor {
        if self.tail == tail {
            return self.cursor.clone();
        }
        if self.tail.is_empty() {
            return Cursor { after_id: String::new(), after_created: goal_created_at };
        }
        // The creation time only matters when the previous tail scrolled out of the window.
        Cursor { after_id: self.tail.clone(), after_created: self.tail_created.max(goal_created_at) }
    }
}

/// Whether a turn moved anything: a successful tool call, or a diff that differs from the
/// previous turn's.
pub fn made_progress(previous: Option<&TurnPrint>, current: &TurnPrint) -> bool {
    if current.successful_tools > 0 {
        return true;
    }
    matches!(previous, Some(p) if !current.files_key.is_empty() && !p.files_key.is_empty() && p.files_key != current.files_key)
}

/// The breaker's next state for the turn ending at `tail`.
pub fn advance(
    state: &ProgressState,
    tail: &str,
    tail_created: f64,
    cursor: Cursor,
    print: TurnPrint,
) -> ProgressState {
    let (base_streak, base_print) = if state.tail == tail {
        (state.previous_streak, state.previous.clone())
    } else {
        (state.streak, state.print.clone())
    };
    let streak = if made_progress(base_print.as_ref(), &print) {
        0
    } else {
        match &base_print {
            Some(previous) if base_streak > 0 && previous.reply.similarity(&print.reply) >= NEAR_IDENTICAL => {
                base_streak.saturating_add(1)
            }
            _ => 1,
        }
    };
    ProgressState {
        tail: tail.to_string(),
        tail_created,
        cursor,
        streak,
        print: Some(print),
        previous_streak: base_streak,
        previous: base_print,
    }
}

/// The note of a breaker stop: what the evidence showed.
pub fn no_progress_note(turns: u32, digest: &Digest) -> String {
    let mut note =
        format!("No progress in {turns} turns: no file changed, no tool call succeeded, near-identical replies.");
    if let Some((command, code)) = digest.failing_commands.first() {
        let code = code.map_or("error".to_string(), |c| c.to_string());
        note.push_str(&format!(" Last failing command: `{}` (exit {code}).", truncate_chars(command, 80)));
    }
    truncate_chars(&note, crate::record::NOTE_CHAR_LIMIT)
}
