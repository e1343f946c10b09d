//! The first steps of a tick: the first reads (the settings switches and the session), whose goal
//! it is (a fork's copy adopted paused, a resumed copy claimed) and whose lease holds it, guards
//! that cannot be read, the objective, and the live state (busy, a child busy, a permission or a
//! question open, or a read that keeps failing).

use crate::sched::outcome::TickOutcome;
use std::ops::ControlFlow;
use std::time::Duration;

use super::{act, end, read, write, Decide, Flow};
use crate::config::GoalConfig;
use crate::error::HttpError;
use crate::goal::decide::change::{Change, CopyRule, Extras};
use crate::goal::decide::gates::{lease_wait, live_gate, LiveGate};
use crate::goal::decide::guard_rules::{detail_of, unreadable_guards};
use crate::goal::decide::lineage::{owner_without_list, ownership, Ownership, Unlisted};
use crate::goal::decide::plan_rules::blocked;
use crate::goal::decide::seen::{Live, OwnerAnswer, Seen, Written};
use crate::goal::decide::wait_rules::{wait_detail, waiting_cause, Route};
use crate::goal::decide::{Effect, Guard, Need, Slot};
use crate::record::cause::CauseCode;
use crate::record::reasons::{
    REASON_INVALID_GOAL, REASON_MESSAGES_UNAVAILABLE, REASON_OBJECTIVE_UNAVAILABLE, REASON_RESUMED, WAITING_FOR_USER,
};
use crate::record::{Goal, GoalStatus};

/// How long a goal waiting for its directory's owner list sleeps when nothing wakes it: the list
/// that is read wakes it long before; this only bounds a wake-up lost anyway.
pub const LIST_WAIT_RECHECK: Duration = Duration::from_secs(300);
/// How often a session that OpenCode says is not there (404 through every retry) is looked at
/// again, and how many such looks it gets before it is let go (the sweep finds a goal behind it
/// after that): a route answering 404 for a while must not silence its goal.
pub const GONE_RECHECK: Duration = Duration::from_secs(30);
/// See [`GONE_RECHECK`].
pub const GONE_LOOKS: u32 = 10;

/// The first reads, and the active goal they show. Ends the tick when goals are switched off,
/// the session is unreadable or a subagent, or carries no active goal.
pub(super) fn first_read<'s>(seen: &'s Seen, config: &GoalConfig) -> Flow<&'s Goal> {
    let Some(first) = &seen.first else { return read(Need::First) };
    if !first.enabled {
        return end(TickOutcome::Done);
    }
    let session = match &first.session {
        Ok(session) => session,
        Err(error) => return end(unreadable(seen.attempt, config, error)),
    };
    match &first.goal {
        Some(goal) if !session.is_subagent() && goal.status == GoalStatus::Active => ControlFlow::Continue(goal),
        _ => end(TickOutcome::Done),
    }
}

/// A session that cannot be read. One the server says is not there is looked at every
/// [`GONE_RECHECK`] once the retries are spent, and dropped after [`GONE_LOOKS`] such looks; a
/// server that is only slow or failing is never given up on (past the last retry the scheduler
/// looks again at its longest backoff).
pub fn unreadable(attempt: u32, config: &GoalConfig, error: &HttpError) -> TickOutcome {
    if attempt < config.max_retry_attempts || !error.is_definite() {
        return TickOutcome::Retry;
    }
    if attempt - config.max_retry_attempts < GONE_LOOKS {
        TickOutcome::RetryIn(GONE_RECHECK)
    } else {
        TickOutcome::Done
    }
}

