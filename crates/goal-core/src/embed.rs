//! Embedding the goal runtime in a Rust application (a Tauri shell, a daemon) without Node.
//!
//! [`GoalRuntimeBuilder`] gathers the same settings the Node package takes as options; `start`
//! runs the runtime on a tokio runtime handle the application owns. OpenCode's events reach it
//! through [`EmbeddedGoalRuntime::event_follower`], which reads the server's `GET /global/event`
//! stream, reconnects and recovers on its own; an application that reads the stream itself
//! forwards each event with [`EmbeddedGoalRuntime::feed`] or [`EmbeddedGoalRuntime::feed_json`]
//! instead. It reads counters with [`EmbeddedGoalRuntime::snapshot`] and ends with
//! [`EmbeddedGoalRuntime::stop`]. Acting on goals (list a directory's goals, pause, resume,
//! create) goes through the control functions with [`EmbeddedGoalRuntime::control_context`]: the
//! same server, headers and data directory.
//!
//! ```no_run
//! use std::time::Duration;
//! use goal_core::GoalRuntimeBuilder;
//!
//! # async fn run(shutdown: tokio::sync::oneshot::Receiver<()>) {
//! let handle = tokio::runtime::Handle::current();
//! let runtime = GoalRuntimeBuilder::new("http://127.0.0.1:4096")
//!     .header("authorization", "Basic b3BlbmNvZGU6c2VjcmV0")
//!     .directories(["/path/to/project"])
//!     .idle_quiet(Duration::from_secs(15))
//!     .start(&handle);
//! let events = runtime.event_follower().start(&handle);
//! let _ = shutdown.await;
//! events.stop();
//! runtime.stop().await;
//! # }
//! ```
//!
//! Goals themselves are created the way OpenChamber does it (metadata on the session, see
//! `control/create.rs`); the runtime picks them up from `session.updated` events.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::config::tunables::GoalTunables;
use crate::config::GoalConfig;
use crate::control::create::ControlContext;
use crate::control::orchestrate::{DEFAULT_COMMAND_TIMEOUT, DEFAULT_LANDING_POLL, DEFAULT_LANDING_TIMEOUT};
use crate::intake::unwrap_envelope;
use crate::io::event_follower::EventFollowerBuilder;
use crate::io::opencode::{Endpoint, OpenCodeClient, StaticEndpoint};
use crate::io::services::{resolve_data_dir, DataDir, NoNotifier, Notifier, Services, SmallModel};
use crate::io::shared::SharedContext;
use crate::runtime::{GoalLoop, GoalLoopParts, GoalSnapshot};
use crate::small_model::{catalog::ModelRef, BuiltinSmallModel, DEFAULT_CALL_TIMEOUT};

/// Settings of an embedded goal runtime; every setting has the Node package's default.
pub struct GoalRuntimeBuilder {
    base_url: String,
    headers: Vec<(String, String)>,
    data_dir: Option<PathBuf>,
    memory_dir: Option<crate::io::memory_dir::MemoryDir>,
    small_model: Option<Arc<dyn SmallModel>>,
    small_model_choice: Option<(String, String)>,
    notifier: Option<Arc<dyn Notifier>>,
    fetch_timeout: Duration,
    config: GoalConfig,
    directories: Vec<String>,
    recover_on_start: Option<bool>,
    shared: Option<SharedContext>,
    transport: Option<Arc<dyn crate::io::transport::Transport>>,
}

