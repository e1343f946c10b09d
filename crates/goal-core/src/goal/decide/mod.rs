//! The decision of a tick, pure: [`decide`] turns what the tick has seen ([`Seen`]), the
//! runtime's settings and the clock value passed in into the next [`Decision`] (read this,
//! carry out that, or end). No module here is `async`, reads a clock or imports I/O; the tick's
//! driver (`goal/tick.rs`) gathers, acts and asks again until the decision ends the tick.
//!
//! The branch order is the reference runtime's (OpenChamber's JavaScript goal loop), extended:
//! the first reads → whose goal it is, the lease → guards that cannot be read → the objective →
//! the live state → a wrap-up's reply → provider limits and cut turns → the plan (budgets, the
//! time stage, the quiet window, a stranded message) → the audit and the evidence → acceptance
//! checks and the review → the wrap-up's forecast → the reservation and the post. Each step's rules live in the file named after it; this file
//! composes them.

pub mod accounting;
pub mod budgets;
pub mod causes;
pub mod change;
pub mod check_rules;
pub mod decision;
pub mod dispatch_rules;
pub mod gates;
pub mod grading;
pub mod guard_rules;
pub mod limit_rules;
pub mod lineage;
pub mod list_rules;
pub mod notify;
pub mod observation;
pub mod plan_rules;
pub mod review_rules;
pub mod seen;
pub mod stages;
pub mod strand_rules;
pub mod wait_rules;

pub mod acceptance;
pub mod delivery;
pub mod planning;
pub mod proof;
pub mod provider;
pub mod review;
pub mod start;
pub mod verdict;
pub mod wrap_up;

#[cfg(test)]
mod tests;

use crate::sched::outcome::TickOutcome;
use std::ops::ControlFlow;
use std::time::Duration;

pub use decision::{ClaimFor, Decision, Effect, Guard, Line, Need, PauseBefore, Slot, Write};
pub use observation::Observation;
pub use seen::Seen;

use crate::config::GoalConfig;
use crate::goal::decide::change::{Change, Extras};
use crate::goal::decide::plan_rules::Settlement;
use crate::goal::decide::seen::Written;
use crate::record::Goal;
use crate::time::backoff::retry_delay;

/// A step of the decision: `Break` is the decision, `Continue` hands on what the next step needs.
type Flow<T = ()> = ControlFlow<Decision, T>;

/// The next thing the tick does, given what it has seen, the runtime's settings and now.
pub fn decide(seen: &Seen, config: &GoalConfig, now: f64) -> Decision {
    // A terminal write ends the tick whatever else changed since (the user may act meanwhile).
    if let Some(settled) = settled(seen, config) {
        return settled;
    }
    match branch_order(seen, config, now) {
        ControlFlow::Break(decision) => decision,
        ControlFlow::Continue(()) => Decision::End(TickOutcome::Done),
    }
}

fn branch_order(seen: &Seen, config: &GoalConfig, now: f64) -> Flow {
    let goal = start::first_read(seen, config)?;
    let goal = start::owner(seen, goal)?;
    let at = Decide { seen, config, now, goal };
    let objective = start::objective(&at)?;
    let live = start::live(&at)?;
    wrap_up::answered(&at, live)?;
    let window = provider::stage(&at, live)?;
    let course = planning::plan(&at, live, &window)?;
    let (basis, reservation) = match course {
        planning::Course::Continue(basis, reservation) => (basis, *reservation),
        planning::Course::Audit(basis) => match wrap_up::standing(&at, &basis) {
            Some(reservation) => (basis, reservation),
            None => verdict::audit(&at, &objective, basis)?,
        },
    };
    let reservation = wrap_up::plan(&at, live, &basis, reservation)?;
    delivery::deliver(&at, &objective, basis, reservation)
}

/// What every step of one decision reads.
struct Decide<'a> {
    seen: &'a Seen,
    config: &'a GoalConfig,
    now: f64,
    /// The goal the tick drives (the session's, or the claimed copy).
    goal: &'a Goal,
}

