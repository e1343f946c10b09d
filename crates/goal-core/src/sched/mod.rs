//! The per-session scheduler of one runtime. Its task (`actor.rs`) alone holds each session's
//! tick state: armed timers, running ticks, the single pending follow-up, retry attempts, the
//! generation counter, and what events showed of the session (`facts.rs`). The rest of the
//! runtime sends it commands through a [`Scheduler`] and reads what it publishes
//! (`snapshot.rs`), so there are no lost wake-ups and never two ticks of one session at once.
//! Every tick runs under a watchdog (`watchdog.rs`).
//!
//! It is not the only keeper of per-session state. Beside it, each runtime keeps the watches of
//! its goal writes in flight and the ids it posted (the executor's memory,
//! `goal/act/echo_watch.rs` and `goal/act/own_posts.rs`), which session first carried each goal
//! id and the owner lists per directory (the gatherer's, `goal/gather/holders.rs` and
//! `goal/gather/owners.rs`), each behind its own lock and fed by events or ticks directly; what
//! every runtime of a context shares (metadata write slots, dispatch claims, the event intake)
//! lives in `io/shared.rs`; and the goal itself lives in OpenCode's session
//! metadata. `docs/reliability.md` lists everything remembered from events and what clears it.

mod actor;
mod command;
pub mod facts;
pub mod job;
pub mod outcome;
pub mod silence;
pub mod snapshot;
pub mod stage_watch;
mod tick_queue;
pub mod watchdog;

pub use command::{ArmMode, GoalSighting};
pub use job::{Generation, Job, TickFuture, TickStart};
pub use outcome::TickOutcome;
pub use snapshot::{SchedulerSnapshot, SessionSnapshot, Stats};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tracing::Instrument;

use crate::sched::actor::{Actor, ActorParts};
use crate::sched::command::Command;
use crate::sched::facts::{Seen, SessionFacts, SessionFactsView};
use crate::sched::snapshot::Published;
use crate::time::clock::Clock;

/// Handle to the actor.
#[derive(Clone)]
pub struct Scheduler {
    tx: mpsc::UnboundedSender<Command>,
    published: Published,
    facts: SessionFactsView,
    /// Goal sightings sent and not yet handled by the actor.
    sightings_in_flight: Arc<AtomicUsize>,
}

impl Scheduler {
    /// Starts the actor on the given runtime, on the system clock.
    pub fn start(job: Arc<dyn Job>, runtime: &tokio::runtime::Handle) -> Scheduler {
        Self::start_with(job, runtime, SessionFactsView::default(), Clock::system())
    }

    /// Starts the actor, publishing what it knows of each session into `facts` (a job built
    /// before the scheduler reads it there), reading the time from `clock`.
    pub fn start_with(
        job: Arc<dyn Job>,
        runtime: &tokio::runtime::Handle,
        facts: SessionFactsView,
        clock: Clock,
    ) -> Scheduler {
        let (tx, rx) = mpsc::unbounded_channel();
        let published = Published::default();
        let sightings_in_flight = Arc::new(AtomicUsize::new(0));
        let actor = Actor::new(ActorParts {
            job,
            tx: tx.downgrade(),
            published: published.clone(),
            facts: SessionFacts::publishing(facts.clone()),
            sightings_in_flight: sightings_in_flight.clone(),
            runtime: runtime.clone(),
            clock,
        });
        // The actor and everything it spawns run in the span current here: the runtime's log
        // identity (tokio tasks do not inherit spans by themselves).
        runtime.spawn(actor.run(rx).in_current_span());
        Scheduler { tx, published, facts, sightings_in_flight }
    }

    /// Records what was seen of a session's goal: a user change invalidates work in flight, then
    /// the sighting's wake-ups are armed. An event that repeats the published goal, asks for no
    /// wake-up, and finds no other sighting on its way is not sent at all: the common repeat of
    /// `session.updated` then costs a read of the published facts, not a wake-up of the task.
    pub fn goal_seen(&self, sighting: GoalSighting) {
        if let (None, Seen::Event(Some((revision, status)))) = (&sighting.arm, &sighting.seen) {
            if self.sightings_in_flight.load(Ordering::SeqCst) == 0
                && self.facts.would_not_change(&sighting.session, revision, *status)
            {
                return;
            }
        }
        self.sightings_in_flight.fetch_add(1, Ordering::SeqCst);
        self.send(Command::Goal(Box::new(sighting)));
    }

    /// What the sweep read of a session with an active goal: the goal (`sighting`, which arms
    /// nothing itself) and whether OpenCode shows the session working. That status replaces
    /// what events said: an idle session remembered busy (its idle event was lost) is no longer
    /// busy, and an idle session with no timer and no tick is armed after `arm`.
    pub fn swept(&self, sighting: GoalSighting, working: bool, arm: Duration) {
        self.sightings_in_flight.fetch_add(1, Ordering::SeqCst);
        self.send(Command::Swept { sighting: Box::new(sighting), working, arm });
    }

