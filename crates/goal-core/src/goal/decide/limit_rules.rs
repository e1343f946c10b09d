//! The rules of the provider stage (`provider.rs` applies them): what a provider failure or a
//! cut turn in the tail reply means for the goal (park, still parked, resume, settle, continue a
//! cut turn) and the fields a park leaves on the goal. Pure: the clock value and the settings
//! are passed in.
//!
//! A park keeps the goal `active` with `statusReason` [`REASON_WAITING_FOR_PROVIDER`] and cause
//! `waitingForProviderLimit` (its `until` is the wake-up time), and remembers the failed reply
//! (`providerWaitFor`) and how many parks came in a row (`providerWaits`). At `until` one
//! continuation answers that reply, with the id every host derives from it.

pub mod reset;

use self::reset::{jitter_unit, park_until};
use crate::record::cause::{Cause, CauseCode};
use crate::record::provider_error::{classify, ProviderFailure};
use crate::record::reasons::REASON_RESUMED;
use crate::record::session::{Message, Role};
use crate::record::Goal;

pub use crate::record::reasons::{
    REASON_CONTENT_FILTER, REASON_CONTEXT_OVERFLOW, REASON_PROVIDER_AUTH, REASON_PROVIDER_QUOTA,
    REASON_TURN_INTERRUPTED, REASON_WAITING_FOR_PROVIDER,
};

/// Cut turns in a row that settle the goal (the first is continued, the second settles).
pub const MAX_CUT_TURNS: u64 = 2;

/// The limits of parking (runtime options `maxProviderWaits`, `maxProviderWaitMs`).
pub use crate::config::ProviderLimits as ParkLimits;

/// A new park.
#[derive(Debug, Clone, PartialEq)]
pub struct Park {
    /// The failed reply.
    pub tail: String,
    /// Wake-up time (epoch ms).
    pub until: f64,
    /// This park's number in the row (1-based).
    pub nth: u64,
    /// The failed reply answered our continuation: that turn goes back.
    pub give_back: bool,
    /// The cause written with it.
    pub cause: Cause,
}

/// A provider failure or a cut turn that settles the goal `blocked`.
#[derive(Debug, Clone, PartialEq)]
pub struct Stop {
    /// Status reason.
    pub reason: &'static str,
    /// Typed cause.
    pub cause: Cause,
}

/// What the tail means before any audit.
#[derive(Debug, Clone, PartialEq)]
pub enum TailStep {
    /// Nothing provider-related: the tick plans as usual.
    Usual,
    /// Park the goal until the limit resets.
    Park(Park),
    /// Parked for this reply and not yet due: look again at `until`.
    Parked {
        /// Wake-up time (epoch ms).
        until: f64,
    },
    /// The park is over (or the user resumed): one continuation over the failed reply, no audit.
    Resume,
    /// A turn cut by a server restart: one continuation over it, no audit (`nth` in a row).
    ContinueCut {
        /// This cut's number in the row (1-based).
        nth: u64,
    },
    /// Settle `blocked` with a typed cause; never audited, never continued.
    Block(Stop),
}

/// The failed reply the goal is parked for, when it is parked.
pub fn parked_for(goal: &Goal) -> Option<&str> {
    goal.provider_wait_for.get().map(String::as_str)
}

/// When a parked goal wakes up (from its cause), when it is parked.
pub fn wake_at(goal: &Goal) -> Option<f64> {
    parked_for(goal)?;
    goal.cause.as_ref().filter(|c| c.code == CauseCode::WaitingForProviderLimit).and_then(|c| c.until)
}

/// Decides what the tail reply means. `tail` is the newest message (the tick has seen the
/// session idle); `cut_confirmed` says an unfinished tail is not a turn that is just starting
/// (seen idle on an earlier look, or older than the quiet window).
pub fn tail_step(goal: &Goal, tail: &Message, now_ms: f64, limits: ParkLimits, cut_confirmed: bool) -> TailStep {
    if tail.role != Role::Assistant || tail.id.is_empty() {
        return TailStep::Usual;
    }
    let resumed = goal.status_reason == REASON_RESUMED;
    if is_cut(tail) {
        if !cut_confirmed {
            return TailStep::Usual;
        }
        let counted = goal.cut_turns.get().copied().unwrap_or(0);
        // The reservation already answers this very cut (its post was lost with a killed host
        // or server): the same cut again, not the next one in the row.
        let same_cut = counted > 0 && goal.continuation_for.get() == Some(&tail.id);
        let nth = if resumed {
            1
        } else if same_cut {
            counted
        } else {
            counted + 1
        };
        if nth >= MAX_CUT_TURNS {
            return TailStep::Block(stop(CauseCode::TurnInterrupted, REASON_TURN_INTERRUPTED, now_ms, None));
        }
        return TailStep::ContinueCut { nth };
    }
    let Some(error) = &tail.provider_error else { return TailStep::Usual };
    match classify(error, &tail.selection.provider_id) {
        ProviderFailure::Other => TailStep::Usual,
        ProviderFailure::Quota => {
            TailStep::Block(stop(CauseCode::ProviderQuota, REASON_PROVIDER_QUOTA, now_ms, provider(tail)))
        }
        ProviderFailure::Auth { provider } => TailStep::Block(stop(
            CauseCode::ProviderAuth,
            REASON_PROVIDER_AUTH,
            now_ms,
            Some(provider).filter(|p| !p.is_empty()),
        )),
        ProviderFailure::ContextOverflow => {
            TailStep::Block(stop(CauseCode::ContextOverflow, REASON_CONTEXT_OVERFLOW, now_ms, provider(tail)))
        }
        ProviderFailure::ContentFilter => {
            TailStep::Block(stop(CauseCode::ContentFilter, REASON_CONTENT_FILTER, now_ms, provider(tail)))
        }
        ProviderFailure::Resetting => resetting(goal, tail, now_ms, limits, resumed),
    }
}

