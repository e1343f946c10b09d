//! The goal runtime's options (`createSessionGoalRuntime`), converted once into the core's
//! `GoalLoopParts`, and the defaults it reports (`goalRuntimeDefaults`).

use std::sync::Arc;

use napi_derive::napi;

use goal_core::DEFAULT_FETCH_TIMEOUT;
use goal_core::{DataDir, GoalConfig, GoalLoopParts, GoalTunables, NoNotifier, Notifier, Services};

use super::tunables::GoalTunablesInput;
use super::{OpenCodeConnection, RuntimeSettingsOptions};
use crate::callbacks::{self, LoggerCallback, NotifyCallback};
use crate::env_context::EnvContext;
use crate::types::small_model::SmallModelOptions;

/// Options of `createSessionGoalRuntime`: how to reach OpenCode (`openCode`), where the data
/// lives (`settings`), the small model (`smallModel`), the host's callbacks, and the tunables,
/// nested in `tunables`. The package entry also takes OpenChamber's flat names
/// (`buildOpenCodeUrl`, `getOpenCodeAuthHeaders`, `getSmallModelService`, `idleQuietMs`,
/// `kickoffQuietMs`, `maxAutoTurns`, `deriveCriteria`, …) and moves them into these nested
/// objects (`lib/drop-in.js`).
#[napi(object, object_to_js = false)]
pub struct SessionGoalRuntimeOptions {
    /// How to reach OpenCode.
    pub open_code: Option<OpenCodeConnection>,
    /// Where OpenChamber's data lives: `settings.json` (its switches, read at fire time) and
    /// the objective files `goals/<sessionId>.md`.
    pub settings: Option<RuntimeSettingsOptions>,
    /// The small model the audits run on.
    pub small_model: Option<SmallModelOptions>,
    /// Called when a goal settles: `{sessionId, directory, status, goal, title, body, tag, kind, cause}`.
    #[napi(ts_type = "(event: GoalNotification) => unknown")]
    pub emit_goal_notification: Option<NotifyCallback>,
    /// Receives log lines `(level, message)`; messages never contain prompts, model output or credentials.
    #[napi(ts_type = "(level: string, message: string) => unknown")]
    pub logger: Option<LoggerCallback>,
    /// The timings, caps and limits (`goalRuntimeDefaults()` lists their defaults).
    pub tunables: Option<GoalTunablesInput>,
    /// Directories listed for active goals when the OpenCode server cannot list its sessions across
    /// directories (an older OpenCode); otherwise every directory is found from the server itself.
    pub directories: Option<Vec<String>>,
    /// Find every active goal on the server at start, and look at each (default true).
    pub recover_on_start: Option<bool>,
}

impl SessionGoalRuntimeOptions {
    /// The parts of the core's goal runtime, every unset or unusable option at `GoalConfig`'s default,
    /// and the host logger to register. Fails only without an OpenCode location.
    pub(crate) fn resolve(
        self,
        context: &EnvContext,
    ) -> std::result::Result<(GoalLoopParts, Option<LoggerCallback>), goal_core::GoalError> {
        let client = OpenCodeConnection::client(self.open_code, context, DEFAULT_FETCH_TIMEOUT)?;
        let data_dir = DataDir::new(RuntimeSettingsOptions::data_dir(self.settings, None));
        let small_model = SmallModelOptions::model(self.small_model, context, &client);
        let notifier: Arc<dyn Notifier> = match self.emit_goal_notification {
            Some(callback) => Arc::new(callbacks::HostNotifier::new(callback)),
            None => Arc::new(NoNotifier),
        };
        let config = GoalConfig::from(self.tunables.map(GoalTunables::from).unwrap_or_default());
        let directories = self.directories.unwrap_or_default();
        let recover_on_start = self.recover_on_start.unwrap_or(true);
        let parts = GoalLoopParts {
            client,
            services: Services { small_model, notifier, data_dir },
            config,
            directories,
            recover_on_start,
            shared: context.shared().clone(),
        };
        Ok((parts, self.logger))
    }
}

