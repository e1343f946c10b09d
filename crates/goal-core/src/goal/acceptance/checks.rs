//! The check stage, between a `complete` decision and its settle: every acceptance check of the
//! goal runs in order through OpenCode's shell endpoint (see `check_rules.rs` for the wrapper and
//! the reading). All pass: the goal settles `complete` with cause `checksPassed`. One fails or
//! times out: the goal goes on, its continuation quoting the failure. Anything the user does
//! meanwhile (a message, a turn, a pause or an edit) ends the round without a verdict.
//!
//! Each run's id comes from the tail (`record/check_id.rs`): before running a check the stage
//! looks for that id in the transcript, so a restart (or a second host) reuses a run instead of
//! running it again, and then claims the run (`check_claim.rs`), so that of two hosts that looked
//! at once only the first claimer runs it; while the round runs the goal's lease is held for the
//! checks' time limits.

use std::time::Duration;

use serde_json::{json, Value};
use tracing::{info, warn};

use crate::error::HttpError;
use crate::goal::acceptance::check_claim::{claim_run, Claim};
use crate::goal::acceptance::check_rules::{self, cut_in, recorded_run, run_cut, run_from_part, CheckResult, CheckRun};
use crate::goal::acceptance::review::ReviewInput;
use crate::goal::context::Tick;
use crate::goal::delivery::echo::hold_watched;
use crate::goal::planning::plan::{Basis, Reservation, Settlement};
use crate::goal::settling::trail;
use crate::record::cause::CauseCode;
use crate::record::check_id::{check_message_id, is_check_message};
use crate::record::session::chronological;
use crate::record::{AcceptanceCheck, GoalStatus};
use crate::sched::TickOutcome;

pub use crate::record::reasons::{REASON_CHECKS_PASSED, REASON_CHECKS_UNAVAILABLE};
/// How long an aborted run may take to come back before the stage stops waiting for it.
const ABORT_GRACE: Duration = Duration::from_secs(15);
/// Slack on the shell call's own HTTP time limit beyond the check's limit.
const CALL_SLACK: Duration = Duration::from_secs(30);

/// How a round of checks ended.
#[derive(Debug)]
pub enum RoundEnd {
    /// Every check passed.
    Passed(Vec<CheckRun>),
    /// This check failed or timed out.
    Failed(CheckRun),
    /// The user (or another host) came first: nothing decided; the tick ends this way.
    Interrupted(TickOutcome),
    /// The shell endpoint refused (missing, or a 4xx other than busy): the detail.
    Refused(String),
}

/// What the round needs to know about the turn under check.
pub struct RoundInput<'a> {
    /// The turn the auditor judged complete.
    pub basis: &'a Basis,
    /// The settlement the checks stand between.
    pub settlement: Settlement,
    /// The criteria the audit graded (all met), written with the round's lease.
    pub criteria: Option<crate::goal::verdict::grading::CriteriaUpdate>,
    /// The audit's evidence items (`e1…`), for a review after the checks.
    pub items: Vec<String>,
}

