//! The goal runtime: event intake rules, the scheduler, ticks, restart recovery and the sweep
//! over a census of every goal on the server (`census.rs`, `sweep.rs`), and the silence watch
//! (`watch.rs`).

mod census;
mod sweep;
mod watch;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tracing::{debug, Instrument};

use crate::config::GoalConfig;
use crate::goal::act::pause_after_abort;
use crate::goal::context::TickContext;
use crate::goal::gather::owners::Owners;
use crate::goal::tick::run_tick;
use crate::intake::{Consumer, IntakeEvent};
use crate::io::opencode::OpenCodeClient;
use crate::io::services::Services;
use crate::record::reasons::REASON_RESUMED;
use crate::record::{Goal, GoalStatus};
use crate::sched::facts::TickFacts;
use crate::sched::facts::{Seen, SessionFactsView};
use crate::sched::{ArmMode, GoalSighting, Job, Scheduler, SchedulerSnapshot};
use crate::sched::{TickFuture, TickStart};

/// Most directories remembered for restart recovery.
const MAX_KNOWN_DIRECTORIES: usize = 50;

/// The sweep's schedule: when it runs next, and the directories it found active goals in.
#[derive(Default)]
struct SweepState {
    next: Mutex<Option<tokio::time::Instant>>,
    /// Directories where the last sweep found an active goal: never forgotten for newer ones.
    with_active_goals: Mutex<std::collections::HashSet<String>>,
}

impl SweepState {
    /// Time to the next sweep (`None`: the sweep is off); zero while one runs.
    fn next_in(&self) -> Option<Duration> {
        let next = (*self.next.lock())?;
        Some(next.saturating_duration_since(tokio::time::Instant::now()))
    }
}

/// Everything needed to build a goal runtime (its parts; in this crate "settings" are a goal's, see
/// `control/goal_settings.rs`).
pub struct GoalLoopParts {
    /// OpenCode client.
    pub client: OpenCodeClient,
    /// Host services.
    pub services: Services,
    /// Tunables.
    pub config: GoalConfig,
    /// Directories to list for active goals when the server lists no sessions across
    /// directories (an older OpenCode); a census of the whole server finds them otherwise.
    pub directories: Vec<String>,
    /// Find every active goal on the server at start (a census), and look at each.
    pub recover_on_start: bool,
    /// What this runtime shares with the others of its host (it registers for events there).
    pub shared: crate::io::shared::SharedContext,
}

/// What `snapshot()` reports.
#[derive(Debug, Clone)]
pub struct GoalSnapshot {
    /// Tracked sessions, timers, ticks running and started, follow-ups, panics.
    pub scheduler: SchedulerSnapshot,
    /// Continuations sent.
    pub continuations: u64,
    /// Goals settled or paused by ticks.
    pub settled: u64,
    /// Goals known to be active (from events).
    pub active_goals: usize,
    /// Runtime stopped.
    pub stopped: bool,
}

struct Inner {
    me: std::sync::Weak<Inner>,
    ctx: TickContext,
    scheduler: Scheduler,
    group: String,
    stopped: AtomicBool,
    directories: Mutex<VecDeque<String>>,
    runtime: tokio::runtime::Handle,
    /// When the sweep runs next, and the directories whose sweep failed.
    sweeps: SweepState,
    /// Sessions whose goal last read `resumed` in an event (its resume kickoff was armed).
    resumed: Mutex<std::collections::HashSet<String>>,
    /// The span current at start: the host's log identity for this runtime. Every task the
    /// runtime spawns runs in it, so the host can route the task's lines to this runtime's logger.
    log_span: tracing::Span,
    /// When the last payload reached the runtime (ms on the host's clock; its start before the
    /// first): the silence watch tells a host whose stream is down by it (`sched/silence.rs`).
    last_payload_ms: AtomicU64,
    /// When the last heartbeat came (the runtime's start before the first).
    last_heartbeat_ms: AtomicU64,
    /// A heartbeat came after one went missing: the watch sweeps once.
    hole: AtomicBool,
    /// The scan at start is still trying (it tries until OpenCode answers): a connection leaves
    /// the finding to it.
    scanning_at_start: AtomicBool,
    /// The runtime scans at start: the stream's first connection needs only the sessions
    /// updated since that scan listed the server, which it may have done before the stream was up.
    scans_at_start: bool,
    /// The newest update the scan at start listed (OpenCode's clock; `None`: none listed, or a
    /// server without the server-wide list).
    start_newest: Mutex<Option<f64>>,
    /// Connections of the stream so far.
    connections: AtomicU64,
}

