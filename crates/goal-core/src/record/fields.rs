//! The goal record's field table: every field this package reads or writes under
//! `metadata.openchamber.goal`, each defined once, with its wire name, its type, how it is read
//! and how it is written. The struct, the event path's field list, the parser and the writer are
//! all generated from the table, so adding a field is one entry here.
//!
//! Three kinds of field:
//! - `core`: always read (a value of the wrong type reads as the default, the reference rule);
//! - `loose`: typed when the stored value parses, otherwise kept verbatim in [`Goal::extra`];
//! - the `stored` group ([`Stored`]): fields the event path does not read; typed when they
//!   parse, kept verbatim (and written back unchanged) when they do not, and cleared as a whole.
//!
//! Fields the table does not know stay in [`Goal::extra`], written back exactly as read.
//!
//! A field the user sets and the loop obeys is marked `guard` with its shape and its fix: a
//! stored value of it that cannot be read stops the goal instead of reading as absent
//! (`goal/decide/guard_rules.rs` walks [`GUARDS`]). [`Goal::field_state`] reads any field of
//! the table by its name, for the code that reports fields rather than obeys them.

use serde_json::{json, Map, Value};

use super::cause::Cause;
use super::criteria::{parse_stored_criteria, Criterion};
use super::guard_read::{number_in_text, read_stored_checks};
use super::review::ReviewSetting;
use super::{
    positive_count, string_field, AcceptanceCheck, GoalStatus, GOAL_OBJECTIVE_CHAR_LIMIT, NOTE_CHAR_LIMIT,
    REASON_CHAR_LIMIT,
};
use crate::text::truncate_chars;

/// A goal field as stored: absent, readable (typed), or present in a shape this version cannot
/// read, which is kept verbatim so no writer's data is lost.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Stored<T> {
    /// Not in the record.
    #[default]
    Absent,
    /// Present and readable.
    Valid(T),
    /// Present, in a shape this version cannot read (written back unchanged).
    Unreadable(Value),
    /// Present in a shape read leniently (a number written as text, `"0.5"`): the typed value
    /// is what the loop obeys, the stored value is written back unchanged (`record/guard_read.rs`).
    Lenient(T, Value),
}

impl<T> Stored<T> {
    /// The typed value, when present and readable.
    pub fn get(&self) -> Option<&T> {
        match self {
            Stored::Valid(value) | Stored::Lenient(value, _) => Some(value),
            _ => None,
        }
    }

    /// Whether the record has the field at all (readable or not).
    pub fn is_present(&self) -> bool {
        !matches!(self, Stored::Absent)
    }

    /// Sets the value.
    pub fn set(&mut self, value: T) {
        *self = Stored::Valid(value);
    }

    /// Removes the field (an unreadable value too); whether it was present.
    pub fn clear(&mut self) -> bool {
        !matches!(std::mem::take(self), Stored::Absent)
    }

    fn read(raw: Option<&Value>, parse: impl Fn(&Value) -> Option<T>) -> Self {
        match raw {
            None => Stored::Absent,
            Some(raw) => match parse(raw) {
                Some(value) => Stored::Valid(value),
                None => match number_in_text(raw).and_then(|number| parse(&number)) {
                    Some(value) => Stored::Lenient(value, raw.clone()),
                    None => Stored::Unreadable(raw.clone()),
                },
            },
        }
    }

    /// The field as [`Goal::field_state`] shows it: a readable value in its written form.
    fn state(&self, encode: impl Fn(&T) -> Value) -> FieldState<'_> {
        match self {
            Stored::Absent => FieldState::Absent,
            Stored::Valid(value) | Stored::Lenient(value, _) => FieldState::Readable(encode(value)),
            Stored::Unreadable(raw) => FieldState::Unreadable(raw),
        }
    }

    fn write(&self, encode: impl Fn(&T) -> Value) -> Option<Value> {
        match self {
            Stored::Absent => None,
            Stored::Valid(value) => Some(encode(value)),
            Stored::Unreadable(raw) | Stored::Lenient(_, raw) => Some(raw.clone()),
        }
    }
}

