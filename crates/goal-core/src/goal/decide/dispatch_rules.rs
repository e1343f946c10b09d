//! The continuation's post, attempt by attempt, as rules: the executor makes one post (or one
//! pause, one read) per effect, and these say what comes next from the steps taken so far.
//!
//! With the turn's idempotent id (`record/continuation_id.rs`) every attempt posts the same id, so
//! a timeout, a 5xx or a second host's post of it can only ever make one turn. Before a retry the
//! session is read once, so a user who stopped or changed the goal is obeyed even by a host that
//! forwards no events; after an answer that left the outcome unknown the transcript is read too,
//! and a stored id is not posted again. Without an id (a tail of unknown format) a post is
//! classified, and reconciled against the session before any further post: nothing is posted
//! again while an earlier post's fate is unknown (that could send twice). Pure.

use std::time::Duration;

use serde_json::Value;

use crate::record::session::{chronological, live_status, LiveStatus, Message, Role, SessionView};
use crate::time::backoff::retry_delay;

/// How a continuation's post ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// OpenCode admitted it (or holds a message under its id).
    Sent,
    /// The user stopped, typed or changed the goal before a post; `unused`: no post can have
    /// landed.
    Stopped {
        /// No attempt can have landed.
        unused: bool,
    },
    /// Not delivered after every attempt; `refused`: every attempt was a definite refusal.
    Failed {
        /// Every attempt was refused.
        refused: bool,
    },
}

/// What OpenCode answered one post (`io/prompt_outcome.rs` classifies it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PostAnswer {
    /// Admitted.
    Sent,
    /// Refused for certain (a 4xx other than 408 and 429).
    Refused,
    /// It may have landed or not (a 5xx, a timeout, a network error).
    Unclear,
}

/// What a post without an id is reconciled with: the status, the transcript and the session, read
/// at once (`None`: that read failed).
#[derive(Debug, Clone)]
pub struct ReconcileRead {
    /// `GET /session/status`.
    pub status: Option<Value>,
    /// The transcript.
    pub messages: Option<Vec<Message>>,
    /// The session, with its goal.
    pub session: Option<SessionView>,
}

/// One step of the dispatch, as taken.
#[derive(Debug, Clone)]
pub enum DispatchStep {
    /// A post, and what OpenCode answered.
    Posted(PostAnswer),
    /// The pause before a retry.
    Waited,
    /// The session read before a retry (`None`: unreadable).
    Session(Option<Box<SessionView>>),
    /// Whether the transcript holds the continuation's id (a read failure counts as no).
    Stored(bool),
    /// What a post without an id was reconciled with.
    Reconciled(Box<ReconcileRead>),
}

/// What the dispatch does next.
#[derive(Debug, Clone, PartialEq)]
pub enum DispatchNext {
    /// Post the continuation (again).
    Post,
    /// Wait this long before a retry.
    Pause(Duration),
    /// Read the session (is the goal still the one reserved?).
    ReadSession,
    /// Read whether the transcript holds the continuation's id.
    ReadStored,
    /// Read the status, the transcript and the session to reconcile a post without an id.
    Reconcile,
    /// The dispatch ended.
    Done(Delivery),
}

/// What the next step is judged with.
pub struct Judge<'a> {
    /// Posts at most (`maxDispatchAttempts`).
    pub attempts: u32,
    /// The first pause between posts; it doubles (`time/backoff.rs`).
    pub retry_delay: Duration,
    /// No user action since the tick began.
    pub current: bool,
    /// Whether a session read fresh still holds the goal as reserved.
    pub still_ours: &'a dyn Fn(&SessionView) -> bool,
    /// The session posted to (its live status is reconciled).
    pub session_id: &'a str,
    /// The tail the continuation answers.
    pub tail: &'a str,
    /// The continuation's text (a newer user message with it is the post, landed).
    pub text: &'a str,
}

