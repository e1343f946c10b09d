//! Every change a tick makes to its goal, as data, and the one place each is applied to a goal
//! read fresh (the executor's write reads the goal, applies the change, and writes it back under
//! its guard). A change that must be decided again on the fresh goal (another writer may have
//! landed since the tick read it) declines with [`Cancelled`], and nothing is written.

use serde_json::Value;

use crate::error::Cancelled;
use crate::goal::decide::accounting::Accounting;
use crate::goal::decide::causes::cause_of;
use crate::goal::decide::grading::CriteriaUpdate;
use crate::goal::decide::guard_rules::instead_of_complete;
use crate::goal::decide::limit_rules::{self, Park};
use crate::goal::decide::lineage::{self, Ownership, Unlisted};
use crate::goal::decide::plan_rules::{Reservation, Settlement};
use crate::goal::decide::wait_rules::waiting_cause;
use crate::record::cause::{Cause, CauseCode};
use crate::record::lease::take_lease;
use crate::record::reasons::{
    NOTE_TURN_CUT, REASON_MARKED_BY_USER, REASON_PAUSED_AFTER_ABORT, REASON_RESUMED, REASON_WAITING_FOR_HOURS,
    WAITING_FOR_USER,
};
use crate::record::{Goal, GoalStatus, Reposted, NOTE_CHAR_LIMIT, REASON_CHAR_LIMIT};
use crate::text::truncate_chars;
use crate::time::active::{begin_inactive, count_stopped_time, end_inactive};

/// What a change is applied with: whose it is, this runtime's lease holder id, now, and how long
/// a reservation's lease lasts.
#[derive(Debug, Clone)]
pub struct ApplyWith<'a> {
    /// The session whose goal is written.
    pub session_id: &'a str,
    /// This runtime's lease holder id.
    pub holder: &'a str,
    /// Now on the host's clock.
    pub now: f64,
    /// A reservation's lease, ms.
    pub lease_ms: f64,
}

/// What a settle writes beside the settlement's own fields.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extras {
    /// The reserved, unused turn goes back (written before the settlement).
    pub give_back: bool,
    /// The provider park ends (written before the settlement).
    pub clear_park: bool,
    /// The criteria the audit graded or derived.
    pub criteria: Option<CriteriaUpdate>,
    /// The fix sentence of the auditor's own `blocked` (a blocker it described).
    pub blocker_fix: Option<String>,
    /// The stranded message's re-posts are forgotten (a resume gets its own).
    pub clear_reposted: bool,
    /// The last review.
    pub last_review: Option<Value>,
    /// The wrap-up this settlement answers (recorded again: a crossed write of another host may
    /// have dropped its reservation's marker).
    pub wrapped_up: Option<crate::record::WrappedUp>,
}

/// How the adopted copy is told from the session's own goal, decided again on the fresh goal.
#[derive(Debug, Clone, PartialEq)]
pub enum CopyRule {
    /// The owner lists named an older carrier (`lineage::ownership`).
    Listed {
        /// The oldest other session known to carry the goal.
        older: Option<String>,
    },
    /// No list can be read: the session's creation against the goal's (`owner_without_list`).
    Unlisted {
        /// The session's creation time.
        session_created: f64,
    },
}

