//! The per-session scheduler of one runtime. It alone holds each session's tick state: armed
//! timers, running ticks, the single pending follow-up, retry attempts, the generation counter,
//! and what events showed of the session ([`crate::sched::facts`]). The rest of the runtime sends
//! it commands and reads what it publishes, so there are no lost wake-ups and never two ticks of
//! one session at once.
//!
//! It is not the only keeper of per-session state. Beside it, each runtime keeps the watches of
//! its goal writes in flight (`goal/delivery/echo_watch.rs`), which session first carried each goal id
//! (`goal/ownership/lineage.rs`) and the owner lists per directory (`goal/ownership/owner_scan.rs`), each behind its
//! own lock and fed by events or ticks directly; what every runtime of a context shares (metadata
//! write slots, dispatch claims, the event intake) lives in `io/shared.rs`; and the goal itself
//! lives in OpenCode's session metadata.

pub mod backoff;
pub mod facts;
pub mod job;

pub use job::{Generation, TickFuture, TickOutcome, TickStart};

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use tokio::sync::{mpsc, oneshot, Semaphore};
use tokio::task::JoinHandle;
use tracing::{error, warn, Instrument};

use crate::sched::facts::{Seen, SessionFacts, SessionFactsView};
use crate::time::clock::now_ms;

/// Most ticks of one runtime that run at once. A burst of wake-ups (thousands of sessions going
/// idle together, a reconnect scan) would otherwise start every tick at once: one connection
/// per read per session, OpenCode answering past the request timeout, and ticks giving up on
/// reads that would have succeeded. Beyond this many, fired ticks wait their turn (FIFO). A
/// waiting tick counts as in flight (follow-ups and invalidation work as for a running one).
pub const MAX_CONCURRENT_TICKS: usize = 32;

/// What a scheduler runs when a session's timer fires.
pub trait Job: Send + Sync + 'static {
    /// Runs one tick for a session.
    fn run(&self, start: TickStart) -> TickFuture;
    /// The quiet window used for re-arms and backoff.
    fn quiet(&self) -> Duration;
    /// Retries after the first run (the run after the last retry settles, or else the session
    /// waits a long pause for a fresh round).
    fn max_attempts(&self) -> u32;
    /// Ticks allowed to run at once (see [`MAX_CONCURRENT_TICKS`]).
    fn max_concurrent(&self) -> usize {
        MAX_CONCURRENT_TICKS
    }
}

/// How an arm request treats a timer already pending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArmMode {
    /// Replace it (idle re-arms the quiet window).
    Replace,
    /// Keep whichever fires first (a resume kickoff replaces a pending longer timer).
    Earliest,
    /// The quiet window after an idle: replaces any pending timer, and ends the session's
    /// known-busy state.
    Idle,
    /// Only when no timer is pending and the session is not known to be busy (a fresh-goal
    /// kickoff never replaces an idle timer, and never arms during a turn: the idle that ends
    /// the turn arms the quiet window instead).
    IfNothingPending,
}

/// A sighting of a session's goal, and what to arm because of it.
#[derive(Debug, Clone)]
pub struct GoalSighting {
    /// Session id.
    pub session: String,
    /// Its directory.
    pub directory: String,
    /// What was seen.
    pub seen: Seen,
    /// Armed in any case (a kickoff, a resume, a recovered goal).
    pub arm: Option<(Duration, ArmMode)>,
    /// Armed only when the sighting invalidated work in flight (an edit of an active goal:
    /// nothing else would bring a wake-up back).
    pub arm_if_changed: Option<(Duration, ArmMode)>,
}

enum Command {
    Goal(Box<GoalSighting>),
    UserInput { session: String, directory: String, request_id: String, pending: bool, rearm: Duration },
    Arm { session: String, directory: String, delay: Duration, mode: ArmMode },
    Clear { session: String },
    Forget { session: String },
    Busy { session: String },
    UserActivity { session: String, at_ms: f64 },
    Fire { session: String, timer: u64 },
    Finished { session: String, outcome: TickOutcome },
    Stop { done: oneshot::Sender<()> },
}