impl Tick<'_> {
    /// Runs the goal's checks before `input.settlement` (a `complete`), and ends the tick on
    /// the outcome: settled, continued with the failure quoted, or interrupted.
    pub async fn run_checks(&self, input: RoundInput<'_>) -> Result<Reservation, TickOutcome> {
        let checks = self.goal.checks.clone();
        let timeouts = crate::goal::stages::checks_time(checks.iter().map(|c| c.effective_timeout_ms()));
        self.enter(crate::goal::stages::Stage::Checks(timeouts));
        match self.check_round(input.basis, &checks, input.criteria.as_ref()).await {
            RoundEnd::Passed(runs) => {
                let mut settlement = input.settlement;
                settlement.reason = REASON_CHECKS_PASSED.into();
                settlement.cause = CauseCode::ChecksPassed;
                settlement.detail = Some(format!("{} of {} checks passed", runs.len(), checks.len()));
                if self.goal.review_wanted().is_some() {
                    let (basis, criteria, items) = (input.basis, input.criteria, input.items);
                    return self.review_completion(ReviewInput { basis, settlement, criteria, items }).await;
                }
                Err(self.settle(settlement).await)
            }
            RoundEnd::Failed(run) => Ok(failed_reservation(input.basis, input.settlement, &run, checks.len())),
            // A shell endpoint that kept failing through every retry: the goal cannot be proven.
            RoundEnd::Interrupted(TickOutcome::Retry | TickOutcome::RetryIn(_)) if self.exhausted => {
                Err(self.refused(input, "shell endpoint unreachable".into()).await)
            }
            RoundEnd::Interrupted(outcome) => Err(outcome),
            RoundEnd::Refused(detail) => Err(self.refused(input, detail).await),
        }
    }

    /// The checks cannot run at all: the goal settles `blocked` (never `complete` unproven).
    async fn refused(&self, input: RoundInput<'_>, detail: String) -> TickOutcome {
        warn!(target: "session_goal", session = self.session_id, %detail, "acceptance checks cannot run");
        let mut settlement =
            crate::goal::settling::settle::blocked(&self.goal, REASON_CHECKS_UNAVAILABLE, CauseCode::DispatchFailed);
        settlement.accounting = input.basis.accounting.clone();
        settlement.detail = Some(detail);
        self.settle(settlement).await
    }

    /// Holds the lease for the round, then runs the checks in order.
    async fn check_round(
        &self,
        basis: &Basis,
        checks: &[AcceptanceCheck],
        criteria: Option<&crate::goal::verdict::grading::CriteriaUpdate>,
    ) -> RoundEnd {
        let total: Duration = checks.iter().map(check_rules::time_limit).sum();
        let hold = self.ctx.config.lease + total + CALL_SLACK;
        if let Err(end) = self.hold_round(hold, criteria).await {
            return end;
        }
        let mut runs = Vec::with_capacity(checks.len());
        for (index, check) in checks.iter().enumerate() {
            let run = match self.run_one(basis, index, check, checks.len(), hold).await {
                Ok(run) => run,
                Err(end) => return end,
            };
            if !run.result.passed() {
                return RoundEnd::Failed(run);
            }
            runs.push(run);
        }
        RoundEnd::Passed(runs)
    }

    /// Takes the lease for the round (and records the grading), watched like a reservation (see
    /// `echo::hold_watched`): a user's stop heard in its echo ends the round before any claim.
    async fn hold_round(
        &self,
        hold: Duration,
        criteria: Option<&crate::goal::verdict::grading::CriteriaUpdate>,
    ) -> Result<(), RoundEnd> {
        hold_watched(self, hold, criteria).await.map_err(RoundEnd::Interrupted)
    }

    /// One check: found in the transcript, or run now by the host whose claim came first (see
    /// `check_claim.rs`; `hold` is how long a claim stands without its run). `Err` ends the round.
    async fn run_one(
        &self,
        basis: &Basis,
        index: usize,
        check: &AcceptanceCheck,
        total: usize,
        hold: Duration,
    ) -> Result<CheckRun, RoundEnd> {
        let tail = basis.tail_message_id.as_str();
        let message_id = check_message_id(&self.goal.id, tail, index, &check.command);
        let raw = self.fresh_transcript(tail).await?;
        if let Some(id) = &message_id {
            let mut cut = false;
            match recorded_run(&raw, id, index, check) {
                Some(Some(mut run)) => {
                    run.reused = true;
                    return self.conclude(basis, run, total).await;
                }
                // Cut by a server killed while it ran: it never finishes, so it runs again
                // under its id, by whoever holds its claim (or claims it once abandoned).
                Some(None) if run_cut(&raw, id, self.now_ms(), self.ctx.config.idle_quiet) => {
                    info!(target: "session_goal", session = self.session_id, check = index + 1, "acceptance check run cut by a restart; running it again");
                    cut = true;
                }
                // Unfinished on an idle session (`fresh_transcript` saw it idle): cut moments ago
                // by a restart, or about to show its end. Looked at again once it would count as
                // cut: no event is owed for a turn a restart cut.
                Some(None) => {
                    let wait = cut_in(&raw, id, self.now_ms(), self.ctx.config.idle_quiet)
                        .unwrap_or(self.ctx.config.idle_quiet);
                    return Err(RoundEnd::Interrupted(TickOutcome::BackOff(wait + Duration::from_millis(20))));
                }
                None => {}
            }
            match claim_run(self, basis, id, hold).await {
                Claim::Ours => {}
                // A cut run's claim stands for the hold, then counts as abandoned: look again then.
                Claim::Theirs if cut => return Err(RoundEnd::Interrupted(TickOutcome::BackOff(hold))),
                // The other host runs it; its end brings the next look.
                Claim::Theirs => return Err(RoundEnd::Interrupted(TickOutcome::Done)),
                Claim::Unknown => return Err(RoundEnd::Interrupted(self.late_retry())),
            }
        }
        let id = message_id.clone().unwrap_or_default();
        let run = self.post_check(basis, index, check, &id).await?;
        self.conclude(basis, run, total).await
    }

    /// Records a finished run in the trail; a run that ended after the user stepped in (or was
    /// aborted by someone else) decides nothing.
    async fn conclude(&self, basis: &Basis, run: CheckRun, total: usize) -> Result<CheckRun, RoundEnd> {
        let mut line = trail::line(&self.goal, &basis.tail_message_id, "check", run.result.as_str(), self.now_ms());
        line.insert("check".into(), run.to_value());
        line.insert("checks".into(), json!(total));
        self.append_trail(line).await;
        crate::goal::settling::operator::check_finished(self.session_id, run.index + 1, total, run.result.as_str());
        if !self.generation.is_current() || run.result == CheckResult::Aborted {
            return Err(RoundEnd::Interrupted(TickOutcome::Done));
        }
        Ok(run)
    }

    /// The transcript read just before a check: `Err` when the round must end (unreadable, busy,
    /// a user message after the tail, the goal stopped or edited).
    async fn fresh_transcript(&self, tail: &str) -> Result<Vec<Value>, RoundEnd> {
        if !self.generation.is_current() {
            return Err(RoundEnd::Interrupted(TickOutcome::Done));
        }
        let (ctx, id, dir) = (self.ctx, self.session_id, self.directory);
        let (status, messages, session) = tokio::join!(
            ctx.client.status_map(dir),
            ctx.client.messages_with_raw(id, dir, ctx.config.message_limit),
            ctx.client.get_session(id, dir),
        );
        let (Ok(status), Ok((messages, raw)), Ok(session)) = (status, messages, session) else {
            return Err(RoundEnd::Interrupted(TickOutcome::Retry));
        };
        let busy = status.get(id).and_then(|s| s.get("type")).and_then(Value::as_str).is_some_and(|t| t != "idle");
        let newest = chronological(&messages).last().map(|m| m.id.clone()).unwrap_or_default();
        let same_goal =
            session.goal().is_some_and(|g| g.status == GoalStatus::Active && g.revision() == self.goal.revision());
        if busy || newest != tail || !same_goal || !self.generation.is_current() {
            info!(target: "session_goal", session = id, "the user stepped in; the check round ends");
            return Err(RoundEnd::Interrupted(TickOutcome::Done));
        }
        Ok(raw)
    }

    /// Posts one check to the shell endpoint and waits for it, at most its time limit; past it
    /// the run is aborted (as OpenCode aborts a shell) and counts as timed out.
    async fn post_check(
        &self,
        basis: &Basis,
        index: usize,
        check: &AcceptanceCheck,
        message_id: &str,
    ) -> Result<CheckRun, RoundEnd> {
        let marker = check_rules::marker(message_id);
        let agent = if basis.target.agent.is_empty() { "build" } else { basis.target.agent.as_str() };
        let mut body = json!({
            "agent": agent,
            "command": check_rules::wrap_command(&check.command, &marker),
            "model": { "providerID": basis.target.provider_id, "modelID": basis.target.model_id },
        });
        if !message_id.is_empty() {
            body["messageID"] = Value::from(message_id);
        }
        let limit = check_rules::time_limit(check);
        let started = self.now_ms();
        let (client, id, dir) = (&self.ctx.client, self.session_id, self.directory);
        let call = client.shell(id, dir, &body, limit + CALL_SLACK);
        tokio::pin!(call);
        let (answer, timed_out) = tokio::select! {
            // The answer first when both are ready: a run never counts as timed out by chance.
            biased;
            answer = &mut call => (answer, false),
            _ = tokio::time::sleep(limit) => {
                info!(target: "session_goal", session = id, check = index + 1, "acceptance check past its time limit; aborting it");
                if let Err(error) = client.abort(id, dir).await {
                    warn!(target: "session_goal", session = id, %error, "aborting the check failed");
                }
                match tokio::time::timeout(ABORT_GRACE, &mut call).await {
                    Ok(answer) => (answer, true),
                    Err(_) => (Err(HttpError::Timeout), true),
                }
            }
        };
        let mut run = match answer {
            Ok(message) => run_of_answer(&message, message_id, index, check),
            Err(_) if timed_out => CheckRun {
                index,
                command: check.command.clone(),
                message_id: message_id.to_string(),
                result: CheckResult::TimedOut,
                duration_ms: 0.0,
                output_tail: String::new(),
                reused: false,
            },
            Err(error) => return Err(refusal(error, self.late_retry())),
        };
        if timed_out {
            run.result = CheckResult::TimedOut;
        }
        if run.duration_ms <= 0.0 {
            run.duration_ms = (self.now_ms() - started).max(0.0);
        }
        Ok(run)
    }
}

