//! The review stage, between a `complete` that passed its checks and criteria and its settle, for
//! a goal that asks for review (`review`, see `record/review.rs`). The loop opens a reviewer: a
//! child session of the goal's session (`POST /session` with `parentID`), prompted with the
//! objective, the criteria and the evidence items as data, with every tool but the reading ones
//! switched off in the prompt's `tools` map, on the goal's model unless the setting names one.
//! Its one JSON answer is judged (`review_rules.rs`): each cited file is looked up through
//! OpenCode's directory listing (the content route answers `""` for a missing file).
//!
//! Approved: the goal settles `complete` with cause `reviewApproved`. Rejected: the goal goes on,
//! its continuation quoting the findings. No readable answer within the timeout: asked once more
//! in the same session, then the goal settles `blocked` with cause `reviewUnavailable`. The
//! reviewer session's cost joins `costUsed`. Across hosts the review is claimed like a check run
//! (`check_claim.rs`): one reviewer session per tail, whatever the interleaving.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Value};
use tracing::{info, warn};

use crate::goal::acceptance::check_claim::{claim_labelled, Claim, REVIEW_LABEL};
use crate::goal::acceptance::review_rules::{self, judge, parse_answer, Judgement, ReviewAnswer};
use crate::goal::context::Tick;
use crate::goal::delivery::echo::hold_watched;
use crate::goal::planning::plan::{continuing, Basis, EvidenceFields, Reservation, Settlement};
use crate::goal::settling::trail;
use crate::goal::verdict::grading::{open_criteria_paragraph, CriteriaUpdate};
use crate::io::prompt_outcome::DispatchOutcome;
use crate::record::cause::CauseCode;
use crate::record::check_id::check_message_id;
use crate::record::reasons::{REASON_COST_BUDGET, REASON_REVIEW_APPROVED, REASON_REVIEW_UNAVAILABLE};
use crate::record::review::{LastReview, ReviewTarget};
use crate::record::session::{Message, Role};
use crate::record::{Goal, GoalStatus};
use crate::sched::TickOutcome;

/// The check index a review's id is derived with (no goal has that many checks).
const REVIEW_INDEX: usize = 1_000_000;
/// The command text a review's id is derived with.
const REVIEW_COMMAND: &str = "goal review";
/// Turns asked of one reviewer: the first, and one retry.
const ATTEMPTS: u32 = 2;
/// Slack on the round's lease beyond the reviewer's turns.
const ROUND_SLACK: Duration = Duration::from_secs(30);
/// First and longest pause between two looks at the reviewer's session.
const POLL_FIRST: Duration = Duration::from_millis(100);
const POLL_MAX: Duration = Duration::from_millis(1000);
/// Messages read of the reviewer's session (its cost is summed over them).
const REVIEWER_MESSAGES: usize = 500;

/// What the review needs to know about the completion under review.
pub struct ReviewInput<'a> {
    /// The turn the auditor judged complete.
    pub basis: &'a Basis,
    /// The `complete` settlement the review stands before (verified, or checks passed).
    pub settlement: Settlement,
    /// The criteria the audit graded (all met).
    pub criteria: Option<CriteriaUpdate>,
    /// The evidence items of the audit, numbered `e1…` as the auditor saw them.
    pub items: Vec<String>,
}

/// How one reviewer turn ended.
enum Turn {
    /// Its final text.
    Answered(String),
    /// No final answer within the timeout (the turn was aborted).
    TimedOut,
    /// The prompt was refused: the detail.
    Refused(String),
    /// The user stepped in: nothing decided.
    Interrupted,
}

/// How asking the reviewer ended.
enum Asked {
    /// A readable answer.
    Answer(ReviewAnswer),
    /// No readable answer after the retry: why.
    Unavailable(String),
    /// The user stepped in.
    Interrupted,
}

