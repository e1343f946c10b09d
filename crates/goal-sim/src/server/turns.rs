//! The agent's turns, one at a time per session: a prompt starts one (or waits for the running
//! one), the world's script says how it goes (finishes, fails, never starts, never ends), a
//! restart cuts it where it is, an abort ends it. The shell runs acceptance checks the same way.
//! A reviewer's child session answers with the goal's scripted review.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::server::state::State;
use crate::server::{next_turn, Server};
use crate::world::{Failure, TurnKind};

/// How long a check run takes.
const CHECK_MS: u64 = 1_500;
/// How long a reviewer takes to answer.
const REVIEW_MS: u64 = 3_000;

impl Server {
    /// A prompt's user message was stored: its turn starts now, or after the running one. A
    /// turn that never starts leaves the message stranded.
    pub fn prompted(self: &Arc<Self>, session_id: &str, message_id: &str) {
        let kind = {
            let mut scripts = self.scripts.lock();
            let Some(script) = scripts.get_mut(session_id) else { return };
            let child = self.state.lock().sessions.get(session_id).is_some_and(|s| s.parent.is_some());
            let kind = if child {
                TurnKind::Finish { ms: REVIEW_MS, tokens: 300, micro_usd: 0 }
            } else {
                next_turn(&self.goals[script.goal], script.prompts)
            };
            script.prompts += 1;
            if kind == TurnKind::NeverStart {
                self.record
                    .note(self.now(), format!("{session_id}: prompt {message_id} stored, its turn never starts"));
                return;
            }
            self.record.turn_began(session_id, message_id, self.now());
            if script.running.is_some() {
                script.queued.push((message_id.to_string(), kind));
                return;
            }
            kind
        };
        self.start_turn(session_id, message_id, kind);
    }

    fn start_turn(self: &Arc<Self>, session_id: &str, message_id: &str, kind: TurnKind) {
        let now = self.now();
        let (generation, reply) = {
            let mut state = self.state.lock();
            state.set_status(session_id, true, false);
            let reply = state.begin_reply(session_id, message_id, now);
            let mut scripts = self.scripts.lock();
            let script = scripts.get_mut(session_id).expect("a scripted session");
            script.running = Some(reply.clone());
            (script.generation, reply)
        };
        let server = self.clone();
        let (session, parent) = (session_id.to_string(), message_id.to_string());
        tokio::spawn(async move { server.run_turn(session, parent, reply, kind, generation).await });
    }

    async fn run_turn(
        self: Arc<Self>,
        session: String,
        parent: String,
        reply: String,
        kind: TurnKind,
        generation: u64,
    ) {
        let ms = match kind {
            TurnKind::Finish { ms, .. } | TurnKind::Fail { ms, .. } => ms,
            TurnKind::NeverStart | TurnKind::NeverEnd => return,
        };
        tokio::time::sleep(Duration::from_millis(ms)).await;
        let now = self.now();
        let next = {
            let mut scripts = self.scripts.lock();
            let Some(script) = scripts.get_mut(&session).filter(|s| s.generation == generation) else { return };
            let mut state = self.state.lock();
            if !state.up {
                return;
            }
            match kind {
                TurnKind::Finish { tokens, micro_usd, .. } => {
                    script.context_tokens += tokens;
                    let child = state.sessions.get(&session).is_some_and(|s| s.parent.is_some());
                    let text = self.reply_text(script, child, &parent);
                    finish_reply(
                        &mut state,
                        &session,
                        &reply,
                        &text,
                        script.context_tokens,
                        micro_usd as f64 / 1e6,
                        now,
                    );
                }
                TurnKind::Fail { failure, .. } => {
                    fail_reply(&mut state, &session, &reply, failure, now);
                    let goal = script.goal;
                    self.record.with(|r| r.goals[goal].failed_turns += 1);
                }
                TurnKind::NeverStart | TurnKind::NeverEnd => unreachable!("returned above"),
            }
            script.running = None;
            let next = (!script.queued.is_empty()).then(|| script.queued.remove(0));
            if next.is_none() {
                state.set_status(&session, false, false);
            }
            next
        };
        self.record.turn_ended(&session, &reply, now);
        if let Some((message, kind)) = next {
            self.start_turn(&session, &message, kind);
        }
    }