/// Whose goal it is, and whether another runtime's lease keeps this one off it: the goal to
/// drive (this session's, or a copy the user resumed, now its own), or the end of the tick.
pub(super) fn owner<'s>(seen: &'s Seen, goal: &'s Goal) -> Flow<&'s Goal> {
    let Some(answer) = &seen.owner.answer else { return read(Need::Owners) };
    let session = seen.session().expect("read before the owner");
    let driven = match answer {
        OwnerAnswer::Listed(view) => {
            let older = view.oldest.as_deref().filter(|holder| *holder != session.id);
            listed(seen, goal, view.listed, older)?
        }
        OwnerAnswer::CannotList => unlisted(seen, goal, session.created)?,
        OwnerAnswer::Failing { detail } => return wait_for_list(seen, goal, detail),
    };
    let at = seen.first_at;
    match lease_wait(driven, &seen.holder, at) {
        Some(wait) => end(TickOutcome::BackOff(wait)),
        None => ControlFlow::Continue(driven),
    }
}

/// The decision on what a read list told (`listed`: a list holding every carrier was read).
fn listed<'s>(seen: &'s Seen, goal: &'s Goal, listed: bool, older: Option<&str>) -> Flow<&'s Goal> {
    match ownership(goal, &seen.session_id, older) {
        Ownership::Unmarked if !listed => end(TickOutcome::Retry),
        Ownership::Own | Ownership::Unmarked => {
            remembered(seen)?;
            ControlFlow::Continue(goal)
        }
        Ownership::Claimed => {
            remembered(seen)?;
            claimed(seen)
        }
        Ownership::Copy { source } => {
            if goal.objective_file && !seen.owner.objective_copied {
                return act(Effect::CopyObjective { source });
            }
            let rule = CopyRule::Listed { older: older.map(str::to_string) };
            adopt(seen, source, rule)
        }
    }
}

/// The decision without an owner list (the server cannot list sessions): the session itself
/// decides; its own goal is stamped with its `sessionId` at once, so later ticks need no list.
fn unlisted<'s>(seen: &'s Seen, goal: &'s Goal, session_created: f64) -> Flow<&'s Goal> {
    if ownership(goal, &seen.session_id, None) != Ownership::Unmarked {
        // A goal that names no session is either unmarked or resumed by the user (claimed).
        remembered(seen)?;
        return claimed(seen);
    }
    match owner_without_list(goal, session_created) {
        Unlisted::Own => {
            remembered(seen)?;
            claimed(seen)
        }
        Unlisted::Copy => adopt(seen, String::new(), CopyRule::Unlisted { session_created }),
        Unlisted::Unknown => wait_for_list(seen, goal, &wait_detail(Route::List, &HttpError::Status(404))),
    }
}

fn remembered(seen: &Seen) -> Flow {
    if seen.owner.remembered {
        ControlFlow::Continue(())
    } else {
        act(Effect::RememberCarrier)
    }
}

/// A copy the user resumed, written as this session's own: the tick goes on with it.
fn claimed(seen: &Seen) -> Flow<&Goal> {
    match seen.written(Slot::Claim) {
        None => act(Effect::Write(super::Write {
            change: Change::Claim,
            guard: Guard::SameId,
            keep_owner: false,
            slot: Slot::Claim,
        })),
        Some(Written::Goal(goal)) => ControlFlow::Continue(goal),
        Some(Written::Stale) => end(TickOutcome::Done),
        Some(Written::Failed) => end(TickOutcome::Retry),
    }
}

/// A copy adopted paused; the tick ends (retried when the write failed).
fn adopt<T>(seen: &Seen, source: String, rule: CopyRule) -> Flow<T> {
    match seen.written(Slot::Adopt) {
        None => {
            let change = Change::Adopt { source, rule };
            act(Effect::Write(super::Write { change, guard: Guard::SameId, keep_owner: false, slot: Slot::Adopt }))
        }
        Some(Written::Failed) => end(TickOutcome::Retry),
        Some(_) => end(TickOutcome::Done),
    }
}

/// The goal waits for its directory's next owner list, and says so in its cause (the goal
/// keeps naming no session); the list that is read wakes it.
fn wait_for_list<T>(seen: &Seen, goal: &Goal, detail: &str) -> Flow<T> {
    if seen.written(Slot::Waiting).is_none()
        && waiting_cause(goal.cause.as_ref(), &seen.session_id, detail, seen.first_at).is_some()
    {
        let change = Change::WaitingForOpenCode { detail: detail.to_string() };
        return act(Effect::Write(super::Write { change, guard: Guard::Tick, keep_owner: true, slot: Slot::Waiting }));
    }
    end(TickOutcome::BackOff(LIST_WAIT_RECHECK))
}