/// A change of the goal.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// A terminal status (or one the goal's rules settle), with what it carries.
    Settle(Box<Settlement>, Box<Extras>),
    /// Paused after an abort the messages show.
    Pause(Accounting),
    /// Paused after an abort an event announced at `aborted_at`, unless the user resumed it after
    /// that abort (the event path, outside any tick).
    PauseAfterAbort {
        /// When the abort happened.
        aborted_at: f64,
    },
    /// Waits on the user (a permission or a question is open).
    WaitingForUser,
    /// Waits on a request that keeps failing (`detail`: the request and its answer).
    WaitingForOpenCode {
        /// `GET /session/:id/message → 500`.
        detail: String,
    },
    /// Parked on a provider's limit, with the accounting of the failed turn.
    Park(Box<Park>, Accounting),
    /// A park the tail no longer matches ends.
    ClearPark,
    /// Waits for its working hours (`cause`: when they open).
    HoursWait(Cause),
    /// Back inside its working hours: the waiting period ends at `ended`.
    HoursResume {
        /// When the waiting period ended.
        ended: f64,
    },
    /// The stranded message is posted again: its post number is recorded first.
    Reposted(Reposted),
    /// The next turn is reserved.
    Reserve(Box<ReservedTurn>),
    /// The lease is taken for a check round or a review (`hold_ms`), with the graded criteria.
    Hold {
        /// How long the lease lasts.
        hold_ms: f64,
        /// The criteria to record with it.
        criteria: Option<CriteriaUpdate>,
    },
    /// A reserved turn the user stopped before it was posted goes back (only while the stored
    /// goal is stopped and still holds exactly this reservation).
    GiveBackTurn {
        /// `turnsUsed` the reservation wrote.
        turns_used: u64,
        /// The tail it reserved for.
        tail: String,
    },
    /// A copy the user resumed becomes this session's own (while still active).
    Claim,
    /// What the user asks of the goal directly, decided again on the fresh goal.
    User(UserAction),
    /// A copy from another session is adopted paused (while still active and still a copy).
    Adopt {
        /// The session it came from (`""` when unknown).
        source: String,
        /// How it is told from the session's own.
        rule: CopyRule,
    },
}

/// A reservation's fields: the decision's [`Reservation`] and what the tick knows of the turn.
#[derive(Debug, Clone, PartialEq)]
pub struct ReservedTurn {
    /// Accounting, streaks, note, auditor, evidence fields.
    pub reservation: Reservation,
    /// An earlier reservation of this same tail is reused (the turn was counted then).
    pub reused: bool,
    /// The tail the turn answers.
    pub tail: String,
    /// The message id every post of the turn uses.
    pub message_id: Option<String>,
    /// The judged reply produced output (ends the rows of parks and cut turns).
    pub tail_output: bool,
    /// The cut turn's number in the row, when the tail was cut.
    pub cut_turn: Option<u64>,
}

