//! Act: the one executor of a tick's effects. It alone writes the goal (through the guarded
//! writer, each write under the guard its decision names), posts to a session (continuations,
//! re-posts, check claims and runs, the reviewer), calls the small model, notifies the host and
//! appends trail lines; one attempt per effect, its result returned as an [`Observation`] (what
//! follows a failed attempt is the decision's). Its memory lives here:
//! the watches of goal writes (`echo_watch.rs`), the ids it posted (`own_posts.rs`), the dispatch
//! claims of the process.

pub mod echo;
pub mod echo_watch;
pub mod operator;
pub mod own_posts;
mod runs;

use std::sync::Arc;

use serde_json::{Map, Value};
use tracing::{info, warn};

use crate::error::HttpError;
use crate::goal::act::echo::{echo_bound, EchoTarget, Heard, ReservationEcho, ECHO_BOUND};
use crate::goal::act::echo_watch::{WatchGuard, WriteEchoes};
use crate::goal::act::own_posts::OwnPosts;
use crate::goal::decide::change::{ApplyWith, Change};
use crate::goal::decide::dispatch_rules::DispatchStep;
use crate::goal::decide::review_rules::ReviewerTurn;
use crate::goal::decide::seen::{Held, Seen, Written};
use crate::goal::decide::{Effect, Guard, Line, Observation, Slot, Write};
use crate::goal::gather::Reader;
use crate::io::locks::{DispatchClaim, DispatchClaims};
use crate::io::objectives::{copy_objective, ObjectiveCopy};
use crate::io::opencode::OpenCodeClient;
use crate::io::prompt_outcome::DispatchOutcome;
use crate::io::spawn_detached;
use crate::io::writer::{try_write_goal, BaseRead, GoalGuard, GoalUpdate, Marking};
use crate::record::{continuation_for_of, Goal, GoalStatus};
use crate::sched::Generation;

/// The executor's memory, one per runtime.
#[derive(Default)]
pub struct Memory {
    /// Goal events seen while a write is watched for its echo (lost-update repair).
    pub echoes: Arc<WriteEchoes>,
    /// The message ids this runtime posted lately (their events are no user activity).
    pub own_posts: OwnPosts,
    /// The dispatch claims of the runtime's context (shared by its runtimes).
    pub claims: DispatchClaims,
}

/// The I/O state of one tick: its generation, the first read (a write may build on it) and the
/// watch of goal events started before it, the dispatch claim, and a reservation's echo that had
/// not come.
pub struct TickIo {
    /// Invalidated by any user action since the tick began.
    pub generation: Generation,
    /// The first read of the session (`gather::FirstRead`): a reservation may build on it.
    pub base: Option<crate::goal::gather::FirstRead>,
    /// The watch of the session's goal events since just before the first read.
    pub watch: Option<WatchGuard>,
    /// This process's dispatch claim of the session, held until the tick ends.
    pub dispatch_claim: Option<DispatchClaim>,
    /// The reservation's watch, when its echo had not come by its bound.
    pub late: Option<ReservationEcho>,
}