struct GoalJob {
    ctx: TickContext,
}

impl Job for GoalJob {
    fn run(&self, start: TickStart) -> TickFuture {
        let ctx = self.ctx.clone();
        Box::pin(async move { run_tick(&ctx, start).await })
    }

    fn first_stage(&self) -> (&'static str, Duration) {
        let stage = crate::goal::decide::stages::Stage::Observe;
        (stage.name(), stage.bound(&self.ctx.config, self.ctx.client.request_bound()))
    }

    fn quiet(&self) -> Duration {
        self.ctx.config.idle_quiet
    }

    fn max_attempts(&self) -> u32 {
        self.ctx.config.max_retry_attempts
    }
}

/// The goal loop: the core's session goal runtime (the binding's `SessionGoalRuntime` and an
/// `EmbeddedGoalRuntime` each wrap one; the package's JavaScript `GoalRuntime` wraps the former).
#[derive(Clone)]
pub struct GoalLoop {
    inner: Arc<Inner>,
}

impl GoalLoop {
    /// Starts the runtime on `runtime` and registers it with the shared intake. The tracing span
    /// current at the call is the runtime's log identity: all its work runs in that span.
    pub fn start(parts: GoalLoopParts, runtime: &tokio::runtime::Handle) -> GoalLoop {
        // What events showed of each session: the scheduler task owns it, ticks read the
        // snapshot it publishes.
        let facts = SessionFactsView::default();
        let holders = Arc::<crate::goal::gather::holders::GoalHolders>::default();
        let memory = crate::goal::act::Memory { claims: parts.shared.dispatch_claims().clone(), ..Default::default() };
        let holder = Arc::new(crate::io::host_identity::HolderId::new(&parts.client.key(), &parts.services.data_dir));
        let ctx = TickContext {
            client: parts.client.clone(),
            services: parts.services,
            config: Arc::new(parts.config),
            holder,
            facts: Arc::new(TickFacts::new(facts.clone())),
            owners: Owners::new(parts.client.clone(), holders, runtime.clone()),
            memory: Arc::new(memory),
        };
        let job = Arc::new(GoalJob { ctx: ctx.clone() });
        let scheduler = Scheduler::start_with(job, runtime, facts, parts.shared.clock());
        // Goals that waited for a failing owner list are woken when a list is read.
        ctx.owners.set_waker(Arc::new(scheduler.weak_waker()));
        ctx.facts.set_settler(scheduler.weak_input_settler());
        let inner = Arc::new_cyclic(|me| Inner {
            me: me.clone(),
            group: parts.client.key(),
            ctx,
            scheduler,
            stopped: AtomicBool::new(false),
            directories: Mutex::new(parts.directories.into_iter().filter(|d| !d.is_empty()).collect()),
            runtime: runtime.clone(),
            sweeps: SweepState::default(),
            resumed: Mutex::default(),
            log_span: tracing::Span::current(),
            last_payload_ms: AtomicU64::new(parts.client.clock().now_ms().max(0.0) as u64),
            last_heartbeat_ms: AtomicU64::new(parts.client.clock().now_ms().max(0.0) as u64),
            hole: AtomicBool::new(false),
            scanning_at_start: AtomicBool::new(false),
            scans_at_start: parts.recover_on_start,
            start_newest: Mutex::new(None),
            connections: AtomicU64::new(0),
        });
        let consumer: Arc<dyn Consumer> = inner.clone();
        parts.shared.intake().register(&consumer);
        let runtime_handle = GoalLoop { inner };
        if parts.recover_on_start {
            runtime_handle.inner.recover_at_start();
        }
        watch::start(&runtime_handle.inner, runtime);
        sweep::start(&runtime_handle.inner, runtime);
        runtime_handle
    }

