//! The check stage, between a `complete` decision and its settle: every acceptance check runs in
//! order through OpenCode's shell (`check_rules.rs` reads the result). All pass: the goal settles
//! `complete` with cause `checksPassed` (or goes on to the review). One fails or times out: the
//! goal goes on, its continuation quoting the failure. Anything the user does meanwhile (a
//! message, a turn, a pause or an edit) ends the round without a verdict.
//!
//! Each run's id comes from the tail (`record/check_id.rs`): a run already in the transcript (from
//! before a restart, or another host's) is read, not run again; otherwise the run is claimed
//! across hosts first, and only the first claimer runs it. The goal's lease is held for the round.

use crate::sched::outcome::TickOutcome;
use std::ops::ControlFlow;
use std::time::Duration;

use serde_json::json;

use super::proof::{claimed, held, Input};
use super::{act, end, read, Decide, Flow, MARGIN};
use crate::error::HttpError;
use crate::goal::decide::change::Extras;
use crate::goal::decide::check_rules::Claim;
use crate::goal::decide::check_rules::{self, cut_in, recorded_run, run_cut, CheckResult, CheckRun};
use crate::goal::decide::decision::Slot;
use crate::goal::decide::notify::trail_line;
use crate::goal::decide::plan_rules::{blocked, Basis, Reservation, Settlement};
use crate::goal::decide::seen::Transcript;
use crate::goal::decide::{ClaimFor, Effect, Guard, Need};
use crate::record::cause::CauseCode;
use crate::record::check_id::check_message_id;
use crate::record::reasons::{REASON_CHECKS_PASSED, REASON_CHECKS_UNAVAILABLE};
use crate::record::{AcceptanceCheck, GoalStatus};

/// Slack on the shell call's own HTTP time limit beyond the check's limit, and on the round's
/// lease.
pub const SHELL_SLACK: Duration = Duration::from_secs(30);

/// The proof of a `complete`: the checks, then the review. `Continue` is the continuation's
/// reservation (a check failed, or the reviewer rejected).
pub(super) fn accept(at: &Decide<'_>, objective: &str, input: Input<'_>) -> Flow<Reservation> {
    if at.goal.checks.is_empty() {
        return super::review::review(at, objective, input);
    }
    match round(at, &input) {
        // A shell endpoint that kept failing through every retry: the goal cannot be proven.
        ControlFlow::Break(super::Decision::End(TickOutcome::Retry | TickOutcome::RetryIn(_))) if at.exhausted() => {
            ControlFlow::Break(refused_settle(at, input, "shell endpoint unreachable".into()))
        }
        ControlFlow::Break(decision) => ControlFlow::Break(decision),
        ControlFlow::Continue(Round::Refused(detail)) => ControlFlow::Break(refused_settle(at, input, detail)),
        ControlFlow::Continue(Round::Failed(run)) => {
            ControlFlow::Continue(failed_reservation(input.basis, input.settlement, &run, at.goal.checks.len()))
        }
        ControlFlow::Continue(Round::Passed(passed)) => {
            let mut settlement = input.settlement;
            settlement.reason = REASON_CHECKS_PASSED.into();
            settlement.cause = CauseCode::ChecksPassed;
            settlement.detail = Some(format!("{passed} of {} checks passed", at.goal.checks.len()));
            if at.goal.review_wanted().is_some() {
                return super::review::review(at, objective, Input { settlement, ..input });
            }
            ControlFlow::Break(at.settle(settlement, Extras::default(), Guard::Tick, None))
        }
    }
}

/// How a round of checks ended.
enum Round {
    /// Every check passed (how many).
    Passed(usize),
    /// This check failed or timed out.
    Failed(CheckRun),
    /// The shell endpoint refused (missing, or a 4xx other than busy): the detail.
    Refused(String),
}

/// The round: its lease, then each check in order. The lease is a look's (`leaseMs`), not the
/// checks' time: while a check runs OpenCode shows the session busy, which keeps every host off
/// it, so a host killed in the middle of a round keeps the others off the goal no longer than
/// its lease (docs/multi-host.md).
fn round(at: &Decide<'_>, input: &Input<'_>) -> Flow<Round> {
    let checks = &at.goal.checks;
    let hold = at.config.lease;
    held(at, Slot::ChecksHeld, hold, input.criteria.clone())?;
    let runs = &at.seen.checks.runs;
    if let Some(last) = runs.last() {
        if last.result == CheckResult::Aborted || stopped_after(at) {
            return end(TickOutcome::Done);
        }
        if !last.result.passed() {
            return ControlFlow::Continue(Round::Failed(last.clone()));
        }
    }
    match checks.get(runs.len()) {
        None => ControlFlow::Continue(Round::Passed(runs.len())),
        Some(check) => {
            let refused = run_one(at, input.basis, runs.len(), check, hold)?;
            ControlFlow::Continue(Round::Refused(refused))
        }
    }
}

/// The user stepped in after the last run concluded and before anything came of it.
fn stopped_after(at: &Decide<'_>) -> bool {
    let seen = at.seen;
    !seen.current
        && seen.checks.current.transcript.is_none()
        && seen.held(Slot::ReviewHeld).is_none()
        && seen.held(Slot::Reserved).is_none()
        && seen.plan.dispatch_claim.is_none()
}