impl GoalRuntimeBuilder {
    /// A runtime for the OpenCode server at `base_url` (e.g. `http://127.0.0.1:4096`).
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            headers: Vec::new(),
            data_dir: None,
            memory_dir: None,
            small_model: None,
            small_model_choice: None,
            notifier: None,
            fetch_timeout: crate::io::opencode::DEFAULT_FETCH_TIMEOUT,
            config: GoalConfig::default(),
            directories: Vec::new(),
            recover_on_start: None,
            shared: None,
            transport: None,
        }
    }

    /// A header sent with every OpenCode request (e.g. `authorization`); never logged.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The OpenChamber data directory (`settings.json`, `goals/<sessionId>.md`). Default:
    /// `OPENCHAMBER_DATA_DIR`, else `~/.config/openchamber`.
    pub fn data_dir(mut self, path: impl Into<PathBuf>) -> Self {
        self.data_dir = Some(path.into());
        self
    }

    /// Keeps the data directory in memory (`io/memory_dir.rs`): the loop reads and writes no
    /// file; its settings, trails and objectives live as long as `memory`.
    pub fn data_dir_in_memory(mut self, memory: crate::io::memory_dir::MemoryDir) -> Self {
        self.memory_dir = Some(memory);
        self
    }

    /// The small model that audits progress. Default: the built-in one, which asks OpenCode
    /// (its `small_model`, else a small model of the session's own provider).
    pub fn small_model(mut self, model: Arc<dyn SmallModel>) -> Self {
        self.small_model = Some(model);
        self
    }

    /// The built-in small model's explicit `provider/model` choice.
    pub fn builtin_small_model(mut self, provider_id: impl Into<String>, model_id: impl Into<String>) -> Self {
        self.small_model_choice = Some((provider_id.into(), model_id.into()));
        self
    }

    /// Receives a notification when a goal settles (complete, blocked, budget reached).
    pub fn notifier(mut self, notifier: Arc<dyn Notifier>) -> Self {
        self.notifier = Some(notifier);
        self
    }

    /// Quiet window after a session turns idle before the goal is evaluated (default 15 s).
    pub fn idle_quiet(mut self, quiet: Duration) -> Self {
        self.config.idle_quiet = quiet;
        self
    }

    /// Delay before a fresh goal on an idle session starts (default 3 s).
    pub fn kickoff_quiet(mut self, quiet: Duration) -> Self {
        self.config.kickoff_quiet = quiet;
        self
    }

    /// Auto-continuation cap per goal (default 20, at least 1).
    pub fn max_auto_turns(mut self, turns: u64) -> Self {
        self.config.max_auto_turns = turns.max(1);
        self
    }

    /// Whether a goal without acceptance criteria gets derived ones from its first audit
    /// (`deriveCriteria`, default true).
    pub fn derive_criteria(mut self, derive: bool) -> Self {
        self.config.derive_criteria = derive;
        self
    }

    /// Whether a goal near one of its limits ends with a wrap-up turn when its own `wrapUp` says
    /// nothing (`wrapUp`, default true).
    pub fn wrap_up(mut self, wrap_up: bool) -> Self {
        self.config.wrap_up = wrap_up;
        self
    }

    /// Delay before a resumed goal is kicked off (`resumeKickoffMs`, default 250 ms).
    pub fn resume_kickoff(mut self, delay: Duration) -> Self {
        self.config.resume_kickoff = delay;
        self
    }

    /// Messages read per evaluation (`messageFetchLimit`, default 40, at least 1).
    pub fn message_fetch_limit(mut self, messages: usize) -> Self {
        self.config.message_limit = messages.max(1);
        self
    }

    /// Timeout of one progress audit (`auditTimeoutMs`, default 60 s).
    pub fn audit_timeout(mut self, timeout: Duration) -> Self {
        self.config.audit_timeout = timeout;
        self
    }

    /// Retries of an evaluation that could not read the session before its goal settles
    /// blocked (`maxRetryAttempts`, default 4, at least 1).
    pub fn max_retry_attempts(mut self, attempts: u32) -> Self {
        self.config.max_retry_attempts = attempts.max(1);
        self
    }

    /// Attempts to post one continuation (`maxDispatchAttempts`, default 3, at least 1).
    pub fn max_dispatch_attempts(mut self, attempts: u32) -> Self {
        self.config.max_dispatch_attempts = attempts.max(1);
        self
    }

    /// How long one host's hold on a goal lasts (`leaseMs`, default 40 s).
    pub fn lease(mut self, lease: Duration) -> Self {
        self.config.lease = lease;
        self
    }

    /// Interval of the sweep for goals no event announces (`sweepIntervalMs`).
    pub fn sweep_interval(mut self, interval: Duration) -> Self {
        self.config.sweep_interval = interval;
        self
    }

    /// Audits in a row without new evidence before the breaker stops a goal (`noProgressTurns`,
    /// default 3); 0 turns the breaker off, as it does in the Node package.
    pub fn no_progress_turns(mut self, turns: u32) -> Self {
        self.config.evidence.no_progress_turns = turns;
        self
    }

    /// Size limits of the evidence digest (`evidence: {…}`).
    pub fn evidence_limits(mut self, limits: crate::config::EvidenceLimits) -> Self {
        self.config.evidence.limits = limits;
        self
    }

    /// Records kept in a goal's audit trail (`evidence.historyMaxRecords`, at least 1).
    pub fn history_max_records(mut self, records: usize) -> Self {
        self.config.evidence.history_max_records = records.max(1);
        self
    }

    /// Provider-limit parks in a row before a goal is blocked (`maxProviderWaits`, default 6,
    /// at least 1).
    pub fn max_provider_waits(mut self, waits: u64) -> Self {
        self.config.provider_limits.max_waits = waits.max(1);
        self
    }

    /// Longest single provider-limit park (`maxProviderWaitMs`, default 6 h).
    pub fn max_provider_wait(mut self, wait: Duration) -> Self {
        self.config.provider_limits.max_wait_ms = wait.as_millis().min(u128::from(u64::MAX)) as u64;
        self
    }

    /// Timeout of every OpenCode call (default 10 s).
    pub fn fetch_timeout(mut self, timeout: Duration) -> Self {
        self.fetch_timeout = timeout;
        self
    }

    /// Every tunable at once (quiet windows, caps, timeouts, lease).
    pub fn config(mut self, config: GoalConfig) -> Self {
        self.config = config;
        self
    }

    /// Every tunable at once, as the Node package's `tunables: {…}` states them (milliseconds
    /// and counts under the same names, an unusable number meaning the default): for a host
    /// that reads its tunables from the same configuration as a Node host would. Replaces every
    /// tunable set before it (the typed setters after it still apply).
    pub fn tunables(mut self, tunables: GoalTunables) -> Self {
        self.config = GoalConfig::from(tunables);
        self
    }

    /// Directories scanned for stranded active goals at start and when OpenCode reconnects.
    pub fn directories(mut self, directories: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.directories = directories.into_iter().map(Into::into).collect();
        self
    }

    /// Shares one context with other runtimes built from it (for example an assist runtime): one
    /// forwarded payload reaches all of them, and they share connection pools, metadata write
    /// slots and dispatch claims. Without it the runtime gets a context of its own.
    pub fn shared_context(mut self, shared: SharedContext) -> Self {
        self.shared = Some(shared);
        self
    }

    /// Whether to find every active goal on the server at start (default true).
    pub fn recover_on_start(mut self, recover: bool) -> Self {
        self.recover_on_start = Some(recover);
        self
    }

    /// Sends OpenCode requests through `transport` instead of HTTP (a simulated OpenCode, a
    /// test double, another channel to the server): every request passes there.
    pub fn transport(mut self, transport: Arc<dyn crate::io::transport::Transport>) -> Self {
        self.transport = Some(transport);
        self
    }

    /// Starts the runtime on `handle` (a multi-thread tokio runtime the application keeps
    /// alive). Returns at once; work happens on the handle's threads.
    pub fn start(self, handle: &tokio::runtime::Handle) -> EmbeddedGoalRuntime {
        let shared = self.shared.unwrap_or_default();
        let endpoint: Arc<dyn Endpoint> = Arc::new(StaticEndpoint::new(self.base_url.trim(), self.headers));
        let mut client = OpenCodeClient::new(&shared, endpoint.clone(), self.fetch_timeout);
        if let Some(transport) = self.transport {
            client = client.with_transport(transport);
        }
        let small_model = self.small_model.unwrap_or_else(|| {
            let explicit = self.small_model_choice.as_ref().and_then(|(p, m)| ModelRef::new(p, m));
            Arc::new(BuiltinSmallModel::new(&shared, client.clone(), explicit))
        });
        let root = self.data_dir.unwrap_or_else(|| resolve_data_dir(None));
        let data_dir = match self.memory_dir {
            Some(memory) => DataDir::in_memory(root, memory),
            None => DataDir::new(root),
        };
        let notifier = self.notifier.unwrap_or_else(|| Arc::new(NoNotifier));
        let recover_on_start = self.recover_on_start.unwrap_or(true);
        let control = ControlContext {
            client: client.clone(),
            small_model: small_model.clone(),
            data_dir: data_dir.root().to_path_buf(),
            small_model_timeout: DEFAULT_CALL_TIMEOUT,
            landing_timeout: DEFAULT_LANDING_TIMEOUT,
            landing_poll: DEFAULT_LANDING_POLL,
            command_timeout: DEFAULT_COMMAND_TIMEOUT,
        };
        let parts = GoalLoopParts {
            shared: shared.clone(),
            client,
            services: Services { small_model, notifier, data_dir },
            config: self.config,
            directories: self.directories,
            recover_on_start,
        };
        EmbeddedGoalRuntime { runtime: GoalLoop::start(parts, handle), shared, control, endpoint }
    }
}

