//! `tunables: {…}`: each runtime's timings, caps and limits in one nested object, moved field
//! for field into the core's `GoalTunables` / `AssistTunables`, whose rules (in
//! `goal_core::tunables`, shared with a Rust host's builder) make the runtime's config: an
//! unusable number (absent, NaN, negative, below the setting's minimum) means the default and a
//! huge one is capped, so a host that mistypes a number gets the default, not a runtime that
//! will not start.
//!
//! Only this nested form reaches native code: OpenChamber's flat names (`idleQuietMs` beside
//! the callbacks) are moved in here by the package entry, in `lib/drop-in.js`.

use napi_derive::napi;

use goal_core::{AssistTunables, EvidenceTunables, GoalTunables};

/// The goal runtime's tunables (`createSessionGoalRuntime({tunables})`); every one is optional
/// and `goalRuntimeDefaults()` lists the defaults.
#[napi(object)]
pub struct GoalTunablesInput {
    /// How long a session must stay quiet after `idle` before its goal is evaluated (default
    /// 15000 ms); busy, retry or a new message restarts the wait.
    pub idle_quiet_ms: Option<f64>,
    /// Delay before a fresh goal on an idle session gets its first turn (default 3000 ms).
    pub kickoff_quiet_ms: Option<f64>,
    /// Delay before a resumed goal gets its next turn (default 250 ms).
    pub resume_kickoff_ms: Option<f64>,
    /// Continuations the runtime sends for one goal before it settles it (default 20, at least
    /// 1); the continuation prompt shows it as "turn N/M".
    pub max_auto_turns: Option<f64>,
    /// Newest messages read per evaluation (default 40, at least 1).
    pub message_fetch_limit: Option<f64>,
    /// Time one progress audit (a single small-model call, which also grades the criteria) may
    /// take (default 60000 ms).
    pub audit_timeout_ms: Option<f64>,
    /// Retries of an unreadable session before its goal settles blocked (default 4: after the
    /// first read, four more at quiet × 1, 2, 4 and 8; the last of them settles the goal).
    pub max_retry_attempts: Option<f64>,
    /// Attempts to post one continuation before the goal settles blocked (default 3).
    pub max_dispatch_attempts: Option<f64>,
    /// How long an evaluation's lease keeps other hosts' runtimes off the session (default
    /// 120000 ms).
    pub lease_ms: Option<f64>,
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
    /// Whether a goal without acceptance criteria gets 2 to 6 derived ones from its first audit,
    /// in the same audit call (default true; `false` turns derivation off).
    pub derive_criteria: Option<bool>,
    /// Time one reviewer turn (a goal with `review`) may take before it is aborted and asked
    /// once more (default 600000 ms).
    pub review_timeout_ms: Option<f64>,
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
    /// Characters of the whole digest (default 12000, at least 500).
    pub max_digest_chars: Option<f64>,
    /// Records kept in a goal's audit trail; the oldest are dropped (default 500).
    pub history_max_records: Option<f64>,
}

impl From<GoalTunablesInput> for GoalTunables {
    fn from(input: GoalTunablesInput) -> Self {
        GoalTunables {
            idle_quiet_ms: input.idle_quiet_ms,
            kickoff_quiet_ms: input.kickoff_quiet_ms,
            resume_kickoff_ms: input.resume_kickoff_ms,
            max_auto_turns: input.max_auto_turns,
            message_fetch_limit: input.message_fetch_limit,
            audit_timeout_ms: input.audit_timeout_ms,
            max_retry_attempts: input.max_retry_attempts,
            max_dispatch_attempts: input.max_dispatch_attempts,
            lease_ms: input.lease_ms,
            sweep_interval_ms: input.sweep_interval_ms,
            no_progress_turns: input.no_progress_turns,
            evidence: input.evidence.map(EvidenceTunables::from).unwrap_or_default(),
            max_provider_wait_ms: input.max_provider_wait_ms,
            max_provider_waits: input.max_provider_waits,
            derive_criteria: input.derive_criteria,
            review_timeout_ms: input.review_timeout_ms,
        }
    }
}

impl From<EvidenceOptions> for EvidenceTunables {
    fn from(input: EvidenceOptions) -> Self {
        EvidenceTunables {
            max_tool_calls: input.max_tool_calls,
            max_command_chars: input.max_command_chars,
            output_tail_lines: input.output_tail_lines,
            output_tail_chars: input.output_tail_chars,
            max_files: input.max_files,
            max_todos: input.max_todos,
            max_digest_chars: input.max_digest_chars,
            history_max_records: input.history_max_records,
        }
    }
}

/// The assist runtime's tunables (`createSessionAssistRuntime({tunables})`).
#[napi(object)]
pub struct AssistTunablesInput {
    /// How long a session must stay quiet after `idle` before the recap and suggestion are
    /// generated (default 60000 ms); busy, retry or a newer user message cancels the wait.
    pub quiet_ms: Option<f64>,
    /// Messages read for the last exchange and for the re-check before writing (default 12).
    pub message_fetch_limit: Option<f64>,
    /// Time one small-model call may take (default 60000 ms).
    pub model_timeout_ms: Option<f64>,
}

impl From<AssistTunablesInput> for AssistTunables {
    fn from(input: AssistTunablesInput) -> Self {
        AssistTunables {
            quiet_ms: input.quiet_ms,
            message_fetch_limit: input.message_fetch_limit,
            model_timeout_ms: input.model_timeout_ms,
        }
    }
}
