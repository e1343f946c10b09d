//! The thin napi binding: option parsing, host callbacks, the runtime objects, error mapping.
//! No decisions live here; `goal-core` has them all.

#![deny(clippy::all)]
// napi-derive leaves out the registration of exported items in test builds, so there they would
// all read as unused; real builds still report dead code.
#![cfg_attr(test, allow(dead_code))]

mod assist;
mod callbacks;
mod control;
mod env_context;
mod goal_settings;
mod intro;
mod js_helpers;
mod logging;
mod metadata;
mod nullable;
mod options;
mod payload;
mod validate;

use std::collections::HashMap;
use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::threadsafe_function::UnknownReturnValue;
use napi_derive::napi;

use crate::nullable::Nullable;
use tracing::Instrument;

use goal_core::GoalConfig;
use goal_core::{BuiltinSmallModel, ModelRef};
use goal_core::{DataDir, NoNotifier, Notifier, Services, SmallModel};
use goal_core::{GoalRuntime, GoalRuntimeSettings};
use goal_core::{OpenCodeClient, DEFAULT_FETCH_TIMEOUT};

use callbacks::{HeadersCallback, LoggerCallback, ModelCallback, NotifyCallback, UrlCallback};
use env_context::{EnvContext, EnvRuntime};
use options::{connection_of, count, millis};

/// Where OpenCode listens (native-first form).
#[napi(object)]
pub struct OpenCodeTarget {
    /// Base URL, e.g. `http://127.0.0.1:4096`.
    pub base_url: String,
    /// Headers sent with every request (e.g. `authorization`). Never logged.
    pub headers: Option<HashMap<String, String>>,
}

/// Where OpenChamber-style settings and objective files live.
#[napi(object)]
pub struct RuntimeSettingsOptions {
    /// Data directory (default: `OPENCHAMBER_DATA_DIR`, else `~/.config/openchamber`). The
    /// runtime reads `settings.json` and `goals/<sessionId>.md` from it at fire time.
    pub data_dir: Option<String>,
}