impl Change {
    /// Applies the change to `g` (the goal read fresh); `Err` declines the write.
    pub fn apply(&self, g: &mut Goal, with: &ApplyWith<'_>) -> Result<(), Cancelled> {
        match self {
            Change::Settle(settlement, extras) => settle(g, settlement, extras, with),
            Change::Pause(accounting) => pause(g, accounting, with),
            Change::PauseAfterAbort { aborted_at } => {
                let resumed_since =
                    g.status_reason == REASON_RESUMED && *aborted_at > 0.0 && *aborted_at <= g.updated_at;
                if !resumed_since {
                    g.status = GoalStatus::Paused;
                    g.status_reason = REASON_PAUSED_AFTER_ABORT.into();
                    g.set_cause(Some(cause_of(CauseCode::UserAborted, with.now, with.session_id, None)));
                    g.lease.clear();
                    // Paused time is not active time.
                    begin_inactive(g, with.now);
                }
            }
            Change::WaitingForUser => {
                if g.status_reason != REASON_RESUMED {
                    g.status_reason = WAITING_FOR_USER.into();
                }
                g.set_cause(Some(cause_of(CauseCode::WaitingForUser, with.now, with.session_id, None)));
                // Waiting for the user is not active time.
                begin_inactive(g, with.now);
            }
            Change::WaitingForOpenCode { detail } => {
                // Decided again on the fresh goal: another host may have written the same wait.
                let fresh = waiting_cause(g.cause.as_ref(), with.session_id, detail, with.now).ok_or(Cancelled)?;
                g.set_cause(Some(fresh));
            }
            Change::Park(park, accounting) => {
                accounting.apply(g);
                limit_rules::apply_park(g, park, with.now);
                g.lease.clear();
            }
            Change::ClearPark => limit_rules::clear_park(g),
            Change::HoursWait(cause) => {
                g.status_reason = REASON_WAITING_FOR_HOURS.into();
                g.set_cause(Some(cause.clone()));
                begin_inactive(g, with.now);
            }
            Change::HoursResume { ended } => {
                end_inactive(g, *ended);
                if g.status_reason == REASON_WAITING_FOR_HOURS {
                    g.status_reason.clear();
                }
                // Back at work: a running goal carries no cause.
                if g.cause.as_ref().is_some_and(|c| c.code.is_wait()) {
                    g.set_cause(None);
                }
            }
            Change::Reposted(record) => g.reposted.set(record.clone()),
            Change::Reserve(turn) => reserve(g, turn, with),
            Change::Hold { hold_ms, criteria } => {
                take_lease(g, with.holder, with.now, *hold_ms);
                if let Some(criteria) = criteria {
                    criteria.apply(g);
                }
            }
            Change::GiveBackTurn { turns_used, tail } => {
                let holds_it = crate::record::continuation_for_of(g) == Some(tail.as_str());
                if g.status == GoalStatus::Active || g.turns_used != *turns_used || !holds_it {
                    return Err(Cancelled);
                }
                g.turns_used = g.turns_used.saturating_sub(1);
                g.continuation_for.clear();
                g.continuation_id.clear();
                g.lease.clear();
            }
            Change::User(action) => {
                action.admits(g).map_err(|_| Cancelled)?;
                action.apply(g, with);
            }
            Change::Claim => {
                if g.status != GoalStatus::Active {
                    return Err(Cancelled);
                }
                lineage::mark_owner(g, with.session_id);
            }
            Change::Adopt { source, rule } => {
                // Decided again on the fresh goal: a resume or a pause that landed since wins.
                if g.status != GoalStatus::Active || !still_copy(g, with.session_id, rule) {
                    return Err(Cancelled);
                }
                lineage::adopt_paused(g, with.session_id, source, with.now);
            }
        }
        Ok(())
    }
}

/// What the user asks of a goal directly (`control/actions.rs`): its transitions join the
/// tick's, applied to the goal read fresh at the host clock's now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserAction {
    /// Pause an active goal (the running turn is aborted after the write).
    Pause,
    /// Resume a goal that is not active, or one parked for a provider limit.
    Resume,
    /// Mark the goal complete.
    Complete,
}

/// Why a user's action writes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The goal is already where the action would take it.
    Unchanged,
    /// Only an active goal can be paused: this one's status.
    NotActive(GoalStatus),
}

impl UserAction {
    /// Whether the action changes `g`.
    pub fn admits(self, g: &Goal) -> Result<(), Refusal> {
        match (self, g.status) {
            (UserAction::Pause, GoalStatus::Active) => Ok(()),
            (UserAction::Pause, GoalStatus::Paused) => Err(Refusal::Unchanged),
            (UserAction::Pause, status) => Err(Refusal::NotActive(status)),
            // An active goal goes on as it is, unless it is parked: the park ends now.
            (UserAction::Resume, GoalStatus::Active) if limit_rules::parked_for(g).is_none() => Err(Refusal::Unchanged),
            (UserAction::Complete, GoalStatus::Complete) => Err(Refusal::Unchanged),
            (UserAction::Resume | UserAction::Complete, _) => Ok(()),
        }
    }