struct Armed {
    id: u64,
    due: tokio::time::Instant,
    armed_at_ms: f64,
    handle: JoinHandle<()>,
}

struct Entry {
    directory: String,
    timer: Option<Armed>,
    ticking: Option<f64>,
    follow_up: Option<Duration>,
    attempt: u32,
    generation: Arc<AtomicU64>,
}

/// Counters and gauges published for `snapshot()`.
#[derive(Debug, Default)]
pub struct Stats {
    /// Sessions with state.
    pub tracked: AtomicUsize,
    /// Timers armed.
    pub armed: AtomicUsize,
    /// Ticks running.
    pub in_flight: AtomicUsize,
    /// Ticks started.
    pub ticks: AtomicU64,
    /// Continuations sent.
    pub continuations: AtomicU64,
    /// Goals settled or paused by a tick.
    pub settled: AtomicU64,
    /// Follow-ups queued while a tick ran.
    pub follow_ups: AtomicU64,
    /// Ticks that panicked (caught; state reset).
    pub panics: AtomicU64,
}

/// A per-session view for `snapshot()`.
#[derive(Debug, Clone)]
pub struct SessionSnapshot {
    /// The OpenCode session this entry tracks.
    pub session_id: String,
    /// The project directory its requests are routed to (`?directory=`).
    pub directory: String,
    /// Milliseconds until the timer fires, when armed.
    pub due_in_ms: Option<u64>,
    /// A tick is running.
    pub ticking: bool,
    /// A follow-up is queued.
    pub follow_up: bool,
    /// Consecutive read-failure retries.
    pub attempt: u32,
}

/// What a scheduler reports of itself in its runtime's `snapshot()`; the counters count from
/// its start.
#[derive(Debug, Clone)]
pub struct SchedulerSnapshot {
    /// Sessions with an armed timer or a running tick.
    pub sessions: Vec<SessionSnapshot>,
    /// Timers armed.
    pub armed: usize,
    /// Ticks running (waiting for a slot included).
    pub in_flight: usize,
    /// Ticks started.
    pub ticks: u64,
    /// Follow-ups queued while a tick ran.
    pub follow_ups: u64,
    /// Ticks that panicked (caught; session state reset).
    pub panics: u64,
}

/// Handle to the actor.
#[derive(Clone)]
pub struct Scheduler {
    tx: mpsc::UnboundedSender<Command>,
    stats: Arc<Stats>,
    view: Arc<RwLock<HashMap<String, SessionSnapshot>>>,
    facts: SessionFactsView,
    /// Goal sightings sent and not yet handled by the actor.
    sightings_in_flight: Arc<AtomicUsize>,
}

impl Scheduler {
    /// Starts the actor on the given runtime.
    pub fn start(job: Arc<dyn Job>, runtime: &tokio::runtime::Handle) -> Scheduler {
        Self::start_publishing(job, runtime, SessionFactsView::default())
    }