/// A running goal runtime. Cloning shares it; dropping every clone without `stop` leaves
/// in-flight work to finish on the tokio runtime.
#[derive(Clone)]
pub struct EmbeddedGoalRuntime {
    runtime: GoalLoop,
    shared: SharedContext,
    control: ControlContext,
    endpoint: Arc<dyn Endpoint>,
}

impl EmbeddedGoalRuntime {
    /// Forwards one OpenCode event (`{type, properties}`; unwrap the global envelope first).
    /// `directory_hint` is the envelope's directory (`""` for `global`). Returns whether the
    /// event concerns the runtime at all; anything unreadable is ignored.
    pub fn feed(&self, payload: &Value, directory_hint: &str) -> bool {
        let group = self.runtime.group();
        match self.shared.intake().read(&group, payload, directory_hint) {
            Some(event) => {
                // Through the shared intake, so an assist runtime on the same server sees it too.
                self.shared.intake().deliver(&group, &event);
                true
            }
            None => false,
        }
    }

    /// [`feed`](Self::feed) for JSON text (one SSE `data:` line). A global envelope
    /// (`{directory, payload}`) is unwrapped here. Invalid JSON is ignored (`false`).
    pub fn feed_json(&self, text: &str, directory_hint: &str) -> bool {
        let Ok(value) = serde_json::from_str::<Value>(text) else { return false };
        let (payload, directory) = unwrap_envelope(&value, directory_hint);
        self.feed(payload, directory)
    }

