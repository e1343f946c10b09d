//! The scheduler's task: the one owner of each session's tick state (its timer, its running
//! tick, the single pending follow-up, retry attempts, the generation counter, and what events
//! showed of it). Every change ends by publishing the session's view (`sched/snapshot.rs`), so
//! what the host and the sweep read is never older than the last command.
//!
//! What it learns from events is never trusted for ever: a session remembered busy is re-read
//! by the silence watch (`sched/silence.rs`: [`Command::Recheck`], then [`Command::StatusRead`])
//! and by the sweep ([`Command::Swept`]); the server's status is the truth. A tick that outlives
//! its stages' bounds is cancelled by the watchdog and looked at again with backoff.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, OwnedSemaphorePermit};
use tokio::task::{JoinHandle, JoinSet};
use tracing::{error, warn, Instrument};

use crate::sched::command::{ArmMode, Command, GoalSighting};
use crate::sched::facts::SessionFacts;
use crate::sched::job::Job;
use crate::sched::job::{Generation, TickStart};
use crate::sched::outcome::TickOutcome;
use crate::sched::silence::{self, BusyMark};
use crate::sched::snapshot::{Published, SessionSnapshot};
use crate::sched::stage_watch::StageWatch;
use crate::sched::tick_queue::TickQueue;
use crate::sched::watchdog::{supervise, Supervised};
use crate::time::backoff;
use crate::time::clock::Clock;

struct Armed {
    id: u64,
    due: tokio::time::Instant,
    armed_at_ms: f64,
    handle: JoinHandle<()>,
}

struct Entry {
    directory: String,
    timer: Option<Armed>,
    /// When the running tick started (ms on the host's clock).
    ticking: Option<f64>,
    /// The generation the running tick captured.
    ticking_generation: u64,
    follow_up: Option<Duration>,
    attempt: u32,
    generation: Arc<AtomicU64>,
}

/// How far ahead of its due time a wake-up's timer is set (see `arm`). A tick never posts
/// inside the quiet window whatever the timer does: the tick checks the window from data.
pub(super) const TIMER_LEAD: Duration = Duration::from_millis(1);

/// How long `stop()` lets running ticks finish before cancelling them.
const STOP_GRACE: Duration = Duration::from_millis(1500);

/// Quiet windows after a continuation was sent before the session is looked at again when no
/// busy came (a stranded message: `goal/decide/planning.rs`).
const SENT_WATCH_QUIETS: u32 = 2;

/// The actor's state; see the module comment.
pub struct Actor {
    job: Arc<dyn Job>,
    queue: TickQueue,
    tx: mpsc::WeakUnboundedSender<Command>,
    entries: HashMap<String, Entry>,
    next_timer: u64,
    published: Published,
    ticks: JoinSet<()>,
    /// Sessions last seen busy (a busy event, a tick, the sweep or the silence watch), until an
    /// idle event, or a status read showing them idle.
    busy: HashMap<String, BusyMark>,
    /// What events showed of each session (kept across `stop`, like the last seen goal).
    facts: SessionFacts,
    sightings_in_flight: Arc<AtomicUsize>,
    stopped: bool,
    runtime: tokio::runtime::Handle,
    clock: Clock,
}

/// What an actor is built from (see `Scheduler::start_with`).
pub struct ActorParts {
    /// The job its timers run.
    pub job: Arc<dyn Job>,
    /// Where it receives commands from (held weakly by its timers and ticks).
    pub tx: mpsc::WeakUnboundedSender<Command>,
    /// What it publishes.
    pub published: Published,
    /// What events showed of each session, published for ticks and the host.
    pub facts: SessionFacts,
    /// Sightings sent and not yet handled.
    pub sightings_in_flight: Arc<AtomicUsize>,
    /// The runtime its timers and ticks run on.
    pub runtime: tokio::runtime::Handle,
    /// The host's clock.
    pub clock: Clock,
}

impl Actor {
    /// A new actor with nothing tracked.
    pub fn new(parts: ActorParts) -> Self {
        let ActorParts { job, tx, published, facts, sightings_in_flight, runtime, clock } = parts;
        Self {
            queue: TickQueue::new(job.max_concurrent()),
            job,
            tx,
            entries: HashMap::new(),
            next_timer: 0,
            published,
            ticks: JoinSet::new(),
            busy: HashMap::new(),
            facts,
            sightings_in_flight,
            stopped: false,
            runtime,
            clock,
        }
    }