/// Options of `createSessionGoalRuntime`. Accepts OpenChamber's names (`buildOpenCodeUrl`,
/// `getOpenCodeAuthHeaders`, `getSmallModelService`, `emitGoalNotification`, `idleQuietMs`,
/// `kickoffQuietMs`, `maxAutoTurns`) and a native-first form (`openCode`, `settings`, every
/// tunable, `generateSmallModelText`, `logger`).
#[napi(object, object_to_js = false)]
pub struct SessionGoalRuntimeOptions {
    /// Native-first: a fixed OpenCode base URL and headers.
    pub open_code: Option<OpenCodeTarget>,
    /// Settings location.
    pub settings: Option<RuntimeSettingsOptions>,
    /// OpenChamber: builds the URL of an OpenCode API path (called per request, so a host that
    /// restarts OpenCode on another port is followed).
    #[napi(ts_type = "(path: string, prefix: string) => string")]
    pub build_open_code_url: Option<UrlCallback>,
    /// OpenChamber: returns the headers for OpenCode (may be async).
    #[napi(ts_type = "() => Record<string, string> | Promise<Record<string, string>>")]
    pub get_open_code_auth_headers: Option<HeadersCallback>,
    /// OpenChamber: resolves to a service with `generateSmallModelText(request)`. The package
    /// entry adapts it to `generateSmallModelText`; errors with `statusCode` 404 are silent.
    #[napi(
        ts_type = "() => Promise<{ generateSmallModelText(request: SmallModelRequest): Promise<SmallModelResult> } | null | undefined>"
    )]
    pub get_small_model_service: Option<UnknownReturnValue>,
    /// The built-in small model's choice, overriding OpenCode's `small_model` and the family scan.
    /// Used only when the host passes no small-model service.
    pub small_model: Option<SmallModelChoice>,
    /// Native-first small model: resolves to `{text, providerID, modelID}` or `{error: {statusCode?, code?}}`.
    /// A rejection or throw counts as "unavailable".
    #[napi(ts_type = "(request: SmallModelRequest) => Promise<SmallModelResult>")]
    pub generate_small_model_text: Option<ModelCallback>,
    /// Called when a goal settles: `{sessionId, directory, status, goal, title, body, tag, kind}`.
    #[napi(ts_type = "(event: GoalNotification) => unknown")]
    pub emit_goal_notification: Option<NotifyCallback>,
    /// Receives log lines `(level, message)`; messages never contain prompts, model output or credentials.
    #[napi(ts_type = "(level: string, message: string) => unknown")]
    pub logger: Option<LoggerCallback>,
    /// Quiet window after `idle` (default 15000 ms).
    pub idle_quiet_ms: Option<f64>,
    /// Whether a goal without acceptance criteria gets 2 to 6 derived ones from its first audit,
    /// in the same audit call (default true; `false` turns derivation off).
    pub derive_criteria: Option<bool>,
    /// Kickoff delay for a fresh goal on an idle session (default 3000 ms).
    pub kickoff_quiet_ms: Option<f64>,
    /// Kickoff delay after an explicit resume (default 250 ms).
    pub resume_kickoff_ms: Option<f64>,
    /// Auto-continuation cap per goal (default 20); printed in the continuation prompt.
    pub max_auto_turns: Option<f64>,
    /// Timeout of every OpenCode call (default 10000 ms).
    pub fetch_timeout_ms: Option<f64>,
    /// Messages fetched per tick (default 40).
    pub message_fetch_limit: Option<f64>,
    /// Small-model call timeout (default 60000 ms).
    pub audit_timeout_ms: Option<f64>,
    /// Retries of an unreadable session before its goal settles blocked (default 4: after the
    /// first read, four more at quiet × 1, 2, 4 and 8; the last of them settles the goal).
    pub max_retry_attempts: Option<f64>,
    /// Continuation dispatch attempts before settling blocked (default 3).
    pub max_dispatch_attempts: Option<f64>,
    /// How long a tick's lease keeps other hosts' runtimes off a session (default 120000 ms).
    pub lease_ms: Option<f64>,
    /// Directories scanned for active goals at start and when OpenCode reconnects.
    pub directories: Option<Vec<String>>,
    /// Scan the directories at start (default true when directories are given).
    pub recover_on_start: Option<bool>,
    /// How often (ms) the known directories (given, or seen in events) are swept for active goals
    /// on idle sessions with no pending wake-up, e.g. after an idle event the host never
    /// forwarded: one `GET /session` list and one status read per directory (default 300000;
    /// 0 disables).
    pub sweep_interval_ms: Option<f64>,
    /// Consecutive turns with no file change, no successful tool call and near-identical replies
    /// that settle a goal `blocked` (`statusReason: 'no progress'`), whatever the auditor says.
    /// Default 3; 0 turns the breaker off.
    pub no_progress_turns: Option<f64>,
    /// Size limits of the evidence digest sent with each audit, and of the audit trail.
    pub evidence: Option<EvidenceOptions>,
    /// Longest single wait (ms) of a goal parked on a provider's rate or usage limit, whatever
    /// reset time the provider states (default 21600000, 6 hours).
    pub max_provider_wait_ms: Option<f64>,
    /// Parks in a row, with no turn that produced output, before a goal that keeps hitting a
    /// provider limit settles `blocked` with cause `providerQuota` (default 6).
    pub max_provider_waits: Option<f64>,
}

