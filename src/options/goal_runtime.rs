//! The goal runtime's options (`createSessionGoalRuntime`), converted once into the core's
//! `GoalRuntimeSettings`, and the defaults it reports (`goalRuntimeDefaults`).

use std::sync::Arc;

use napi::threadsafe_function::UnknownReturnValue;
use napi_derive::napi;

use goal_core::{DataDir, GoalConfig, GoalRuntimeSettings, NoNotifier, Notifier, Services, DEFAULT_FETCH_TIMEOUT};

use super::{connection_of, count, millis, OpenCodeTarget, RuntimeSettingsOptions};
use crate::callbacks::{self, HeadersCallback, LoggerCallback, ModelCallback, NotifyCallback, UrlCallback};
use crate::env_context::EnvContext;
use crate::types::small_model::{small_model_for, SmallModelChoice};

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

impl SessionGoalRuntimeOptions {
    /// The core's runtime settings, every unset or unusable option at `GoalConfig`'s default,
    /// and the host logger to register. Fails only without an OpenCode location.
    pub(crate) fn resolve(
        self,
        context: &EnvContext,
    ) -> std::result::Result<(GoalRuntimeSettings, Option<LoggerCallback>), goal_core::GoalError> {
        let client = connection_of!(self).resolve(context, DEFAULT_FETCH_TIMEOUT)?;
        let data_dir = DataDir::new(super::data_dir(None, self.settings));
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