    /// Starts the actor, publishing what it knows of each session into `facts` (a job built
    /// before the scheduler reads it there).
    pub fn start_publishing(job: Arc<dyn Job>, runtime: &tokio::runtime::Handle, facts: SessionFactsView) -> Scheduler {
        let (tx, rx) = mpsc::unbounded_channel();
        let stats = Arc::new(Stats::default());
        let view = Arc::new(RwLock::new(HashMap::new()));
        let slots = Arc::new(Semaphore::new(job.max_concurrent().max(1)));
        let sightings_in_flight = Arc::new(AtomicUsize::new(0));
        let actor = Actor {
            job,
            slots,
            tx: tx.downgrade(),
            entries: HashMap::new(),
            next_timer: 0,
            stats: stats.clone(),
            view: view.clone(),
            ticks: HashMap::new(),
            busy: std::collections::HashSet::new(),
            facts: SessionFacts::publishing(facts.clone()),
            sightings_in_flight: sightings_in_flight.clone(),
            stopped: false,
            runtime: runtime.clone(),
        };
        // The actor and everything it spawns run in the span current here: the runtime's log
        // identity (tokio tasks do not inherit spans by themselves).
        runtime.spawn(actor.run(rx).in_current_span());
        Scheduler { tx, stats, view, facts, sightings_in_flight }
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
    /// kickoff ([`ArmMode::IfNothingPending`]) does not arm until [`Scheduler::idle`].
    pub fn busy(&self, session: &str) {
        self.send(Command::Busy { session: session.into() });
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
        &self.stats
    }

    /// Published per-session view.
    pub fn sessions(&self) -> Vec<SessionSnapshot> {
        self.view.read().values().cloned().collect()
    }

    /// The tracked sessions and the counters.
    pub fn snapshot(&self) -> SchedulerSnapshot {
        let stats = &self.stats;
        SchedulerSnapshot {
            sessions: self.sessions(),
            armed: stats.armed.load(Ordering::Relaxed),
            in_flight: stats.in_flight.load(Ordering::Relaxed),
            ticks: stats.ticks.load(Ordering::Relaxed),
            follow_ups: stats.follow_ups.load(Ordering::Relaxed),
            panics: stats.panics.load(Ordering::Relaxed),
        }
    }

    /// Whether the session has a timer or tick.
    pub fn is_tracking(&self, session: &str) -> bool {
        self.view.read().contains_key(session)
    }
}

struct Actor {
    job: Arc<dyn Job>,
    slots: Arc<Semaphore>,
    tx: mpsc::WeakUnboundedSender<Command>,
    entries: HashMap<String, Entry>,
    next_timer: u64,
    stats: Arc<Stats>,
    view: Arc<RwLock<HashMap<String, SessionSnapshot>>>,
    ticks: HashMap<String, JoinHandle<()>>,
    /// Sessions last seen busy (a busy event without its idle yet).
    busy: std::collections::HashSet<String>,
    /// What events showed of each session (kept across `stop`, like the last seen goal).
    facts: SessionFacts,
    sightings_in_flight: Arc<AtomicUsize>,
    stopped: bool,
    runtime: tokio::runtime::Handle,
}

/// How far ahead of its due time a wake-up's timer is set (see `arm`). A tick never posts
/// inside the quiet window whatever the timer does: the tick checks the window from data.
const TIMER_LEAD: Duration = Duration::from_millis(1);

/// How long `stop()` lets running ticks finish before cancelling them.
const STOP_GRACE: Duration = Duration::from_millis(1500);
/// Quiet windows after a continuation was sent before the session is looked at again when no
/// busy came (a stranded message: `goal/delivery/strand.rs`).
const SENT_WATCH_QUIETS: u32 = 2;

impl Actor {
    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Command>) {
        while let Some(command) = rx.recv().await {
            match command {
                Command::Stop { done } => {
                    self.stop().await;
                    let _ = done.send(());
                    // Keep draining so late senders never block; ignore everything.
                    rx.close();
                    break;
                }
                other if self.stopped => drop(other),
                Command::Goal(sighting) => {
                    self.goal_seen(*sighting);
                    self.sightings_in_flight.fetch_sub(1, Ordering::SeqCst);
                }
                Command::UserInput { session, directory, request_id, pending, rearm } => {
                    if self.facts.user_input(&session, &request_id, pending) {
                        // Answered: look again once the session has been quiet.
                        self.arm(&session, &directory, rearm, ArmMode::Earliest);
                    }
                }
                Command::Arm { session, directory, delay, mode } => self.arm(&session, &directory, delay, mode),
                Command::Clear { session } => self.clear(&session),
                Command::Forget { session } => {
                    self.busy.remove(&session);
                    self.facts.forget(&session);
                    self.invalidate(&session);
                }
                Command::Busy { session } => {
                    self.busy.insert(session.clone());
                    self.clear(&session);
                }
                Command::UserActivity { session, at_ms } => {
                    if let Some(entry) = self.entries.get_mut(&session) {
                        if entry.timer.as_ref().is_some_and(|t| at_ms >= t.armed_at_ms) {
                            cancel_timer(entry);
                        }
                        if entry.ticking.is_some_and(|started| at_ms >= started) {
                            entry.generation.fetch_add(1, Ordering::SeqCst);
                            entry.follow_up = None;
                        }
                    }
                    self.publish(&session);
                }
                Command::Fire { session, timer } => self.fire(&session, timer),
                Command::Finished { session, outcome } => self.finished(&session, outcome),
            }
        }
    }