/// What the executor acts with: what the gatherer reads with, this runtime's lease holder id
/// and the executor's memory.
pub struct Executor<'a> {
    /// OpenCode, the host's services, the settings, the scheduler's facts, the owner lists.
    pub read: Reader<'a>,
    /// This runtime's lease holder id.
    pub holder: &'a str,
    /// The executor's memory.
    pub memory: &'a Memory,
}
impl Executor<'_> {
    /// Carries `effect` out, once, and says what it did.
    pub async fn run(&self, seen: &Seen, io: &mut TickIo, effect: Effect) -> Observation {
        match effect {
            Effect::Write(write) => Observation::Wrote(write.slot, self.write(seen, &write).await),
            Effect::Settle { write, trail } => self.settle(seen, write, trail).await,
            Effect::Announce { goal, notification } => self.announce(seen, &goal, notification),
            Effect::Watched(write) => Observation::Held(write.slot, self.watched(seen, io, &write).await),
            Effect::Trail(line) => {
                let slot = line.slot;
                self.trail(seen, line.record, line.detached).await;
                Observation::Trailed(slot)
            }
            Effect::Audit(query) => {
                let answer = self.audit(query).await;
                Observation::Audited(answer, self.now())
            }
            Effect::Claim { claim_id, run, target } => {
                Observation::Claimed(run, self.claim(seen, &claim_id, run.as_str(), &target).await)
            }
            Effect::RunCheck { index, check, message_id, target } => {
                Observation::CheckRan(self.run_check(seen, index, &check, &message_id, &target).await)
            }
            Effect::ConcludeCheck { run, line, total } => {
                self.trail(seen, line, false).await;
                operator::check_finished(&seen.session_id, run.index + 1, total, run.result.as_str());
                Observation::CheckConcluded(run)
            }
            Effect::OpenReviewer { title } => Observation::ReviewerOpened(self.open_reviewer(seen, &title).await),
            Effect::AskReviewer { session, body } => {
                let turn = self.reviewer_turn(&seen.directory, &session, io, &body).await;
                if let ReviewerTurn::TimedOut | ReviewerTurn::Refused(_) = &turn {
                    info!(target: "session_goal", session = %seen.session_id, reviewer = %session, ?turn, "the reviewer gave no readable answer");
                }
                Observation::ReviewerAsked(turn)
            }
            Effect::RecordReview { line, verdict, last } => {
                self.trail(seen, line, false).await;
                operator::review_finished(&seen.session_id, verdict);
                Observation::ReviewRecorded(last)
            }
            other => self.run_small(seen, io, other).await,
        }
    }

    /// The effects that take a line or two each.
    async fn run_small(&self, seen: &Seen, io: &mut TickIo, effect: Effect) -> Observation {
        let session_id = seen.session_id.as_str();
        match effect {
            Effect::Repost { message_id, body } => {
                self.repost(seen, &message_id, &body).await;
                Observation::Reposted
            }
            Effect::Post { body, message_id } => {
                Observation::Dispatched(DispatchStep::Posted(self.post(seen, &body, message_id.as_deref()).await))
            }
            Effect::AnnounceContinuation => {
                self.announce_continuation(seen, io);
                Observation::ContinuationAnnounced
            }
            Effect::CopyObjective { source } => {
                match copy_objective(self.read.services.data_dir.root(), &source, session_id).await {
                    ObjectiveCopy::Copied => {
                        info!(target: "session_goal", session = %session_id, "copied goal's objective file copied")
                    }
                    ObjectiveCopy::AlreadyThere => {}
                    ObjectiveCopy::SourceMissing | ObjectiveCopy::WriteFailed => {
                        warn!(target: "session_goal", session = %session_id, "copied goal's objective file could not be copied")
                    }
                }
                Observation::ObjectiveCopied
            }
            Effect::RememberCarrier => {
                if let (Some(goal), Some(session)) = (seen.goal(), seen.session()) {
                    self.read.owners.holders().saw(&goal.id, session_id, session.created);
                }
                Observation::CarrierRemembered
            }
            Effect::InputsSettled(sessions) => {
                for session in &sessions {
                    self.read.facts.inputs_settled(session);
                }
                Observation::InputsSettled
            }
            Effect::ClaimDispatch => {
                io.dispatch_claim = self.memory.claims.claim(session_id);
                Observation::DispatchClaimed(io.dispatch_claim.is_some())
            }
            Effect::Pause { wait, before } => {
                tokio::time::sleep(wait).await;
                Observation::Waited(before)
            }
            Effect::HearLate => {
                let repaired = match io.late.take() {
                    Some(late) => matches!(late.hear(&self.target(seen), ECHO_BOUND).await, Heard::Repaired),
                    None => false,
                };
                Observation::HeardLate(repaired)
            }
            _ => unreachable!("handled by run"),
        }
    }

    fn now(&self) -> f64 {
        self.read.client.clock().now_ms()
    }

    fn target(&self, seen: &Seen) -> EchoTarget {
        EchoTarget::new(self.read.client, &seen.session_id, &seen.directory)
    }

    /// The writer's guard for a decision's [`Guard`] (`None`: no goal to guard on).
    fn guard(&self, seen: &Seen, guard: &Guard) -> Option<GoalGuard> {
        let exact = |goal: &Goal| GoalGuard::Exact {
            revision: goal.revision(),
            status: GoalStatus::Active,
            holder: self.holder.to_string(),
        };
        Some(match guard {
            Guard::Tick => exact(seen.goal()?),
            Guard::Reserve => {
                let goal = seen.goal()?;
                GoalGuard::Reserve {
                    revision: goal.revision(),
                    holder: self.holder.to_string(),
                    turns_used: goal.turns_used,
                    continuation_for: continuation_for_of(goal).map(str::to_string),
                }
            }
            Guard::Reserved => match seen.held(Slot::Reserved) {
                Some(Held::Written { goal, .. }) => exact(goal),
                _ => return None,
            },
            Guard::SameId => GoalGuard::SameId(seen.goal()?.id.clone()),
        })
    }

    fn apply_with<'s>(&self, seen: &'s Seen) -> ApplyWith<'s> {
        ApplyWith {
            session_id: &seen.session_id,
            holder: &seen.holder,
            now: self.now(),
            lease_ms: self.read.config.lease.as_millis() as f64,
        }
    }

    /// A guarded write of the goal: read fresh, the change applied (and decided again on the
    /// fresh goal), written back under the guard.
    async fn write(&self, seen: &Seen, write: &Write) -> Written {
        let Some(guard) = self.guard(seen, &write.guard) else { return Written::Stale };
        let marking = if write.keep_owner { Marking::KeepOwner } else { Marking::MarkUnowned };
        let at = (self.read.client, seen.session_id.as_str(), seen.directory.as_str());
        write_change(at, &guard, marking, &write.change, &self.apply_with(seen), write.slot.as_str()).await
    }

    /// A terminal write: its trail line first, then the write.
    async fn settle(&self, seen: &Seen, write: Write, trail: Option<Line>) -> Observation {
        if let Some(line) = trail {
            self.trail(seen, line.record, line.detached).await;
        }
        Observation::Wrote(write.slot, self.write(seen, &write).await)
    }

    /// A settled goal announced: the console line, its carriers forgotten, the notification.
    fn announce(&self, seen: &Seen, goal: &Goal, notification: Option<Value>) -> Observation {
        operator::settled(&seen.session_id, goal);
        self.read.owners.holders().forget(&goal.id);
        if let Some(notification) = notification {
            self.read.services.notifier.notify(notification);
        }
        Observation::Announced
    }

    /// A write watched for its echo: the reservation (built on the tick's first read when that
    /// is still usable, watched since just before it) or a round's lease.
    async fn watched(&self, seen: &Seen, io: &mut TickIo, write: &Write) -> Held {
        let Some(guard) = self.guard(seen, &write.guard) else { return Held::Stale };
        let target = self.target(seen);
        let first = io.base.take().map(|(session, epoch, answered)| BaseRead { session, epoch, answered });
        let (base, watch) = match (write.slot, first, io.watch.take()) {
            (Slot::Reserved, Some(base), Some(watch)) if base.usable() => (Some(base), watch),
            _ => (None, self.memory.echoes.watch(&seen.session_id)),
        };
        let with = self.apply_with(seen);
        let written = echo::write_watched(&target, watch, &guard, base.as_ref(), |g| {
            let _ = write.change.apply(g, &with);
        })
        .await;
        let landed = written.as_ref().map(|echo| echo.as_ref().map(|echo| &echo.reserved));
        let (goal, echo) = match (said(&seen.session_id, write.slot.as_str(), landed), written) {
            (Written::Goal(goal), Ok(Some(echo))) => (goal, echo),
            (Written::Failed, _) => return Held::Failed,
            _ => return Held::Stale,
        };
        match echo.hear(&target, echo_bound(self.read.config.idle_quiet)).await {
            Heard::Repaired => Held::Repaired,
            Heard::Settled => Held::Written { goal, contested: false, late: false },
            Heard::Contested => Held::Written { goal, contested: true, late: false },
            Heard::NotYet => {
                // Looked for again when the tick ends without posting (the reservation's only).
                if write.slot == Slot::Reserved {
                    io.late = Some(echo);
                }
                Held::Written { goal, contested: false, late: write.slot == Slot::Reserved }
            }
        }
    }

    /// Appends a trail line, and waits for it unless it goes beside what follows.
    async fn trail(&self, seen: &Seen, record: Map<String, Value>, detached: bool) {
        let (data_dir, max) = (self.read.services.data_dir.clone(), self.read.config.evidence.history_max_records);
        let record = Value::Object(record);
        if detached {
            let session = seen.session_id.clone();
            spawn_detached(Box::pin(async move { data_dir.append_trail(&session, &record, max).await }));
        } else {
            data_dir.append_trail(&seen.session_id, &record, max).await;
        }
    }

    /// Posts the stranded message again under its own ids (recorded as ours first).
    async fn repost(&self, seen: &Seen, message_id: &str, body: &Value) {
        let (session_id, directory) = (seen.session_id.as_str(), seen.directory.as_str());
        self.memory.own_posts.record(session_id, message_id);
        match self.read.client.prompt_async(session_id, directory, body).await {
            DispatchOutcome::Sent => {
                info!(target: "session_goal", session = session_id, "unanswered message posted again under its own ids")
            }
            DispatchOutcome::NotAdmitted(code) => {
                warn!(target: "session_goal", session = session_id, code, "re-post of the unanswered message not admitted")
            }
            DispatchOutcome::Ambiguous(why) => {
                warn!(target: "session_goal", session = session_id, %why, "re-post of the unanswered message: outcome unknown")
            }
        }
    }
}