/// Size limits of the evidence digest (tool calls, exit codes, file changes, todos) that each
/// audit carries, and of the audit trail (`goals/<sessionId>.history.jsonl`).
#[napi(object)]
pub struct EvidenceOptions {
    /// Tool calls listed per audit; the newest are kept (default 40).
    pub max_tool_calls: Option<f64>,
    /// Characters of a shell command (default 300).
    pub max_command_chars: Option<f64>,
    /// Last lines of a failing command's output (default 12).
    pub output_tail_lines: Option<f64>,
    /// Characters of a failing command's output (default 1500).
    pub output_tail_chars: Option<f64>,
    /// Files of the session diff listed (default 40).
    pub max_files: Option<f64>,
    /// Todos listed (default 30).
    pub max_todos: Option<f64>,
    /// Characters of the whole digest (default 12000).
    pub max_digest_chars: Option<f64>,
    /// Records kept in a goal's audit trail; the oldest are dropped (default 500).
    pub history_max_records: Option<f64>,
}

/// One record of a goal's audit trail (`history(sessionId)`). Written for every verdict and
/// for every decision the runtime made without one (time budget, working hours, breaker).
/// Built from the stored record field by field ([`history_records`]), so what JavaScript gets
/// is exactly what this type (and index.d.ts) says.
#[napi(object, object_from_js = false)]
#[derive(Default, serde::Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct GoalHistoryRecord {
    /// When (ms since epoch).
    pub time: f64,
    /// Continuations sent before this decision.
    pub turn: f64,
    /// The assistant message judged.
    pub tail: String,
    /// The auditor's verdict (`null`: no audit, or the audit failed).
    #[napi(ts_type = "'continue' | 'complete' | 'blocked' | null")]
    pub verdict: Option<String>,
    /// The note written with the decision.
    pub note: Option<String>,
    /// What the runtime did: `continue`, `continue (complete overridden)`, a settled status, or `wait`.
    pub action: String,
    /// The status reason written, when the goal settled or waits.
    pub reason: Option<String>,
    /// Counts from the evidence digest: tool calls, successful ones, failing commands, files
    /// changed, additions, deletions, todos.
    #[napi(ts_type = "Record<string, unknown>")]
    pub digest: Option<serde_json::Value>,
    /// The recorded facts the auditor said it relied on.
    pub evidence: Option<Vec<String>>,
    /// What the auditor could not verify.
    pub missing: Option<Vec<String>>,
    /// Tokens the audit cost, when the small model reported its usage.
    pub audit_tokens: Option<f64>,
    /// `provider/model` of the auditor.
    pub auditor: Option<String>,
    /// Active time so far (ms).
    pub active_ms: f64,
    /// The goal's time budget (ms), when set.
    pub time_budget_ms: Option<f64>,
    /// For an acceptance check run (`action: "check"`): the run.
    #[napi(
        ts_type = "{ index: number; command: string; result: 'passed' | 'failed' | 'timedOut' | 'aborted' | 'unknown'; exitStatus: number | null; durationMs: number; outputTail: string; messageID: string; reused: boolean }"
    )]
    pub check: Option<serde_json::Value>,
    /// For a check run: how many checks the round has.
    pub checks: Option<f64>,
    /// For an audit that graded criteria: each criterion's id, source, state and cited evidence ids.
    #[napi(
        ts_type = "Array<{ id: string; source: 'user' | 'derived'; state: 'unmet' | 'met' | 'unclear'; evidence: string[] }>"
    )]
    pub criteria: Option<serde_json::Value>,
    /// For a provider-limit park (`action: "park"`): when the wait ends (ms since epoch).
    pub until: Option<f64>,
    /// For a park: how many parks in a row this is.
    pub park: Option<f64>,
    /// For a park: the cause's detail (the provider, the HTTP status).
    pub detail: Option<String>,
}