/// The next step of a post under the turn's id.
pub fn next_with_id(steps: &[DispatchStep], judge: &Judge<'_>) -> DispatchNext {
    let posts = steps.iter().filter(|s| matches!(s, DispatchStep::Posted(_))).count() as u32;
    let refused = !steps.iter().any(|s| matches!(s, DispatchStep::Posted(PostAnswer::Unclear)));
    let stopped = DispatchNext::Done(Delivery::Stopped { unused: refused });
    let unless_stopped = |next| if judge.current { next } else { stopped.clone() };
    let failed = DispatchNext::Done(Delivery::Failed { refused });
    match steps.last() {
        None if judge.attempts == 0 => failed,
        None => unless_stopped(DispatchNext::Post),
        Some(DispatchStep::Posted(PostAnswer::Sent) | DispatchStep::Stored(true)) => DispatchNext::Done(Delivery::Sent),
        // After the last attempt, one look whether an unclear one landed.
        Some(DispatchStep::Posted(_)) if posts >= judge.attempts => {
            if refused {
                failed
            } else {
                DispatchNext::ReadStored
            }
        }
        Some(DispatchStep::Posted(_)) => unless_stopped(DispatchNext::Pause(retry_delay(judge.retry_delay, posts))),
        Some(DispatchStep::Waited) => unless_stopped(DispatchNext::ReadSession),
        Some(DispatchStep::Session(Some(session))) if !(judge.still_ours)(session) => stopped,
        Some(DispatchStep::Session(_)) if !refused => DispatchNext::ReadStored,
        Some(DispatchStep::Session(_) | DispatchStep::Stored(false)) if posts < judge.attempts => {
            unless_stopped(DispatchNext::Post)
        }
        Some(DispatchStep::Session(_) | DispatchStep::Stored(false) | DispatchStep::Reconciled(_)) => failed,
    }
}

/// How a post without an id stands after a reconciliation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// Whether a post without an id landed, from what the session shows.
fn reconciled(read: &ReconcileRead, judge: &Judge<'_>) -> Reconciled {
    let (Some(status), Some(messages)) = (&read.status, &read.messages) else { return Reconciled::Unknown };
    if live_status(status, judge.session_id) == LiveStatus::Working {
        return Reconciled::Admitted;
    }
    let ordered = chronological(messages);
    let Some(position) = ordered.iter().position(|m| m.id == judge.tail) else { return Reconciled::Unknown };
    let newer = &ordered[position + 1..];
    if newer.iter().any(|m| m.role == Role::Assistant || m.text.trim() == judge.text.trim()) {
        return Reconciled::Admitted;
    }
    match &read.session {
        _ if !newer.is_empty() => Reconciled::Stop,
        Some(session) if (judge.still_ours)(session) => Reconciled::NotAdmitted,
        Some(_) => Reconciled::Stop,
        None => Reconciled::Unknown,
    }
}

/// Where a post without an id stands: at the top of an attempt (`attempt`, from 1), after a pause
/// (its reconciliation next), ready to post after a reconciliation, or through the last one.
#[derive(Clone, Copy)]
enum Phase {
    Top,
    Waited,
    Ready,
    Through,
}