impl Decide<'_> {
    /// The last allowed retry: a failure now settles instead of asking for another.
    fn exhausted(&self) -> bool {
        self.seen.attempt >= self.config.max_retry_attempts
    }

    /// How a tick ends when a request failed after its reads (a write, a claim, a post): a
    /// retry whose wait continues the doubling of the post's own tries and is never shorter
    /// than the plain retry's (a tick that made a dozen requests before it failed keeps a failing
    /// route within A.8's budget).
    fn late_retry(&self) -> TickOutcome {
        late_retry(self.seen, self.config, 0)
    }

    /// A terminal write of `settlement` on `guard`'s goal, with `extras` and a trail line
    /// before it.
    fn settle(&self, settlement: Settlement, extras: Extras, guard: Guard, trail: Option<Line>) -> Decision {
        let change = Change::Settle(Box::new(settlement), Box::new(extras));
        let write = Write { change, guard, keep_owner: false, slot: decision::Slot::Settled };
        Decision::Act(Effect::Settle { write, trail })
    }
}

/// [`Decide::late_retry`], `extra` doublings further (a post whose every try failed re-read the
/// goal and the messages each time: one more).
fn late_retry(seen: &Seen, config: &GoalConfig, extra: u32) -> TickOutcome {
    let failures = seen.attempt.saturating_add(1);
    let tries = config.max_dispatch_attempts.max(1).saturating_add(extra);
    let plain = retry_delay(config.idle_quiet, failures);
    let continued = retry_delay(config.dispatch_retry_delay, failures.saturating_add(tries));
    TickOutcome::RetryIn(plain.max(continued))
}

/// What follows a terminal write: a settle that was written is announced (a pause after an abort,
/// which the user made, is not), then the tick ends: written, settled; the goal changed
/// meanwhile, done (the change brings its own wake-up); failed, retried (a terminal decision
/// never stored would leave the goal active with nothing armed), on the late backoff unless the
/// tick made no request past its reads.
fn settled(seen: &Seen, config: &GoalConfig) -> Option<Decision> {
    let (written, announced) = match (seen.written(Slot::Settled), seen.written(Slot::Paused)) {
        (Some(written), _) => (written, seen.announced),
        (None, paused) => (paused?, true),
    };
    Some(Decision::End(match written {
        Written::Goal(goal) if !announced => return Some(Decision::Act(announce(seen, goal))),
        Written::Goal(_) => TickOutcome::Settled,
        Written::Stale => TickOutcome::Done,
        Written::Failed if seen.live.as_ref().is_some_and(Result::is_err) => TickOutcome::Retry,
        Written::Failed => late_retry(seen, config, 0),
    }))
}

/// A settled goal's announcement: the notification, when the settings file asks for one, with
/// the effective objective (the file's text for a file-backed goal).
fn announce(seen: &Seen, goal: &Goal) -> Effect {
    let wanted = seen.first.as_ref().is_some_and(|first| first.notify);
    let notification = wanted.then(|| {
        let objective = seen.objective.clone().flatten().filter(|o| !o.is_empty());
        let objective = objective.unwrap_or_else(|| seen.goal().map(|g| g.objective.clone()).unwrap_or_default());
        notify::goal_notification(&seen.session_id, &seen.directory, goal, &objective)
    });
    Effect::Announce { goal: Box::new(goal.clone()), notification }
}

/// How a tick goes on after a write that does not end it: written, on; stale, done; failed,
/// the late retry.
fn after_write(written: &Written, late: TickOutcome) -> Flow {
    match written {
        Written::Goal(_) => ControlFlow::Continue(()),
        Written::Stale => ControlFlow::Break(Decision::End(TickOutcome::Done)),
        Written::Failed => ControlFlow::Break(Decision::End(late)),
    }
}

fn end<T>(end: TickOutcome) -> Flow<T> {
    ControlFlow::Break(Decision::End(end))
}

fn read<T>(need: Need) -> Flow<T> {
    ControlFlow::Break(Decision::Read(need))
}

fn act<T>(effect: Effect) -> Flow<T> {
    ControlFlow::Break(Decision::Act(effect))
}

/// A guarded write of the tick's goal, its result seen in `slot`.
fn write(change: Change, slot: decision::Slot) -> Effect {
    Effect::Write(Write { change, guard: Guard::Tick, keep_owner: false, slot })
}

/// Slack added to a wait so the next look lands after the moment waited for, not on it.
const MARGIN: Duration = Duration::from_millis(20);

/// How long from `now_ms` until `until`, plus [`MARGIN`] so the look lands after it.
pub fn wait_until(until: f64, now_ms: f64) -> Duration {
    Duration::from_millis(((until - now_ms).max(0.0) + MARGIN.as_millis() as f64).min(u64::MAX as f64 / 2.0) as u64)
}