/// One field of a goal as [`Goal::field_state`] reads it, by the field's name.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldState<'a> {
    /// Not in the record (or not a field of the table).
    Absent,
    /// Readable: the typed value in its written form (a value read leniently, `"0.5"`, shows
    /// as the number it was read as).
    Readable(Value),
    /// Present in a shape this version cannot read, as stored.
    Unreadable(&'a Value),
}

impl FieldState<'_> {
    fn of(written: Option<Value>) -> Self {
        written.map_or(FieldState::Absent, FieldState::Readable)
    }
}

/// What a readable value of a guard is; `goal/decide/guard_rules.rs` says, for each shape, what
/// is wrong with a stored value that is not one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuardShape {
    /// A number; the words say which, as a problem names it (`a number of US dollars above 0`).
    Number(&'static str),
    /// A working-hours window `{start, end, timeZone}` (a readable object may still hold a window
    /// that cannot be used).
    Hours,
    /// A list of acceptance checks.
    Checks,
    /// A list of acceptance criteria.
    Criteria,
}

/// A guard: a field the user sets and the loop obeys, so a stored value of it that cannot be read
/// stops the goal (`goal/decide/guard_rules.rs`). Declared on its entry of the table.
#[derive(Debug, Clone, Copy)]
pub struct Guard {
    /// The field, as stored and as the API spells it.
    pub field: &'static str,
    /// What a readable value is.
    pub shape: GuardShape,
    /// The sentence that corrects the field, from how an edit call of the goal's session is
    /// written (`editGoal({sessionId: '…', <change>})`) and the session id.
    pub fix: GuardFix,
}

/// How a guard's fix is written: from the session's edit call (given the change, e.g.
/// `clearChecks: true`) and the session id.
pub type GuardFix = fn(edit: &dyn Fn(&str) -> String, session_id: &str) -> String;

/// The multi-host lease: which runtime drives the goal, and until when.
#[derive(Debug, Clone, PartialEq)]
pub struct Lease {
    /// The holder id of the runtime.
    pub holder: String,
    /// Expiry (ms since epoch).
    pub expires_at: f64,
}

/// The wrap-up turn posted for this goal (`wrappedUp: {messageId, cause}`): the continuation that
/// asked for a handoff before a limit, and the limit's cause (`goal/decide/wrap_up.rs`). Written
/// with its reservation, so every host and every restart knows one is out.
#[derive(Debug, Clone, PartialEq)]
pub struct WrappedUp {
    /// The wrap-up continuation's message id.
    pub message_id: String,
    /// The limit it hands off before.
    pub cause: crate::record::cause::CauseCode,
}

/// The re-posts of a stranded message (`reposted: {messageId, posts, at}`): a user message
/// OpenCode stored but never answered, posted again under its own ids (`goal/decide/planning.rs`,
/// `goal/decide/strand_rules.rs`).
#[derive(Debug, Clone, PartialEq)]
pub struct Reposted {
    /// The stranded message's id.
    pub message_id: String,
    /// Posts of it so far.
    pub posts: u64,
    /// When the last post went out (ms since epoch).
    pub at: f64,
}