/// The session just before a run: ends the round when it cannot be read, is busy, shows a user
/// message after the tail, or the goal was stopped or edited.
fn fresh<'s>(at: &Decide<'s>, transcript: &'s Option<Result<Transcript, ()>>, tail: &str) -> Flow<&'s Transcript> {
    if transcript.is_none() && !at.seen.current {
        return end(TickOutcome::Done);
    }
    match transcript {
        None => read(Need::CheckTranscript),
        Some(Err(())) => end(TickOutcome::Retry),
        Some(Ok(fresh)) => {
            let same_goal = fresh
                .goal
                .as_ref()
                .is_some_and(|g| g.status == GoalStatus::Active && g.revision() == at.goal.revision());
            if fresh.busy || fresh.newest != tail || !same_goal {
                return end(TickOutcome::Done);
            }
            ControlFlow::Continue(fresh)
        }
    }
}

/// One check: found in the transcript, or run now by the host whose claim came first.
/// `Continue`: the shell refused for good (the detail).
fn run_one(at: &Decide<'_>, basis: &Basis, index: usize, check: &AcceptanceCheck, hold: Duration) -> Flow<String> {
    let seen = &at.seen.checks.current;
    let tail = basis.tail_message_id.as_str();
    let message_id = check_message_id(&at.goal.id, tail, index, &check.command);
    let fresh = fresh(at, &seen.transcript, tail)?;
    if let Some(id) = &message_id {
        let mut cut = false;
        match recorded_run(&fresh.raw, id, index, check) {
            Some(Some(mut run)) => {
                run.reused = true;
                return conclude(at, basis, run);
            }
            // Cut by a server killed while it ran: it never finishes, so it runs again under its
            // id, by whoever holds its claim (or claims it once abandoned).
            Some(None) if run_cut(&fresh.raw, id, at.now, at.config.idle_quiet) => cut = true,
            // Unfinished on an idle session: cut moments ago, or about to show its end. Looked
            // at again once it would count as cut: no event is owed for a turn a restart cut.
            Some(None) => {
                let quiet = at.config.idle_quiet;
                let wait = cut_in(&fresh.raw, id, at.now, quiet).unwrap_or(quiet);
                return end(TickOutcome::BackOff(wait + MARGIN));
            }
            None => {}
        }
        match claimed(at, ClaimFor::Check, id, &seen.claims, hold, &basis.target)? {
            Claim::Ours => {}
            // A cut run's claim stands for the hold, then counts as abandoned: look again then.
            Claim::Theirs if cut => return end(TickOutcome::BackOff(hold)),
            // The other host runs it; its end brings the next look.
            Claim::Theirs => return end(TickOutcome::Done),
            Claim::Unknown => return end(at.late_retry()),
        }
    }
    match &seen.run {
        None => act(Effect::RunCheck {
            index,
            check: check.clone(),
            message_id: message_id.unwrap_or_default(),
            target: basis.target.clone(),
        }),
        Some(Ok(run)) => conclude(at, basis, run.clone()),
        Some(Err(error)) => match refusal(error) {
            Some(refused) => ControlFlow::Continue(refused),
            // Busy: a turn of the user's started. Look again a quiet window on rather than wait
            // for its idle, which may have come and gone before this answer.
            None if matches!(error, HttpError::Status(409)) => end(TickOutcome::Rearm),
            None => end(at.late_retry()),
        },
    }
}

/// A finished run goes to the trail (and the console); the next decision reads it from there.
fn conclude<T>(at: &Decide<'_>, basis: &Basis, run: CheckRun) -> Flow<T> {
    let mut line = trail_line(at.goal, &basis.tail_message_id, "check", run.result.as_str(), at.now);
    line.insert("check".into(), run.to_value());
    line.insert("checks".into(), json!(at.goal.checks.len()));
    act(Effect::ConcludeCheck { run, line, total: at.goal.checks.len() })
}

/// A shell call that failed for good: a missing or refusing endpoint (a 4xx other than busy,
/// 408 and 429). `None`: busy, or worth retrying.
fn refusal(error: &HttpError) -> Option<String> {
    match error {
        HttpError::Status(status) if (400..500).contains(status) && ![408, 409, 429].contains(status) => {
            Some(format!("shell endpoint HTTP {status}"))
        }
        _ => None,
    }
}

/// The checks cannot run at all: the goal settles `blocked` (never `complete` unproven).
fn refused_settle(at: &Decide<'_>, input: Input<'_>, detail: String) -> super::Decision {
    let mut settlement = blocked(at.goal, REASON_CHECKS_UNAVAILABLE, CauseCode::DispatchFailed);
    settlement.accounting = input.basis.accounting.clone();
    settlement.detail = Some(detail);
    at.settle(settlement, Extras::default(), Guard::Tick, None)
}

/// The continuation after a failed check: one turn like any other, with the failure quoted.
fn failed_reservation(basis: &Basis, settlement: Settlement, run: &CheckRun, total: usize) -> Reservation {
    Reservation {
        accounting: basis.accounting.clone(),
        blocked_streak: 0,
        audit_fail_streak: 0,
        note: Some(format!("acceptance check {} of {total} did not pass", run.index + 1)),
        evaluation: settlement.evaluation,
        evidence: Default::default(),
        appendix: Some(check_rules::failure_prompt(run, total)),
        wrap_up: None,
    }
}