/// The event-path pause: an abort landed for this session. Pauses an active goal unless the user
/// resumed it after that abort. Whether it paused it.
pub async fn pause_after_abort(client: &OpenCodeClient, session_id: &str, directory: &str, aborted_at: f64) -> bool {
    let with = ApplyWith { session_id, holder: "", now: client.clock().now_ms(), lease_ms: 0.0 };
    let change = Change::PauseAfterAbort { aborted_at };
    let guard = GoalGuard::AnyWithStatus(GoalStatus::Active);
    let written =
        write_change((client, session_id, directory), &guard, Marking::MarkUnowned, &change, &with, "abort-pause");
    matches!(written.await, Written::Goal(goal) if goal.status == GoalStatus::Paused)
}

/// The one guarded write of a [`Change`] (decided again on the fresh goal) to the session `at`
/// names, said in the log under `label`.
async fn write_change(
    at: (&OpenCodeClient, &str, &str),
    guard: &GoalGuard,
    marking: Marking,
    change: &Change,
    with: &ApplyWith<'_>,
    label: &str,
) -> Written {
    let (client, session_id, directory) = at;
    let result = try_write_goal(client, session_id, directory, guard, marking, |g| change.apply(g, with)).await;
    let after = result.as_ref().map(|update| match update {
        GoalUpdate::Written { after, .. } => Some(after),
        GoalUpdate::Stale | GoalUpdate::Declined(_) => None,
    });
    said(session_id, label, after)
}

/// How a goal write ended, said in the log under `label` (`Ok(None)`: the goal changed meanwhile
/// or the change declined, and nothing was written).
fn said(session_id: &str, label: &str, result: Result<Option<&Goal>, &HttpError>) -> Written {
    match result {
        Ok(Some(after)) => {
            info!(target: "session_goal", session = session_id, what = label, status = after.status.as_str(), "goal written");
            Written::Goal(Box::new(after.clone()))
        }
        Ok(None) => {
            info!(target: "session_goal", session = session_id, what = label, "goal changed meanwhile; write dropped");
            Written::Stale
        }
        Err(error) => {
            warn!(target: "session_goal", session = session_id, what = label, %error, "goal write failed");
            Written::Failed
        }
    }
}
