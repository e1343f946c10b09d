//! The observe stage: the session (with its goal), the settings switches and, for a goal known
//! active, the live state (status, children, messages, todos) are read at once; after the
//! ownership stage (`goal/ownership/stage.rs`, which may read the live state beside an owner
//! list), the effective objective is found and the live state decides whether the tick goes on
//! (idle, nobody waiting).

use tokio::time::Instant;

use serde_json::Value;
use tracing::{debug, warn};

use crate::error::HttpError;
use crate::goal::context::{LiveReads, ReadAtStart, Tick, TickContext};
use crate::goal::planning::gates::{live_gate, LiveGate};
use crate::goal::settling::wait_rules::{wait_detail, Route};
use crate::goal::settling::waiting::note_waiting;
use crate::io::writer::BaseRead;
use crate::io::writer::Marking;
use crate::record::cause::CauseCode;
use crate::record::reasons::{REASON_MESSAGES_UNAVAILABLE, REASON_RESUMED, WAITING_FOR_USER};
use crate::record::session::{Message, SessionView};
use crate::record::{Goal, GoalStatus};
use crate::sched::silence::{GONE_LOOKS, GONE_RECHECK};
use crate::sched::TickOutcome;

/// The first reads of a session with an active goal.
pub struct Started {
    /// The first read and the goal-event watch started before it.
    pub read: ReadAtStart,
    /// The live state, when it was read beside the session (or, by the ownership stage, beside
    /// an owner list).
    pub early_live: Option<LiveReads>,
}

/// The live state of an idle session nobody waits on.
pub struct Live {
    /// Messages, parsed.
    pub messages: Vec<Message>,
    /// Messages as OpenCode sent them (tool parts feed the evidence digest).
    pub raw_messages: Vec<Value>,
    /// The todo list, when readable.
    pub todos: Option<Value>,
}

/// The first reads, and the active goal they show (whose it is, the ownership stage decides
/// next). `Err` ends the tick: goals switched off, the session unreadable or a subagent, or no
/// active goal.
pub async fn start(
    ctx: &TickContext,
    session_id: &str,
    directory: &str,
    attempt: u32,
) -> Result<(Started, Goal), TickOutcome> {
    let exhausted = attempt >= ctx.config.max_retry_attempts;
    // The settings file is read beside the first requests (a disk read would otherwise delay
    // them); when goals are switched off, what was read is dropped unused.
    // The session read may become the reservation's base (no second read when the tick goes
    // straight on): the write epoch is taken before it is sent, and goal events are watched from
    // here (see `echo_watch`).
    let epoch = ctx.client.write_slots().epoch(session_id);
    let watch = ctx.echoes.watch(session_id);
    let read_session = || async {
        let session = ctx.client.get_session(session_id, directory).await;
        (session, Instant::now())
    };
    let (flags, ((session, answered), early_live)) = tokio::join!(ctx.services.data_dir.flags(), async {
        // A retry reads the session first: when the session is what fails, one request, not five.
        // So does a tick in a directory whose session lists are failing: a goal that names no
        // session will only wait there, with no use for the live state.
        if attempt == 0 && (ctx.known_active)(session_id) && !ctx.owner_lists.backing_off(directory) {
            let (session, live) = tokio::join!(read_session(), ctx.read_live(session_id, directory));
            (session, Some(live))
        } else {
            (read_session().await, None)
        }
    });
    if !flags.goal_enabled {
        return Err(TickOutcome::Done);
    }
    let base = match session {
        Ok(session) => BaseRead { session, epoch, answered },
        Err(error) => {
            warn!(target: "session_goal", session = session_id, %error, attempt, "session unreadable");
            // A session the server says is not there is looked at every `GONE_RECHECK` once the
            // retries are spent (a route answering 404 for a while must not leave its goal to
            // the sweep), and dropped after `GONE_LOOKS` such looks. A server that is only slow
            // or failing is never given up on: past the last retry, the scheduler looks again
            // after a long pause (an active goal behind it must not wait for the sweep).
            if !(exhausted && error.is_definite()) {
                return Err(TickOutcome::Retry);
            }
            let looks = attempt.saturating_sub(ctx.config.max_retry_attempts);
            return Err(if looks < GONE_LOOKS { TickOutcome::RetryIn(GONE_RECHECK) } else { TickOutcome::Done });
        }
    };
    if base.session.is_subagent() {
        return Err(TickOutcome::Done);
    }
    let Some(goal) = base.session.goal().filter(|g| g.status == GoalStatus::Active) else {
        return Err(TickOutcome::Done);
    };
    Ok((Started { read: ReadAtStart { base, watch }, early_live }, goal))
}