/// The defaults of the goal runtime's `tunables` and of `openCode.fetchTimeoutMs`, in the units and
/// under the names of those options (the one place they are defined is the core's
/// `GoalConfig`): for help texts and hosts that show them. `tunables.deriveCriteria` defaults to
/// true and each `tunables.evidence` size to the value its documentation states.
#[napi(object, object_from_js = false)]
pub struct GoalRuntimeDefaults {
    /// Quiet window after `idle` before a goal is evaluated, ms (`tunables.idleQuietMs`).
    pub idle_quiet_ms: f64,
    /// Delay before a fresh goal's first turn, ms (`tunables.kickoffQuietMs`).
    pub kickoff_quiet_ms: f64,
    /// Delay before a resumed goal's next turn, ms (`tunables.resumeKickoffMs`).
    pub resume_kickoff_ms: f64,
    /// Continuations per goal (`tunables.maxAutoTurns`).
    pub max_auto_turns: f64,
    /// Timeout of one OpenCode call, ms (`openCode.fetchTimeoutMs`).
    pub fetch_timeout_ms: f64,
    /// Messages read per evaluation (`tunables.messageFetchLimit`).
    pub message_fetch_limit: f64,
    /// Timeout of one small-model call, ms (`tunables.auditTimeoutMs`).
    pub audit_timeout_ms: f64,
    /// Retries of an unreadable session (`tunables.maxRetryAttempts`).
    pub max_retry_attempts: f64,
    /// Attempts to post one continuation (`tunables.maxDispatchAttempts`).
    pub max_dispatch_attempts: f64,
    /// Lease of one evaluation, ms (`tunables.leaseMs`).
    pub lease_ms: f64,
    /// Interval of the directory sweep, ms (`tunables.sweepIntervalMs`).
    pub sweep_interval_ms: f64,
    /// No-progress turns before the breaker settles a goal (`tunables.noProgressTurns`).
    pub no_progress_turns: f64,
    /// Longest single provider-limit park, ms (`tunables.maxProviderWaitMs`).
    pub max_provider_wait_ms: f64,
    /// Provider-limit parks in a row before a goal settles (`tunables.maxProviderWaits`).
    pub max_provider_waits: f64,
    /// One reviewer turn before it is aborted and asked once more, ms (`tunables.reviewTimeoutMs`).
    pub review_timeout_ms: f64,
    /// Whether a goal without criteria gets them from its first audit (`tunables.deriveCriteria`).
    pub derive_criteria: bool,
    /// Whether a goal near one of its limits ends with a wrap-up turn (`tunables.wrapUp`).
    pub wrap_up: bool,
}

/// The goal runtime's option defaults (`createSessionGoalRuntime` uses exactly these).
#[napi(catch_unwind)]
pub fn goal_runtime_defaults() -> GoalRuntimeDefaults {
    let defaults = GoalConfig::default();
    let ms = |d: std::time::Duration| d.as_millis() as f64;
    GoalRuntimeDefaults {
        idle_quiet_ms: ms(defaults.idle_quiet),
        kickoff_quiet_ms: ms(defaults.kickoff_quiet),
        resume_kickoff_ms: ms(defaults.resume_kickoff),
        max_auto_turns: defaults.max_auto_turns as f64,
        fetch_timeout_ms: ms(DEFAULT_FETCH_TIMEOUT),
        message_fetch_limit: defaults.message_limit as f64,
        audit_timeout_ms: ms(defaults.audit_timeout),
        max_retry_attempts: defaults.max_retry_attempts as f64,
        max_dispatch_attempts: defaults.max_dispatch_attempts as f64,
        lease_ms: ms(defaults.lease),
        sweep_interval_ms: ms(defaults.sweep_interval),
        no_progress_turns: defaults.evidence.no_progress_turns as f64,
        max_provider_wait_ms: defaults.provider_limits.max_wait_ms as f64,
        max_provider_waits: defaults.provider_limits.max_waits as f64,
        review_timeout_ms: ms(defaults.review_timeout),
        derive_criteria: defaults.derive_criteria,
        wrap_up: defaults.wrap_up,
    }
}