fn resetting(goal: &Goal, tail: &Message, now_ms: f64, limits: ParkLimits, resumed: bool) -> TailStep {
    if parked_for(goal) == Some(tail.id.as_str()) {
        return match wake_at(goal) {
            Some(until) if until > now_ms && !resumed => TailStep::Parked { until },
            _ => TailStep::Resume,
        };
    }
    if resumed {
        // The user asked to go on now: one continuation, no park.
        return TailStep::Resume;
    }
    if goal.continuation_for.get() == Some(&tail.id) {
        // The park over this reply ended and its continuation was reserved (the reservation
        // clears the park); that post failed or is still unknown. The same continuation goes on
        // under its id: not a new park, which would count this limit twice.
        return TailStep::Resume;
    }
    let nth = goal.provider_waits.get().copied().unwrap_or(0) + 1;
    if nth > limits.max_waits {
        return TailStep::Block(stop(CauseCode::ProviderQuota, REASON_PROVIDER_QUOTA, now_ms, provider(tail)));
    }
    let error = tail.provider_error.clone().unwrap_or_default();
    let completed = tail.completed.or(tail.created).unwrap_or(now_ms);
    let jitter = jitter_unit(&format!("{}/{}", goal.id, tail.id));
    let wait = park_until(&error, completed, nth, jitter, limits.max_wait_ms);
    let status = error.status.map(|s| s.to_string()).unwrap_or_default();
    let detail = [tail.selection.provider_id.as_str(), status.as_str()]
        .iter()
        .filter(|s| !s.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" ");
    let cause = Cause::new(CauseCode::WaitingForProviderLimit, now_ms).with_until(wait.until).with_detail(detail);
    let give_back =
        !tail.parent_id.is_empty() && goal.continuation_id.get().map(String::as_str) == Some(tail.parent_id.as_str());
    TailStep::Park(Park { tail: tail.id.clone(), until: wait.until, nth, give_back, cause })
}

/// A reply cut by a server restart: not finished, no `finish`, no error.
pub fn is_cut(tail: &Message) -> bool {
    tail.role == Role::Assistant && !tail.is_completed() && tail.error.is_none() && tail.finish.is_empty()
}

fn provider(tail: &Message) -> Option<String> {
    Some(tail.selection.provider_id.clone()).filter(|p| !p.is_empty())
}

/// A stop with its code and detail; the fix sentence comes from the code's row
/// (`record/cause.rs`) when the settle writes it (`goal/decide/causes.rs`).
fn stop(code: CauseCode, reason: &'static str, now_ms: f64, provider: Option<String>) -> Stop {
    let mut cause = Cause::new(code, now_ms);
    if let Some(provider) = provider {
        cause = cause.with_detail(provider);
    }
    Stop { reason, cause }
}

/// Writes a park onto the goal (the tick's guarded write): still active, the reason, the
/// cause, the count, the failed reply; the failed turn goes back; parked time is not active.
pub fn apply_park(goal: &mut Goal, park: &Park, now_ms: f64) {
    // Decided again on the goal as written now: another host may have parked this very reply
    // since this tick read it (the simulator found both hosts giving the same turn back).
    if parked_for(goal) == Some(park.tail.as_str()) {
        return;
    }
    goal.status_reason = REASON_WAITING_FOR_PROVIDER.into();
    goal.set_cause(Some(park.cause.clone()));
    goal.provider_waits.set(park.nth);
    goal.provider_wait_for.set(park.tail.clone());
    if park.give_back {
        goal.turns_used = goal.turns_used.saturating_sub(1);
    }
    goal.continuation_for.clear();
    goal.continuation_id.clear();
    crate::time::active::begin_inactive(goal, now_ms);
}

/// Ends a park (a continuation goes out, or the user paused, resumed or edited): the reason and
/// the waiting cause go, the count of parks in a row stays until a turn produces output.
pub fn clear_park(goal: &mut Goal) {
    goal.provider_wait_for.clear();
    if goal.cause.as_ref().is_some_and(|c| c.code == CauseCode::WaitingForProviderLimit) {
        goal.set_cause(None);
    }
    if goal.status_reason == REASON_WAITING_FOR_PROVIDER {
        goal.status_reason.clear();
    }
}

/// What a reservation changes of the park state: any park is over (a continuation goes out),
/// the goal is simply running again (no cause), a judged reply that produced output ends the
/// row of parks, and the row of cut turns ends unless this continuation answers a cut turn
/// (`cut_turn`, its number in the row).
pub fn on_reserve(goal: &mut Goal, tail_output: bool, cut_turn: Option<u64>) {
    clear_park(goal);
    goal.set_cause(None);
    if tail_output {
        goal.provider_waits.clear();
    }
    match cut_turn {
        Some(nth) => goal.cut_turns.set(nth),
        None => {
            goal.cut_turns.clear();
        }
    }
}

#[cfg(test)]
mod tests;