    /// The transition, on a goal it admits.
    fn apply(self, g: &mut Goal, with: &ApplyWith<'_>) {
        match self {
            UserAction::Pause => {
                g.status = GoalStatus::Paused;
                g.status_reason.clear();
                g.set_cause(Some(cause_of(CauseCode::UserPaused, with.now, with.session_id, None)));
                g.blocked_streak = 0;
                // A park ends with the pause; paused time is not active time (the resume folds it in).
                limit_rules::clear_park(g);
                begin_inactive(g, with.now);
            }
            UserAction::Resume => {
                limit_rules::clear_park(g);
                g.status_reason = REASON_RESUMED.into();
                if g.status == GoalStatus::Active {
                    return;
                }
                // The time it stood still is not active time (time budget).
                count_stopped_time(g, with.now);
                g.status = GoalStatus::Active;
                // A goal that is simply running carries no cause.
                g.set_cause(None);
                g.turns_used = 0;
                g.blocked_streak = 0;
                lineage::mark_owner(g, with.session_id);
            }
            UserAction::Complete => {
                g.status = GoalStatus::Complete;
                g.status_reason = REASON_MARKED_BY_USER.into();
                g.set_cause(Some(cause_of(CauseCode::UserComplete, with.now, with.session_id, None)));
                g.blocked_streak = 0;
            }
        }
    }
}

fn still_copy(g: &Goal, session_id: &str, rule: &CopyRule) -> bool {
    match rule {
        CopyRule::Listed { older } => {
            matches!(lineage::ownership(g, session_id, older.as_deref()), Ownership::Copy { .. })
        }
        CopyRule::Unlisted { session_created } => {
            lineage::ownership(g, session_id, None) == Ownership::Unmarked
                && lineage::owner_without_list(g, *session_created) == Unlisted::Copy
        }
    }
}

/// The fields a settlement writes: status, reason, note, streaks, accounting, the auditor, and
/// no reservation or lease left behind; the extras before and after them.
fn settle(g: &mut Goal, settlement: &Settlement, extras: &Extras, with: &ApplyWith<'_>) {
    if extras.give_back {
        g.turns_used = g.turns_used.saturating_sub(1);
    }
    if extras.clear_park {
        limit_rules::clear_park(g);
    }
    // Checks or criteria that became unreadable after the tick read them: never `complete`.
    let stopped = instead_of_complete(g, settlement);
    let settlement = stopped.as_ref().unwrap_or(settlement);
    g.status = settlement.status;
    g.set_cause(Some(cause_of(settlement.cause, with.now, with.session_id, settlement.detail.as_deref())));
    g.status_reason = truncate_chars(&settlement.reason, REASON_CHAR_LIMIT);
    set_note(g, settlement.note.as_deref());
    g.blocked_streak = 0;
    g.audit_fail_streak = 0;
    settlement.accounting.apply(g);
    if let Some((provider, model)) = &settlement.evaluation {
        g.evaluation_provider_id = provider.clone();
        g.evaluation_model_id = model.clone();
    }
    g.continuation_for.clear();
    g.continuation_id.clear();
    g.lease.clear();
    // From here the goal is not working (time budget after a resume).
    begin_inactive(g, with.now);
    if let Some(update) = &extras.criteria {
        update.apply(g);
    }
    if let Some(wrapped) = &extras.wrapped_up {
        g.wrapped_up.set(wrapped.clone());
    }
    // Only the auditor's own stop takes the blocker's fix.
    let blocked = g.cause.as_mut().filter(|c| c.code == CauseCode::AuditorBlocked);
    if let (Some(fix), Some(cause)) = (&extras.blocker_fix, blocked) {
        cause.fix = Some(fix.clone());
    }
    if extras.clear_reposted {
        g.reposted.clear();
    }
    if let Some(review) = &extras.last_review {
        g.last_review.set(review.clone());
    }
}

fn pause(g: &mut Goal, accounting: &Accounting, with: &ApplyWith<'_>) {
    g.status = GoalStatus::Paused;
    g.status_reason = REASON_PAUSED_AFTER_ABORT.into();
    g.set_cause(Some(cause_of(CauseCode::UserAborted, with.now, with.session_id, None)));
    accounting.apply(g);
    g.lease.clear();
    // Paused time is not active time.
    begin_inactive(g, with.now);
}

/// A new note, or (none given) the cut turn's note dropped: the turn after the cut one ran.
fn set_note(g: &mut Goal, note: Option<&str>) {
    match note {
        Some(note) => g.note = truncate_chars(note, NOTE_CHAR_LIMIT),
        None if g.note == NOTE_TURN_CUT => g.note.clear(),
        None => {}
    }
}

