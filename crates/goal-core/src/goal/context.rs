//! What every stage of a tick shares: the runtime's [`TickContext`], and the [`Tick`] value that
//! carries one tick's session, goal, guard, objective and generation from stage to stage.

use std::sync::Arc;
use std::time::Duration;

use tracing::{info, warn};

use crate::config::GoalConfig;
use crate::error::HttpError;
use crate::goal::delivery::echo_watch::WriteEchoes;
use crate::goal::stages::Stage;
use crate::io::locks::DispatchClaims;
use crate::io::opencode::OpenCodeClient;
use crate::io::services::Services;
use crate::io::writer::{GoalGuard, GoalWrite};
use crate::record::Goal;
use crate::sched::stage_watch::StageWatch;
use crate::sched::{Generation, TickOutcome};

/// A function of a session id the runtime hands the tick (held weakly by what it calls).
pub type SessionCallback = Arc<dyn Fn(&str) + Send + Sync>;

/// Everything a tick needs.
#[derive(Clone)]
pub struct TickContext {
    /// OpenCode.
    pub client: OpenCodeClient,
    /// Host services.
    pub services: Services,
    /// Tunables.
    pub config: Arc<GoalConfig>,
    /// Whether events showed the session (or a child) waiting for the user (permission,
    /// question). A tick checks it against OpenCode's lists before it trusts it.
    pub waiting_for_user: Arc<dyn Fn(&str) -> bool + Send + Sync>,
    /// Clears that memory for a session OpenCode shows no open request for (set once the
    /// scheduler exists).
    pub input_settled: Arc<std::sync::OnceLock<SessionCallback>>,
    /// This runtime's lease holder id (several hosts may watch one OpenCode server).
    pub holder: String,
    /// Whether events last showed the session's goal active: the tick then reads the session
    /// and the live state at once (one round trip instead of two); otherwise it reads the
    /// session first, so a session without a goal costs one read.
    pub known_active: Arc<dyn Fn(&str) -> bool + Send + Sync>,
    /// Goal events seen while a reservation is written (lost-update repair).
    pub echoes: Arc<WriteEchoes>,
    /// The message ids this runtime posted lately (their events are no user activity).
    pub own_posts: Arc<crate::goal::delivery::own_posts::OwnPosts>,
    /// The dispatch claims of the runtime's context (shared by its runtimes).
    pub dispatch_claims: DispatchClaims,
    /// Which session first carried each goal id (copies of goals written before `sessionId`).
    pub holders: Arc<crate::goal::ownership::lineage::GoalHolders>,
    /// The owner lists that tell, for a goal naming no session, which session carried it first.
    pub owner_lists: Arc<crate::goal::ownership::owner_scan::OwnerLists>,
}

impl TickContext {
    /// How long to wait when another runtime's lease on `goal` is live.
    pub fn lease_wait(&self, goal: &Goal) -> Option<Duration> {
        crate::goal::planning::gates::lease_wait(goal, &self.holder, self.now_ms())
    }

    /// Now on the host's clock (`time/clock.rs`).
    pub fn now_ms(&self) -> f64 {
        self.client.clock().now_ms()
    }
}

/// One tick of one session's active goal, once its goal and objective are known.
pub struct Tick<'a> {
    /// The runtime's context.
    pub ctx: &'a TickContext,
    /// The OpenCode session whose goal this tick drives.
    pub session_id: &'a str,
    /// Its project directory.
    pub directory: &'a str,
    /// The goal as read at the start of the tick.
    pub goal: Goal,
    /// The guard every write of this tick checks (the goal as read, still active, no other lease).
    pub guard: GoalGuard,
    /// The effective objective (the objective file's text for file-backed goals).
    pub objective: String,
    /// Invalidated by any user action since the tick began.
    pub generation: Generation,
    /// Consecutive read failures before this tick (0 on a normal wake-up).
    pub attempt: u32,
    /// The last allowed retry: a failure now settles instead of asking for another.
    pub exhausted: bool,
    /// The stage the tick is in, read by the scheduler's watchdog.
    pub watch: StageWatch,
}

impl Tick<'_> {
    /// Now on the host's clock.
    pub fn now_ms(&self) -> f64 {
        self.ctx.now_ms()
    }

    /// How a tick ends when a request failed after its reads (a write, a claim, a post): a retry
    /// whose wait goes on doubling from the post's own tries (`max_dispatch_attempts` per tick,
    /// `dispatch_retry_delay` apart, doubling) as if the next tick's posts came after one more
    /// try: 2 s, then the 10 s cap by default. Such a tick makes a dozen requests or more before
    /// it fails; a plain retry from a short quiet window would repeat them all too often (the
    /// simulator measured over 40 requests in 8 s against A.8's budget).
    pub fn late_retry(&self) -> TickOutcome {
        let config = &self.ctx.config;
        let tries =
            config.max_dispatch_attempts.max(1).saturating_mul(self.attempt.saturating_add(1)).saturating_add(1);
        TickOutcome::RetryIn(crate::sched::backoff::retry_delay(config.dispatch_retry_delay, tries))
    }

    /// The tick enters `stage`: its time grows by the stage's bound (`goal/stages.rs`).
    pub fn enter(&self, stage: Stage) {
        self.watch.enter(stage.name(), stage.bound(&self.ctx.config, self.ctx.client.request_bound()));
    }
}

/// Logs a goal write's result.
pub fn log_write(session_id: &str, what: &str, result: &Result<GoalWrite, HttpError>) {
    match result {
        Ok(GoalWrite::Written(goal)) => {
            info!(target: "session_goal", session = session_id, what, status = goal.status.as_str(), "goal written")
        }
        Ok(GoalWrite::Stale) => {
            info!(target: "session_goal", session = session_id, what, "goal changed during tick; write dropped")
        }
        Err(error) => warn!(target: "session_goal", session = session_id, what, %error, "goal write failed"),
    }
}

/// How a tick ends after a terminal write: written, settled; the goal changed meanwhile, done
/// (the change brings its own wake-up); the write failed, retried (a terminal decision that was
/// never stored would otherwise leave the goal active with nothing armed).
pub fn written_outcome(result: &Result<GoalWrite, HttpError>) -> TickOutcome {
    match result {
        Ok(GoalWrite::Written(_)) => TickOutcome::Settled,
        Ok(GoalWrite::Stale) => TickOutcome::Done,
        Err(_) => TickOutcome::Retry,
    }
}

/// Runs side work that nothing waits for on the ambient tokio runtime. One boxed future type for
/// every such site, so the task machinery is compiled once (the addon's size is budgeted). It
/// runs in the caller's tracing span (the runtime's log identity).
pub fn spawn_detached(work: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>) {
    tokio::spawn(tracing::Instrument::in_current_span(work));
}

/// The tick's first session read, and the goal-event watch started just before it: the base
/// the reservation's write may build on (no second read when the tick goes straight on).
pub struct ReadAtStart {
    /// The first read.
    pub base: crate::io::writer::BaseRead,
    /// The watch of the session's goal events since just before that read.
    pub watch: crate::goal::delivery::echo_watch::WatchGuard,
}