/// What `explain(sessionId)` resolves to (and `session-goal doctor --json` prints): why the
/// session's goal is where it is. `null` where a part is unknown. Built from the core's report
/// field by field ([`explanation_of`]).
#[napi(object, object_from_js = false)]
#[derive(Default, serde::Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct GoalExplanation {
    /// The session asked about.
    pub session_id: String,
    /// The goal's id (`null`: no goal).
    #[napi(ts_type = "string | null")]
    pub goal_id: Nullable<String>,
    /// The goal's status (`null`: no goal).
    #[napi(ts_type = "'active' | 'paused' | 'blocked' | 'budgetLimited' | 'complete' | null")]
    pub status: Nullable<String>,
    /// The human reason beside the status.
    #[napi(ts_type = "string | null")]
    pub status_reason: Nullable<String>,
    /// The typed cause `{code, since, detail?, until?, fix?}`: stored, or for an active goal what
    /// holds it now (a pending request, working hours, another host's lease).
    #[napi(ts_type = "{ code: string; since: number; detail?: string; until?: number; fix?: string } | null")]
    pub cause: Nullable<serde_json::Value>,
    /// What `doctor --fix` would apply.
    #[napi(
        ts_type = "'none' | 'resume' | 'resumeWithTokenBudget' | 'resumeWithTimeBudget' | 'resumeWithCostBudget' | null"
    )]
    pub fix_action: Nullable<String>,
    /// When the goal goes on by itself (ms since epoch), for a goal that waits.
    #[napi(ts_type = "number | null")]
    pub next_wake_at: Nullable<f64>,
    /// The multi-host lease.
    #[napi(ts_type = "{ holder: string; expiresAt: number } | null")]
    pub lease: Nullable<serde_json::Value>,
    /// Open permission and question requests of the session.
    #[napi(ts_type = "Array<{ kind: 'permission' | 'question'; id: string; permission?: string }>")]
    pub pending: serde_json::Value,
    /// The newest audited decision of the trail.
    #[napi(ts_type = "Record<string, unknown> | null")]
    pub last_audit: Nullable<serde_json::Value>,
    /// The check runs of the newest round.
    #[napi(ts_type = "Array<Record<string, unknown>>")]
    pub last_checks: serde_json::Value,
    /// The goal's acceptance checks.
    #[napi(ts_type = "Array<{ command: string; timeoutMs?: number }> | null")]
    pub checks: Nullable<serde_json::Value>,
    /// The goal's cost in US dollars: its budget (`null` without one) and what it spent.
    #[napi(ts_type = "{ budget: number | null; used: number } | null")]
    pub cost: Nullable<serde_json::Value>,
    /// The goal's acceptance criteria with their latest grades.
    #[napi(
        ts_type = "Array<{ id: string; text: string; source: 'user' | 'derived'; state: 'unmet' | 'met' | 'unclear'; evidence?: string[]; since?: number }> | null"
    )]
    pub criteria: Nullable<serde_json::Value>,
    /// Inconsistencies worth a human look: `sessionMissing`, `noGoal`, `goalUnreadable`,
    /// `objectiveFileMissing`, `inherited`, `checksUnreadable`, `providerReportsNoCost`.
    #[napi(ts_type = "Array<{ code: string; message: string }>")]
    pub findings: serde_json::Value,
}

/// The trail's records as [`GoalHistoryRecord`]s; a record that does not have the record's shape
/// (a hand-edited line) is left out rather than failing the whole read.
pub(crate) fn history_records(records: Vec<serde_json::Value>) -> Vec<GoalHistoryRecord> {
    records.into_iter().filter_map(|record| serde_json::from_value(record).ok()).collect()
}

/// The core's explain report as a [`GoalExplanation`].
pub(crate) fn explanation_of(report: serde_json::Value) -> std::result::Result<GoalExplanation, goal_core::GoalError> {
    serde_json::from_value(report).map_err(|error| {
        goal_core::GoalError::new(goal_core::ErrorKind::Local, format!("explain: unreadable report ({error})"))
    })
}