    /// The intake group (events dispatched to this key reach this runtime).
    pub fn group(&self) -> String {
        self.inner.group.clone()
    }

    /// Feeds one event directly (without the shared fan-out).
    pub fn accept(&self, event: &IntakeEvent) {
        self.inner.accept(event);
    }

    /// Whether the last seen state of the session's goal is active.
    pub fn is_goal_active(&self, session_id: &str) -> bool {
        self.inner.scheduler.facts().is_goal_active(session_id)
    }

    /// Counters and tracked sessions.
    pub fn snapshot(&self) -> GoalSnapshot {
        let stats = self.inner.scheduler.stats();
        GoalSnapshot {
            scheduler: self.inner.scheduler.snapshot(),
            continuations: stats.continuations.load(Ordering::Relaxed),
            settled: stats.settled.load(Ordering::Relaxed),
            active_goals: self.inner.scheduler.facts().active_goals(),
            stopped: self.inner.stopped.load(Ordering::SeqCst),
        }
    }

    /// Stops: no new work, timers cleared, in-flight ticks invalidated and awaited (bounded).
    pub async fn stop(&self) {
        self.inner.stopped.store(true, Ordering::SeqCst);
        self.inner.ctx.owners.stop();
        self.inner.scheduler.stop().await;
        // Its work is over: the identity file is let go (docs/forks-and-restarts.md).
        self.inner.ctx.holder.release();
    }

    /// The goal's audit trail, oldest first (`limit` keeps the newest).
    pub async fn history(&self, session_id: &str, limit: Option<usize>) -> Vec<serde_json::Value> {
        self.inner.ctx.services.data_dir.trail(session_id, limit).await
    }

    /// Why the session's goal is where it is (see `control/explain.rs`); read only. The lease is
    /// judged against this runtime's holder id. An active goal's next look is this runtime's:
    /// its timer, `now` while a tick runs, the directory's next owner list, or the next sweep;
    /// an active goal with none is a defect, named in the findings (`noNextLook`).
    pub async fn explain(
        &self,
        session_id: &str,
        directory: &str,
    ) -> Result<crate::control::explain::ExplainReport, crate::error::HttpError> {
        let ctx = &self.inner.ctx;
        let mut report = crate::control::explain::explain(
            &ctx.client,
            &ctx.services.data_dir,
            session_id,
            directory,
            Some(ctx.holder.get().await),
        )
        .await?;
        if report.status == Some(GoalStatus::Active) {
            let now = ctx.client.clock().now_ms();
            let own = self.next_look(session_id, directory).map(|wait| now + wait.as_millis() as f64);
            // A wait that ends later (working hours, a provider's reset) still gets looked at
            // sooner by this runtime: the earlier of the two is the next look.
            report.next_wake_at = match (report.next_wake_at, own) {
                (Some(until), Some(look)) => Some(until.min(look)),
                (until, look) => until.or(look),
            };
            if report.next_wake_at.is_none() {
                report.findings.push(crate::control::explain::no_next_look());
            }
        }
        Ok(report)
    }

    /// When this runtime looks at the session's goal again: now while a tick of it runs (between
    /// a retry's timer firing and the next one being armed there is no timer to report), its
    /// timer, the directory's next owner list for a goal waiting on it, or the next sweep of a
    /// directory the runtime knows. `None`: nothing will.
    fn next_look(&self, session_id: &str, directory: &str) -> Option<Duration> {
        let entry = self.inner.scheduler.session(session_id);
        let directory = entry.as_ref().map_or(directory, |e| e.directory.as_str());
        let own = entry.as_ref().and_then(|e| if e.ticking { Some(0) } else { e.due_in_ms }).map(Duration::from_millis);
        let list = self.inner.ctx.owners.next_list_in(directory, session_id);
        // The sweep's census reaches every directory.
        let sweep = self.inner.sweeps.next_in();
        [own, list, sweep].into_iter().flatten().min()
    }

    /// Finds every active goal on the server (a census) and looks at each one on an idle
    /// session. The tick itself re-checks everything, and a reservation for the same tail is
    /// never charged or sent twice.
    pub fn recover(&self) {
        let inner = self.inner.clone();
        let span = self.inner.log_span.clone();
        self.inner.runtime.spawn(
            async move {
                inner.recover(ArmMode::IfIdleTimer, true, None).await;
            }
            .instrument(span),
        );
    }
}

