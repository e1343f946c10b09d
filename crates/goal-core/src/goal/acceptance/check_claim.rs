//! The claim of an acceptance-check run: at most one run of each check per tail, with any number
//! of hosts. OpenCode runs a repeated shell post again (docs/multi-host.md), and a look at the
//! transcript before posting is read-then-act, so two hosts that looked at once would both run it.
//! The claim is OpenCode's one first-writer-wins record: every host posts a `noReply` message
//! under the same claim id whose one part names the host; the parts of repeated posts of one id
//! are kept in arrival order (they carry no part id of ours on purpose: OpenCode's own ascending
//! ids are that order). The host named by the first part runs the check; every other host ends
//! its round and finds the run in the transcript later. The parts are `ignored` (OpenCode leaves
//! them out of the model's context) and `synthetic` (UIs show no text for them).
//!
//! A claim whose winner never ran the check (it stopped for good) would leave the check unrun:
//! a claim older than the round's hold with no run is taken as abandoned, and the next claim's id
//! is derived from the abandoned one's winning part, so every host agrees on it.

use std::time::Duration;

use serde_json::{json, Value};
use tracing::info;

use crate::goal::context::Tick;
use crate::goal::planning::plan::Basis;
use crate::io::prompt_outcome::DispatchOutcome;
use crate::record::check_id::check_claim_id;

/// Claims after an abandoned one, at most (each waits a whole hold first).
const CLAIM_ROUNDS: usize = 3;
/// What a check run's claim part names (the claim text is `<label> claimed by <holder>`).
const CHECK_LABEL: &str = "acceptance check";
/// What a review's claim part names (`goal/acceptance/review.rs`).
pub const REVIEW_LABEL: &str = "goal review";

/// Who may run the check.
#[derive(Debug, PartialEq, Eq)]
pub enum Claim {
    /// This host's claim came first: it runs the check.
    Ours,
    /// Another host's claim came first: this host runs nothing.
    Theirs,
    /// The claim could not be posted or read back: nothing runs now, the tick is retried.
    Unknown,
}

/// Claims the run of the check whose message id is `check_id`, before it is posted. `hold`: how
/// long a claim stands without its run (the round's lease hold).
pub async fn claim_run(tick: &Tick<'_>, basis: &Basis, check_id: &str, hold: Duration) -> Claim {
    claim_labelled(tick, basis, check_id, hold, CHECK_LABEL).await
}

/// [`claim_run`] for any run whose id is marked like a check run's (`record/check_id.rs`): the
/// claim part reads `<label> claimed by <holder>`, so a transcript says what was claimed.
pub async fn claim_labelled(tick: &Tick<'_>, basis: &Basis, check_id: &str, hold: Duration, label: &str) -> Claim {
    let prefix = format!("{label} claimed by ");
    let mut salt = String::new();
    for _ in 0..CLAIM_ROUNDS {
        let Some(claim_id) = check_claim_id(check_id, &salt) else { return Claim::Ours };
        match tick
            .ctx
            .client
            .prompt_async(tick.session_id, tick.directory, &claim_body(tick, basis, &claim_id, &prefix))
            .await
        {
            DispatchOutcome::NotAdmitted(_) => return Claim::Unknown,
            // Sent, or unclear: the read below tells whether it landed.
            DispatchOutcome::Sent | DispatchOutcome::Ambiguous(_) => {}
        }
        let Ok((_, raw)) =
            tick.ctx.client.messages_with_raw(tick.session_id, tick.directory, tick.ctx.config.message_limit).await
        else {
            return Claim::Unknown;
        };
        let Some(first) = first_claim(&raw, &claim_id, &prefix) else { return Claim::Unknown };
        if first.holder == tick.ctx.holder {
            return Claim::Ours;
        }
        if tick.now_ms() - first.created < hold.as_millis() as f64 || first.part_id.is_empty() {
            info!(target: "session_goal", session = tick.session_id, label, "another host claimed this run");
            return Claim::Theirs;
        }
        info!(target: "session_goal", session = tick.session_id, "a claim of this check run was never followed by its run; claiming again");
        salt = first.part_id;
    }
    Claim::Theirs
}

/// The `noReply` post of a claim: one part naming this host, out of the model's context.
fn claim_body(tick: &Tick<'_>, basis: &Basis, claim_id: &str, prefix: &str) -> Value {
    let mut body = json!({
        "messageID": claim_id,
        "noReply": true,
        "model": { "providerID": basis.target.provider_id, "modelID": basis.target.model_id },
        "parts": [{ "type": "text", "text": format!("{prefix}{}", tick.ctx.holder), "synthetic": true, "ignored": true }],
    });
    if !basis.target.agent.is_empty() {
        body["agent"] = Value::from(basis.target.agent.clone());
    }
    body
}

/// The first claim of a claim message.
#[derive(Debug, PartialEq)]
struct FirstClaim {
    holder: String,
    part_id: String,
    created: f64,
}

/// The first claim part of message `claim_id` in a raw transcript (parts in stored order). Pure.
fn first_claim(raw: &[Value], claim_id: &str, prefix: &str) -> Option<FirstClaim> {
    let message = raw.iter().find(|m| m.pointer("/info/id").and_then(Value::as_str) == Some(claim_id))?;
    let created = message.pointer("/info/time/created").and_then(Value::as_f64).unwrap_or(0.0);
    let part = message.get("parts")?.as_array()?.iter().find_map(|p| {
        let text = p.get("text").and_then(Value::as_str)?;
        Some((text.strip_prefix(prefix)?, p.get("id").and_then(Value::as_str).unwrap_or("")))
    })?;
    Some(FirstClaim { holder: part.0.to_string(), part_id: part.1.to_string(), created })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_claim_part_decides() {
        let raw = vec![
            json!({"info": {"id": "msg_other", "time": {"created": 5.0}}, "parts": [{"id": "prt_x", "type": "text", "text": "acceptance check claimed by rt-9"}]}),
            json!({"info": {"id": "msg_claim", "time": {"created": 7.0}}, "parts": [
                {"id": "prt_1", "type": "text", "text": "acceptance check claimed by rt-2"},
                {"id": "prt_2", "type": "text", "text": "acceptance check claimed by rt-1"}
            ]}),
        ];
        assert_eq!(
            first_claim(&raw, "msg_claim", "acceptance check claimed by "),
            Some(FirstClaim { holder: "rt-2".into(), part_id: "prt_1".into(), created: 7.0 })
        );
        assert_eq!(first_claim(&raw, "msg_missing", "acceptance check claimed by "), None);
        let foreign = vec![json!({"info": {"id": "msg_claim"}, "parts": [{"type": "text", "text": "something else"}]})];
        assert_eq!(first_claim(&foreign, "msg_claim", "acceptance check claimed by "), None);
    }
}
