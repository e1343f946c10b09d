//! The thin napi binding: the goal runtime object here; options in `options/`, a goal's settings
//! and record in `goal_settings.rs`, the values handed back in `types/`, goal control in
//! `control/`, host callbacks in `callbacks.rs`, the follower of OpenCode's event stream in
//! `event_follower.rs`.
//! No decisions live here; `goal-core` has them all.

#![deny(clippy::all)]
// napi-derive leaves out the registration of exported items in test builds, so there they would
// all read as unused; real builds still report dead code.
#![cfg_attr(test, allow(dead_code))]

mod assist;
mod callbacks;
mod control;
mod env_context;
mod event_follower;
mod failure;
mod goal_reads;
mod goal_settings;
mod host_return;
mod intro;
mod js_helpers;
mod logging;
mod metadata;
mod options;
mod payload;
mod types;
mod validate;

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use tracing::Instrument;

use goal_core::GoalLoop;
use goal_core::{BoxFuture, ExplainReport, HttpError};

use callbacks::LoggerCallback;
use env_context::{EnvContext, EnvRuntime};
pub use event_follower::{EventFollower, EventFollowerOptions};
pub use options::goal_runtime::{GoalRuntimeDefaults, SessionGoalRuntimeOptions};
pub use options::tunables::{AssistTunablesInput, EvidenceOptions, GoalTunablesInput};
pub use options::{OpenCodeConnection, RuntimeSettingsOptions};
pub use types::answers::{
    GoalCriterionGrade, GoalDigestSummary, GoalFailingCommand, GoalHistoryRecord, GoalTodoCounts,
};
pub use types::explanation::*;
pub use types::goal_parts::{GoalActiveHours, GoalCause, GoalCheck, GoalCriterion};
pub use types::notification::GoalNotification;
pub use types::small_model::{SmallModelFailure, SmallModelOptions, SmallModelRequest, SmallModelResult};
pub use types::snapshot::{RuntimeSnapshot, SessionState};
pub use types::stream_status::EventStreamStatus;

/// The session goal runtime: keeps sessions with an active goal working until the auditor
/// verifies the objective, the budget or the turn cap is reached, or the user stops it.
#[napi]
pub struct SessionGoalRuntime {
    inner: Arc<GoalLoop>,
    /// The JavaScript environment the runtime belongs to (its intake is that environment's).
    context: Arc<EnvContext>,
    /// The runtime's log identity (its lines go to its own logger only).
    log_span: tracing::Span,
}

/// Gives a new runtime of `context`'s environment its log identity (registering the host's
/// logger, if any, for that runtime alone) and installs the log forwarding once per process.
/// Start the runtime inside the returned span: its lines then reach its own logger only.
pub(crate) fn install_logger(context: &EnvContext, logger: Option<LoggerCallback>) -> tracing::Span {
    logging::init();
    logging::runtime_span(context.id(), logger)
}

/// Creates the goal runtime. It runs on its own threads; `processPayload` only queues work. It
/// belongs to the calling JavaScript environment (the main thread or one Worker): it hears only
/// payloads forwarded in that environment and stops when the environment ends.
#[napi(catch_unwind)]
pub fn create_session_goal_runtime(env: Env, options: SessionGoalRuntimeOptions) -> Result<SessionGoalRuntime> {
    let context = EnvContext::of(&env)?;
    let (parts, logger) = options.resolve(&context).map_err(|failure| failure::thrown(&env, failure))?;
    let log_span = install_logger(&context, logger);
    let inner = Arc::new(log_span.in_scope(|| GoalLoop::start(parts, context.runtime())));
    context.adopt(Arc::downgrade(&inner) as std::sync::Weak<dyn EnvRuntime>);
    Ok(SessionGoalRuntime { inner, context, log_span })
}

payload::intake_methods!(SessionGoalRuntime);
goal_reads::goal_read_methods!(SessionGoalRuntime);

impl goal_reads::GoalReads for SessionGoalRuntime {
    fn trail(&self, session_id: String, limit: Option<usize>) -> BoxFuture<'static, Vec<serde_json::Value>> {
        let (inner, span) = (self.inner.clone(), self.log_span.clone());
        Box::pin(async move { inner.history(&session_id, limit).instrument(span).await })
    }

    /// The runtime's own explanation: its lease judged against its holder id.
    fn report(
        &self,
        session_id: String,
        directory: String,
    ) -> BoxFuture<'static, std::result::Result<ExplainReport, HttpError>> {
        let (inner, span) = (self.inner.clone(), self.log_span.clone());
        Box::pin(async move { inner.explain(&session_id, &directory).instrument(span).await })
    }
}

#[napi]
impl SessionGoalRuntime {
    /// Whether the session's goal was last seen active (for ready-notification suppression).
    #[napi(catch_unwind)]
    pub fn is_goal_active(&self, session_id: String) -> bool {
        self.inner.is_goal_active(&session_id)
    }

    /// Tracked sessions, armed timers, in-flight ticks and counters.
    #[napi(catch_unwind)]
    pub fn snapshot(&self) -> RuntimeSnapshot {
        RuntimeSnapshot::from(self.inner.snapshot())
    }

    /// Finds every active goal on the OpenCode server (a census of its sessions) and looks at each on an idle session.
    #[napi(catch_unwind)]
    pub fn recover(&self) {
        self.inner.recover();
    }

    /// Stops the runtime. Idempotent; resolves when in-flight work has ended. The process is
    /// never kept alive by the runtime, stopped or not.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn stop<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        let inner = self.inner.clone();
        let span = self.log_span.clone();
        failure::resolve(env, async move { inner.stop().instrument(span).await })
    }
}