    /// A permission or question request opened (`pending`) or was answered; answering the last
    /// open one arms a look after `rearm`.
    pub fn user_input(&self, session: &str, directory: &str, request_id: &str, pending: bool, rearm: Duration) {
        self.send(Command::UserInput {
            session: session.into(),
            directory: directory.into(),
            request_id: request_id.into(),
            pending,
            rearm,
        });
    }

    /// What the actor last published about each session.
    pub fn facts(&self) -> &SessionFactsView {
        &self.facts
    }

    fn send(&self, command: Command) {
        // A closed channel means the runtime stopped: dropping the command is right.
        let _ = self.tx.send(command);
    }

    /// Arms (or re-arms) a session's timer.
    pub fn arm(&self, session: &str, directory: &str, delay: Duration, mode: ArmMode) {
        self.send(Command::Arm { session: session.into(), directory: directory.into(), delay, mode });
    }

    /// A function that arms a session's tick at once (keeping an earlier timer), holding the
    /// actor only weakly: for what wakes goals from outside the tick (the owner lists), which
    /// the actor's own job holds in turn.
    pub fn weak_waker(&self) -> impl Fn(&str, &str) + Send + Sync + 'static {
        let tx = self.tx.downgrade();
        move |session: &str, directory: &str| {
            if let Some(tx) = tx.upgrade() {
                let _ = tx.send(Command::Arm {
                    session: session.into(),
                    directory: directory.into(),
                    delay: Duration::ZERO,
                    mode: ArmMode::Earliest,
                });
            }
        }
    }

    /// A function that clears what events said about a session's open permission and question
    /// requests (a tick read OpenCode's lists and found none: the answer's event was lost),
    /// holding the actor only weakly. It arms nothing: the tick that found it goes on.
    pub fn weak_input_settler(&self) -> impl Fn(&str) + Send + Sync + 'static {
        let tx = self.tx.downgrade();
        move |session: &str| {
            if let Some(tx) = tx.upgrade() {
                let _ = tx.send(Command::InputSettled { session: session.into() });
            }
        }
    }

    /// Clears a pending timer and follow-up (the session went busy).
    pub fn clear(&self, session: &str) {
        self.send(Command::Clear { session: session.into() });
    }

    /// The session was deleted: its wake-up and any tick in flight are dropped, and nothing of
    /// it is kept.
    pub fn forget(&self, session: &str) {
        self.send(Command::Forget { session: session.into() });
    }

    /// The session went busy: clears like [`Scheduler::clear`] and remembers it, so that a
    /// kickoff ([`ArmMode::IfNothingPending`]) does not arm until [`Scheduler::idle`] or the
    /// sweep reads the session idle.
    pub fn busy(&self, session: &str, directory: &str) {
        self.send(Command::Busy { session: session.into(), directory: directory.into() });
    }

    /// The remembered-busy sessions with an active goal that are due a status read now, by
    /// directory (`sched/silence.rs`; `stream_down`: the host's payloads stopped). Empty once the
    /// scheduler has stopped.
    pub async fn recheck(&self, stream_down: bool) -> Vec<(String, Vec<String>)> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::Recheck { stream_down, reply });
        answer.await.unwrap_or_default()
    }

    /// What a status read of the silence watch showed of a remembered-busy session (see
    /// [`Scheduler::recheck`]): an idle one with no wake-up pending is looked at after `arm`.
    pub fn status_read(&self, session: &str, working: bool, arm: Duration) {
        self.send(Command::StatusRead { session: session.into(), working, arm });
    }

    /// The session went idle: forgets that it was busy and arms the quiet window (replacing any
    /// pending kickoff).
    pub fn idle(&self, session: &str, directory: &str, quiet: Duration) {
        self.send(Command::Arm {
            session: session.into(),
            directory: directory.into(),
            delay: quiet,
            mode: ArmMode::Idle,
        });
    }

    /// A user message created at `at_ms`: clears a timer armed before it and invalidates a tick
    /// started before it.
    pub fn user_activity(&self, session: &str, at_ms: f64) {
        self.send(Command::UserActivity { session: session.into(), at_ms });
    }

    /// Stops: clears timers, invalidates ticks, waits for them (bounded), then ends the actor.
    pub async fn stop(&self) {
        let (done, wait) = oneshot::channel();
        if self.tx.send(Command::Stop { done }).is_ok() {
            let _ = wait.await;
        }
    }

    /// Published counters.
    pub fn stats(&self) -> &Stats {
        &self.published.stats
    }

    /// One session's published view (`None`: no timer, tick or follow-up).
    pub fn session(&self, session: &str) -> Option<SessionSnapshot> {
        self.published.session(session)
    }

    /// The tracked sessions and the counters.
    pub fn snapshot(&self) -> SchedulerSnapshot {
        self.published.snapshot()
    }
}

#[cfg(test)]
mod tests;