/// The next step of a post without an id (the classified, reconciled dispatch).
pub fn next_classified(steps: &[DispatchStep], judge: &Judge<'_>) -> DispatchNext {
    let (mut attempt, mut refused, mut unresolved, mut phase) = (1, true, false, Phase::Top);
    for step in steps {
        let last = attempt > judge.attempts;
        match (step, phase) {
            (DispatchStep::Posted(PostAnswer::Sent), _) => return DispatchNext::Done(Delivery::Sent),
            (DispatchStep::Posted(answer), _) => {
                if *answer == PostAnswer::Unclear {
                    (refused, unresolved) = (false, true);
                }
                (attempt, phase) = (attempt + 1, Phase::Top);
            }
            (DispatchStep::Waited, _) => phase = Phase::Waited,
            (DispatchStep::Reconciled(read), _) => match reconciled(read, judge) {
                Reconciled::Admitted if last || unresolved => return DispatchNext::Done(Delivery::Sent),
                Reconciled::Admitted => return DispatchNext::Done(Delivery::Stopped { unused: false }),
                Reconciled::Stop => return DispatchNext::Done(Delivery::Stopped { unused: refused && !unresolved }),
                _ if last => phase = Phase::Through,
                Reconciled::NotAdmitted => (unresolved, phase) = (false, Phase::Ready),
                // Its fate still unknown: this attempt posts nothing (that could send twice).
                Reconciled::Unknown if unresolved => (attempt, phase) = (attempt + 1, Phase::Top),
                Reconciled::Unknown => phase = Phase::Ready,
            },
            (DispatchStep::Session(_) | DispatchStep::Stored(_), _) => {}
        }
    }
    let stopped = DispatchNext::Done(Delivery::Stopped { unused: refused && !unresolved });
    let failed = DispatchNext::Done(Delivery::Failed { refused });
    match phase {
        Phase::Waited => DispatchNext::Reconcile,
        _ if !judge.current => stopped,
        // The last attempt may have landed too: one more look before giving up.
        Phase::Top if attempt > judge.attempts && unresolved => {
            DispatchNext::Pause(retry_delay(judge.retry_delay, judge.attempts))
        }
        Phase::Top if attempt > judge.attempts => failed,
        Phase::Top if attempt > 1 => DispatchNext::Pause(retry_delay(judge.retry_delay, attempt - 1)),
        Phase::Top | Phase::Ready => DispatchNext::Post,
        Phase::Through => failed,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use DispatchStep::{Posted, Reconciled as Rec, Session, Stored, Waited};

    const DELAY: Duration = Duration::from_millis(250);

    fn judge<'a>(current: bool, ours: &'a dyn Fn(&SessionView) -> bool) -> Judge<'a> {
        Judge {
            attempts: 3,
            retry_delay: DELAY,
            current,
            still_ours: ours,
            session_id: "ses_1",
            tail: "msg_2",
            text: "go on",
        }
    }

    fn session() -> Option<Box<SessionView>> {
        SessionView::from_value(&json!({"id": "ses_1"})).map(Box::new)
    }

    /// A reconciliation: the status (busy or idle) and the transcript after the tail.
    fn read(busy: bool, after_tail: Value) -> DispatchStep {
        let mut messages =
            vec![json!({"info": {"id": "msg_2", "role": "assistant", "time": {"created": 2}}, "parts": []})];
        messages.extend(after_tail.as_array().cloned().unwrap_or_default());
        let kind = if busy { "busy" } else { "idle" };
        Rec(Box::new(ReconcileRead {
            status: Some(json!({"ses_1": {"type": kind}})),
            messages: Message::list_from_value(&Value::Array(messages)),
            session: session().map(|s| *s),
        }))
    }

    #[test]
    fn a_post_under_its_id_is_retried_after_a_pause_and_a_fresh_read_until_it_lands() {
        let (ours, theirs) = (|_: &SessionView| true, |_: &SessionView| false);
        let next = |steps: &[DispatchStep]| next_with_id(steps, &judge(true, &ours));
        assert_eq!(next(&[]), DispatchNext::Post);
        assert_eq!(next_with_id(&[], &judge(false, &ours)), DispatchNext::Done(Delivery::Stopped { unused: true }));
        assert_eq!(next(&[Posted(PostAnswer::Sent)]), DispatchNext::Done(Delivery::Sent));
        let unclear = [Posted(PostAnswer::Unclear)];
        assert_eq!(next(&unclear), DispatchNext::Pause(DELAY));
        let waited = [Posted(PostAnswer::Unclear), Waited];
        assert_eq!(next(&waited), DispatchNext::ReadSession);
        assert_eq!(
            next_with_id(&waited, &judge(false, &ours)),
            DispatchNext::Done(Delivery::Stopped { unused: false })
        );
        let fresh = [Posted(PostAnswer::Unclear), Waited, Session(session())];
        assert_eq!(next(&fresh), DispatchNext::ReadStored, "an unclear post may have landed");
        assert_eq!(
            next_with_id(&fresh, &judge(true, &theirs)),
            DispatchNext::Done(Delivery::Stopped { unused: false })
        );
        let landed = [Posted(PostAnswer::Unclear), Waited, Session(session()), Stored(true)];
        assert_eq!(next(&landed), DispatchNext::Done(Delivery::Sent));
        let refused = [Posted(PostAnswer::Refused), Waited, Session(session())];
        assert_eq!(next(&refused), DispatchNext::Post, "a refusal landed nothing: no transcript read");
        let second = [Posted(PostAnswer::Refused), Waited, Session(None), Posted(PostAnswer::Refused)];
        assert_eq!(next(&second), DispatchNext::Pause(DELAY * 2), "the pause doubles");
    }

    #[test]
    fn a_post_under_its_id_fails_after_its_attempts_unless_the_transcript_holds_it() {
        let ours = |_: &SessionView| true;
        let next = |steps: &[DispatchStep]| next_with_id(steps, &judge(true, &ours));
        let retry = |answer| [Posted(answer), Waited, Session(None)];
        let mut refused: Vec<DispatchStep> = retry(PostAnswer::Refused).into_iter().collect();
        refused.extend(retry(PostAnswer::Refused));
        refused.push(Posted(PostAnswer::Refused));
        assert_eq!(next(&refused), DispatchNext::Done(Delivery::Failed { refused: true }));
        let mut unclear = refused.clone();
        unclear[0] = Posted(PostAnswer::Unclear);
        unclear.insert(3, Stored(false));
        assert_eq!(next(&unclear), DispatchNext::ReadStored, "one look after the last attempt");
        unclear.push(Stored(false));
        assert_eq!(next(&unclear), DispatchNext::Done(Delivery::Failed { refused: false }));
    }

    #[test]
    fn a_post_without_an_id_is_reconciled_and_never_posted_while_its_fate_is_unknown() {
        let ours = |_: &SessionView| true;
        let next = |steps: &[DispatchStep]| next_classified(steps, &judge(true, &ours));
        assert_eq!(next(&[]), DispatchNext::Post);
        let unclear = || vec![Posted(PostAnswer::Unclear), Waited];
        assert_eq!(next(&unclear()[..1]), DispatchNext::Pause(DELAY));
        assert_eq!(next(&unclear()), DispatchNext::Reconcile);
        let with = |step| unclear().into_iter().chain([step]).collect::<Vec<_>>();
        assert_eq!(next(&with(read(true, json!([])))), DispatchNext::Done(Delivery::Sent), "busy: it landed");
        let user = json!([{"info": {"id": "msg_3", "role": "user", "time": {"created": 3}}, "parts": [{"type": "text", "text": "stop"}]}]);
        assert_eq!(next(&with(read(false, user))), DispatchNext::Done(Delivery::Stopped { unused: false }));
        assert_eq!(next(&with(read(false, json!([])))), DispatchNext::Post, "nothing landed: posted again");
        let unknown = Rec(Box::new(ReconcileRead { status: None, messages: None, session: None }));
        assert_eq!(next(&with(unknown)), DispatchNext::Pause(DELAY * 2), "unknown: this attempt posts nothing");
        let refused = [Posted(PostAnswer::Refused), Waited, read(false, json!([]))];
        let all_refused: Vec<DispatchStep> =
            [refused.clone(), refused].into_iter().flatten().chain([Posted(PostAnswer::Refused)]).collect();
        assert_eq!(next(&all_refused), DispatchNext::Done(Delivery::Failed { refused: true }));
    }
}