    /// Handles commands until `stop`.
    pub async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Command>) {
        while let Some(command) = rx.recv().await {
            if let Command::Stop { done } = command {
                self.stop().await;
                let _ = done.send(());
                // Late senders are never blocked; everything after this is ignored.
                rx.close();
                break;
            }
            if self.stopped {
                continue;
            }
            if let Some(session) = self.handle(command) {
                self.publish(&session);
            }
        }
    }

    /// Applies one command; returns the session whose view it may have changed.
    fn handle(&mut self, command: Command) -> Option<String> {
        match command {
            Command::Goal(sighting) => {
                let session = sighting.session.clone();
                self.goal_seen(*sighting);
                self.sightings_in_flight.fetch_sub(1, Ordering::SeqCst);
                Some(session)
            }
            Command::Swept { sighting, working, arm } => {
                let session = sighting.session.clone();
                self.swept(*sighting, working, arm);
                self.sightings_in_flight.fetch_sub(1, Ordering::SeqCst);
                Some(session)
            }
            Command::UserInput { session, directory, request_id, pending, rearm } => {
                if self.facts.user_input(&session, &request_id, pending) {
                    // Answered: look again once the session has been quiet.
                    self.arm(&session, &directory, rearm, ArmMode::Earliest);
                }
                Some(session)
            }
            Command::InputSettled { session } => {
                self.facts.user_input(&session, "", false);
                None
            }
            Command::Arm { session, directory, delay, mode } => {
                self.arm(&session, &directory, delay, mode);
                Some(session)
            }
            Command::Clear { session } => {
                self.clear(&session);
                Some(session)
            }
            Command::Forget { session } => {
                self.busy.remove(&session);
                self.facts.forget(&session);
                self.invalidate(&session);
                Some(session)
            }
            Command::Busy { session, directory } => {
                self.mark_busy(&session, &directory);
                self.clear(&session);
                Some(session)
            }
            Command::Recheck { stream_down, reply } => {
                let _ = reply.send(self.recheck(stream_down));
                None
            }
            Command::StatusRead { session, working, arm } => {
                self.status_read(&session, working, arm);
                Some(session)
            }
            Command::UserActivity { session, at_ms } => {
                self.user_activity(&session, at_ms);
                Some(session)
            }
            Command::Fire { session, timer } => {
                self.fire(&session, timer);
                Some(session)
            }
            Command::Finished { session, outcome, slot } => {
                // Free before `finished` starts the next waiting tick.
                drop(slot);
                self.finished(&session, outcome);
                Some(session)
            }
            Command::Stop { .. } => None,
        }
    }

    fn user_activity(&mut self, session: &str, at_ms: f64) {
        let Some(entry) = self.entries.get_mut(session) else { return };
        let mut dropped = false;
        if entry.timer.as_ref().is_some_and(|t| at_ms >= t.armed_at_ms) {
            cancel_timer(entry);
            dropped = true;
        }
        if entry.ticking.is_some_and(|started| at_ms >= started) {
            entry.generation.fetch_add(1, Ordering::SeqCst);
            entry.follow_up = None;
            dropped = true;
        }
        if dropped {
            // The user's message starts a turn, whose busy and idle bring the next look. Until
            // then the session counts as busy, so the silence watch re-reads it if they never
            // come (a turn that never starts, or events lost).
            let directory = entry.directory.clone();
            self.mark_busy(session, &directory);
        }
    }

    fn invalidate(&mut self, session: &str) {
        if let Some(entry) = self.entries.get_mut(session) {
            entry.generation.fetch_add(1, Ordering::SeqCst);
            cancel_timer(entry);
            entry.follow_up = None;
            entry.attempt = 0;
        }
    }

    fn goal_seen(&mut self, sighting: GoalSighting) {
        let GoalSighting { session, directory, seen, arm, arm_if_changed } = sighting;
        let changed = self.facts.see(&session, seen);
        if changed {
            self.invalidate(&session);
        }
        let wake = arm.or(if changed { arm_if_changed } else { None });
        if let Some((delay, mode)) = wake {
            self.arm(&session, &directory, delay, mode);
        }
    }

    /// The sweep's reading replaces what events said about busy: a session remembered busy whose
    /// idle never came is idle now, and one that has no timer and no tick is armed.
    fn swept(&mut self, sighting: GoalSighting, working: bool, arm: Duration) {
        let (session, directory) = (sighting.session.clone(), sighting.directory.clone());
        self.goal_seen(sighting);
        if working {
            self.mark_busy(&session, &directory);
            return;
        }
        let was_busy = self.busy.remove(&session).is_some();
        let pending = self.entries.get(&session).is_some_and(|e| e.timer.is_some() || e.ticking.is_some());
        if !pending {
            if was_busy {
                warn!(target: "session_goal", session, "the session went idle with no idle event; looking at it now");
            }
            self.arm(&session, &directory, arm, ArmMode::Earliest);
        }
    }

    /// Remembers the session busy as of now (OpenCode or an event just said so).
    fn mark_busy(&mut self, session: &str, directory: &str) {
        let confirmed_ms = self.clock.now_ms();
        let directory = match self.busy.get(session) {
            Some(mark) if directory.is_empty() => mark.directory.clone(),
            _ => directory.to_string(),
        };
        self.busy.insert(session.to_string(), BusyMark { directory, confirmed_ms });
    }

    /// The remembered-busy sessions with an active goal due a status read (`sched/silence.rs`),
    /// by directory; each counts as confirmed now, so a read that fails is not asked for again
    /// before the next interval.
    fn recheck(&mut self, stream_down: bool) -> Vec<(String, Vec<String>)> {
        let now = self.clock.now_ms();
        let view = self.facts.view();
        let due: Vec<(String, Vec<String>)> = silence::due(&self.busy, now, stream_down, |s| view.is_goal_active(s))
            .into_iter()
            .map(|(directory, sessions)| (directory.to_string(), sessions.into_iter().map(str::to_string).collect()))
            .collect();
        for session in due.iter().flat_map(|(_, sessions)| sessions) {
            if let Some(mark) = self.busy.get_mut(session) {
                mark.confirmed_ms = now;
            }
        }
        due
    }

    /// What a status read of the silence watch showed: still working, confirmed; idle, no
    /// longer busy, and looked at after `arm` when nothing else is pending (its idle event was
    /// lost).
    fn status_read(&mut self, session: &str, working: bool, arm: Duration) {
        let Some(mark) = self.busy.get_mut(session) else { return };
        if working {
            mark.confirmed_ms = self.clock.now_ms();
            return;
        }
        let directory = self.busy.remove(session).map(|m| m.directory).unwrap_or_default();
        let pending = self.entries.get(session).is_some_and(|e| e.timer.is_some() || e.ticking.is_some());
        if !pending {
            warn!(target: "session_goal", session, "the session went idle with no idle event; looking at it now");
            self.arm(session, &directory, arm, ArmMode::Earliest);
        }
    }

    fn entry(&mut self, session: &str, directory: &str) -> &mut Entry {
        let entry = self.entries.entry(session.to_string()).or_insert_with(|| Entry {
            directory: directory.to_string(),
            timer: None,
            ticking: None,
            ticking_generation: 0,
            follow_up: None,
            attempt: 0,
            generation: Arc::new(AtomicU64::new(0)),
        });
        if !directory.is_empty() {
            entry.directory = directory.to_string();
        }
        entry
    }

    fn clear(&mut self, session: &str) {
        if let Some(entry) = self.entries.get_mut(session) {
            cancel_timer(entry);
            entry.follow_up = None;
        }
    }

    fn arm(&mut self, session: &str, directory: &str, delay: Duration, mode: ArmMode) {
        if mode == ArmMode::Idle {
            self.busy.remove(session);
        } else if mode == ArmMode::IfNothingPending && self.busy.contains_key(session) {
            return;
        }
        self.next_timer += 1;
        let id = self.next_timer;
        let (tx, runtime, armed_at_ms) = (self.tx.clone(), self.runtime.clone(), self.clock.now_ms());
        let entry = self.entry(session, directory);
        if entry.ticking.is_some() {
            // A kickoff during a tick that nothing invalidated adds nothing: the tick reads the
            // goal itself and arms what comes next (our own writes' events look like kickoffs
            // once a turn was given back, and would cut the tick's backoff short).
            let invalidated = entry.generation.load(Ordering::SeqCst) != entry.ticking_generation;
            if (mode == ArmMode::IfNothingPending && !invalidated) || mode == ArmMode::IfIdleTimer {
                return;
            }
            // Exactly one follow-up, at the earliest delay asked for.
            entry.follow_up = Some(entry.follow_up.map_or(delay, |d| d.min(delay)));
            return;
        }
        let due = tokio::time::Instant::now() + delay;
        if mode == ArmMode::Earliest && entry.timer.as_ref().is_some_and(|t| t.due <= due) {
            return;
        }
        if matches!(mode, ArmMode::IfNothingPending | ArmMode::IfIdleTimer) && entry.timer.is_some() {
            return;
        }
        // Replace and Idle (and an earlier Earliest) replace whatever was pending.
        cancel_timer(entry);
        let key = session.to_string();
        let handle = runtime.spawn(async move {
            // tokio rounds a deadline up to its next millisecond tick and wakes within about
            // another: aiming one tick early centres the firing on `due`.
            tokio::time::sleep_until(due.checked_sub(TIMER_LEAD).unwrap_or(due)).await;
            if let Some(tx) = tx.upgrade() {
                let _ = tx.send(Command::Fire { session: key, timer: id });
            }
        });
        entry.timer = Some(Armed { id, due, armed_at_ms, handle });
    }

    fn fire(&mut self, session: &str, timer: u64) {
        let now_ms = self.clock.now_ms();
        let Some(entry) = self.entries.get_mut(session) else { return };
        if entry.timer.as_ref().map(|t| t.id) != Some(timer) {
            return;
        }
        entry.timer = None;
        if entry.ticking.is_some() {
            entry.follow_up = Some(entry.follow_up.unwrap_or(Duration::ZERO));
            return;
        }
        entry.ticking = Some(now_ms);
        entry.ticking_generation = entry.generation.load(Ordering::SeqCst);
        let start = TickStart {
            session_id: session.to_string(),
            directory: entry.directory.clone(),
            attempt: entry.attempt,
            generation: Generation::capture(&entry.generation),
            watch: StageWatch::start("waiting for a slot", Duration::ZERO),
        };
        self.published.stats.ticks.fetch_add(1, Ordering::Relaxed);
        self.queue.push(start);
        self.start_ready();
    }

    /// Starts the waiting ticks that have a slot, in firing order.
    fn start_ready(&mut self) {
        while let Some((slot, start)) = self.queue.ready() {
            let work = run_supervised(self.job.clone(), slot, self.published.clone(), start, self.tx.clone());
            self.ticks.spawn_on(work.in_current_span(), &self.runtime);
        }
    }

    fn finished(&mut self, session: &str, outcome: TickOutcome) {
        // Reap the tasks that ended (this one among them): the set holds only running ticks.
        while self.ticks.try_join_next().is_some() {}
        // The tick's slot came back with its report: the next waiting one takes it.
        self.start_ready();
        let quiet = self.job.quiet();
        let max_attempts = self.job.max_attempts();
        let Some(entry) = self.entries.get_mut(session) else { return };
        entry.ticking = None;
        let stats = &self.published.stats;
        match outcome {
            TickOutcome::Continued => stats.continuations.fetch_add(1, Ordering::Relaxed),
            TickOutcome::Settled => stats.settled.fetch_add(1, Ordering::Relaxed),
            _ => 0,
        };
        let mut next: Option<Duration> = None;
        match outcome {
            TickOutcome::Retry => {
                // Doubling from the quiet window, capped (`backoff`). The run after the last
                // allowed retry settles when it can; when it cannot (the server still fails), the
                // goal is never dropped and never polled faster: it keeps the capped delay, so a
                // route that answers again is asked within the cap.
                entry.attempt = entry.attempt.saturating_add(1);
                if entry.attempt == max_attempts.saturating_add(1) {
                    warn!(target: "session_goal", session, "read failures persist; looking again at the longest backoff");
                }
                next = Some(backoff::retry_delay(quiet, entry.attempt));
            }
            TickOutcome::RetryIn(wait) => {
                entry.attempt = entry.attempt.saturating_add(1);
                next = Some(wait);
            }
            TickOutcome::Rearm => {
                entry.attempt = 0;
                next = Some(quiet);
            }
            TickOutcome::BackOff(wait) => {
                entry.attempt = 0;
                next = Some(wait);
            }
            TickOutcome::Done | TickOutcome::Busy | TickOutcome::Continued | TickOutcome::Settled => entry.attempt = 0,
        }
        if let Some(follow) = entry.follow_up.take() {
            stats.follow_ups.fetch_add(1, Ordering::Relaxed);
            // A follow-up is a fresh wake-up, not a retry.
            if !matches!(outcome, TickOutcome::Retry | TickOutcome::RetryIn(_)) {
                entry.attempt = 0;
            }
            next = Some(next.map_or(follow, |n| n.min(follow)));
        }
        let directory = entry.directory.clone();
        if outcome == TickOutcome::Busy {
            self.mark_busy(session, &directory);
        }
        match next {
            Some(delay) => self.arm(session, &directory, delay, ArmMode::Replace),
            // After a continuation the turn's busy and idle bring the next tick. A turn that
            // never starts (OpenCode stored the message and was killed) brings neither: look
            // again after this many quiet windows unless the session went busy (which clears the
            // timer; the sweep looks again if its idle is lost).
            None if outcome == TickOutcome::Continued => {
                self.arm(session, &directory, quiet * SENT_WATCH_QUIETS, ArmMode::IfNothingPending)
            }
            None => {}
        }
    }

    async fn stop(&mut self) {
        self.stopped = true;
        self.queue.clear();
        for entry in self.entries.values_mut() {
            entry.generation.fetch_add(1, Ordering::SeqCst);
            cancel_timer(entry);
            entry.follow_up = None;
        }
        let ticks = &mut self.ticks;
        if tokio::time::timeout(STOP_GRACE, async { while ticks.join_next().await.is_some() {} }).await.is_err() {
            self.ticks.abort_all();
        }
        self.entries.clear();
        self.busy.clear();
        self.published.clear();
    }

    /// Publishes one session's view, and drops its entry once nothing is pending.
    fn publish(&mut self, session: &str) {
        let now = tokio::time::Instant::now();
        let view = match self.entries.get(session) {
            Some(entry) if entry.timer.is_some() || entry.ticking.is_some() || entry.follow_up.is_some() => {
                Some(SessionSnapshot {
                    session_id: session.to_string(),
                    directory: entry.directory.clone(),
                    due_in_ms: entry.timer.as_ref().map(|t| t.due.saturating_duration_since(now).as_millis() as u64),
                    ticking: entry.ticking.is_some(),
                    follow_up: entry.follow_up.is_some(),
                    attempt: entry.attempt,
                })
            }
            _ => None,
        };
        if view.is_none() {
            // Nothing pending: the entry can go (retry attempts live while their timer does).
            self.entries.remove(session);
        }
        self.published.set(session, view);
    }
}