    /// The text of a finished reply: a reviewer's scripted answer, or the agent's progress.
    fn reply_text(&self, script: &mut crate::server::Script, is_child: bool, parent: &str) -> String {
        if !is_child {
            return format!("Progress on the parser after prompt {parent}: more cases handled.");
        }
        let answers = self.goals[script.goal].review.clone().unwrap_or_default();
        let approve = answers.get(script.reviews).or(answers.last()).copied().unwrap_or(true);
        script.reviews += 1;
        self.record.review_answered(script.goal, approve);
        let verdict = if approve { "approve" } else { "reject" };
        let findings: Vec<&str> = if approve { vec![] } else { vec!["the nested case is still missing"] };
        json!({"verdict": verdict, "note": format!("review: {verdict}"), "criteria": [], "findings": findings})
            .to_string()
    }

    /// A restart: every running turn stops where it is (its reply keeps no completion), queued
    /// ones are lost, every session is idle, and no event says so.
    pub fn cut_turns(&self) {
        let mut scripts = self.scripts.lock();
        let mut state = self.state.lock();
        for (session, script) in scripts.iter_mut() {
            script.generation += 1;
            script.queued.clear();
            if script.running.take().is_some() {
                self.record.note(self.now(), format!("{session}: its turn was cut by the restart"));
            }
        }
        state.busy.clear();
    }

    /// `POST /session/:id/abort` (or the user's stop): the running turn ends aborted, the queue
    /// is dropped.
    pub fn abort(&self, session_id: &str) {
        let now = self.now();
        let mut scripts = self.scripts.lock();
        let Some(script) = scripts.get_mut(session_id) else { return };
        script.generation += 1;
        script.queued.clear();
        let running = script.running.take();
        let mut state = self.state.lock();
        if !state.busy.contains_key(session_id) {
            return;
        }
        let Some(directory) = state.sessions.get(session_id).map(|s| s.directory.clone()) else { return };
        let aborted = json!({"name": "MessageAbortedError", "data": {"message": "The operation was aborted."}});
        state.emit(
            json!({"type": "session.error", "properties": {"sessionID": session_id, "error": aborted}}),
            &directory,
        );
        if let Some(reply) = running {
            if let Some(message) = state.sessions.get_mut(session_id).and_then(|s| s.message_mut(&reply)) {
                message["info"]["error"] = aborted.clone();
                message["info"]["time"]["completed"] = json!(now);
            }
            state.emit_message(session_id, &reply);
        }
        state.set_status(session_id, false, false);
    }

    /// `POST /session/:id/shell`: runs an acceptance check (`command` carries its exit marker)
    /// and answers with the recorded reply once it ends; `None` when a restart cut it.
    pub async fn run_shell(self: &Arc<Self>, session_id: &str, body: &Value) -> Option<Value> {
        let now = self.now();
        let (generation, reply, passes) = {
            let mut scripts = self.scripts.lock();
            let script = scripts.get_mut(session_id)?;
            let fails = self.goals[script.goal].check_fails.unwrap_or(0);
            script.check_runs += 1;
            let passes = script.check_runs > fails;
            let mut state = self.state.lock();
            let text =
                [json!({"type": "text", "text": "The following tool was executed by the user", "synthetic": true})];
            let message_id = body.get("messageID").and_then(Value::as_str);
            let existing =
                message_id.filter(|id| state.sessions.get(session_id).is_some_and(|s| s.message(id).is_some()));
            let user = match existing {
                Some(id) => id.to_string(),
                None => state.add_user_message(session_id, message_id, &text, body, now),
            };
            state.set_status(session_id, true, false);
            let reply = state.begin_reply(session_id, &user, now);
            script.running = Some(reply.clone());
            (script.generation, reply, passes)
        };
        tokio::time::sleep(Duration::from_millis(CHECK_MS)).await;
        let mut scripts = self.scripts.lock();
        let script = scripts.get_mut(session_id).filter(|s| s.generation == generation)?;
        script.running = None;
        let command = body.get("command").and_then(Value::as_str).unwrap_or_default();
        let marker = marker_of(command)?;
        let code = if passes { 0 } else { 1 };
        let output =
            format!("running the tests\n{}\n{marker}{code}\n", if passes { "all passed" } else { "1 failing" });
        let mut state = self.state.lock();
        if !state.up {
            return None;
        }
        let now = self.now();
        let session = state.sessions.get_mut(session_id)?;
        let message = session.message_mut(&reply)?;
        let part_id = format!("prt_{}", &reply[4..]);
        message["parts"].as_array_mut()?.push(json!({
            "id": part_id, "sessionID": session_id, "messageID": reply, "type": "tool", "tool": "bash",
            "callID": format!("call_{}", &reply[4..]),
            "state": {"status": "completed", "input": {"command": command}, "output": output, "title": "",
                      "metadata": {"output": output}, "time": {"start": now, "end": now}},
        }));
        message["info"]["time"]["completed"] = json!(now);
        let answer = message.clone();
        state.emit_message(session_id, &reply);
        state.set_status(session_id, false, false);
        drop(state);
        self.record.check_ran(
            script.goal,
            body.get("messageID").and_then(Value::as_str).unwrap_or_default(),
            passes,
            now,
        );
        Some(answer)
    }
}