impl Inner {
    /// Whether an event's goal looks like a copy from another session (see `goal/decide/lineage.rs`).
    fn looks_copied(&self, goal: &Goal, session_id: &str) -> bool {
        goal.owned_by_other_session(session_id)
            || (goal.session_id.is_none() && self.ctx.owners.holders().older_than(&goal.id, session_id).is_some())
    }

    /// Keeps `directory` among the known ones (the newest first): a server that lists no
    /// sessions across directories is listed by them (`census.rs`).
    fn remember_directory(&self, directory: &str) {
        if directory.is_empty() {
            return;
        }
        let mut known = self.directories.lock();
        if known.front().map(String::as_str) == Some(directory) {
            return;
        }
        known.retain(|d| d != directory);
        known.push_front(directory.to_string());
        // The oldest go first, except a directory holding an active goal: the sweep is its
        // goal's next look.
        let keep = self.sweeps.with_active_goals.lock();
        while known.len() > MAX_KNOWN_DIRECTORIES {
            match known.iter().rposition(|d| !keep.contains(d)) {
                Some(oldest) => known.remove(oldest),
                None => break,
            };
        }
    }

    /// The directories known now.
    fn known_directories(&self) -> Vec<String> {
        self.directories.lock().iter().cloned().collect()
    }
}

impl Inner {
    /// OpenCode's stream connected again (it may have restarted, cutting turns and losing
    /// events): a census finds every active goal, and each idle one is looked at. The stream's
    /// first connection, where the runtime scans at start, looks only for what that scan may
    /// have missed: a session made before the stream was up and after the scan listed the
    /// server, which lists at or after the newest update the scan saw (after the scan at start,
    /// a census of those; on a server with the server-wide list, one page).
    fn connected(&self) {
        let first = self.connections.fetch_add(1, Ordering::SeqCst) == 0;
        let catch_up = first && self.scans_at_start;
        if let Some(me) = self.me.upgrade() {
            debug!(target: "session_goal", catch_up, "OpenCode connected; finding its active goals");
            self.runtime.spawn(
                async move {
                    // The scan at start first (a census waits for the one being read).
                    while catch_up && me.scanning_at_start.load(Ordering::SeqCst) {
                        if me.stopped.load(Ordering::SeqCst) {
                            return;
                        }
                        tokio::time::sleep(census::AFTER_START_POLL).await;
                    }
                    let since = catch_up.then(|| me.start_newest.lock().unwrap_or(0.0));
                    me.recover(ArmMode::IfIdleTimer, true, since).await;
                }
                .instrument(self.log_span.clone()),
            );
        }
    }

    /// A user message's event: the user moved on, unless it is our own continuation or re-post.
    fn user_message(&self, session_id: &str, message_id: &str, created: f64) {
        if !self.ctx.memory.own_posts.is_own(session_id, message_id) {
            let at = if created > 0.0 { created } else { self.ctx.now_ms() };
            self.scheduler.user_activity(session_id, at);
        }
    }

