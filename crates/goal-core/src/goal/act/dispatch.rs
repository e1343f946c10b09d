//! Posting the reserved continuation (the executor's `Post`): every attempt under the turn's
//! idempotent id (`record/continuation_id.rs`), so re-posting after a timeout or a 5xx is safe;
//! only when the tail's id has an unknown format does the post fall back to the classified,
//! reconciled dispatch, which never re-posts while an earlier post's fate is unknown. Between
//! attempts the goal is read again, so a user who stopped or changed it is obeyed even by a host
//! that forwards no events. What OpenCode answered is classified in `io/prompt_outcome.rs`.

use serde_json::Value;
use tracing::{info, warn};

use crate::config::GoalConfig;
use crate::goal::decide::seen::Delivery;
use crate::io::opencode::OpenCodeClient;
use crate::io::prompt_outcome::DispatchOutcome;
use crate::record::session::{chronological, LiveStatus, Role, SessionView};
use crate::sched::Generation;

/// Everything one delivery needs: the session it posts to, the runtime's attempts, retry delay
/// and message limit, the tick's generation (a user's action stops it), and the body.
pub struct Dispatch<'a> {
    /// OpenCode.
    pub client: &'a OpenCodeClient,
    /// The session.
    pub session_id: &'a str,
    /// Its directory.
    pub directory: &'a str,
    /// The runtime's settings.
    pub config: &'a GoalConfig,
    /// Invalidated by any user action since the tick began.
    pub generation: &'a Generation,
    /// The `prompt_async` body, without `messageID`.
    pub body: &'a Value,
}