fn evidence_config(no_progress_turns: Option<f64>, options: Option<&EvidenceOptions>) -> goal_core::EvidenceConfig {
    let defaults = goal_core::EvidenceConfig::default();
    let limits = &defaults.limits;
    let pick = |value: Option<f64>, default: usize| count(value, default as u64, 1) as usize;
    let limits = match options {
        Some(o) => goal_core::EvidenceLimits {
            max_tool_calls: pick(o.max_tool_calls, limits.max_tool_calls),
            max_command_chars: pick(o.max_command_chars, limits.max_command_chars),
            output_tail_lines: pick(o.output_tail_lines, limits.output_tail_lines),
            output_tail_chars: pick(o.output_tail_chars, limits.output_tail_chars),
            max_files: pick(o.max_files, limits.max_files),
            max_todos: pick(o.max_todos, limits.max_todos),
            max_digest_chars: count(o.max_digest_chars, limits.max_digest_chars as u64, 500) as usize,
        },
        None => limits.clone(),
    };
    goal_core::EvidenceConfig {
        limits,
        no_progress_turns: count(no_progress_turns, defaults.no_progress_turns as u64, 0).min(10_000) as u32,
        history_max_records: options
            .map(|o| count(o.history_max_records, defaults.history_max_records as u64, 1) as usize)
            .unwrap_or(defaults.history_max_records),
    }
}

/// A `provider/model` pair for the built-in small model (`smallModel` option).
#[napi(object)]
pub struct SmallModelChoice {
    /// Provider id as OpenCode names it (`anthropic`, `openai`, a config provider…).
    #[napi(js_name = "providerID")]
    pub provider_id: String,
    /// Model id within that provider.
    #[napi(js_name = "modelID")]
    pub model_id: String,
}

/// The host's small-model service when it passed one, else the built-in small model: the host's
/// explicit choice, else OpenCode's `small_model`, else a small model of the session's own
/// provider (see `goal_core::small_model`).
pub(crate) fn small_model_for(
    context: &EnvContext,
    host: Option<ModelCallback>,
    client: &OpenCodeClient,
    choice: Option<&SmallModelChoice>,
) -> Arc<dyn SmallModel> {
    if let Some(callback) = host {
        return Arc::new(callbacks::HostSmallModel::new(callback));
    }
    let explicit = choice.and_then(|c| ModelRef::new(&c.provider_id, &c.model_id));
    Arc::new(BuiltinSmallModel::new(context.shared(), client.clone(), explicit))
}

/// The request the runtime sends to a small-model service (OpenChamber's
/// `generateSmallModelText` argument).
#[napi(object)]
pub struct SmallModelRequest {
    /// User prompt.
    pub prompt: String,
    /// System prompt.
    pub system: Option<String>,
    /// Project directory of the session.
    pub directory: Option<String>,
    /// The session's provider.
    #[napi(js_name = "preferredProviderID")]
    pub preferred_provider_id: Option<String>,
    /// The session's model.
    #[napi(js_name = "preferredModelID")]
    pub preferred_model_id: Option<String>,
    /// Never send conversation content to another provider (always true for goal and assist).
    pub restrict_to_preferred_provider: Option<bool>,
    /// Output token cap.
    pub max_output_tokens: Option<u32>,
    /// Per-call timeout in ms.
    pub timeout_ms: Option<f64>,
}

/// A small-model answer, or an error as a value (`statusCode` 404 = no small model, silent).
#[napi(object)]
pub struct SmallModelResult {
    /// Output text.
    pub text: Option<String>,
    /// Provider that answered.
    #[napi(js_name = "providerID")]
    pub provider_id: Option<String>,
    /// Model that answered.
    #[napi(js_name = "modelID")]
    pub model_id: Option<String>,
    /// Set instead of `text` when the call failed.
    pub error: Option<SmallModelFailure>,
}

/// A small-model failure as a value.
#[napi(object)]
pub struct SmallModelFailure {
    /// HTTP-like status (404: no small model for this provider).
    pub status_code: Option<u32>,
    /// Machine code such as `output-exhausted`.
    pub code: Option<String>,
}

