//! The reserve stage: the turn is reserved in the goal record before anything is posted (a crash
//! after this only waits for the next idle; the reverse could send twice), under a guard that
//! only lets the write land when nobody reserved since this tick read the goal; then the
//! reservation's echo is awaited briefly for a lost update (see `echo.rs`).

use crate::goal::context::{log_write, ReadAtStart, Tick};
use crate::goal::delivery::dispatch::continuation_message_id_for;
use crate::goal::delivery::echo::{echo_bound, write_watched, Heard, ReservationEcho};
use crate::goal::planning::plan::{Basis, Reservation};
use crate::io::writer::{continuation_for_of, GoalGuard};
use crate::record::lease::take_lease;
use crate::record::reasons::{NOTE_TURN_CUT, REASON_RESUMED};
use crate::record::{truncate_chars, Goal, GoalStatus, NOTE_CHAR_LIMIT};
use crate::sched::TickOutcome;

/// A turn reserved in the goal record.
pub struct Reserved {
    /// The goal as written by the reservation.
    pub goal: Goal,
    /// The guard of writes that build on the reservation.
    pub guard: GoalGuard,
    /// The tail the turn answers.
    pub tail: String,
    /// An earlier reservation of this same tail was reused (the turn was counted then).
    pub reused: bool,
    /// The message id every post of this turn uses (`None`: the tail's id has an unknown format).
    pub message_id: Option<String>,
    /// The echo watch, when the echo had not come by the bound: looked at again when the tick
    /// ends without posting.
    pub late: Option<ReservationEcho>,
    /// A paragraph appended to the continuation (a failed acceptance check).
    pub appendix: Option<String>,
    /// Another host reserved the same turn just before this reservation landed (see
    /// [`Heard::Contested`]).
    pub contested: bool,
}

/// Reserves the turn answering `tail` (reusing a reservation already made for it). `Err` ends
/// the tick: the write failed or was stale, or the echo showed a user's change, written back.
pub async fn reserve(
    tick: &Tick<'_>,
    basis: &Basis,
    reservation: Reservation,
    read: ReadAtStart,
) -> Result<Reserved, TickOutcome> {
    let ctx = tick.ctx;
    let goal = &tick.goal;
    let tail = basis.tail_message_id.as_str();
    // A reservation left for this tail was counted then; after a resume (OpenChamber's resets
    // the turn count) it is counted again: the simulator found the pre-pause reservation posted
    // uncounted, and one turn past the cap.
    let reused = continuation_for_of(goal) == Some(tail) && goal.status_reason != REASON_RESUMED;
    // Every host and every retry derives this same id from the same tail (its id, and its
    // creation time when the id has another format); OpenCode answers a repeated id once.
    let message_id = continuation_message_id_for(&goal.id, tail, basis.tail_created);
    let reserve_guard = GoalGuard::Reserve {
        revision: goal.revision(),
        holder: ctx.holder.clone(),
        turns_used: goal.turns_used,
        continuation_for: continuation_for_of(goal).map(str::to_string),
    };
    // Watch the goal's events from before the read the write builds on until the write's echo:
    // another writer's pause, clear or edit landing in between shows up there (see `echo_watch`).
    // When the tick went straight on (an audit answered at once, or none), its first read is
    // that base and its watch already runs; otherwise the write reads fresh, watched anew.
    let ReadAtStart { base, watch } = read;
    let (base, watch) = if base.usable() {
        (Some(base), watch)
    } else {
        drop(watch);
        (None, ctx.echoes.watch(tick.session_id))
    };
    let written = write_watched(tick, watch, &reserve_guard, base.as_ref(), |g| {
        crate::goal::provider::limit_rules::on_reserve(g, basis.tail_output, basis.cut_turn);
        apply_reservation(g, &reservation, reused, tail, message_id.as_deref(), tick);
    })
    .await;
    let echo = match written {
        Ok(echo) => echo,
        Err(other) => {
            log_write(tick.session_id, "reserve", &other);
            return Err(if other.is_err() { tick.late_retry() } else { TickOutcome::Done });
        }
    };
    let reserved = echo.reserved.clone();
    let guard =
        GoalGuard::Exact { revision: reserved.revision(), status: GoalStatus::Active, holder: ctx.holder.clone() };
    let bound = echo_bound(ctx.config.idle_quiet);
    // An echo that had not come by the bound (a slow event stream) is looked for again when the
    // tick ends without posting: the event that stopped it is often the very write we overwrote.
    let heard = echo.hear(tick, bound).await;
    let contested = matches!(heard, Heard::Contested);
    let late = match heard {
        Heard::Repaired => return Err(TickOutcome::Done),
        Heard::NotYet => Some(echo),
        Heard::Settled | Heard::Contested => None,
    };
    let appendix = reservation.appendix;
    Ok(Reserved { goal: reserved, guard, tail: tail.to_string(), reused, message_id, late, appendix, contested })
}

/// The reservation's fields: accounting, the turn counted (unless reused), streaks, note,
/// auditor, evidence fields, the tail and message id, and this runtime's lease.
fn apply_reservation(
    g: &mut Goal,
    reservation: &Reservation,
    reused: bool,
    tail: &str,
    message_id: Option<&str>,
    tick: &Tick<'_>,
) {
    reservation.accounting.apply(g);
    if !reused {
        g.turns_used = g.turns_used.saturating_add(1);
    }
    g.blocked_streak = reservation.blocked_streak;
    g.audit_fail_streak = reservation.audit_fail_streak;
    g.status_reason.clear();
    // A goal that is simply running carries no cause.
    g.set_cause(None);
    if let Some(note) = &reservation.note {
        g.note = truncate_chars(note, NOTE_CHAR_LIMIT);
    } else if g.note == NOTE_TURN_CUT {
        // The turn after the cut one ran: the cut is no longer what the goal is doing.
        g.note.clear();
    }
    if let Some((provider, model)) = &reservation.evaluation {
        g.evaluation_provider_id = provider.clone();
        g.evaluation_model_id = model.clone();
    }
    if let Some(progress) = &reservation.evidence.progress {
        g.progress.set(progress.clone());
    }
    if let Some(used) = &reservation.evidence.overrides {
        g.evidence_overrides.set(used.clone());
    }
    if let Some(criteria) = &reservation.evidence.criteria {
        criteria.apply(g);
    }
    if let Some(review) = &reservation.evidence.last_review {
        g.last_review.set(review.clone());
    }
    g.continuation_for.set(tail.to_string());
    match message_id {
        Some(id) => g.continuation_id.set(id.to_string()),
        None => {
            g.continuation_id.clear();
        }
    }
    take_lease(g, &tick.ctx.holder, tick.now_ms(), tick.ctx.config.lease.as_millis() as f64);
}