/// The run read from the shell endpoint's answer (`{info, parts}` of the recorded reply).
fn run_of_answer(message: &Value, message_id: &str, index: usize, check: &AcceptanceCheck) -> CheckRun {
    let part = message
        .get("parts")
        .and_then(Value::as_array)
        .and_then(|parts| parts.iter().find(|p| p.get("type").and_then(Value::as_str) == Some("tool")));
    run_from_part(part.and_then(|p| p.get("state")).unwrap_or(&Value::Null), message_id, index, check)
}

/// How a failed shell call ends the round: busy (a user's turn started) ends it without a
/// verdict, looking again after a quiet window; a missing or refusing endpoint is a refusal;
/// anything else is retried later.
fn refusal(error: HttpError, retry: TickOutcome) -> RoundEnd {
    match error {
        // Busy: a turn of the user's started. Look again a quiet window on rather than wait for
        // its idle, which may have come and gone before this answer.
        HttpError::Status(409) => RoundEnd::Interrupted(TickOutcome::Rearm),
        HttpError::Status(status) if (400..500).contains(&status) && status != 408 && status != 429 => {
            RoundEnd::Refused(format!("shell endpoint HTTP {status}"))
        }
        _ => RoundEnd::Interrupted(retry),
    }
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
    }
}

/// The transcript without the runtime's own check runs (what the evidence digest reads).
pub fn without_check_runs(raw: &[Value]) -> Option<Vec<Value>> {
    raw.iter().any(is_check_message).then(|| raw.iter().filter(|m| !is_check_message(m)).cloned().collect())
}