/// What `emitGoalNotification` receives when a goal settles.
#[napi(object)]
pub struct GoalNotification {
    /// Session id.
    pub session_id: String,
    /// Project directory.
    pub directory: String,
    /// `complete`, `blocked` or `budgetLimited`.
    pub status: String,
    /// The written goal; `goal.objective` carries the effective objective, file-backed or not.
    #[napi(ts_type = "Record<string, unknown>")]
    pub goal: serde_json::Value,
    /// Ready-made title ("Goal complete", "Goal blocked", "Goal reached its token budget").
    pub title: String,
    /// Ready-made body: objective and detail, ≤ 240 chars.
    pub body: String,
    /// `goal-<sessionId>`.
    pub tag: String,
    /// Always `goal`.
    pub kind: String,
}

/// Counters and tracked sessions of a runtime.
#[napi(object)]
pub struct RuntimeSnapshot {
    /// Sessions with an armed timer or a running tick.
    pub sessions: Vec<SessionState>,
    /// Timers armed.
    pub armed_timers: u32,
    /// Ticks running now.
    pub in_flight: u32,
    /// Ticks (or assist runs) started.
    pub ticks: f64,
    /// Continuations sent (goal) or assists written (assist).
    pub continuations: f64,
    /// Goals settled or paused by ticks.
    pub settled: f64,
    /// Follow-ups queued while a tick ran.
    pub follow_ups: f64,
    /// Ticks that panicked (caught; session state reset).
    pub panics: f64,
    /// Goals last seen active in events.
    pub active_goals: u32,
    /// `stop()` was called.
    pub stopped: bool,
}

/// One tracked session.
#[napi(object)]
pub struct SessionState {
    /// Session id.
    pub session_id: String,
    /// Directory.
    pub directory: String,
    /// Milliseconds until the timer fires, when one is armed.
    pub due_in_ms: Option<f64>,
    /// A tick is running.
    pub ticking: bool,
    /// A follow-up wake-up is queued.
    pub follow_up: bool,
    /// Consecutive read-failure retries.
    pub attempt: u32,
}

pub(crate) fn to_js_snapshot(snapshot: goal_core::GoalSnapshot) -> RuntimeSnapshot {
    RuntimeSnapshot {
        sessions: snapshot.sessions.into_iter().map(SessionState::from).collect(),
        armed_timers: snapshot.armed as u32,
        in_flight: snapshot.in_flight as u32,
        ticks: snapshot.ticks as f64,
        continuations: snapshot.continuations as f64,
        settled: snapshot.settled as f64,
        follow_ups: snapshot.follow_ups as f64,
        panics: snapshot.panics as f64,
        active_goals: snapshot.active_goals as u32,
        stopped: snapshot.stopped,
    }
}

/// The session goal runtime: keeps sessions with an active goal working until the auditor
/// verifies the objective, the budget or the turn cap is reached, or the user stops it.
#[napi]
pub struct SessionGoalRuntime {
    inner: Arc<GoalRuntime>,
    /// The JavaScript environment the runtime belongs to (its intake is that environment's).
    context: Arc<EnvContext>,
    /// The runtime's log identity (its lines go to its own logger only).
    log_span: tracing::Span,
}