impl Dispatch<'_> {
    fn client(&self) -> &OpenCodeClient {
        self.client
    }

    fn config(&self) -> &GoalConfig {
        self.config
    }

    /// Posts with the idempotent `message_id`: every attempt posts the same id, so a timeout, a
    /// 5xx or a second host's post of the same id can only ever make one turn. Before a retry the
    /// session is read once, so that a user who stopped or changed the goal meanwhile is obeyed
    /// even by a host that forwards no events (`still_ours` judges the fresh session). After an
    /// attempt that failed ambiguously (a 5xx, a timeout), the message list is read before the
    /// next post, and after the last attempt: a stored id landed, and is not posted again.
    pub async fn with_id(&self, message_id: &str, still_ours: impl Fn(&SessionView) -> bool) -> Delivery {
        let generation = self.generation;
        let mut body = self.body.clone();
        body["messageID"] = Value::from(message_id);
        let mut refused = true;
        for attempt in 1..=self.config().max_dispatch_attempts {
            if !generation.is_current() {
                return Delivery::Stopped { unused: refused };
            }
            if attempt > 1 {
                // Doubling between posts (`time::backoff`): 250 ms, then 500 ms by default.
                tokio::time::sleep(crate::time::backoff::retry_delay(self.config().dispatch_retry_delay, attempt - 1))
                    .await;
                if !generation.is_current() {
                    return Delivery::Stopped { unused: refused };
                }
                if let Ok(session) = self.client().get_session(self.session_id, self.directory).await {
                    if !still_ours(&session) {
                        return Delivery::Stopped { unused: refused };
                    }
                }
                // After an answer that left the outcome unknown, a stored message means it was
                // admitted: posting it again would be harmless (same ids) but is not needed.
                if !refused && self.stored(message_id).await {
                    return Delivery::Sent;
                }
                // Those reads may have taken up to a request timeout each: a user who stopped
                // the goal meanwhile is obeyed (the simulator found a post made after a clear).
                if !generation.is_current() {
                    return Delivery::Stopped { unused: refused };
                }
            }
            match self.client().prompt_async(self.session_id, self.directory, &body).await {
                DispatchOutcome::Sent => return Delivery::Sent,
                DispatchOutcome::NotAdmitted(code) => {
                    warn!(target: "session_goal", session = self.session_id, code, attempt, "continuation not admitted");
                }
                DispatchOutcome::Ambiguous(why) => {
                    refused = false;
                    warn!(target: "session_goal", session = self.session_id, %why, attempt, "continuation outcome unknown; posting the same id again");
                }
            }
        }
        if !refused && self.stored(message_id).await {
            return Delivery::Sent;
        }
        Delivery::Failed { refused }
    }

    /// Whether the transcript holds `message_id` (a read failure counts as not known to be).
    async fn stored(&self, message_id: &str) -> bool {
        match self.client().messages(self.session_id, self.directory, self.config().message_limit).await {
            Ok(messages) => messages.iter().any(|m| m.id == message_id),
            Err(_) => false,
        }
    }

    /// The fallback without an id (unknown tail format): classified dispatch. After an
    /// ambiguous attempt the prompt may have landed, so before any further post the session is
    /// read again, and a post happens only when it shows the same tail, idle, with `still_ours`
    /// true of the fresh session; while an ambiguous attempt's fate stays unknown nothing more
    /// is posted (that could send twice).
    pub async fn classified(
        &self,
        tail: &str,
        prompt_text: &str,
        still_ours: impl Fn(&SessionView) -> bool,
    ) -> Delivery {
        let generation = self.generation;
        let mut refused = true;
        let mut unresolved = false;
        for attempt in 1..=self.config().max_dispatch_attempts {
            if !generation.is_current() {
                return Delivery::Stopped { unused: refused && !unresolved };
            }
            if attempt > 1 {
                match self.reconcile(tail, prompt_text, &still_ours, attempt - 1).await {
                    Reconciled::Admitted => {
                        return if unresolved { Delivery::Sent } else { Delivery::Stopped { unused: false } }
                    }
                    Reconciled::Stop => return Delivery::Stopped { unused: refused && !unresolved },
                    Reconciled::NotAdmitted => unresolved = false,
                    Reconciled::Unknown if unresolved => {
                        warn!(target: "session_goal", session = self.session_id, attempt, "continuation outcome still unknown; not posting again");
                        continue;
                    }
                    Reconciled::Unknown => {}
                }
                if !generation.is_current() {
                    return Delivery::Stopped { unused: refused && !unresolved };
                }
            }
            match self.client().prompt_async(self.session_id, self.directory, self.body).await {
                DispatchOutcome::Sent => return Delivery::Sent,
                DispatchOutcome::NotAdmitted(code) => {
                    warn!(target: "session_goal", session = self.session_id, code, attempt, "continuation not admitted");
                }
                DispatchOutcome::Ambiguous(why) => {
                    refused = false;
                    unresolved = true;
                    warn!(target: "session_goal", session = self.session_id, %why, attempt, "continuation outcome unknown; reconciling");
                }
            }
        }
        // The last attempt may have landed too: one more look before giving up.
        if unresolved && generation.is_current() {
            match self.reconcile(tail, prompt_text, &still_ours, self.config().max_dispatch_attempts).await {
                Reconciled::Admitted => return Delivery::Sent,
                Reconciled::Stop => return Delivery::Stopped { unused: refused && !unresolved },
                Reconciled::NotAdmitted | Reconciled::Unknown => {}
            }
        }
        if !generation.is_current() {
            return Delivery::Stopped { unused: refused && !unresolved };
        }
        info!(target: "session_goal", session = self.session_id, refused, "continuation not delivered");
        Delivery::Failed { refused }
    }

    /// After an ambiguous or refused post without an id: did OpenCode admit it, and is the goal
    /// still the one reserved?
    async fn reconcile(
        &self,
        tail: &str,
        prompt_text: &str,
        still_ours: &impl Fn(&SessionView) -> bool,
        failures: u32,
    ) -> Reconciled {
        // Give a slow server a moment to record the prompt before judging (doubling with each
        // failed post, `time::backoff`).
        tokio::time::sleep(crate::time::backoff::retry_delay(self.config().dispatch_retry_delay, failures)).await;
        let (status, messages, session) = tokio::join!(
            self.client().status_map(self.directory),
            self.client().messages(self.session_id, self.directory, self.config().message_limit),
            self.client().get_session(self.session_id, self.directory)
        );
        let (Ok(status), Ok(messages)) = (status, messages) else {
            return Reconciled::Unknown;
        };
        if crate::record::session::live_status(&status, self.session_id) == LiveStatus::Working {
            return Reconciled::Admitted;
        }
        let ordered = chronological(&messages);
        let Some(position) = ordered.iter().position(|m| m.id == tail) else {
            return Reconciled::Unknown;
        };
        let newer = &ordered[position + 1..];
        if newer.iter().any(|m| m.role == Role::Assistant || m.text.trim() == prompt_text.trim()) {
            return Reconciled::Admitted;
        }
        if !newer.is_empty() {
            return Reconciled::Stop;
        }
        match session {
            Ok(session) if still_ours(&session) => Reconciled::NotAdmitted,
            Ok(_) => Reconciled::Stop,
            Err(_) => Reconciled::Unknown,
        }
    }
}

enum Reconciled {
    /// The session is busy, or a newer message shows the continuation landed.
    Admitted,
    /// The user sent something else, or stopped or changed the goal.
    Stop,
    /// Idle with the same tail and the goal as reserved: nothing landed, a re-post is safe.
    NotAdmitted,
    /// Could not tell.
    Unknown,
}