impl Tick<'_> {
    /// Reviews `input.settlement` (a `complete`) and ends the tick on the outcome: settled
    /// (approved, unavailable, or the cost budget reached), continued with the findings quoted,
    /// or ended without a verdict (another host reviews; the user stepped in).
    pub async fn review_completion(&self, input: ReviewInput<'_>) -> Result<Reservation, TickOutcome> {
        self.enter(crate::goal::stages::Stage::Review);
        let target = self.goal.review_wanted().unwrap_or_default();
        let tail = input.basis.tail_message_id.clone();
        let review_id = check_message_id(&self.goal.id, &tail, REVIEW_INDEX, REVIEW_COMMAND);
        let hold = self.ctx.config.lease + self.ctx.config.review_timeout * ATTEMPTS + ROUND_SLACK;
        hold_watched(self, hold, input.criteria.as_ref()).await?;
        let title = review_rules::review_title(review_id.as_deref().unwrap_or(&tail));
        // A review of this tail that already answered (before a restart) is read, not run again.
        if let Some((session, answer, cost)) = self.finished_review(&title).await {
            return self.concluded(input, &session, answer, cost).await;
        }
        if let Some(id) = &review_id {
            match claim_labelled(self, input.basis, id, hold, REVIEW_LABEL).await {
                Claim::Ours => {}
                // The other host reviews. Its lease keeps this host waiting without an audit, and
                // its settle ends the wait; when this host's lease write landed last instead, the
                // next look (one quiet window on) finds the finished review by its title and
                // settles on it.
                Claim::Theirs => return Err(TickOutcome::BackOff(self.ctx.config.idle_quiet)),
                Claim::Unknown => return Err(self.late_retry()),
            }
        }
        let (client, parent, dir) = (&self.ctx.client, self.session_id, self.directory);
        // The user may have stopped the goal while the claim was written: no reviewer then.
        if !self.generation.is_current() {
            return Err(TickOutcome::Done);
        }
        let session = match client.create_child_session(parent, dir, &title).await {
            Ok(session) => session,
            Err(error) if self.exhausted => {
                return Err(self.unavailable(input, "", format!("POST /session: {error}"), 0.0).await);
            }
            Err(error) => {
                warn!(target: "session_goal", session = parent, %error, "the reviewer session could not be created; retrying");
                return Err(self.late_retry());
            }
        };
        crate::goal::settling::operator::review_started(parent, &session);
        let prompt = review_rules::review_prompt(
            &self.objective,
            input.criteria.as_ref().map(|u| u.criteria.as_slice()).unwrap_or(&self.goal.criteria),
            &input.items,
            &input.basis.assistant_text,
        );
        let asked = self.ask_reviewer(&session, &target, input.basis, &prompt).await;
        let cost = self.reviewer_cost(&session).await;
        match asked {
            Asked::Answer(answer) => self.concluded(input, &session, answer, cost).await,
            Asked::Unavailable(detail) => Err(self.unavailable(input, &session, detail, cost).await),
            Asked::Interrupted => Err(TickOutcome::Done),
        }
    }

    /// Asks the reviewer, and once more when it gave no readable answer.
    async fn ask_reviewer(&self, session: &str, target: &ReviewTarget, basis: &Basis, prompt: &str) -> Asked {
        let mut failure = String::new();
        for attempt in 0..ATTEMPTS {
            let text = if attempt == 0 { prompt } else { review_rules::RETRY_PROMPT };
            match self.reviewer_turn(session, &reviewer_body(target, basis, text)).await {
                Turn::Answered(reply) => match parse_answer(&reply) {
                    Some(answer) => return Asked::Answer(answer),
                    None => failure = "reply not readable".into(),
                },
                Turn::TimedOut => failure = "timed out".into(),
                Turn::Refused(detail) => failure = detail,
                Turn::Interrupted => return Asked::Interrupted,
            }
            info!(target: "session_goal", session = self.session_id, reviewer = session, attempt = attempt + 1, %failure, "the reviewer gave no readable answer");
        }
        Asked::Unavailable(failure)
    }

    /// Posts one prompt to the reviewer and waits for its final reply (a completed reply that
    /// is not a tool-call step), at most the review timeout; past it the turn is aborted.
    async fn reviewer_turn(&self, session: &str, body: &ReviewerBody) -> Turn {
        let (client, dir) = (&self.ctx.client, self.directory);
        let seen: HashSet<String> = match client.messages(session, dir, REVIEWER_MESSAGES).await {
            Ok(messages) => messages.into_iter().map(|m| m.id).collect(),
            Err(error) => return Turn::Refused(format!("reviewer messages: {error}")),
        };
        if !self.generation.is_current() {
            return Turn::Interrupted;
        }
        match client.prompt_async(session, dir, body).await {
            DispatchOutcome::Sent => {}
            DispatchOutcome::NotAdmitted(status) => return Turn::Refused(format!("reviewer prompt HTTP {status}")),
            DispatchOutcome::Ambiguous(detail) => return Turn::Refused(format!("reviewer prompt: {detail}")),
        }
        let deadline = tokio::time::Instant::now() + self.ctx.config.review_timeout;
        // A reviewer turn that can no longer answer (cut by a restart, or never started) is
        // found by reading the reviewer's status, at most once a quiet window.
        let quiet = self.ctx.config.idle_quiet;
        let mut next_status_read = tokio::time::Instant::now() + quiet;
        let mut pause = POLL_FIRST;
        loop {
            if !self.generation.is_current() {
                let _ = client.abort(session, dir).await;
                return Turn::Interrupted;
            }
            if let Ok(messages) = client.messages(session, dir, REVIEWER_MESSAGES).await {
                if let Some(reply) = final_reply(&messages, &seen) {
                    return Turn::Answered(reply.text.clone());
                }
                if tokio::time::Instant::now() >= next_status_read && no_answer_coming(&messages, &seen) {
                    next_status_read = tokio::time::Instant::now() + quiet;
                    if self.reviewer_idle(session).await {
                        return Turn::Refused(
                            "the reviewer's turn ended without an answer (cut or never started)".into(),
                        );
                    }
                }
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                if let Err(error) = client.abort(session, dir).await {
                    warn!(target: "session_goal", session = self.session_id, %error, "aborting the reviewer failed");
                }
                return Turn::TimedOut;
            }
            tokio::time::sleep(pause.min(deadline - now)).await;
            pause = (pause * 2).min(POLL_MAX);
        }
    }

    /// Whether OpenCode shows the reviewer session idle (unreadable: not known to be).
    async fn reviewer_idle(&self, session: &str) -> bool {
        match self.ctx.client.status_map(self.directory).await {
            Ok(status) => {
                crate::record::session::live_status(&status, session) != crate::record::session::LiveStatus::Working
            }
            Err(_) => false,
        }
    }

    /// US dollars the reviewer session's replies cost (0 when unreadable).
    async fn reviewer_cost(&self, session: &str) -> f64 {
        match self.ctx.client.messages(session, self.directory, REVIEWER_MESSAGES).await {
            Ok(messages) => messages.iter().filter(|m| m.role == Role::Assistant).map(|m| m.cost).sum(),
            Err(_) => 0.0,
        }
    }

    /// A reviewer session of this tail (named by `title`) that already gave a readable answer:
    /// its id, the answer and its cost.
    async fn finished_review(&self, title: &str) -> Option<(String, ReviewAnswer, f64)> {
        let children = self.ctx.client.children(self.session_id, self.directory).await.ok()?;
        let child = children.into_iter().find(|c| c.title == title)?;
        let messages = self.ctx.client.messages(&child.id, self.directory, REVIEWER_MESSAGES).await.ok()?;
        let answer = final_reply(&messages, &HashSet::new()).and_then(|m| parse_answer(&m.text))?;
        let cost = messages.iter().filter(|m| m.role == Role::Assistant).map(|m| m.cost).sum();
        Some((child.id, answer, cost))
    }

    /// Which of `files` exist in the project, each looked up in its directory's listing (one
    /// listing per directory; a directory that cannot be listed holds nothing).
    async fn existing_files(&self, files: &[String]) -> HashSet<String> {
        let mut listings: HashMap<String, Vec<(String, bool)>> = HashMap::new();
        let mut found = HashSet::new();
        for path in files {
            let (dir, name) = path.rsplit_once('/').unwrap_or((".", path.as_str()));
            if !listings.contains_key(dir) {
                let listing = self.ctx.client.list_directory(self.directory, dir).await.unwrap_or_default();
                listings.insert(dir.to_string(), listing);
            }
            if listings[dir].iter().any(|(entry, is_dir)| entry == name && !is_dir) {
                found.insert(path.clone());
            }
        }
        found
    }

    /// Judges a readable answer and ends the tick on it: settled `complete` when approved, else a
    /// continuation quoting the findings (or the cost budget's settle when the review spent it).
    async fn concluded(
        &self,
        input: ReviewInput<'_>,
        session: &str,
        answer: ReviewAnswer,
        cost: f64,
    ) -> Result<Reservation, TickOutcome> {
        let files = review_rules::cited_files(&answer, self.directory);
        let existing = self.existing_files(&files).await;
        let criteria =
            input.criteria.as_ref().map(|u| u.criteria.clone()).unwrap_or_else(|| self.goal.criteria.clone());
        let judgement = judge(
            &answer,
            &criteria,
            input.items.len(),
            self.directory,
            &|path| existing.contains(path),
            self.now_ms(),
        );
        let verdict = if judgement.approved { "approved" } else { "rejected" };
        let last = self.record_review(&input.basis.tail_message_id, session, verdict, Some(&judgement), cost).await;
        let note = review_rules::review_note(&judgement.criteria, &judgement);
        let update = input.criteria.clone().map(|u| CriteriaUpdate { criteria: judgement.criteria.clone(), ..u });
        let mut settlement = input.settlement;
        settlement.accounting.cost_used += cost;
        settlement.note = Some(note.clone());
        if judgement.approved {
            settlement.reason = REASON_REVIEW_APPROVED.into();
            settlement.cause = CauseCode::ReviewApproved;
            settlement.detail = Some(session.to_string());
            return Err(self.settle_reviewed(settlement, update, last).await);
        }
        if crate::goal::budgets::cost::budget_reached(&self.goal, settlement.accounting.cost_used) {
            settlement.status = GoalStatus::BudgetLimited;
            settlement.reason = REASON_COST_BUDGET.into();
            settlement.cause = CauseCode::CostBudget;
            settlement.detail = None;
            return Err(self.settle_reviewed(settlement, update, last).await);
        }
        Ok(rejected_reservation(settlement, &judgement, update, last))
    }

    /// No readable answer after the retry: the goal settles `blocked` / `reviewUnavailable`.
    async fn unavailable(&self, input: ReviewInput<'_>, session: &str, detail: String, cost: f64) -> TickOutcome {
        warn!(target: "session_goal", session = self.session_id, %detail, "review unavailable");
        let last = self.record_review(&input.basis.tail_message_id, session, "unavailable", None, cost).await;
        let mut settlement =
            crate::goal::settling::settle::blocked(&self.goal, REASON_REVIEW_UNAVAILABLE, CauseCode::ReviewUnavailable);
        settlement.accounting = input.settlement.accounting.clone();
        settlement.accounting.cost_used += cost;
        settlement.detail = Some(detail);
        self.settle_reviewed(settlement, input.criteria, last).await
    }

    /// Settles with the review's record (and the criteria) in the same write.
    async fn settle_reviewed(
        &self,
        settlement: Settlement,
        update: Option<CriteriaUpdate>,
        last: Value,
    ) -> TickOutcome {
        self.settle_then(settlement, move |g: &mut Goal| {
            if let Some(update) = &update {
                update.apply(g);
            }
            g.last_review.set(last);
        })
        .await
    }

    /// The review's trail line and console line; the `lastReview` value to store.
    async fn record_review(
        &self,
        tail: &str,
        session: &str,
        verdict: &str,
        judgement: Option<&Judgement>,
        cost: f64,
    ) -> Value {
        let mut line = trail::line(&self.goal, tail, "review", verdict, self.now_ms());
        line.insert("review".into(), review_rules::trail_value(session, verdict, judgement, cost));
        self.append_trail(line).await;
        crate::goal::settling::operator::review_finished(self.session_id, verdict);
        LastReview {
            session_id: session.to_string(),
            verdict: verdict.to_string(),
            findings: judgement.map(|j| j.findings.clone()).unwrap_or_default(),
            cited: judgement.map(|j| j.cited.clone()).unwrap_or_default(),
            tail: tail.to_string(),
            cost,
            at: self.now_ms(),
        }
        .to_value()
    }
}