    /// Tracked sessions, armed timers, in-flight ticks and counters.
    pub fn snapshot(&self) -> GoalSnapshot {
        self.runtime.snapshot()
    }

    /// Whether the session's goal was last seen active.
    pub fn is_goal_active(&self, session_id: &str) -> bool {
        self.runtime.is_goal_active(session_id)
    }

    /// Finds every active goal on the OpenCode server (a census of its sessions) and looks at
    /// each on an idle session.
    pub fn recover(&self) {
        self.runtime.recover();
    }

    /// Stops: no new work; resolves when in-flight ticks have ended. Idempotent.
    pub async fn stop(&self) {
        self.runtime.stop().await;
    }

    /// What the control functions ([`list_goals`](crate::list_goals),
    /// [`pause_goal`](crate::pause_goal), [`resume_goal`](crate::resume_goal),
    /// [`create_session_goal`](crate::create_session_goal), …) need to act on this runtime's
    /// goals: its OpenCode client (server, headers, connection pool), small model and data
    /// directory, with the control defaults of the Node package. The runtime sees the result of
    /// an action through OpenCode's `session.updated` event, as for any other writer.
    pub fn control_context(&self) -> ControlContext {
        self.control.clone()
    }

    /// A follower of this runtime's OpenCode event stream (the same server and headers, its
    /// context's runtimes as receivers): `.start(handle)` it, and keep the [`EventFollower`](crate::EventFollower)
    /// for as long as events should flow. Every connection makes the runtime find every active
    /// goal on the server, so a runtime it feeds needs no `recover_on_start`.
    pub fn event_follower(&self) -> EventFollowerBuilder {
        EventFollowerBuilder::new(&self.shared, self.endpoint.clone())
    }

    /// The underlying goal loop.
    pub fn runtime(&self) -> &GoalLoop {
        &self.runtime
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_cores_and_every_tunable_reaches_the_config() {
        let plain = GoalRuntimeBuilder::new("http://127.0.0.1:4096");
        assert_eq!(plain.fetch_timeout, crate::io::opencode::DEFAULT_FETCH_TIMEOUT);
        assert_eq!(format!("{:?}", plain.config), format!("{:?}", GoalConfig::default()));
        let ms = Duration::from_millis;
        let tuned = GoalRuntimeBuilder::new("http://127.0.0.1:4096")
            .idle_quiet(ms(1))
            .kickoff_quiet(ms(2))
            .resume_kickoff(ms(3))
            .max_auto_turns(4)
            .message_fetch_limit(5)
            .audit_timeout(ms(6))
            .max_retry_attempts(7)
            .max_dispatch_attempts(8)
            .lease(ms(9))
            .sweep_interval(ms(10))
            .no_progress_turns(11)
            .history_max_records(12)
            .max_provider_waits(13)
            .max_provider_wait(ms(14))
            .derive_criteria(false)
            .fetch_timeout(ms(15));
        let c = &tuned.config;
        assert_eq!((c.idle_quiet, c.kickoff_quiet, c.resume_kickoff, c.audit_timeout), (ms(1), ms(2), ms(3), ms(6)));
        assert_eq!((c.max_auto_turns, c.message_limit, c.max_retry_attempts, c.max_dispatch_attempts), (4, 5, 7, 8));
        assert_eq!((c.lease, c.sweep_interval), (ms(9), ms(10)));
        assert_eq!((c.evidence.no_progress_turns, c.evidence.history_max_records), (11, 12));
        assert_eq!((c.provider_limits.max_waits, c.provider_limits.max_wait_ms), (13, 14));
        assert!(!c.derive_criteria);
        assert_eq!(tuned.fetch_timeout, ms(15));
    }

    #[test]
    fn the_breaker_can_be_switched_off_as_in_the_node_package() {
        let builder = GoalRuntimeBuilder::new("http://127.0.0.1:4096").no_progress_turns(0);
        assert_eq!(builder.config.evidence.no_progress_turns, 0);
    }

    #[test]
    fn tunables_in_the_node_packages_form_reach_the_config() {
        let tunables =
            GoalTunables { idle_quiet_ms: Some(1.0), max_auto_turns: Some(f64::NAN), ..GoalTunables::default() };
        let config = GoalRuntimeBuilder::new("http://127.0.0.1:4096").tunables(tunables).config;
        assert_eq!(config.idle_quiet, Duration::from_millis(1));
        assert_eq!(config.max_auto_turns, GoalConfig::default().max_auto_turns);
    }
}
