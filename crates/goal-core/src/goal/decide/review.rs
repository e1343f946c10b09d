//! The review, between a `complete` that passed its checks and criteria and its settle, for a
//! goal that asks for one (`review`, `record/review.rs`): a reviewer, a child session of the
//! goal's session that can read the project and change nothing, is asked; its one JSON answer is
//! judged (`review_rules.rs`), each cited file looked up in the project. Approved: the goal
//! settles `complete` (`reviewApproved`). Rejected: it goes on, the findings quoted. No readable
//! answer after the retry: `blocked` (`reviewUnavailable`). Across hosts the review is claimed
//! like a check run: one reviewer session per tail.

use crate::sched::outcome::TickOutcome;
use std::ops::ControlFlow;

use super::proof::{claimed, held, Input};
use super::{act, end, read, Decide, Flow};
use crate::goal::decide::change::Extras;
use crate::goal::decide::check_rules::Claim;
use crate::goal::decide::decision::Slot;
use crate::goal::decide::grading::{open_criteria_paragraph, CriteriaUpdate};
use crate::goal::decide::notify::trail_line;
use crate::goal::decide::plan_rules::{blocked, continuing, EvidenceFields, Reservation, Settlement};
use crate::goal::decide::review_rules::{
    self, judge, reviewer_step, Judgement, ReviewAnswer, ReviewerBody, ReviewerRun, ReviewerStep,
};
use crate::goal::decide::{ClaimFor, Effect, Guard, Need};
use crate::record::cause::CauseCode;
use crate::record::check_id::check_message_id;
use crate::record::reasons::{REASON_COST_BUDGET, REASON_REVIEW_APPROVED, REASON_REVIEW_UNAVAILABLE};
use crate::record::review::LastReview;
use crate::record::GoalStatus;

/// Reviews `input.settlement` (a `complete`): settled (approved, unavailable, or the cost budget
/// reached), continued with the findings quoted (`Continue`), or ended without a verdict
/// (another host reviews; the user stepped in).
pub(super) fn review(at: &Decide<'_>, objective: &str, input: Input<'_>) -> Flow<Reservation> {
    let (seen, config) = (&at.seen.review, at.config);
    let tail = input.basis.tail_message_id.clone();
    let review_id = check_message_id(&at.goal.id, &tail, review_rules::REVIEW_INDEX, review_rules::REVIEW_COMMAND);
    // A look's lease, not the reviewer's time: while the reviewer's turn runs its child session
    // is busy, which keeps every host off the goal (`gates.rs`, `ChildBusy`).
    let hold = config.lease;
    held(at, Slot::ReviewHeld, hold, input.criteria.clone())?;
    let title = review_rules::review_title(review_id.as_deref().unwrap_or(&tail));
    // A review of this tail that already answered (before a restart) is read, not run again.
    let Some(finished) = &seen.finished else { return read(Need::FinishedReview { title }) };
    if let Some((session, answer, cost)) = finished {
        return concluded(at, input, session, answer, *cost);
    }
    if let Some(id) = &review_id {
        match claimed(at, ClaimFor::Review, id, &seen.claims, hold, &input.basis.target)? {
            Claim::Ours => {}
            // The other host reviews. Its lease keeps this host waiting without an audit, and its
            // settle ends the wait; when this host's lease write landed last instead, the next
            // look finds the finished review by its title and settles on it.
            Claim::Theirs => return end(TickOutcome::BackOff(config.idle_quiet)),
            Claim::Unknown => return end(at.late_retry()),
        }
    }
    // The user may have stopped the goal while the claim was written: no reviewer then.
    if seen.opened.is_none() && !at.seen.current {
        return end(TickOutcome::Done);
    }
    let run = match reviewer_step(seen.opened.as_ref(), &seen.turns, seen.cost) {
        ReviewerStep::Open => return act(Effect::OpenReviewer { title }),
        ReviewerStep::Ask { session, retry } => {
            let criteria = input.criteria.as_ref().map(|u| u.criteria.as_slice()).unwrap_or(&at.goal.criteria);
            let prompt = review_rules::review_prompt(objective, criteria, &input.items, &input.basis.assistant_text);
            let body = ReviewerBody::new(&at.goal.review_wanted().unwrap_or_default(), input.basis, &prompt);
            let body = if retry { body.with_text(review_rules::RETRY_PROMPT) } else { body };
            return act(Effect::AskReviewer { session, body });
        }
        ReviewerStep::ReadCost(session) => return read(Need::ReviewerCost(session)),
        ReviewerStep::Done(run) => run,
    };
    match run {
        ReviewerRun::NotOpened(error) if at.exhausted() => {
            unavailable(at, input, "", format!("POST /session: {error}"), 0.0)
        }
        ReviewerRun::NotOpened(_) => end(at.late_retry()),
        ReviewerRun::Answered { session, answer, cost } => concluded(at, input, &session, &answer, cost),
        ReviewerRun::Unavailable { session, detail, cost } => unavailable(at, input, &session, detail, cost),
        ReviewerRun::Interrupted => end(TickOutcome::Done),
    }
}