/// The reviewer's prompt body. Its fields are written in this order and its `tools` map key by
/// key ([`review_rules::ToolsMap`]: the wildcard first), so what reaches OpenCode does not depend
/// on how `serde_json` orders a map.
#[derive(Debug, Clone, Serialize)]
struct ReviewerBody {
    /// `{providerID, modelID}`.
    model: Value,
    /// The OpenCode agent, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    agent: Option<String>,
    /// The goal's variant, when the reviewer runs on the goal's model.
    #[serde(skip_serializing_if = "Option::is_none")]
    variant: Option<String>,
    /// Every tool off, then the reading ones on.
    tools: review_rules::ToolsMap,
    /// One text part.
    parts: Value,
}

/// The reviewer's prompt body: the reading tools only, on the setting's agent and model, else
/// the goal's.
fn reviewer_body(target: &ReviewTarget, basis: &Basis, text: &str) -> ReviewerBody {
    let (provider, model) =
        target.model_ids().unwrap_or_else(|| (basis.target.provider_id.clone(), basis.target.model_id.clone()));
    let agent = target.agent.clone().unwrap_or_else(|| basis.target.agent.clone());
    let variant = (target.model.is_none() && !basis.target.variant.is_empty()).then(|| basis.target.variant.clone());
    ReviewerBody {
        model: json!({ "providerID": provider, "modelID": model }),
        agent: (!agent.is_empty()).then_some(agent),
        variant,
        tools: review_rules::ToolsMap,
        parts: json!([{ "type": "text", "text": text }]),
    }
}