/// The exit marker the check wrapper prints (`echo <marker>\x24e`): the word before `\x24e`.
fn marker_of(command: &str) -> Option<String> {
    let end = command.find("\\x24e")?;
    let start = command[..end].rfind("echo ")? + "echo ".len();
    Some(command[start..end].to_string())
}

/// Completes a reply: text, tokens (the context it carried), cost, `finish: stop`.
pub fn finish_reply(state: &mut State, session: &str, reply: &str, text: &str, context: u64, cost: f64, now: f64) {
    let parts = [
        json!({"type": "text", "text": text, "time": {"start": now, "end": now}}),
        json!({"type": "step-finish", "reason": "stop", "cost": cost}),
    ];
    let parts = state.parts_of(session, reply, &parts, now);
    let Some(message) = state.sessions.get_mut(session).and_then(|s| s.message_mut(reply)) else { return };
    let output = (context / 10).max(1);
    message["info"]["tokens"] = json!({"total": context, "input": context - output, "output": output, "reasoning": 0, "cache": {"read": 0, "write": 0}});
    message["info"]["cost"] = json!(cost);
    message["info"]["finish"] = json!("stop");
    message["info"]["time"]["completed"] = json!(now);
    message["parts"].as_array_mut().expect("parts").extend(parts);
    state.emit_message(session, reply);
}

/// Ends a reply with a provider error (and `session.error`).
fn fail_reply(state: &mut State, session: &str, reply: &str, failure: Failure, now: f64) {
    let error = match failure {
        Failure::RateLimit { reset_ms } => json!({"name": "APIError", "data": {
            "message": "Rate limit reached", "statusCode": 429, "isRetryable": true,
            "responseHeaders": {"retry-after-ms": reset_ms.to_string()}}}),
        Failure::ServerError => json!({"name": "APIError", "data": {
            "message": "Internal error", "statusCode": 500, "isRetryable": false}}),
    };
    let Some(directory) = state.sessions.get(session).map(|s| s.directory.clone()) else { return };
    if let Some(message) = state.sessions.get_mut(session).and_then(|s| s.message_mut(reply)) {
        message["info"]["error"] = error.clone();
        message["info"]["time"]["completed"] = json!(now);
    }
    state.emit_message(session, reply);
    state.emit(json!({"type": "session.error", "properties": {"sessionID": session, "error": error}}), &directory);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_is_read_from_the_check_wrapper() {
        let command =
            "exec > >(tail -c 16384) 2>&1; trap $'e=\\x24?; echo; echo sgr-check-abc-exit-\\x24e' EXIT; npm test";
        assert_eq!(marker_of(command).as_deref(), Some("sgr-check-abc-exit-"));
        assert_eq!(marker_of("npm test"), None);
    }
}