/// Whether OpenCode lists an open permission or question of the session or one of its
/// children (what events said, checked: the answer's event may be lost). A list that cannot be
/// read keeps what the events said.
async fn still_waiting(ctx: &TickContext, session_id: &str, directory: &str, children: &[SessionView]) -> bool {
    let (permissions, questions) = tokio::join!(
        ctx.client.call("GET", "/permission", directory, None),
        ctx.client.call("GET", "/question", directory, None),
    );
    let (Ok(permissions), Ok(questions)) = (permissions, questions) else { return true };
    let ours = |request: &Value| {
        let owner = request.get("sessionID").and_then(Value::as_str);
        owner == Some(session_id) || children.iter().any(|c| owner == Some(c.id.as_str()))
    };
    [permissions, questions].iter().any(|list| list.as_array().is_some_and(|items| items.iter().any(ours)))
}

/// The objective the tick works toward: the objective file's text for a file-backed goal (the
/// inline objective when the file is unreadable); `None` when there is none.
pub async fn effective_objective(ctx: &TickContext, session_id: &str, goal: &Goal) -> Option<String> {
    if goal.objective_file {
        if let Some(text) = ctx.services.data_dir.read_objective(session_id).await {
            return Some(text);
        }
        if goal.objective.is_empty() {
            return None;
        }
        warn!(target: "session_goal", session = session_id, "objective file unreadable; using inline objective");
    }
    Some(goal.objective.clone())
}

impl Started {
    /// The live state (read now unless it was read beside the session), gated: `Err` ends the
    /// tick (busy, a child busy, waiting for the user, or unreadable).
    pub async fn live(&mut self, tick: &Tick<'_>) -> Result<Live, TickOutcome> {
        let (ctx, session_id) = (tick.ctx, tick.session_id);
        let reads = match self.early_live.take() {
            Some(live) => live,
            None => ctx.read_live(session_id, tick.directory).await,
        };
        let (status, children, (messages, raw_messages), todos) = match reads {
            (Ok(s), Ok(c), Ok(m), todos) => (s, c, m, todos),
            (s, c, m, _) => {
                let failed: Vec<(Route, HttpError)> =
                    [(Route::Status, s.err()), (Route::Children, c.err()), (Route::Messages, m.err())]
                        .into_iter()
                        .filter_map(|(route, error)| Some((route, error?)))
                        .collect();
                let which = failed.iter().map(|(route, _)| route.as_str()).collect::<Vec<_>>().join(", ");
                warn!(target: "session_goal", session = session_id, failed = %which, attempt = tick.attempt, "live state unreadable");
                if tick.exhausted {
                    // Its reads failed, so the tick was cheap: a failed write retries on the
                    // plain backoff, not the late one a tick that made its reads takes.
                    return Err(
                        match tick.settle_blocked(REASON_MESSAGES_UNAVAILABLE, CauseCode::MessagesUnavailable).await {
                            TickOutcome::RetryIn(_) => TickOutcome::Retry,
                            outcome => outcome,
                        },
                    );
                }
                // Waiting, and saying so: the first failing request and its answer.
                if let Some((route, error)) = failed.first() {
                    let detail = wait_detail(*route, error);
                    note_waiting(ctx, session_id, tick.directory, &tick.goal, &detail, Marking::MarkUnowned).await;
                }
                return Err(TickOutcome::Retry);
            }
        };
        match live_gate(&status, session_id, &children, |id| (ctx.waiting_for_user)(id)) {
            LiveGate::Proceed => Ok(Live { messages, raw_messages, todos }),
            LiveGate::Busy => Err(TickOutcome::Busy),
            LiveGate::ChildBusy => {
                debug!(target: "session_goal", session = session_id, "child busy; re-arming");
                Err(TickOutcome::Rearm)
            }
            LiveGate::WaitingForUser if !still_waiting(ctx, session_id, tick.directory, &children).await => {
                // Events said a request is open, OpenCode lists none: its answer's event was lost.
                debug!(target: "session_goal", session = session_id, "no open permission or question after all; going on");
                if let Some(settle) = ctx.input_settled.get() {
                    for id in std::iter::once(session_id).chain(children.iter().map(|c| c.id.as_str())) {
                        settle(id);
                    }
                }
                Ok(Live { messages, raw_messages, todos })
            }
            LiveGate::WaitingForUser => {
                let reason = &tick.goal.status_reason;
                if reason != WAITING_FOR_USER && reason != REASON_RESUMED {
                    tick.note_waiting().await;
                }
                Err(TickOutcome::Done)
            }
        }
    }
}