/// The reservation's fields: the park state, accounting, the turn counted (unless reused),
/// streaks, note, auditor, evidence fields, the tail and message id, and this runtime's lease.
fn reserve(g: &mut Goal, turn: &ReservedTurn, with: &ApplyWith<'_>) {
    let reservation = &turn.reservation;
    limit_rules::on_reserve(g, turn.tail_output, turn.cut_turn);
    reservation.accounting.apply(g);
    if !turn.reused {
        g.turns_used = g.turns_used.saturating_add(1);
    }
    g.blocked_streak = reservation.blocked_streak;
    g.audit_fail_streak = reservation.audit_fail_streak;
    g.status_reason.clear();
    // A goal that is simply running carries no cause.
    g.set_cause(None);
    set_note(g, reservation.note.as_deref());
    if let Some((provider, model)) = &reservation.evaluation {
        g.evaluation_provider_id = provider.clone();
        g.evaluation_model_id = model.clone();
    }
    let evidence = &reservation.evidence;
    if let Some(progress) = &evidence.progress {
        g.progress.set(progress.clone());
    }
    if let Some(used) = &evidence.overrides {
        g.evidence_overrides.set(used.clone());
    }
    if let Some(criteria) = &evidence.criteria {
        criteria.apply(g);
    }
    if let Some(review) = &evidence.last_review {
        g.last_review.set(review.clone());
    }
    g.continuation_for.set(turn.tail.clone());
    match &turn.message_id {
        Some(id) => g.continuation_id.set(id.clone()),
        None => {
            g.continuation_id.clear();
        }
    }
    // A wrap-up's reservation says one is out (every host and restart reads it); any other
    // turn's ends what an earlier stretch of the goal left.
    match (reservation.wrap_up, &turn.message_id) {
        (Some(cause), Some(id)) => g.wrapped_up.set(crate::record::WrappedUp { message_id: id.clone(), cause }),
        _ => {
            g.wrapped_up.clear();
        }
    }
    take_lease(g, with.holder, with.now, with.lease_ms);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::record::test_goal::goal;

    #[test]
    fn the_user_s_transitions_apply_at_the_clock_they_are_given() {
        let with = ApplyWith { session_id: "ses_1", holder: "", now: 5_000.0, lease_ms: 0.0 };
        let mut active = goal(json!({"turnsUsed": 3, "blockedStreak": 2}));
        Change::User(UserAction::Pause).apply(&mut active, &with).expect("an active goal pauses");
        assert_eq!((active.status, active.blocked_streak), (GoalStatus::Paused, 0));
        assert_eq!(active.cause.as_ref().map(|c| (c.code, c.since)), Some((CauseCode::UserPaused, 5_000.0)));
        assert_eq!(active.inactive_since.get().copied(), Some(5_000.0), "paused from the host's now");
        assert_eq!(UserAction::Pause.admits(&active), Err(Refusal::Unchanged));
        Change::User(UserAction::Resume).apply(&mut active, &with).expect("a paused goal resumes");
        assert_eq!(
            (active.status, active.turns_used, active.session_id.as_deref()),
            (GoalStatus::Active, 0, Some("ses_1"))
        );
        assert_eq!(UserAction::Resume.admits(&active), Err(Refusal::Unchanged), "an active goal that is not parked");
        let mut blocked = goal(json!({"status": "blocked"}));
        assert_eq!(UserAction::Pause.admits(&blocked), Err(Refusal::NotActive(GoalStatus::Blocked)));
        assert_eq!(Change::User(UserAction::Pause).apply(&mut blocked, &with), Err(Cancelled));
        Change::User(UserAction::Complete).apply(&mut blocked, &with).expect("any goal completes");
        assert_eq!((blocked.status, blocked.status_reason.as_str()), (GoalStatus::Complete, REASON_MARKED_BY_USER));
        assert_eq!(UserAction::Complete.admits(&blocked), Err(Refusal::Unchanged));
    }
}
