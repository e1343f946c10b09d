//! The executor's longer effects, one attempt each: the small model's call, a round of a run's
//! claim across hosts, a check run, the reviewer's turns, one post of the continuation. Each
//! waits on OpenCode or the small model within its own bound; what follows (who claimed first, a
//! retry, whether the reviewer can still answer) is a pure rule of `goal/decide/`.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{json, Value};
use tracing::{info, warn};

use super::echo::follow_late_echo;
use super::{operator, Executor, TickIo};
use crate::error::HttpError;
use crate::goal::decide::acceptance::SHELL_SLACK;
use crate::goal::decide::check_rules::{self, first_claim, run_of_answer, CheckResult, CheckRun, ClaimRound};
use crate::goal::decide::dispatch_rules::PostAnswer;
use crate::goal::decide::plan_rules::parse_verdict;
use crate::goal::decide::review_rules::{final_reply, no_answer_coming, ReviewerBody, ReviewerTurn, REVIEWER_MESSAGES};
use crate::goal::decide::seen::{Held, Seen};
use crate::goal::decide::stages::AUDIT_SLACK;
use crate::goal::decide::Slot;
use crate::io::prompt_outcome::DispatchOutcome;
use crate::record::session::Selection;
use crate::record::session::{live_status, LiveStatus};
use crate::record::small_model_call::{SmallModelQuery, SmallModelReply};
use crate::record::AcceptanceCheck;
use crate::text::jsonx::extract_json_object;

/// How long an aborted run may take to come back before the run stops waiting for it.
const ABORT_GRACE: Duration = Duration::from_secs(15);
/// First and longest pause between two looks at the reviewer's session.
const POLL_FIRST: Duration = Duration::from_millis(100);
const POLL_MAX: Duration = Duration::from_millis(1000);