    fn invalidate(&mut self, session: &str) {
        if let Some(entry) = self.entries.get_mut(session) {
            entry.generation.fetch_add(1, Ordering::SeqCst);
            cancel_timer(entry);
            entry.follow_up = None;
            entry.attempt = 0;
        }
        self.publish(session);
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

    fn entry(&mut self, session: &str, directory: &str) -> &mut Entry {
        let entry = self.entries.entry(session.to_string()).or_insert_with(|| Entry {
            directory: directory.to_string(),
            timer: None,
            ticking: None,
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
        self.publish(session);
    }

    fn arm(&mut self, session: &str, directory: &str, delay: Duration, mode: ArmMode) {
        if mode == ArmMode::Idle {
            self.busy.remove(session);
        } else if mode == ArmMode::IfNothingPending && self.busy.contains(session) {
            return;
        }
        self.next_timer += 1;
        let id = self.next_timer;
        let tx = self.tx.clone();
        let runtime = self.runtime.clone();
        let entry = self.entry(session, directory);
        if entry.ticking.is_some() {
            // Exactly one follow-up, at the earliest delay asked for.
            entry.follow_up = Some(entry.follow_up.map_or(delay, |d| d.min(delay)));
            self.publish(session);
            return;
        }
        let due = tokio::time::Instant::now() + delay;
        if mode == ArmMode::Earliest && entry.timer.as_ref().is_some_and(|t| t.due <= due) {
            return;
        }
        if mode == ArmMode::IfNothingPending && entry.timer.is_some() {
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
        entry.timer = Some(Armed { id, due, armed_at_ms: now_ms(), handle });
        self.publish(session);
    }

    fn fire(&mut self, session: &str, timer: u64) {
        let Some(entry) = self.entries.get_mut(session) else { return };
        if entry.timer.as_ref().map(|t| t.id) != Some(timer) {
            return;
        }
        entry.timer = None;
        if entry.ticking.is_some() {
            entry.follow_up = Some(entry.follow_up.unwrap_or(Duration::ZERO));
            self.publish(session);
            return;
        }
        entry.ticking = Some(now_ms());
        let generation = Generation::capture(&entry.generation);
        let directory = entry.directory.clone();
        let attempt = entry.attempt;
        self.stats.ticks.fetch_add(1, Ordering::Relaxed);
        let job = self.job.clone();
        let tx = self.tx.clone();
        let key = session.to_string();
        let stats = self.stats.clone();
        let slots = self.slots.clone();
        let handle = self.runtime.spawn(
            async move {
                // The semaphore is never closed, so this only waits for a free slot. The tick's
                // future (tens of kB of state) is only built once it has one: thousands of waiting
                // ticks then cost a few hundred bytes each.
                let _slot = slots.acquire_owned().await;
                let work = job.run(TickStart { session_id: key.clone(), directory, attempt, generation });
                // A panic inside the tick must not take the actor down: run it as its own task and
                // turn a panic into an ordinary outcome.
                let outcome = match tokio::spawn(work.in_current_span()).await {
                    Ok(outcome) => outcome,
                    Err(join) => {
                        if join.is_panic() {
                            stats.panics.fetch_add(1, Ordering::Relaxed);
                            error!(target: "session_goal", session = %key, "tick panicked; session state reset");
                        }
                        TickOutcome::Done
                    }
                };
                if let Some(tx) = tx.upgrade() {
                    let _ = tx.send(Command::Finished { session: key, outcome });
                }
            }
            .in_current_span(),
        );
        self.ticks.insert(session.to_string(), handle);
        self.publish(session);
    }

    fn finished(&mut self, session: &str, outcome: TickOutcome) {
        self.ticks.remove(session);
        let quiet = self.job.quiet();
        let max_attempts = self.job.max_attempts();
        let Some(entry) = self.entries.get_mut(session) else { return };
        entry.ticking = None;
        match outcome {
            TickOutcome::Continued => self.stats.continuations.fetch_add(1, Ordering::Relaxed),
            TickOutcome::Settled => self.stats.settled.fetch_add(1, Ordering::Relaxed),
            _ => 0,
        };
        let mut next: Option<Duration> = None;
        // After a continuation the turn's busy and idle bring the next tick. A turn that never
        // starts (OpenCode stored the message and was killed) brings neither: look again after
        // this many quiet windows unless the session went busy (which clears the timer).
        let watch_sent = outcome == TickOutcome::Continued;
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
            TickOutcome::Rearm => {
                entry.attempt = 0;
                next = Some(quiet);
            }
            TickOutcome::BackOff(wait) => {
                entry.attempt = 0;
                next = Some(wait);
            }
            TickOutcome::Done | TickOutcome::Continued | TickOutcome::Settled => entry.attempt = 0,
        }
        if let Some(follow) = entry.follow_up.take() {
            self.stats.follow_ups.fetch_add(1, Ordering::Relaxed);
            // A follow-up is a fresh wake-up, not a retry.
            if outcome != TickOutcome::Retry {
                entry.attempt = 0;
            }
            next = Some(next.map_or(follow, |n| n.min(follow)));
        }
        let directory = entry.directory.clone();
        match next {
            Some(delay) => self.arm(session, &directory, delay, ArmMode::Replace),
            None if watch_sent => self.arm(session, &directory, quiet * SENT_WATCH_QUIETS, ArmMode::IfNothingPending),
            None => self.publish(session),
        }
    }

    async fn stop(&mut self) {
        self.stopped = true;
        for entry in self.entries.values_mut() {
            entry.generation.fetch_add(1, Ordering::SeqCst);
            cancel_timer(entry);
            entry.follow_up = None;
        }
        let handles: Vec<JoinHandle<()>> = self.ticks.drain().map(|(_, h)| h).collect();
        let aborts: Vec<_> = handles.iter().map(|h| h.abort_handle()).collect();
        let all = futures_join_all(handles);
        if tokio::time::timeout(STOP_GRACE, all).await.is_err() {
            for abort in aborts {
                abort.abort();
            }
        }
        self.entries.clear();
        self.busy.clear();
        self.view.write().clear();
        self.stats.tracked.store(0, Ordering::Relaxed);
        self.stats.armed.store(0, Ordering::Relaxed);
        self.stats.in_flight.store(0, Ordering::Relaxed);
    }

    /// Updates the published view of one session and prunes entries with nothing pending.
    fn publish(&mut self, session: &str) {
        let now = tokio::time::Instant::now();
        let keep = match self.entries.get(session) {
            Some(entry) => entry.timer.is_some() || entry.ticking.is_some() || entry.follow_up.is_some(),
            None => false,
        };
        let mut view = self.view.write();
        let before = view.get(session).map(|s| (s.due_in_ms.is_some(), s.ticking));
        let after = if keep {
            let entry = &self.entries[session];
            let snapshot = SessionSnapshot {
                session_id: session.to_string(),
                directory: entry.directory.clone(),
                due_in_ms: entry.timer.as_ref().map(|t| t.due.saturating_duration_since(now).as_millis() as u64),
                ticking: entry.ticking.is_some(),
                follow_up: entry.follow_up.is_some(),
                attempt: entry.attempt,
            };
            let flags = (snapshot.due_in_ms.is_some(), snapshot.ticking);
            view.insert(session.to_string(), snapshot);
            Some(flags)
        } else {
            view.remove(session);
            // Nothing pending: the entry can go (retry attempts live while their timer does).
            self.entries.remove(session);
            None
        };
        drop(view);
        // Incremental gauges: publishing is O(1) however many sessions are tracked.
        let adjust = |gauge: &AtomicUsize, was: bool, is: bool| match (was, is) {
            (false, true) => {
                gauge.fetch_add(1, Ordering::Relaxed);
            }
            (true, false) => {
                gauge.fetch_sub(1, Ordering::Relaxed);
            }
            _ => {}
        };
        adjust(&self.stats.tracked, before.is_some(), after.is_some());
        adjust(&self.stats.armed, before.is_some_and(|b| b.0), after.is_some_and(|a| a.0));
        adjust(&self.stats.in_flight, before.is_some_and(|b| b.1), after.is_some_and(|a| a.1));
    }
}

fn cancel_timer(entry: &mut Entry) {
    if let Some(timer) = entry.timer.take() {
        timer.handle.abort();
    }
}

async fn futures_join_all(handles: Vec<JoinHandle<()>>) {
    for handle in handles {
        let _ = handle.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;
    use std::sync::atomic::AtomicBool;

    /// A job that records when it ran and returns scripted outcomes; it can be held open.
    struct Recorder {
        runs: Mutex<Vec<(String, u32, tokio::time::Instant)>>,
        outcomes: Mutex<Vec<TickOutcome>>,
        hold: AtomicBool,
        release: tokio::sync::Notify,
        generations: Mutex<Vec<Generation>>,
    }

    impl Recorder {
        fn new(outcomes: Vec<TickOutcome>) -> Arc<Recorder> {
            Arc::new(Recorder {
                runs: Mutex::new(Vec::new()),
                outcomes: Mutex::new(outcomes),
                hold: AtomicBool::new(false),
                release: tokio::sync::Notify::new(),
                generations: Mutex::new(Vec::new()),
            })
        }
        fn count(&self) -> usize {
            self.runs.lock().len()
        }
    }

    struct Job2(Arc<Recorder>);

    impl Job for Job2 {
        fn run(&self, start: TickStart) -> TickFuture {
            let recorder = self.0.clone();
            Box::pin(async move {
                recorder.runs.lock().push((start.session_id, start.attempt, tokio::time::Instant::now()));
                recorder.generations.lock().push(start.generation);
                if recorder.hold.load(Ordering::SeqCst) {
                    recorder.release.notified().await;
                }
                let mut outcomes = recorder.outcomes.lock();
                if outcomes.is_empty() {
                    TickOutcome::Done
                } else {
                    outcomes.remove(0)
                }
            })
        }
        fn quiet(&self) -> Duration {
            Duration::from_millis(100)
        }
        fn max_attempts(&self) -> u32 {
            4
        }
    }

    fn start(recorder: &Arc<Recorder>) -> Scheduler {
        Scheduler::start(Arc::new(Job2(recorder.clone())), &tokio::runtime::Handle::current())
    }

    /// A scheduler whose job holds every run open, with one run of session `s` started.
    async fn holding_a_tick_of_s() -> (Arc<Recorder>, Scheduler) {
        let recorder = Recorder::new(vec![]);
        recorder.hold.store(true, Ordering::SeqCst);
        let scheduler = start(&recorder);
        scheduler.arm("s", "", Duration::from_millis(10), ArmMode::Replace);
        tokio::time::sleep(Duration::from_millis(20)).await;
        settle().await;
        (recorder, scheduler)
    }

    async fn settle() {
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn idle_rearm_replaces_and_busy_clears() {
        let recorder = Recorder::new(vec![]);
        let scheduler = start(&recorder);
        scheduler.arm("s", "/d", Duration::from_millis(100), ArmMode::Replace);
        tokio::time::sleep(Duration::from_millis(60)).await;
        scheduler.arm("s", "/d", Duration::from_millis(100), ArmMode::Replace);
        tokio::time::sleep(Duration::from_millis(60)).await;
        assert_eq!(recorder.count(), 0, "re-arm pushed the deadline out");
        tokio::time::sleep(Duration::from_millis(60)).await;
        settle().await;
        assert_eq!(recorder.count(), 1);
        scheduler.arm("s", "/d", Duration::from_millis(100), ArmMode::Replace);
        settle().await;
        scheduler.clear("s");
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(recorder.count(), 1, "busy cleared the timer");
    }

    #[tokio::test(start_paused = true)]
    async fn kickoff_modes() {
        let recorder = Recorder::new(vec![]);
        let scheduler = start(&recorder);
        scheduler.arm("s", "", Duration::from_millis(15_000), ArmMode::Replace);
        scheduler.arm("s", "", Duration::from_millis(3_000), ArmMode::IfNothingPending);
        tokio::time::sleep(Duration::from_millis(5_000)).await;
        assert_eq!(recorder.count(), 0, "a fresh kickoff never replaces a pending idle timer");
        scheduler.arm("s", "", Duration::from_millis(250), ArmMode::Earliest);
        tokio::time::sleep(Duration::from_millis(300)).await;
        settle().await;
        assert_eq!(recorder.count(), 1, "a resume kickoff replaces a longer timer");
    }

    #[tokio::test(start_paused = true)]
    async fn no_kickoff_while_busy_and_an_idle_replaces_a_pending_one() {
        let recorder = Recorder::new(vec![]);
        let scheduler = start(&recorder);
        scheduler.busy("s");
        scheduler.arm("s", "", Duration::from_millis(100), ArmMode::IfNothingPending);
        tokio::time::sleep(Duration::from_millis(500)).await;
        settle().await;
        assert_eq!(recorder.count(), 0, "a kickoff armed during a turn would fire right after it");

        // The idle ends the busy state: its quiet window applies, and a kickoff that arrives after
        // it does not shorten it.
        scheduler.idle("s", "", Duration::from_millis(1_000));
        scheduler.arm("s", "", Duration::from_millis(100), ArmMode::IfNothingPending);
        tokio::time::sleep(Duration::from_millis(900)).await;
        settle().await;
        assert_eq!(recorder.count(), 0, "the idle's quiet window holds");
        tokio::time::sleep(Duration::from_millis(200)).await;
        settle().await;
        assert_eq!(recorder.count(), 1);

        // A pending kickoff on an idle session is replaced by the idle's longer window.
        scheduler.arm("t", "", Duration::from_millis(100), ArmMode::IfNothingPending);
        scheduler.idle("t", "", Duration::from_millis(1_000));
        tokio::time::sleep(Duration::from_millis(500)).await;
        settle().await;
        assert_eq!(recorder.runs.lock().iter().filter(|r| r.0 == "t").count(), 0, "the idle replaced the kickoff");
        tokio::time::sleep(Duration::from_millis(600)).await;
        settle().await;
        assert_eq!(recorder.runs.lock().iter().filter(|r| r.0 == "t").count(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn wakeups_during_a_tick_make_exactly_one_follow_up() {
        let (recorder, scheduler) = holding_a_tick_of_s().await;
        assert_eq!(recorder.count(), 1);
        for _ in 0..5 {
            scheduler.arm("s", "", Duration::from_millis(100), ArmMode::Replace);
        }
        settle().await;
        recorder.hold.store(false, Ordering::SeqCst);
        recorder.release.notify_one();
        tokio::time::sleep(Duration::from_millis(1_000)).await;
        settle().await;
        assert_eq!(recorder.count(), 2);
        assert_eq!(scheduler.stats().follow_ups.load(Ordering::Relaxed), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn retries_back_off_and_are_bounded() {
        let recorder = Recorder::new(vec![TickOutcome::Retry; 10]);
        let scheduler = start(&recorder);
        scheduler.arm("s", "", Duration::from_millis(1), ArmMode::Replace);
        tokio::time::sleep(Duration::from_millis(3_000)).await;
        settle().await;
        let runs = recorder.runs.lock().clone();
        assert_eq!(runs.len(), 5, "first run plus four retries");
        let gaps: Vec<u128> = runs.windows(2).map(|w| (w[1].2 - w[0].2).as_millis()).collect();
        // Each timer is aimed TIMER_LEAD early (exact here: the test's clock is paused).
        let lead = TIMER_LEAD.as_millis();
        assert_eq!(gaps, vec![100 - lead, 200 - lead, 400 - lead, 800 - lead]);
        let attempts: Vec<u32> = runs.iter().map(|r| r.1).collect();
        assert_eq!(attempts, vec![0, 1, 2, 3, 4]);
        // A run that still failed after the last retry is not dropped, and never polled faster:
        // the doubling goes on to the cap (10 s) and stays there.
        tokio::time::sleep(Duration::from_millis(40_000)).await;
        settle().await;
        let runs = recorder.runs.lock().clone();
        assert_eq!(runs.len(), 11, "ten retries, then the scripted outcomes end");
        let gaps: Vec<u128> = runs.windows(2).map(|w| (w[1].2 - w[0].2).as_millis() + lead).collect();
        assert_eq!(gaps, vec![100, 200, 400, 800, 1_600, 3_200, 6_400, 10_000, 10_000, 10_000]);
        assert_eq!(runs[10].1, 10);
    }

    #[tokio::test(start_paused = true)]
    async fn user_activity_invalidates_a_running_tick() {
        let (recorder, scheduler) = holding_a_tick_of_s().await;
        let generation = recorder.generations.lock()[0].clone();
        assert!(generation.is_current());
        scheduler.user_activity("s", 0.0);
        settle().await;
        assert!(generation.is_current(), "an old message does not invalidate");
        scheduler.user_activity("s", now_ms() + 1.0);
        settle().await;
        assert!(!generation.is_current());
        recorder.release.notify_one();
    }

    #[tokio::test(start_paused = true)]
    async fn stop_ends_everything() {
        let recorder = Recorder::new(vec![]);
        let scheduler = start(&recorder);
        for i in 0..100 {
            scheduler.arm(&format!("s{i}"), "", Duration::from_millis(50), ArmMode::Replace);
        }
        settle().await;
        assert_eq!(scheduler.stats().armed.load(Ordering::Relaxed), 100);
        scheduler.stop().await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(recorder.count(), 0);
        assert_eq!(scheduler.stats().armed.load(Ordering::Relaxed), 0);
        scheduler.arm("late", "", Duration::from_millis(1), ArmMode::Replace);
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(recorder.count(), 0);
    }
}

#[cfg(test)]
mod concurrency_tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Records how many runs overlap.
    struct CountingJob {
        running: Arc<AtomicUsize>,
        peak: Arc<AtomicUsize>,
        done: Arc<AtomicUsize>,
        limit: usize,
    }

    impl Job for CountingJob {
        fn run(&self, _start: TickStart) -> TickFuture {
            let (running, peak, done) = (self.running.clone(), self.peak.clone(), self.done.clone());
            Box::pin(async move {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(5)).await;
                running.fetch_sub(1, Ordering::SeqCst);
                done.fetch_add(1, Ordering::SeqCst);
                TickOutcome::Done
            })
        }
        fn quiet(&self) -> Duration {
            Duration::from_millis(10)
        }
        fn max_attempts(&self) -> u32 {
            4
        }
        fn max_concurrent(&self) -> usize {
            self.limit
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_burst_of_wake_ups_runs_every_tick_but_never_more_than_the_limit_at_once() {
        let job = CountingJob { running: Arc::default(), peak: Arc::default(), done: Arc::default(), limit: 4 };
        let (peak, done) = (job.peak.clone(), job.done.clone());
        let scheduler = Scheduler::start(Arc::new(job), &tokio::runtime::Handle::current());
        for index in 0..40 {
            scheduler.arm(&format!("ses_{index}"), "/tmp/project", Duration::ZERO, ArmMode::Replace);
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while done.load(Ordering::SeqCst) < 40 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(done.load(Ordering::SeqCst), 40, "every fired tick ran");
        assert_eq!(peak.load(Ordering::SeqCst), 4, "never more than the limit at once");
        assert_eq!(scheduler.stats().ticks.load(Ordering::Relaxed), 40);
        scheduler.stop().await;
    }
}