impl SessionGoalRuntimeOptions {
    /// The core's runtime settings, every unset or unusable option at `GoalConfig`'s default,
    /// and the host logger to register. Fails only without an OpenCode location.
    fn resolve(self, context: &EnvContext) -> Result<(GoalRuntimeSettings, Option<LoggerCallback>)> {
        let client = connection_of!(self).resolve(context, DEFAULT_FETCH_TIMEOUT)?;
        let data_dir = DataDir::new(options::data_dir(None, self.settings));
        let small_model = small_model_for(context, self.generate_small_model_text, &client, self.small_model.as_ref());
        let notifier: Arc<dyn Notifier> = match self.emit_goal_notification {
            Some(callback) => Arc::new(callbacks::HostNotifier::new(callback)),
            None => Arc::new(NoNotifier),
        };
        let defaults = GoalConfig::default();
        let config = GoalConfig {
            idle_quiet: millis(self.idle_quiet_ms, defaults.idle_quiet),
            kickoff_quiet: millis(self.kickoff_quiet_ms, defaults.kickoff_quiet),
            resume_kickoff: millis(self.resume_kickoff_ms, defaults.resume_kickoff),
            max_auto_turns: count(self.max_auto_turns, defaults.max_auto_turns, 1),
            message_limit: count(self.message_fetch_limit, defaults.message_limit as u64, 1) as usize,
            audit_timeout: millis(self.audit_timeout_ms, defaults.audit_timeout),
            max_retry_attempts: count(self.max_retry_attempts, defaults.max_retry_attempts as u64, 1) as u32,
            max_dispatch_attempts: count(self.max_dispatch_attempts, defaults.max_dispatch_attempts as u64, 1) as u32,
            dispatch_retry_delay: defaults.dispatch_retry_delay,
            lease: millis(self.lease_ms, defaults.lease),
            sweep_interval: millis(self.sweep_interval_ms, defaults.sweep_interval),
            evidence: evidence_config(self.no_progress_turns, self.evidence.as_ref()),
            provider_limits: goal_core::ProviderLimits {
                max_waits: count(self.max_provider_waits, defaults.provider_limits.max_waits, 1),
                max_wait_ms: millis(
                    self.max_provider_wait_ms,
                    std::time::Duration::from_millis(defaults.provider_limits.max_wait_ms),
                )
                .as_millis()
                .min(u64::MAX as u128) as u64,
            },
            derive_criteria: self.derive_criteria.unwrap_or(defaults.derive_criteria),
        };
        let directories = self.directories.unwrap_or_default();
        let recover_on_start = self.recover_on_start.unwrap_or(!directories.is_empty());
        let settings = GoalRuntimeSettings {
            client,
            services: Services { small_model, notifier, data_dir },
            config,
            directories,
            recover_on_start,
            shared: context.shared().clone(),
        };
        Ok((settings, self.logger))
    }
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
    let (settings, logger) = options.resolve(&context)?;
    let log_span = install_logger(&context, logger);
    let inner = Arc::new(log_span.in_scope(|| GoalRuntime::start(settings, context.runtime())));
    context.adopt(Arc::downgrade(&inner) as std::sync::Weak<dyn EnvRuntime>);
    Ok(SessionGoalRuntime { inner, context, log_span })
}

/// The goal runtime's defaults, in the units of its options (the one place they are defined is
/// the core's `GoalConfig`): for help texts and hosts that show them.
#[napi(object, object_from_js = false)]
pub struct GoalRuntimeDefaults {
    /// `idleQuietMs`.
    pub idle_quiet_ms: f64,
    /// `kickoffQuietMs`.
    pub kickoff_quiet_ms: f64,
    /// `resumeKickoffMs`.
    pub resume_kickoff_ms: f64,
    /// `maxAutoTurns`.
    pub max_auto_turns: f64,
    /// `fetchTimeoutMs`.
    pub fetch_timeout_ms: f64,
    /// `messageFetchLimit`.
    pub message_fetch_limit: f64,
    /// `auditTimeoutMs`.
    pub audit_timeout_ms: f64,
    /// `maxRetryAttempts`.
    pub max_retry_attempts: f64,
    /// `maxDispatchAttempts`.
    pub max_dispatch_attempts: f64,
    /// `leaseMs`.
    pub lease_ms: f64,
    /// `maxProviderWaitMs`.
    pub max_provider_wait_ms: f64,
    /// `maxProviderWaits`.
    pub max_provider_waits: f64,
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
        max_provider_wait_ms: defaults.provider_limits.max_wait_ms as f64,
        max_provider_waits: defaults.provider_limits.max_waits as f64,
    }
}