/// One tick in its slot: runs the job as its own task (a panic is caught there) under the
/// watchdog, and reports the outcome to the actor with the slot.
async fn run_supervised(
    job: Arc<dyn Job>,
    slot: OwnedSemaphorePermit,
    published: Published,
    mut start: TickStart,
    tx: mpsc::WeakUnboundedSender<Command>,
) {
    // Its time starts with the slot (it waited in the queue before).
    let (stage, bound) = job.first_stage();
    start.watch = StageWatch::start(stage, bound);
    let (session, watch) = (start.session_id.clone(), start.watch.clone());
    let handle = tokio::spawn(job.run(start).in_current_span());
    let stats = &published.stats;
    let outcome = match supervise(handle, &watch).await {
        Supervised::Finished(outcome) => outcome,
        Supervised::Panicked => {
            stats.panics.fetch_add(1, Ordering::Relaxed);
            error!(target: "session_goal", session, "tick panicked; session state reset, looking again with backoff");
            TickOutcome::Retry
        }
        Supervised::TimedOut(stage) => {
            stats.ticks_timed_out.fetch_add(1, Ordering::Relaxed);
            warn!(target: "session_goal", session, stage, "tick outlived its stages' bounds and was cancelled; looking again with backoff");
            TickOutcome::Retry
        }
    };
    if let Some(tx) = tx.upgrade() {
        let _ = tx.send(Command::Finished { session, outcome, slot });
    }
}

fn cancel_timer(entry: &mut Entry) {
    if let Some(timer) = entry.timer.take() {
        timer.handle.abort();
    }
}
