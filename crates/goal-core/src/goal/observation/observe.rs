//! The observe stage: the session (with its goal), the settings switches and, for a goal known
//! active, the live state (status, children, messages, todos) are read at once; the effective
//! objective is found; the live state decides whether the tick goes on (idle, nobody waiting).

use std::time::Duration;
use tokio::time::Instant;

use serde_json::Value;
use tracing::{debug, warn};

use crate::error::HttpError;
use crate::goal::context::{ReadAtStart, Tick, TickContext};
use crate::goal::observation::wait_rules::{wait_detail, Route};
use crate::goal::observation::waiting::note_waiting;
use crate::goal::ownership::adopt::{own_or_adopt, own_or_adopt_unlisted, UnlistedOwner};
use crate::goal::ownership::lineage::OwnerView;
use crate::goal::ownership::owner_scan::ListAnswer;
use crate::goal::planning::gates::{live_gate, LiveGate};
use crate::io::writer::BaseRead;
use crate::io::writer::Marking;
use crate::record::cause::CauseCode;
use crate::record::reasons::{REASON_MESSAGES_UNAVAILABLE, REASON_RESUMED, WAITING_FOR_USER};
use crate::record::session::{Message, SessionView};
use crate::record::{Goal, GoalStatus};
use crate::sched::TickOutcome;

/// What one read of the live state answered: status map, children, messages (parsed and raw),
/// and the todo list (evidence for the audit).
type LiveReads = (
    Result<Value, HttpError>,
    Result<Vec<SessionView>, HttpError>,
    Result<(Vec<Message>, Vec<Value>), HttpError>,
    Option<Value>,
);

/// The first reads of a session with an active goal.
pub struct Started {
    /// The first read and the goal-event watch started before it.
    pub read: ReadAtStart,
    /// The live state, when it was read beside the session.
    early_live: Option<LiveReads>,
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

/// Status, children, messages and todos at once. The todo list is evidence for the audit:
/// read beside the live state, so an audited turn spends no extra round trip on it (a tick that
/// ends early just drops it).
async fn read_live(ctx: &TickContext, session_id: &str, directory: &str) -> LiveReads {
    tokio::join!(
        ctx.client.status_map(directory),
        ctx.client.children(session_id, directory),
        ctx.client.messages_with_raw(session_id, directory, ctx.config.message_limit),
        ctx.client.session_evidence(session_id, directory, "/todo", None),
    )
}

/// The first reads, and the active goal they show. `Err` ends the tick: goals switched off, the session unreadable or a
/// subagent, no active goal, or another runtime's lease.
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
            let (session, live) = tokio::join!(read_session(), read_live(ctx, session_id, directory));
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
            // A session the server says is not there is dropped once the retries are spent.
            // A server that is only slow or failing is never given up on: past the last retry,
            // the scheduler looks again after a long pause (an active goal behind it must not
            // wait for the periodic sweep).
            return Err(if exhausted && error.is_definite() { TickOutcome::Done } else { TickOutcome::Retry });
        }
    };
    if base.session.is_subagent() {
        return Err(TickOutcome::Done);
    }
    let Some(goal) = base.session.goal().filter(|g| g.status == GoalStatus::Active) else {
        return Err(TickOutcome::Done);
    };
    // Whose goal it is comes first: a fork's copy carries its source's lease and reservation.
    // A goal that names no session waits for its owner list, read beside the live state.
    let (owners, early_live) = owner_list_beside_live(ctx, session_id, directory, &goal, early_live).await;
    let goal = ownership_stage(ctx, &base.session, directory, goal, owners).await?;
    if let Some(wait) = ctx.lease_wait(&goal) {
        debug!(target: "session_goal", session = session_id, "another runtime holds the lease; backing off");
        return Err(TickOutcome::BackOff(wait));
    }
    Ok((Started { read: ReadAtStart { base, watch }, early_live }, goal))
}

/// How long a goal waiting for its directory's owner list sleeps when nothing wakes it: the list
/// that is read wakes it long before (`owner_scan`); this only bounds a wake-up lost anyway.
const LIST_WAIT_RECHECK: Duration = Duration::from_secs(300);

/// The ownership stage on what the lists answered: the goal to drive (this session's, or a
/// copy the user resumed, now its own), or the end of the tick (a copy adopted paused, the
/// owner unknown, or the lists failing: then the goal waits, and its cause says on what).
async fn ownership_stage(
    ctx: &TickContext,
    session: &SessionView,
    directory: &str,
    goal: Goal,
    owners: ListAnswer,
) -> Result<Goal, TickOutcome> {
    let data_dir = &ctx.services.data_dir;
    let waiting = |detail: String, goal: Goal| async move {
        note_waiting(ctx, &session.id, directory, &goal, &detail, Marking::KeepOwner).await;
        Err(TickOutcome::BackOff(LIST_WAIT_RECHECK))
    };
    match owners {
        ListAnswer::Listed(view) => {
            let claimed = own_or_adopt(&ctx.client, &ctx.holders, data_dir, session, directory, &goal, view).await?;
            Ok(claimed.unwrap_or(goal))
        }
        ListAnswer::CannotList => {
            match own_or_adopt_unlisted(&ctx.client, &ctx.holders, session, directory, &goal).await? {
                UnlistedOwner::Driven(goal) => Ok(*goal),
                UnlistedOwner::Undecided => waiting(wait_detail(Route::List, &HttpError::Status(404)), goal).await,
            }
        }
        ListAnswer::Failing { detail, .. } => {
            debug!(target: "session_goal", session = %session.id, "owner list failing; waiting for the directory's next list");
            waiting(detail, goal).await
        }
    }
}

/// For a goal that names no session, waits for the list that tells its owner (started at
/// intake, or here), reading the live state meanwhile when it was not read yet: the list costs
/// the tick no round trip of its own. Returns what the lists tell of the goal's carriers (for a
/// goal that names its session: listed, with the oldest carrier known), and the live state if
/// read.
async fn owner_list_beside_live(
    ctx: &TickContext,
    session_id: &str,
    directory: &str,
    goal: &Goal,
    early_live: Option<LiveReads>,
) -> (ListAnswer, Option<LiveReads>) {
    if !ctx.owner_lists.needs_list(goal) {
        let oldest = ctx.holders.older_than(&goal.id, session_id);
        return (ListAnswer::Listed(OwnerView { listed: true, oldest }), early_live);
    }
    let lists = &ctx.owner_lists;
    match early_live {
        Some(live) => (lists.wait_listed(directory, goal, session_id).await, Some(live)),
        // The live state is read beside the list only when the directory can be listed now: a
        // goal that waits on failing lists sends no reads of its own.
        None if !lists.backing_off(directory) => {
            let (listed, live) =
                tokio::join!(lists.wait_listed(directory, goal, session_id), read_live(ctx, session_id, directory));
            (listed, Some(live))
        }
        None => (lists.wait_listed(directory, goal, session_id).await, None),
    }
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
            None => read_live(ctx, session_id, tick.directory).await,
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
                    return Err(tick.settle_blocked(REASON_MESSAGES_UNAVAILABLE, CauseCode::MessagesUnavailable).await);
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