/// The objective the tick works toward (read once the goal is known to be driven), after the
/// guards: a guard that cannot be read stops the goal before anything runs past it.
pub(super) fn objective(at: &Decide<'_>) -> Flow<String> {
    let Some(objective) = &at.seen.objective else { return read(Need::Objective) };
    let unreadable = unreadable_guards(at.goal);
    if let Some(detail) = detail_of(&unreadable) {
        let mut settlement = blocked(at.goal, REASON_INVALID_GOAL, CauseCode::InvalidGoal);
        settlement.detail = Some(detail);
        return ControlFlow::Break(at.settle(settlement, Extras::default(), Guard::Tick, None));
    }
    match objective {
        Some(text) => ControlFlow::Continue(text.clone()),
        None if at.exhausted() => {
            let mut settlement = blocked(at.goal, REASON_OBJECTIVE_UNAVAILABLE, CauseCode::MessagesUnavailable);
            settlement.detail = Some("objective file".into());
            ControlFlow::Break(at.settle(settlement, Extras::default(), Guard::Tick, None))
        }
        None => end(TickOutcome::Retry),
    }
}

/// The live state, gated: the tick goes on only on an idle session with no busy child and nobody
/// waiting on the user. A read that failed makes the goal wait, and say so (past the retries it
/// settles `blocked`).
pub(super) fn live<'s>(at: &Decide<'s>) -> Flow<&'s Live> {
    let seen = at.seen;
    let live = match &seen.live {
        None => return read(Need::Live),
        Some(Ok(live)) => live,
        Some(Err(failed)) => return live_failed(at, failed),
    };
    match live_gate(&live.status, &seen.session_id, &live.children, |_| live.waiting_events) {
        LiveGate::Proceed => ControlFlow::Continue(live),
        LiveGate::Busy => end(TickOutcome::Busy),
        LiveGate::ChildBusy => end(TickOutcome::Rearm),
        LiveGate::WaitingForUser => waiting_for_user(at, live),
    }
}

fn live_failed<T>(at: &Decide<'_>, failed: &[(Route, HttpError)]) -> Flow<T> {
    if at.exhausted() {
        let settlement = blocked(at.goal, REASON_MESSAGES_UNAVAILABLE, CauseCode::MessagesUnavailable);
        return ControlFlow::Break(at.settle(settlement, Extras::default(), Guard::Tick, None));
    }
    // Waiting, and saying so: the first failing request and its answer.
    let seen = at.seen;
    if let Some((route, error)) = failed.first() {
        let detail = wait_detail(*route, error);
        if seen.written(Slot::Waiting).is_none()
            && waiting_cause(at.goal.cause.as_ref(), &seen.session_id, &detail, seen.first_at).is_some()
        {
            return act(write(Change::WaitingForOpenCode { detail }, Slot::Waiting));
        }
    }
    end(TickOutcome::Retry)
}

/// Events said a permission or question is open: OpenCode's lists are read first (the answer's
/// event may be lost). Still open: the goal says it waits on the user, and the tick ends.
fn waiting_for_user<'s>(at: &Decide<'_>, live: &'s Live) -> Flow<&'s Live> {
    let seen = at.seen;
    match seen.waiting.requests_open {
        None => read(Need::OpenRequests),
        Some(false) if seen.waiting.inputs_settled => ControlFlow::Continue(live),
        Some(false) => {
            let sessions = std::iter::once(seen.session_id.clone()).chain(live.children.iter().map(|c| c.id.clone()));
            act(Effect::InputsSettled(sessions.collect()))
        }
        Some(true) => {
            let reason = &at.goal.status_reason;
            if seen.written(Slot::Waiting).is_none() && reason != WAITING_FOR_USER && reason != REASON_RESUMED {
                return act(write(Change::WaitingForUser, Slot::Waiting));
            }
            end(TickOutcome::Done)
        }
    }
}
