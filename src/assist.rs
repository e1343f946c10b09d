//! Binding of the session assist runtime: options, the runtime object, its snapshot.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use goal_core::DataDir;
use goal_core::SessionSnapshot;
use goal_core::DEFAULT_ASSIST_FETCH_TIMEOUT;
use goal_core::{AssistConfig, AssistRuntime, AssistRuntimeSettings, AssistSnapshot, AssistTunables};

use crate::callbacks::LoggerCallback;
use crate::env_context::{EnvContext, EnvRuntime};
use crate::options::tunables::AssistTunablesInput;
use crate::options::OpenCodeConnection;
use crate::types::small_model::SmallModelOptions;
use crate::types::snapshot::snapshot_object;
use crate::{install_logger, payload, RuntimeSettingsOptions, SessionState};

/// Options of `createSessionAssistRuntime`: how to reach OpenCode (`openCode`), where the
/// settings file is, the small model (`smallModel`), and the tunables, nested in `tunables`. The
/// package entry also takes OpenChamber's flat names (`buildOpenCodeUrl`,
/// `getOpenCodeAuthHeaders`, `getSmallModelService`, `quietMs`, `messageFetchLimit`,
/// `modelTimeoutMs`) and moves them into these nested objects (`lib/drop-in.js`).
#[napi(object, object_to_js = false)]
pub struct SessionAssistRuntimeOptions {
    /// How to reach OpenCode (`fetchTimeoutMs` defaults to 5000 ms here).
    pub open_code: Option<OpenCodeConnection>,
    /// Settings location; `settings.json` is read at fire time for `sessionAssistEnabled`,
    /// `sessionRecapEnabled` and `sessionSuggestionEnabled` (all default on).
    pub settings: Option<RuntimeSettingsOptions>,
    /// The small model the recap and suggestion run on.
    pub small_model: Option<SmallModelOptions>,
    /// Receives log lines `(level, message)`; messages never contain prompts, model output or credentials.
    #[napi(ts_type = "(level: string, message: string) => unknown")]
    pub logger: Option<LoggerCallback>,
    /// The quiet window, message count and model timeout.
    pub tunables: Option<AssistTunablesInput>,
}

/// Counters and tracked sessions of the assist runtime.
#[napi(object)]
pub struct AssistRuntimeSnapshot {
    /// Sessions with an armed timer or a running generation.
    pub sessions: Vec<SessionState>,
    /// Timers armed.
    pub armed_timers: u32,
    /// Generations running now.
    pub in_flight: u32,
    /// Generations started (a quiet window ran out).
    pub runs: f64,
    /// Small-model calls made.
    pub model_calls: f64,
    /// Recap/suggestion payloads written to session metadata.
    pub written: f64,
    /// Results dropped because the conversation moved on while the model ran.
    pub dropped_stale: f64,
    /// Idles that arrived during a generation and queued one more.
    pub follow_ups: f64,
    /// Runs that panicked (caught; session state reset).
    pub panics: f64,
    /// Runs the watchdog cancelled (past their bound; logged at `warn`).
    pub ticks_timed_out: f64,
    /// `stop()` was called.
    pub stopped: bool,
}

impl From<SessionSnapshot> for SessionState {
    fn from(s: SessionSnapshot) -> Self {
        SessionState {
            session_id: s.session_id,
            directory: s.directory,
            due_in_ms: s.due_in_ms.map(|ms| ms as f64),
            ticking: s.ticking,
            follow_up: s.follow_up,
            attempt: s.attempt,
        }
    }
}

impl From<AssistSnapshot> for AssistRuntimeSnapshot {
    fn from(snapshot: AssistSnapshot) -> Self {
        snapshot_object!(AssistRuntimeSnapshot from snapshot.scheduler, runs;
            model_calls: snapshot.model_calls as f64,
            written: snapshot.written as f64,
            dropped_stale: snapshot.dropped_stale as f64,
            stopped: snapshot.stopped,
        )
    }
}

/// The session assist runtime: after a session has been quiet, writes a short recap of the
/// agent's last reply and one suggested follow-up to `metadata.openchamber.assist`.
#[napi]
pub struct SessionAssistRuntime {
    inner: Arc<AssistRuntime>,
    /// The JavaScript environment the runtime belongs to (its intake is that environment's).
    context: Arc<EnvContext>,
}

impl SessionAssistRuntimeOptions {
    /// The core's assist settings, every unset or unusable option at `AssistConfig`'s default,
    /// and the host logger to register. Fails only without an OpenCode location.
    fn resolve(
        self,
        context: &EnvContext,
    ) -> std::result::Result<(AssistRuntimeSettings, Option<LoggerCallback>), goal_core::GoalError> {
        let client = OpenCodeConnection::client(self.open_code, context, DEFAULT_ASSIST_FETCH_TIMEOUT)?;
        let data_dir = DataDir::new(RuntimeSettingsOptions::data_dir(self.settings, None));
        let small_model = SmallModelOptions::model(self.small_model, context, &client);
        let config = AssistConfig::from(self.tunables.map(AssistTunables::from).unwrap_or_default());
        let shared = context.shared().clone();
        Ok((AssistRuntimeSettings { client, small_model, data_dir, config, shared }, self.logger))
    }
}

/// Creates the assist runtime. It shares the event intake, the OpenCode connection pool and
/// the per-session metadata write queue with every goal runtime of its JavaScript environment
/// (the main thread or one Worker), and stops when the environment ends.
#[napi(catch_unwind)]
pub fn create_session_assist_runtime(env: Env, options: SessionAssistRuntimeOptions) -> Result<SessionAssistRuntime> {
    let context = EnvContext::of(&env)?;
    let (settings, logger) = options.resolve(&context).map_err(|failure| crate::failure::thrown(&env, failure))?;
    let log_span = install_logger(&context, logger);
    let inner = Arc::new(log_span.in_scope(|| AssistRuntime::start(settings, context.runtime())));
    context.adopt(Arc::downgrade(&inner) as std::sync::Weak<dyn EnvRuntime>);
    Ok(SessionAssistRuntime { inner, context })
}

payload::intake_methods!(SessionAssistRuntime);

#[napi]
impl SessionAssistRuntime {
    /// Tracked sessions, armed timers, running generations and counters.
    #[napi(catch_unwind)]
    pub fn snapshot(&self) -> AssistRuntimeSnapshot {
        self.inner.snapshot().into()
    }

    /// Stops the runtime. Idempotent; resolves when running generations have ended (one still
    /// waiting for the model never writes). The process is never kept alive by the runtime.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn stop<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        let inner = self.inner.clone();
        crate::failure::resolve(env, async move { inner.stop().await })
    }
}