#[napi]
impl SessionGoalRuntime {
    /// Forwards one OpenCode payload (`{type, properties}`; unwrap the global event envelope
    /// first). Returns at once; anything unreadable is ignored, never thrown.
    #[napi(catch_unwind, ts_args_type = "payload: unknown, directoryHint?: string")]
    pub fn process_payload(&self, env: Env, payload: Unknown, directory_hint: Option<String>) {
        payload::forward(&env, &self.context, &self.inner.group(), payload, directory_hint.as_deref().unwrap_or(""));
    }

    /// Alias of `processPayload` (OpenChamber's watcher name).
    #[napi(catch_unwind, ts_args_type = "payload: unknown, directoryHint?: string")]
    pub fn on_payload(&self, env: Env, payload: Unknown, directory_hint: Option<String>) {
        payload::forward(&env, &self.context, &self.inner.group(), payload, directory_hint.as_deref().unwrap_or(""));
    }

    /// The key of the event intake group this runtime belongs to (runtimes that talk to the same
    /// OpenCode share one). The package entry uses it to hand a payload to each group once.
    #[napi(catch_unwind)]
    pub fn intake_group(&self) -> String {
        self.inner.group()
    }

    /// Whether the session's goal was last seen active (for ready-notification suppression).
    #[napi(catch_unwind)]
    pub fn is_goal_active(&self, session_id: String) -> bool {
        self.inner.is_goal_active(&session_id)
    }

    /// Tracked sessions, armed timers, in-flight ticks and counters.
    #[napi(catch_unwind)]
    pub fn snapshot(&self) -> RuntimeSnapshot {
        to_js_snapshot(self.inner.snapshot())
    }

    /// Scans the known directories for active goals on idle sessions and re-arms them.
    #[napi(catch_unwind)]
    pub fn recover(&self) {
        self.inner.recover();
    }

    /// The goal's audit trail (`goals/<sessionId>.history.jsonl`), oldest first; `limit` keeps the
    /// newest. Each record: `time`, `turn`, `tail`, `verdict`, `note`, `action`, `reason`,
    /// `digest` (counts), `evidence`, `missing`, `auditTokens`, `activeMs`, `timeBudgetMs`.
    #[napi]
    pub async fn history(&self, session_id: String, limit: Option<f64>) -> Result<Vec<GoalHistoryRecord>> {
        let limit = limit.filter(|n| n.is_finite() && *n >= 1.0).map(|n| n.min(100_000.0) as usize);
        Ok(history_records(self.inner.history(&session_id, limit).instrument(self.log_span.clone()).await))
    }

    /// Why the session's goal is where it is: `{sessionId, status, statusReason, cause, fixAction,
    /// nextWakeAt, lease, pending, lastAudit, lastChecks, checks, findings}`, `null` where a part
    /// is unknown. Read only. A failure (OpenCode unreadable) is a `GoalFailure`, which the
    /// package entry throws as a `SessionGoalError`.
    #[napi]
    pub async fn explain(
        &self,
        session_id: String,
        directory: Option<String>,
    ) -> Result<napi::Either<GoalExplanation, crate::control::GoalFailure>> {
        let inner = self.inner.clone();
        let span = self.log_span.clone();
        Ok(crate::control::guarded(async move {
            inner
                .explain(&session_id, directory.as_deref().unwrap_or(""))
                .instrument(span)
                .await
                .map_err(|error| goal_core::GoalError::from_http("explain", &error))
                .and_then(explanation_of)
        })
        .await)
    }

    /// Stops the runtime. Idempotent; resolves when in-flight work has ended. The process is
    /// never kept alive by the runtime, stopped or not.
    #[napi]
    pub async fn stop(&self) -> Result<()> {
        self.inner.stop().instrument(self.log_span.clone()).await;
        Ok(())
    }
}