    /// A session's `session.updated`: its goal is recorded (a user change invalidates work in
    /// flight) and the wake-up it calls for is armed.
    fn session_updated(
        &self,
        session_id: &str,
        directory: &str,
        is_child: bool,
        goal: Option<&serde_json::Value>,
        metadata: Option<&serde_json::Value>,
    ) {
        let config = &self.ctx.config;
        if is_child {
            self.scheduler.goal_seen(GoalSighting {
                session: session_id.to_string(),
                directory: directory.to_string(),
                seen: Seen::Child,
                arm: None,
                arm_if_changed: None,
            });
            return;
        }
        self.remember_directory(directory);
        let raw_goal = goal;
        let goal = raw_goal.and_then(Goal::from_value);
        let active = goal.as_ref().filter(|g| g.status == GoalStatus::Active);
        if let Some(goal) = active {
            // A goal naming no session: its owner list starts now, off the tick's path.
            self.ctx.owners.prefetch(directory, goal);
        }
        // A resume is the event that brings the reason `resumed`; every later write keeps it
        // until the next turn, and re-arming the short kickoff on each would poll the session.
        let resumed_now = active.is_some_and(|g| g.status_reason == REASON_RESUMED);
        let was_resumed = {
            let mut resumed = self.resumed.lock();
            if resumed_now {
                !resumed.insert(session_id.to_string())
            } else {
                resumed.remove(session_id);
                false
            }
        };
        let (arm, arm_if_changed) = match active {
            Some(goal) if goal.status_reason == REASON_RESUMED && !was_resumed => {
                (Some((config.resume_kickoff, ArmMode::Earliest)), None)
            }
            Some(goal) if goal.turns_used == 0 => (Some((config.kickoff_quiet, ArmMode::IfNothingPending)), None),
            // A fork's copy (no idle event announces it): a goal naming another session,
            // or naming none while another session is known to carry it. Look at once.
            Some(goal) if self.looks_copied(goal, session_id) => {
                (Some((config.resume_kickoff, ArmMode::IfNothingPending)), None)
            }
            // Edited (or replaced) while active: the invalidation drops the pending
            // wake-up and any tick in flight, and nothing else would bring one back on an
            // idle session. Plan again with the new content.
            Some(_) => (None, Some((config.kickoff_quiet, ArmMode::Replace))),
            None => (None, None),
        };
        // The scheduler task records the goal, invalidates work in flight on a user change
        // (edit, pause, clear, completion, replacement), then arms.
        self.scheduler.goal_seen(GoalSighting {
            session: session_id.to_string(),
            directory: directory.to_string(),
            seen: Seen::Event(goal.map(|g| (g.revision(), g.status))),
            arm,
            arm_if_changed,
        });
        // After the invalidation is queued, so a tick woken by this event is stopped as
        // soon as the scheduler has handled it.
        self.ctx.memory.echoes.observe(session_id, raw_goal, metadata, self.ctx.now_ms());
    }

    fn session_deleted(&self, session_id: &str) {
        self.ctx.memory.own_posts.forget(session_id);
        self.resumed.lock().remove(session_id);
        self.scheduler.forget(session_id);
    }
}

impl Consumer for Inner {
    fn accept(&self, event: &IntakeEvent) {
        if self.stopped.load(Ordering::SeqCst) {
            return;
        }
        // The caller's thread (often the host's) logs in this runtime's name while it is here.
        let _identity = self.log_span.enter();
        let now = self.ctx.now_ms().max(0.0);
        self.last_payload_ms.store(now as u64, Ordering::Relaxed);
        let config = &self.ctx.config;
        match event {
            IntakeEvent::Heartbeat => {
                let previous = self.last_heartbeat_ms.swap(now as u64, Ordering::Relaxed) as f64;
                if crate::sched::silence::ends_hole(now, previous) {
                    self.hole.store(true, Ordering::Relaxed);
                }
            }
            IntakeEvent::Status { session_id, directory, working } => {
                self.remember_directory(directory);
                if *working {
                    self.scheduler.busy(session_id, directory);
                } else {
                    self.scheduler.idle(session_id, directory, config.idle_quiet);
                }
            }
            IntakeEvent::SessionUpdated { session_id, directory, is_child, goal, metadata } => {
                self.session_updated(session_id, directory, *is_child, goal.as_ref(), metadata.as_ref())
            }
            IntakeEvent::Aborted { session_id, directory, at } => {
                // Like a user message: invalidates a tick (and a timer) that started before the
                // abort; an old abort re-emitted later cannot cancel a resume's kickoff.
                let at = if *at > 0.0 { *at } else { self.ctx.now_ms() };
                self.scheduler.user_activity(session_id, at);
                let client = self.ctx.client.clone();
                let (session, dir) = (session_id.clone(), directory.clone());
                self.runtime.spawn(
                    async move {
                        pause_after_abort(&client, &session, &dir, at).await;
                    }
                    .instrument(self.log_span.clone()),
                );
            }
            IntakeEvent::UserMessage { session_id, message_id, created, .. } => {
                self.user_message(session_id, message_id, *created)
            }
            IntakeEvent::UserInput { session_id, directory, request_id, pending } => {
                // Answering the last open request arms a look once the session has been quiet.
                self.scheduler.user_input(session_id, directory, request_id, *pending, config.idle_quiet);
            }
            IntakeEvent::SessionDeleted { session_id } => self.session_deleted(session_id),
            IntakeEvent::Connected => self.connected(),
        }
    }