impl Executor<'_> {
    /// The small model's verdict on the turn, within the audit's timeout: the reply, or why the
    /// call failed (the cause's detail). A failure is said on the console (never the reply).
    pub(super) async fn audit(&self, query: SmallModelQuery) -> Result<SmallModelReply, String> {
        let timeout = self.read.config.audit_timeout;
        let call = self.read.services.small_model.generate(query);
        match tokio::time::timeout(timeout + AUDIT_SLACK, call).await {
            Ok(Ok(reply)) => {
                let object = extract_json_object(&reply.text);
                if object.as_ref().and_then(parse_verdict).is_none() {
                    warn!(
                        target: "session_goal",
                        provider = %reply.provider_id,
                        model = %reply.model_id,
                        output_chars = reply.text.chars().count(),
                        json_object_found = object.is_some(),
                        "[session-goal:diagnostic] audit parse failed"
                    );
                    operator::audit_failed("reply not parseable");
                }
                Ok(reply)
            }
            Ok(Err(error)) => {
                let failure = error.status.map(|s| format!("status {s}")).unwrap_or_else(|| error.code.clone());
                if !error.is_silent() {
                    warn!(target: "session_goal", status = ?error.status, code = %error.code, "progress audit failed");
                    operator::audit_failed(&failure);
                }
                Err(failure)
            }
            Err(_) => {
                warn!(target: "session_goal", "progress audit timed out");
                operator::audit_failed("timed out");
                Err("timed out".into())
            }
        }
    }

    /// One round of a claim across hosts: the claim posted under `claim_id`, its part naming this
    /// host, and the claim message read back (whose first part wins; `check_rules::claim_step`
    /// decides what follows).
    pub(super) async fn claim(&self, seen: &Seen, claim_id: &str, label: &str, target: &Selection) -> ClaimRound {
        let (session_id, directory) = (seen.session_id.as_str(), seen.directory.as_str());
        let prefix = format!("{label} claimed by ");
        let body = claim_body(target, claim_id, &format!("{prefix}{}", self.holder));
        if let DispatchOutcome::NotAdmitted(_) = self.read.client.prompt_async(session_id, directory, &body).await {
            return ClaimRound::Unknown;
        }
        let Ok((_, raw)) =
            self.read.client.messages_with_raw(session_id, directory, self.read.config.message_limit).await
        else {
            return ClaimRound::Unknown;
        };
        let Some(first) = first_claim(&raw, claim_id, &prefix) else { return ClaimRound::Unknown };
        if first.holder != self.holder {
            info!(target: "session_goal", session = session_id, label, "another host's claim of this run came first");
        }
        ClaimRound::Read { first, at: self.now() }
    }

    /// Posts one check to the shell endpoint and waits for it, at most its time limit; past it
    /// the run is aborted (as OpenCode aborts a shell) and counts as timed out.
    pub(super) async fn run_check(
        &self,
        seen: &Seen,
        index: usize,
        check: &AcceptanceCheck,
        message_id: &str,
        target: &Selection,
    ) -> Result<CheckRun, HttpError> {
        let marker = check_rules::marker(message_id);
        let agent = if target.agent.is_empty() { "build" } else { target.agent.as_str() };
        let mut body = json!({
            "agent": agent,
            "command": check_rules::wrap_command(&check.command, &marker),
            "model": { "providerID": target.provider_id, "modelID": target.model_id },
        });
        if !message_id.is_empty() {
            body["messageID"] = Value::from(message_id);
        }
        let limit = check_rules::time_limit(check);
        let started = self.now();
        let (id, dir) = (seen.session_id.as_str(), seen.directory.as_str());
        let call = self.read.client.shell(id, dir, &body, limit + SHELL_SLACK);
        tokio::pin!(call);
        let (answer, timed_out) = tokio::select! {
            // The answer first when both are ready: a run never counts as timed out by chance.
            biased;
            answer = &mut call => (answer, false),
            _ = tokio::time::sleep(limit) => {
                info!(target: "session_goal", session = id, check = index + 1, "acceptance check past its time limit; aborting it");
                if let Err(error) = self.read.client.abort(id, dir).await {
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
            Err(error) => return Err(error),
        };
        if timed_out {
            run.result = CheckResult::TimedOut;
        }
        if run.duration_ms <= 0.0 {
            run.duration_ms = (self.now() - started).max(0.0);
        }
        Ok(run)
    }

    /// Opens the reviewer session, a child of the goal's session: its id, or why it could not be.
    pub(super) async fn open_reviewer(&self, seen: &Seen, title: &str) -> Result<String, String> {
        let (parent, dir) = (seen.session_id.as_str(), seen.directory.as_str());
        match self.read.client.create_child_session(parent, dir, title).await {
            Ok(session) => {
                operator::review_started(parent, &session);
                Ok(session)
            }
            Err(error) => {
                warn!(target: "session_goal", session = parent, %error, "the reviewer session could not be created");
                Err(error.to_string())
            }
        }
    }

    /// Posts one prompt to the reviewer and waits for its final reply (a completed reply that is
    /// not a tool-call step), at most the review timeout; past it the turn is aborted. A turn that
    /// can no longer answer (cut by a restart, or never started) is found by the reviewer's
    /// status, read at most once a quiet window.
    pub(super) async fn reviewer_turn(
        &self,
        dir: &str,
        session: &str,
        io: &TickIo,
        body: &ReviewerBody,
    ) -> ReviewerTurn {
        let client = self.read.client;
        let seen: HashSet<String> = match client.messages(session, dir, REVIEWER_MESSAGES).await {
            Ok(messages) => messages.into_iter().map(|m| m.id).collect(),
            Err(error) => return ReviewerTurn::Refused(format!("reviewer messages: {error}")),
        };
        if !io.generation.is_current() {
            return ReviewerTurn::Interrupted;
        }
        match client.prompt_async(session, dir, body).await {
            DispatchOutcome::Sent => {}
            DispatchOutcome::NotAdmitted(status) => {
                return ReviewerTurn::Refused(format!("reviewer prompt HTTP {status}"))
            }
            DispatchOutcome::Ambiguous(detail) => return ReviewerTurn::Refused(format!("reviewer prompt: {detail}")),
        }
        let deadline = tokio::time::Instant::now() + self.read.config.review_timeout;
        let quiet = self.read.config.idle_quiet;
        let mut next_status_read = tokio::time::Instant::now() + quiet;
        let mut pause = POLL_FIRST;
        loop {
            if !io.generation.is_current() {
                let _ = client.abort(session, dir).await;
                return ReviewerTurn::Interrupted;
            }
            if let Ok(messages) = client.messages(session, dir, REVIEWER_MESSAGES).await {
                if let Some(reply) = final_reply(&messages, &seen) {
                    return ReviewerTurn::Answered(reply.text.clone());
                }
                if tokio::time::Instant::now() >= next_status_read && no_answer_coming(&messages, &seen) {
                    next_status_read = tokio::time::Instant::now() + quiet;
                    let idle =
                        client.status_map(dir).await.is_ok_and(|s| live_status(&s, session) != LiveStatus::Working);
                    if idle {
                        return ReviewerTurn::Refused(
                            "the reviewer's turn ended without an answer (cut or never started)".into(),
                        );
                    }
                }
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                if let Err(error) = client.abort(session, dir).await {
                    warn!(target: "session_goal", session, %error, "aborting the reviewer failed");
                }
                return ReviewerTurn::TimedOut;
            }
            tokio::time::sleep(pause.min(deadline - now)).await;
            pause = (pause * 2).min(POLL_MAX);
        }
    }

    /// One post of the reserved continuation (recorded as ours first, under its id).
    pub(super) async fn post(&self, seen: &Seen, body: &Value, message_id: Option<&str>) -> PostAnswer {
        let (session_id, directory) = (seen.session_id.as_str(), seen.directory.as_str());
        if let Some(id) = message_id {
            self.memory.own_posts.record(session_id, id);
        }
        match self.read.client.prompt_async(session_id, directory, body).await {
            DispatchOutcome::Sent => PostAnswer::Sent,
            DispatchOutcome::NotAdmitted(code) => {
                warn!(target: "session_goal", session = session_id, code, "continuation not admitted");
                PostAnswer::Refused
            }
            DispatchOutcome::Ambiguous(why) => {
                warn!(target: "session_goal", session = session_id, %why, "continuation outcome unknown");
                PostAnswer::Unclear
            }
        }
    }

    /// The continuation went out: a reservation's echo that had not come is followed, and the
    /// console says so.
    pub(super) fn announce_continuation(&self, seen: &Seen, io: &mut TickIo) {
        let Some(Held::Written { goal: reserved, .. }) = seen.held(Slot::Reserved) else { return };
        if let Some(late) = io.late.take() {
            follow_late_echo(self.target(seen), late);
        }
        let (session_id, turn) = (seen.session_id.as_str(), reserved.turns_used);
        info!(target: "session_goal", session = session_id, turn, "continuation sent");
        let max_turns = self.read.config.max_auto_turns;
        operator::continuation_sent(session_id, turn, max_turns, reserved.tokens_used, reserved.token_budget);
    }
}

/// The `noReply` post of a claim: one part naming this host, out of the model's context.
fn claim_body(target: &Selection, claim_id: &str, text: &str) -> Value {
    // A claim names no variant: it starts no turn.
    let selection = Selection { variant: String::new(), ..target.clone() };
    let mut body =
        selection.prompt_body(vec![json!({ "type": "text", "text": text, "synthetic": true, "ignored": true })]);
    body.insert("messageID".into(), Value::from(claim_id));
    body.insert("noReply".into(), Value::Bool(true));
    Value::Object(body)
}