macro_rules! goal_fields {
    (
        event { $(
            $(#[$edoc:meta])* $ekind:ident $ename:ident : $ety:ty = $ewire:expr, $eread:expr, $ewrite:expr
            $(, guard($eshape:expr, $efix:expr))?;
        )* }
        stored { $(
            $(#[$sdoc:meta])* $sname:ident : $sty:ty = $swire:expr, $sread:expr, $swrite:expr
            $(, guard($sshape:expr, $sfix:expr))?;
        )* }
    ) => {
        /// A normalized goal. `extra` keeps fields this version does not know, so a write never
        /// drops data another writer (a newer UI) put there.
        #[derive(Debug, Clone, PartialEq, Default)]
        pub struct Goal {
            $( $(#[$edoc])* pub $ename: $ety, )*
            $( $(#[$sdoc])* pub $sname: Stored<$sty>, )*
            /// Unknown fields (and unreadable values of `loose` fields), preserved across writes.
            pub extra: Map<String, Value>,
            /// Stored values of `loose` fields read leniently (`record/guard_read.rs`): the typed
            /// field is obeyed, and this value is written back in its place, unchanged.
            pub verbatim: Map<String, Value>,
        }

        /// Every goal field the event path reads from a payload (a goal object of any size
        /// costs the same); the `stored` fields are read from the session itself.
        pub const KNOWN_GOAL_FIELDS: &[&str] = &[ $( $ewire ),* ];

        /// Every field of the table.
        const TABLE_FIELDS: &[&str] = &[ $( $ewire, )* $( $swire ),* ];

        /// The guards, in the order of the table (the order an unreadable one is reported in).
        pub const GUARDS: &[Guard] = &[
            $( $( Guard { field: $ewire, shape: $eshape, fix: $efix }, )? )*
            $( $( Guard { field: $swire, shape: $sshape, fix: $sfix }, )? )*
        ];

        impl Goal {
            /// Reads every field of the table from a goal object; the rest goes to `extra`.
            pub(super) fn read_fields(object: &Map<String, Value>) -> Goal {
                let mut extra: Map<String, Value> = object
                    .iter()
                    .filter(|(key, _)| !TABLE_FIELDS.contains(&key.as_str()))
                    .map(|(key, value)| (key.clone(), value.clone()))
                    .collect();
                Goal {
                    $( $ename: goal_fields!(@read $ekind, object, extra, $ewire, $eread), )*
                    $( $sname: Stored::read(object.get($swire), $sread), )*
                    verbatim: super::guard_read::leniently_read(object),
                    extra,
                }
            }

            /// The field of the table named `field` (its wire name), as stored; [`FieldState::Absent`]
            /// for a name the table does not have.
            pub fn field_state(&self, field: &str) -> FieldState<'_> {
                $( if field == $ewire {
                    return goal_fields!(@state $ekind, self, $ewire, $ewrite, $ename);
                } )*
                $( if field == $swire {
                    return self.$sname.state($swrite);
                } )*
                FieldState::Absent
            }

            /// Writes every field of the table over `extra`.
            pub(super) fn write_fields(&self) -> Map<String, Value> {
                let mut object = self.extra.clone();
                $( if let Some(value) = ($ewrite)(&self.$ename) { object.insert(String::from($ewire), value); } )*
                $( if let Some(value) = self.$sname.write($swrite) { object.insert(String::from($swire), value); } )*
                object.extend(self.verbatim.iter().map(|(key, value)| (key.clone(), value.clone())));
                object
            }
        }
    };
    (@state core, $goal:ident, $wire:expr, $write:expr, $name:ident) => {
        FieldState::of(($write)(&$goal.$name))
    };
    (@state loose, $goal:ident, $wire:expr, $write:expr, $name:ident) => {
        match $goal.extra.get($wire) {
            Some(raw) => FieldState::Unreadable(raw),
            None => FieldState::of(($write)(&$goal.$name)),
        }
    };
    (@read core, $object:ident, $extra:ident, $wire:expr, $read:expr) => {
        ($read)($object.get($wire))
    };
    (@read loose, $object:ident, $extra:ident, $wire:expr, $read:expr) => {
        match $object.get($wire) {
            None => Default::default(),
            Some(raw) => match ($read)(raw) {
                Some(value) => value,
                None => {
                    $extra.insert(String::from($wire), raw.clone());
                    Default::default()
                }
            },
        }
    };
}

fn finite_non_negative(value: Option<&Value>) -> f64 {
    match value.and_then(Value::as_f64) {
        Some(n) if n.is_finite() && n > 0.0 => n,
        _ => 0.0,
    }
}

fn text(value: &str) -> Option<Value> {
    Some(Value::from(value))
}

fn count(value: &u64) -> Option<Value> {
    Some(Value::from(*value))
}

fn number(value: &f64) -> Option<Value> {
    Some(Value::from(*value))
}

/// A string value.
fn any_text(value: &Value) -> Option<String> {
    value.as_str().map(str::to_string)
}

/// A finite number > 0 (what the time fields accept).
fn positive_number(value: &Value) -> Option<f64> {
    value.as_f64().filter(|n| n.is_finite() && *n > 0.0)
}

goal_fields! {
    event {
        /// Opaque id of one logical goal; the stale-write guard compares it.
        core id: String = "id", string_field, text;
        /// Inline objective (fallback when the file is unreadable), ≤ 5000 chars.
        core objective: String = "objective",
            |v| truncate_chars(string_field(v).trim(), GOAL_OBJECTIVE_CHAR_LIMIT), text;
        /// The objective text lives in `<dataDir>/goals/<sessionId>.md`.
        core objective_file: bool = "objectiveFile", |v| v == Some(&Value::Bool(true)), |v: &bool| Some(Value::from(*v));
        /// Lifecycle status.
        core status: GoalStatus = "status",
            |v: Option<&Value>| v.and_then(Value::as_str).and_then(GoalStatus::parse).unwrap_or_default(),
            |v: &GoalStatus| Some(Value::from(v.as_str()));
        /// Optional token budget.
        core token_budget: Option<u64> = "tokenBudget",
            |v| Some(positive_count(v)).filter(|n| *n > 0),
            |v: &Option<u64>| Some(v.map(Value::from).unwrap_or(Value::Null));
        /// Tokens charged to the goal so far.
        core tokens_used: u64 = "tokensUsed", positive_count, count;
        /// Snapshot subtracted from the current segment (pre-goal context; 0 after compaction).
        core tokens_baseline: u64 = "tokensBaseline", positive_count, count;
        /// Total of the segments closed by compactions.
        core tokens_committed: u64 = "tokensCommitted", positive_count, count;
        /// Automatic continuations sent (reserved).
        core turns_used: u64 = "turnsUsed", positive_count, count;
        /// Consecutive `blocked` verdicts.
        core blocked_streak: u64 = "blockedStreak", positive_count, count;
        /// Consecutive failed audits.
        core audit_fail_streak: u64 = "auditFailStreak", positive_count, count;
        /// Latest audit note.
        core note: String = "note", |v| truncate_chars(&string_field(v), NOTE_CHAR_LIMIT), text;
        /// Why the goal is in its status; `resumed` is the UI's kickoff signal.
        core status_reason: String = "statusReason", |v| truncate_chars(&string_field(v), REASON_CHAR_LIMIT), text;
        /// Provider of the latest successful audit.
        core evaluation_provider_id: String = "evaluationProviderID", string_field, text;
        /// Model of the latest successful audit.
        core evaluation_model_id: String = "evaluationModelID", string_field, text;
        /// Accounting cursor: the newest assistant message already counted.
        core last_accounted_message_id: String = "lastAccountedMessageID", string_field, text;
        /// `time.created` of the cursor message (chronological cursor; 0 when unknown).
        core last_accounted_created: f64 = "lastAccountedCreated", finite_non_negative, number;
        /// Creation time (ms since epoch).
        core created_at: f64 = "createdAt", finite_non_negative, number;
        /// Last write time (ms since epoch).
        core updated_at: f64 = "updatedAt", finite_non_negative, number;
        /// The session this goal belongs to (`sessionId`); a goal whose owner names another
        /// session is a copy (a fork copies the whole metadata). `None` for goals written before
        /// the field existed; a value that is not a string stays verbatim in `extra`.
        loose session_id: Option<String> = SESSION_ID_FIELD,
            |v: &Value| v.as_str().map(|s| Some(s.to_string())),
            |v: &Option<String>| v.clone().map(Value::from);
        /// Why the goal stopped or waits (`cause`); `None` while it simply runs. A stored value
        /// that does not parse stays verbatim in `extra`.
        loose cause: Option<Cause> = CAUSE_FIELD, |v: &Value| Cause::from_value(v).map(Some),
            |v: &Option<Cause>| v.as_ref().map(Cause::to_value);
        /// The user's acceptance checks (`checks`), run before the goal settles `complete`. Empty
        /// when none; a stored value that does not parse stays verbatim in `extra` (see
        /// [`Goal::checks_unreadable`]).
        loose checks: Vec<AcceptanceCheck> = CHECKS_FIELD, read_stored_checks,
            |v: &Vec<AcceptanceCheck>| (!v.is_empty()).then(|| Value::Array(v.iter().map(AcceptanceCheck::to_value).collect())),
            guard(GuardShape::Checks, |edit, _| format!(
                "Replace the unreadable checks: {}, or remove them with {}; the edit resumes the goal.",
                edit("checks: [{command: 'npm test'}]"),
                edit("clearChecks: true")
            ));
        /// The acceptance criteria (`criteria`, see `record/criteria.rs`). Empty when none; a
        /// stored value that does not parse stays verbatim in `extra`.
        loose criteria: Vec<Criterion> = CRITERIA_FIELD, |v: &Value| parse_stored_criteria(v),
            |v: &Vec<Criterion>| (!v.is_empty()).then(|| Value::Array(v.iter().map(Criterion::to_value).collect())),
            guard(GuardShape::Criteria, |edit, _| format!(
                "Replace the unreadable criteria: {}, or remove them with {}; the edit resumes the goal.",
                edit("criteria: ['tests pass']"),
                edit("clearCriteria: true")
            ));
    }
    stored {
        /// The multi-host lease `{holder, expiresAt}` (see `record/lease.rs`).
        lease: Lease = "lease",
            |v: &Value| Some(Lease {
                holder: v.get("holder")?.as_str()?.to_string(),
                expires_at: v.get("expiresAt")?.as_f64().filter(|n| n.is_finite())?,
            }),
            |v: &Lease| json!({ "holder": v.holder, "expiresAt": v.expires_at });
        /// The tail the reserved turn answers (`continuationFor`).
        continuation_for: String = "continuationFor", any_text, |v: &String| Value::from(v.as_str());
        /// The reserved turn's message id, posted by every retry and every host (`continuationId`).
        continuation_id: String = "continuationId", any_text, |v: &String| Value::from(v.as_str());
        /// Objective edits so far (`objectiveRevision`, part of the revision key).
        objective_revision: u64 = OBJECTIVE_REVISION_FIELD,
            |v: &Value| Some(positive_count(Some(v))).filter(|n| *n > 0), |v: &u64| Value::from(*v);
        /// The cost budget in US dollars (`costBudget`; see `goal/decide/budgets/cost.rs`).
        cost_budget: f64 = COST_BUDGET_FIELD, positive_number, |v: &f64| Value::from(*v),
            guard(GuardShape::Number("a number of US dollars above 0"), |edit, session_id| format!(
                "Set the cost budget in US dollars: `session-goal resume {session_id} --goal-cost-budget 5`, or remove it with {}.",
                edit("clearCostBudget: true")
            ));
        /// US dollars the session's replies cost since the goal began (`costUsed`).
        cost_used: f64 = COST_USED_FIELD, |v: &Value| v.as_f64().filter(|n| n.is_finite() && *n >= 0.0), |v: &f64| Value::from(*v);
        /// The time budget in ms of active time (`timeBudgetMs`; see `goal/decide/budgets/time.rs`).
        time_budget_ms: u64 = TIME_BUDGET_FIELD,
            |v: &Value| positive_number(v).filter(|n| *n >= 1.0).map(|n| n.floor().min(u64::MAX as f64) as u64),
            |v: &u64| Value::from(*v),
            guard(GuardShape::Number("a whole number of milliseconds, at least 1"), |edit, session_id| format!(
                "Set the time budget: `session-goal resume {session_id} --goal-time-budget 2h`, or remove it with {}.",
                edit("clearTimeBudget: true")
            ));
        /// Working hours `{start, end, timeZone, days?}` (`activeHours`; read by `time/hours.rs`).
        active_hours: Map<String, Value> = "activeHours",
            |v: &Value| v.as_object().cloned(), |v: &Map<String, Value>| Value::Object(v.clone()),
            guard(GuardShape::Hours, |edit, _| format!(
                "Set the working hours: {}, or remove them with {}.",
                edit("activeHours: {start: '09:00', end: '17:00', timeZone: 'Europe/Berlin'}"),
                edit("clearActiveHours: true")
            ));
        /// Closed inactive time in ms (`inactiveMs`).
        inactive_ms: f64 = "inactiveMs", positive_number, |v: &f64| Value::from(*v);
        /// Start of an open waiting period, ms since epoch (`inactiveSince`).
        inactive_since: f64 = "inactiveSince", positive_number, |v: &f64| Value::from(*v);
        /// The no-progress breaker's state (`progress`; read by `evidence/`).
        progress: Map<String, Value> = "progress", |v: &Value| v.as_object().cloned(), |v: &Map<String, Value>| Value::Object(v.clone());
        /// Parks on a provider limit in a row, with no reply that produced output.
        provider_waits: u64 = "providerWaits", |v: &Value| Some(positive_count(Some(v))), |v: &u64| Value::from(*v);
        /// The failed reply the current park answers.
        provider_wait_for: String = "providerWaitFor", |v: &Value| v.as_str().map(str::to_string), |v: &String| Value::from(v.clone());
        /// Turns cut by a server restart in a row.
        cut_turns: u64 = "cutTurns", |v: &Value| Some(positive_count(Some(v))), |v: &u64| Value::from(*v);
        /// The failing commands already used for a complete override (`evidenceOverrides`).
        evidence_overrides: Vec<String> = "evidenceOverrides",
            |v: &Value| v.as_array()?.iter().map(|c| c.as_str().map(str::to_string)).collect(),
            |v: &Vec<String>| json!(v);
        /// The re-posts of a stranded message (`reposted`, see [`Reposted`]).
        reposted: Reposted = "reposted",
            |v: &Value| Some(Reposted {
                message_id: v.get("messageId")?.as_str()?.to_string(),
                posts: positive_count(v.get("posts")),
                at: v.get("at").and_then(Value::as_f64).filter(|n| n.is_finite() && *n >= 0.0).unwrap_or(0.0),
            }),
            |v: &Reposted| json!({ "messageId": v.message_id, "posts": v.posts, "at": v.at });
        /// The highest criterion id number assigned so far (`criteriaIssued`): ids are never reused.
        criteria_issued: u64 = "criteriaIssued", |v: &Value| Some(positive_count(Some(v))), |v: &u64| Value::from(*v);
        /// The objective revision whose first audit was asked to derive criteria
        /// (`criteriaDerivedFor`): derivation is tried once per revision.
        criteria_derived_for: u64 = "criteriaDerivedFor", |v: &Value| Some(positive_count(Some(v))), |v: &u64| Value::from(*v);
        /// Whether a reviewer signs off before `complete` (`review`: `true` | `false` |
        /// `{agent?, model?}`; see `record/review.rs` and `goal/decide/review.rs`).
        review: ReviewSetting = REVIEW_FIELD, ReviewSetting::parse, ReviewSetting::to_value;
        /// The last review (`lastReview`: session, verdict, findings, cited files; shown by `explain`).
        last_review: Value = "lastReview", |v: &Value| v.is_object().then(|| v.clone()), |v: &Value| v.clone();
        /// Whether the goal ends with a wrap-up turn before a limit (`wrapUp`; absent: the host's
        /// default, `tunables.wrapUp`; see `goal/decide/wrap_up.rs`).
        wrap_up: bool = WRAP_UP_FIELD, Value::as_bool, |v: &bool| Value::from(*v);
        /// The wrap-up turn posted (`wrappedUp`, see [`WrappedUp`]).
        wrapped_up: WrappedUp = "wrappedUp",
            |v: &Value| Some(WrappedUp {
                message_id: v.get("messageId")?.as_str()?.to_string(),
                cause: crate::record::cause::CauseCode::parse(v.get("cause")?.as_str()?)?,
            }),
            |v: &WrappedUp| json!({ "messageId": v.message_id, "cause": v.cause.as_str() });
    }
}

/// Goal field naming the owning session.
pub const SESSION_ID_FIELD: &str = "sessionId";
/// Goal field holding the typed cause of a stop or wait.
pub const CAUSE_FIELD: &str = "cause";
/// Goal field holding the cost budget in US dollars.
pub const COST_BUDGET_FIELD: &str = "costBudget";
/// Goal field holding the time budget in ms of active time.
pub const TIME_BUDGET_FIELD: &str = "timeBudgetMs";
/// Goal field holding the US dollars spent since the goal began.
pub const COST_USED_FIELD: &str = "costUsed";
/// Goal field holding the user's acceptance checks.
pub const CHECKS_FIELD: &str = "checks";
/// Goal field asking for a reviewer before `complete`.
pub const REVIEW_FIELD: &str = "review";
/// Goal field saying whether the goal ends with a wrap-up turn before a limit.
pub const WRAP_UP_FIELD: &str = "wrapUp";
/// Goal field holding the acceptance criteria.
pub const CRITERIA_FIELD: &str = "criteria";
/// Goal field counting objective edits (part of the revision key).
pub const OBJECTIVE_REVISION_FIELD: &str = "objectiveRevision";
/// The goal's list fields that are part of the revision key ([`Goal::revision`]). A host's
/// event reader must carry them beside [`KNOWN_GOAL_FIELDS`] (which are scalars only): the
/// scheduler compares the revision an event shows with the one a recovery scan or a sweep read
/// from the whole goal, and a field only one side sees would make an unchanged goal look edited,
/// cutting short the tick in flight (a check round then recorded its finished runs twice).
pub const REVISION_LIST_FIELDS: &[&str] = &[CHECKS_FIELD];

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::record::test_goal::goal;

    use super::*;

    #[test]
    fn a_field_reads_by_its_name_typed_when_readable_and_as_stored_when_not() {
        let g = goal(json!({
            "timeBudgetMs": "7200000", "costBudget": "lots", "tokensUsed": 5,
            "checks": [{"command": "npm test", "timeoutMs": "60000"}], "criteria": "tests pass"
        }));
        assert_eq!(g.field_state("timeBudgetMs"), FieldState::Readable(json!(7_200_000)), "read leniently");
        assert_eq!(g.field_state("costBudget"), FieldState::Unreadable(&json!("lots")));
        assert_eq!(g.field_state("tokensUsed"), FieldState::Readable(json!(5)));
        assert_eq!(g.field_state("checks"), FieldState::Readable(json!([{"command": "npm test", "timeoutMs": 60000}])));
        assert_eq!(g.field_state("criteria"), FieldState::Unreadable(&json!("tests pass")));
        assert_eq!(g.field_state("activeHours"), FieldState::Absent);
        assert_eq!(g.field_state("someoneElse"), FieldState::Absent, "not a field of the table");
        // The guards are reported in table order.
        let guards: Vec<&str> = GUARDS.iter().map(|guard| guard.field).collect();
        assert_eq!(guards, ["checks", "criteria", "costBudget", "timeBudgetMs", "activeHours"]);
    }

    #[test]
    fn stored_fields_are_typed_when_readable_and_kept_verbatim_when_not() {
        let readable = goal(json!({
            "lease": {"holder": "h", "expiresAt": 5.0}, "continuationFor": "m1", "continuationId": "msg_1",
            "objectiveRevision": 2, "timeBudgetMs": 60000, "inactiveMs": 1000.0, "inactiveSince": 7.0,
            "activeHours": {"start": "09:00"}, "progress": {"streak": 1}, "evidenceOverrides": ["a"],
            "someoneElse": {"x": 1}
        }));
        assert_eq!(readable.lease.get(), Some(&Lease { holder: "h".into(), expires_at: 5.0 }));
        assert_eq!(readable.continuation_for.get().map(String::as_str), Some("m1"));
        assert_eq!(readable.time_budget_ms.get(), Some(&60000));
        assert_eq!(readable.evidence_overrides.get(), Some(&vec!["a".to_string()]));
        assert_eq!(readable.extra.keys().collect::<Vec<_>>(), ["someoneElse"], "only unknown fields are extra");
        assert_eq!(Goal::from_value(&readable.to_value()).unwrap(), readable);

        let odd = json!({"lease": "mine", "continuationFor": 7, "timeBudgetMs": "soon", "inactiveMs": 0,
            "activeHours": null, "evidenceOverrides": ["a", 1]});
        let mut unreadable = goal(odd.clone());
        let written = unreadable.to_value();
        for (key, value) in odd.as_object().unwrap() {
            assert_eq!(&written[key], value, "{key} kept verbatim");
            assert!(!unreadable.extra.contains_key(key), "{key} is a table field, not extra");
        }
        assert!(unreadable.lease.get().is_none() && unreadable.lease.is_present());
        // Clearing removes an unreadable value too; setting replaces it.
        assert!(unreadable.lease.clear());
        unreadable.time_budget_ms.set(1000);
        let written = unreadable.to_value();
        assert!(written.get("lease").is_none());
        assert_eq!(written["timeBudgetMs"], json!(1000));
    }
}