    fn group(&self) -> String {
        self.group.clone()
    }

    fn is_live(&self) -> bool {
        !self.stopped.load(Ordering::SeqCst)
    }

    fn watches_writes(&self, session_id: &str) -> bool {
        self.ctx.memory.echoes.is_watching(session_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::opencode::StaticEndpoint;
    use crate::io::services::{DataDir, NoNotifier, NoSmallModel};
    use crate::io::shared::SharedContext;

    fn start_from(shared: &SharedContext) -> GoalLoop {
        let endpoint = Arc::new(StaticEndpoint::new("http://127.0.0.1:9", Vec::new()));
        let parts = GoalLoopParts {
            client: OpenCodeClient::new(shared, endpoint, Duration::from_millis(100)),
            services: Services {
                small_model: Arc::new(NoSmallModel),
                notifier: Arc::new(NoNotifier),
                data_dir: DataDir::new(std::env::temp_dir()),
            },
            config: GoalConfig { sweep_interval: Duration::ZERO, ..GoalConfig::default() },
            directories: Vec::new(),
            recover_on_start: false,
            shared: shared.clone(),
        };
        GoalLoop::start(parts, &tokio::runtime::Handle::current())
    }

    #[tokio::test]
    async fn two_runtimes_of_one_context_share_dispatch_claims_and_write_slots() {
        let shared = SharedContext::new();
        let (first, second) = (start_from(&shared), start_from(&shared));
        let claim = first.inner.ctx.memory.claims.claim("ses_twice").expect("free");
        assert!(
            second.inner.ctx.memory.claims.claim("ses_twice").is_none(),
            "the second runtime would send the same turn again"
        );
        drop(claim);
        assert!(second.inner.ctx.memory.claims.claim("ses_twice").is_some());
        let _slot = first.inner.ctx.client.write_slots().acquire("ses_twice").await;
        let waited =
            tokio::time::timeout(Duration::from_millis(50), second.inner.ctx.client.write_slots().acquire("ses_twice"))
                .await;
        assert!(waited.is_err(), "writes of one context queue behind each other");
        first.stop().await;
        second.stop().await;
    }

    #[tokio::test]
    async fn runtimes_of_two_contexts_share_no_claims_or_write_slots() {
        let (first, second) = (start_from(&SharedContext::new()), start_from(&SharedContext::new()));
        let _claim = first.inner.ctx.memory.claims.claim("ses_apart").expect("free");
        assert!(second.inner.ctx.memory.claims.claim("ses_apart").is_some());
        let _slot = first.inner.ctx.client.write_slots().acquire("ses_apart").await;
        let other =
            tokio::time::timeout(Duration::from_millis(50), second.inner.ctx.client.write_slots().acquire("ses_apart"))
                .await;
        assert!(other.is_ok(), "another context never waits for this one");
        first.stop().await;
        second.stop().await;
    }

    #[tokio::test]
    async fn the_scheduler_task_records_what_events_show() {
        let runtime = start_from(&SharedContext::new());
        let goal = serde_json::json!({"id": "g", "status": "active", "objective": "o", "turnsUsed": 3});
        runtime.accept(&IntakeEvent::SessionUpdated {
            session_id: "s".into(),
            directory: "/d".into(),
            is_child: false,
            goal: Some(goal),
            metadata: None,
        });
        runtime.accept(&IntakeEvent::UserInput {
            session_id: "s".into(),
            directory: "/d".into(),
            request_id: "q".into(),
            pending: true,
        });
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while !(runtime.is_goal_active("s") && runtime.inner.ctx.facts.waiting_for_user("s")) {
            assert!(tokio::time::Instant::now() < deadline, "the published facts never showed the events");
            tokio::task::yield_now().await;
        }
        assert_eq!(runtime.snapshot().active_goals, 1);
        runtime.stop().await;
    }
}