/// The reviewer's final reply among `messages`: the newest assistant message not in `seen`, once
/// it completed (or failed) and is not a tool-call step. Pure.
fn final_reply<'m>(messages: &'m [Message], seen: &HashSet<String>) -> Option<&'m Message> {
    let newest = crate::record::session::chronological(messages)
        .into_iter()
        .rev()
        .find(|m| m.role == Role::Assistant && !seen.contains(&m.id))?;
    let done = newest.error.is_some() || (newest.is_completed() && newest.finish != "tool-calls");
    done.then_some(newest)
}

/// Whether the reviewer's newest reply since the prompt, if any, is unfinished with no error: a
/// turn still running, or one cut by a restart (or none began). Only the reviewer's status tells
/// them apart. Pure.
fn no_answer_coming(messages: &[Message], seen: &HashSet<String>) -> bool {
    let newest = messages.iter().rfind(|m| m.role == Role::Assistant && !seen.contains(&m.id));
    newest.is_none_or(|m| !m.is_completed() && m.error.is_none())
}

/// The continuation after a rejection: one turn like any other, quoting the findings (and the
/// criteria the review did not see met) as data.
fn rejected_reservation(
    settlement: Settlement,
    judgement: &Judgement,
    update: Option<CriteriaUpdate>,
    last: Value,
) -> Reservation {
    let mut appendix = review_rules::findings_paragraph(&judgement.findings);
    if let Some(open) = open_criteria_paragraph(&judgement.criteria) {
        appendix = format!("{appendix}\n\n{open}");
    }
    Reservation {
        evidence: EvidenceFields { criteria: update, last_review: Some(last), ..Default::default() },
        appendix: Some(appendix),
        ..continuing(settlement)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::session::Tokens;

    fn reply(id: &str, index: usize, completed: bool, finish: &str) -> Message {
        Message {
            id: id.into(),
            role: Role::Assistant,
            parent_id: String::new(),
            created: Some(index as f64),
            completed: completed.then_some(index as f64 + 0.5),
            error: None,
            finish: finish.into(),
            summary: false,
            tokens: Tokens::default(),
            provider_id: String::new(),
            model_id: String::new(),
            agent: String::new(),
            variant: String::new(),
            text: format!("text of {id}"),
            cost: 0.0,
            provider_error: None,
            produced_output: true,
            index,
        }
    }

    #[test]
    fn the_final_reply_is_a_new_completed_reply_that_is_not_a_tool_step() {
        let seen: HashSet<String> = ["msg_a".to_string()].into_iter().collect();
        let old = reply("msg_a", 0, true, "stop");
        assert!(
            final_reply(std::slice::from_ref(&old), &seen).is_none(),
            "an answer seen before the prompt is not its answer"
        );
        let step = reply("msg_b", 1, true, "tool-calls");
        assert!(final_reply(&[old.clone(), step.clone()], &seen).is_none(), "a tool-call step is not the end");
        let running = reply("msg_c", 2, false, "");
        assert!(final_reply(&[old.clone(), step.clone(), running], &seen).is_none());
        let done = reply("msg_c", 2, true, "stop");
        assert_eq!(final_reply(&[old, step, done], &seen).map(|m| m.id.as_str()), Some("msg_c"));
    }

    #[test]
    fn the_body_closes_every_tool_then_opens_the_reading_ones_and_takes_the_setting_model() {
        let basis = Basis {
            accounting: crate::goal::planning::accounting::Accounting::of(&Goal::default()),
            target: crate::goal::planning::plan::ExecutionTarget {
                provider_id: "p".into(),
                model_id: "m".into(),
                agent: "build".into(),
                variant: "high".into(),
            },
            tail_message_id: "msg_1".into(),
            assistant_text: String::new(),
            tail_created: None,
            tail_output: true,
            cut_turn: None,
        };
        let wire = serde_json::to_string(&reviewer_body(&ReviewTarget::default(), &basis, "x")).expect("serialisable");
        assert_eq!(
            wire,
            concat!(
                r#"{"model":{"modelID":"m","providerID":"p"},"agent":"build","variant":"high","#,
                r#""tools":{"*":false,"read":true,"grep":true,"glob":true,"list":true},"#,
                r#""parts":[{"text":"x","type":"text"}]}"#
            )
        );
        let own = ReviewTarget { agent: Some("plan".into()), model: Some("q/big".into()) };
        let body = serde_json::to_value(reviewer_body(&own, &basis, "x")).expect("serialisable");
        assert_eq!(body["model"], json!({"providerID": "q", "modelID": "big"}));
        assert_eq!(body["agent"], json!("plan"));
        assert!(body.get("variant").is_none());
        let bare = Basis {
            target: crate::goal::planning::plan::ExecutionTarget { agent: String::new(), ..basis.target.clone() },
            ..basis
        };
        let body = serde_json::to_value(reviewer_body(&ReviewTarget::default(), &bare, "x")).expect("serialisable");
        assert!(body.get("agent").is_none(), "no agent key when the goal has none");
    }
}