/// Judges a readable answer: settled `complete` when approved, else a continuation quoting the
/// findings (or the cost budget's settle when the review spent it).
fn concluded(at: &Decide<'_>, input: Input<'_>, session: &str, answer: &ReviewAnswer, cost: f64) -> Flow<Reservation> {
    let seen = &at.seen.review;
    let directory = at.seen.directory.as_str();
    let Some((existing, judged_at)) = &seen.files else {
        return read(Need::CitedFiles(review_rules::cited_files(answer, directory)));
    };
    let criteria = input.criteria.as_ref().map(|u| u.criteria.clone()).unwrap_or_else(|| at.goal.criteria.clone());
    let evidence = input.items.len();
    let judgement = judge(answer, &criteria, evidence, directory, &|path| existing.contains(path), *judged_at);
    let verdict = if judgement.approved { "approved" } else { "rejected" };
    let last = recorded(at, &input, session, verdict, Some(&judgement), cost, *judged_at)?;
    let note = review_rules::review_note(&judgement.criteria, &judgement);
    let update = input.criteria.clone().map(|u| CriteriaUpdate { criteria: judgement.criteria.clone(), ..u });
    let mut settlement = input.settlement;
    settlement.accounting.cost_used += cost;
    settlement.note = Some(note);
    let extras = Extras { criteria: update.clone(), last_review: Some(last.clone()), ..Extras::default() };
    if judgement.approved {
        settlement.reason = REASON_REVIEW_APPROVED.into();
        settlement.cause = CauseCode::ReviewApproved;
        settlement.detail = Some(session.to_string());
        return ControlFlow::Break(at.settle(settlement, extras, Guard::Tick, None));
    }
    if crate::goal::decide::budgets::cost::budget_reached(at.goal, settlement.accounting.cost_used) {
        settlement.status = GoalStatus::BudgetLimited;
        settlement.reason = REASON_COST_BUDGET.into();
        settlement.cause = CauseCode::CostBudget;
        settlement.detail = None;
        return ControlFlow::Break(at.settle(settlement, extras, Guard::Tick, None));
    }
    ControlFlow::Continue(rejected_reservation(settlement, &judgement, update, last))
}

/// No readable answer after the retry: the goal settles `blocked` / `reviewUnavailable`.
fn unavailable<T>(at: &Decide<'_>, input: Input<'_>, session: &str, detail: String, cost: f64) -> Flow<T> {
    let last = recorded(at, &input, session, "unavailable", None, cost, at.now)?;
    let mut settlement = blocked(at.goal, REASON_REVIEW_UNAVAILABLE, CauseCode::ReviewUnavailable);
    settlement.accounting = input.settlement.accounting.clone();
    settlement.accounting.cost_used += cost;
    settlement.detail = Some(detail);
    let extras = Extras { criteria: input.criteria, last_review: Some(last), ..Extras::default() };
    ControlFlow::Break(at.settle(settlement, extras, Guard::Tick, None))
}

/// The review's trail and console lines (once), then the `lastReview` value it stored.
#[allow(clippy::too_many_arguments)]
fn recorded(
    at: &Decide<'_>,
    input: &Input<'_>,
    session: &str,
    verdict: &'static str,
    judgement: Option<&Judgement>,
    cost: f64,
    when: f64,
) -> Flow<serde_json::Value> {
    if let Some(last) = &at.seen.review.recorded {
        return ControlFlow::Continue(last.clone());
    }
    let tail = input.basis.tail_message_id.as_str();
    let mut line = trail_line(at.goal, tail, "review", verdict, at.now);
    line.insert("review".into(), review_rules::trail_value(session, verdict, judgement, cost));
    let last = LastReview {
        session_id: session.to_string(),
        verdict: verdict.to_string(),
        findings: judgement.map(|j| j.findings.clone()).unwrap_or_default(),
        cited: judgement.map(|j| j.cited.clone()).unwrap_or_default(),
        tail: tail.to_string(),
        cost,
        at: when,
    };
    act(Effect::RecordReview { line, verdict, last: last.to_value() })
}

/// The continuation after a rejection: one turn like any other, quoting the findings (and the
/// criteria the review did not see met) as data.
fn rejected_reservation(
    settlement: Settlement,
    judgement: &Judgement,
    update: Option<CriteriaUpdate>,
    last: serde_json::Value,
) -> Reservation {
    let mut appendix = review_rules::findings_paragraph(&judgement.findings);
    if let Some(open) = open_criteria_paragraph(&judgement.criteria) {
        appendix = format!("{appendix}\n\n{open}");
    }
    Reservation {
        evidence: EvidenceFields { criteria: update, last_review: Some(last), ..Default::default() },
        appendix: Some(appendix),
        wrap_up: None,
        ..continuing(settlement)
    }
}
