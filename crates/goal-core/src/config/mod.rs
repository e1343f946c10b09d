//! Every tunable of the goal loop and its default, in one place: the goal loop's timings and
//! caps ([`GoalConfig`]), the evidence digest limits ([`EvidenceLimits`], [`EvidenceConfig`]),
//! how a host's raw option numbers become values ([`tunables`]) and the switches of
//! OpenChamber's settings file ([`settings_file`]). Pure.

pub mod settings_file;
pub mod tunables;

use std::time::Duration;

/// Goal-loop tunables (the reference runtime's values by default; all injectable).
#[derive(Debug, Clone)]
pub struct GoalConfig {
    /// Quiet window after `idle` (15 s).
    pub idle_quiet: Duration,
    /// Kickoff for a fresh goal on an idle session (3 s).
    pub kickoff_quiet: Duration,
    /// Kickoff after an explicit resume (250 ms).
    pub resume_kickoff: Duration,
    /// Auto-continuation cap (20).
    pub max_auto_turns: u64,
    /// Messages fetched per tick (40).
    pub message_limit: usize,
    /// Small-model call timeout.
    pub audit_timeout: Duration,
    /// Retries of an unreadable session before its goal settles blocked (4: the first read, then
    /// four more after q, 2q, 4q and 8q).
    pub max_retry_attempts: u32,
    /// Continuation dispatch attempts before settling blocked (3).
    pub max_dispatch_attempts: u32,
    /// Pause between dispatch attempts.
    pub dispatch_retry_delay: Duration,
    /// How long a tick's lease keeps other hosts' runtimes off the session (40 s: a host killed
    /// while it held one keeps the others off the goal that long at most, inside the 60 s bound
    /// of docs/reliability.md; its successor, the same holder, takes it up at once).
    pub lease: Duration,
    /// How often every goal on the server (a census) is swept for active goals on idle sessions that have no
    /// timer or tick (an idle event the host never forwarded); zero disables the sweep.
    pub sweep_interval: Duration,
    /// Evidence digest limits, the no-progress breaker and the audit trail size.
    pub evidence: EvidenceConfig,
    /// Parking on provider limits: parks in a row (`maxProviderWaits`, 6) and the longest
    /// single wait (`maxProviderWaitMs`, 6 h).
    pub provider_limits: ProviderLimits,
    /// Whether a goal without criteria gets derived ones from its first audit (`deriveCriteria`,
    /// default true).
    pub derive_criteria: bool,
    /// How long one reviewer turn may take before it is aborted and retried once
    /// (`reviewTimeoutMs`, 10 minutes; see `goal/act/runs.rs`).
    pub review_timeout: Duration,
    /// Whether a goal near one of its limits ends with a wrap-up turn, for goals whose own
    /// `wrapUp` setting says nothing (`wrapUp`, default true; see `goal/decide/wrap_up.rs`).
    pub wrap_up: bool,
    /// The silence watch (`sched/silence.rs`): on by default and in every host. Not an option
    /// of any host: it is off only where the simulator plants its absence, to show that its
    /// promise of bounded silence can fail.
    #[doc(hidden)]
    pub silence_watch: bool,
}

/// The limits of parking a goal on a provider's rate or usage limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderLimits {
    /// Parks in a row before the goal settles `blocked` / `providerQuota` (`maxProviderWaits`).
    pub max_waits: u64,
    /// Longest single wait in ms (`maxProviderWaitMs`).
    pub max_wait_ms: u64,
}

impl Default for ProviderLimits {
    fn default() -> Self {
        Self { max_waits: 6, max_wait_ms: 6 * 3600 * 1000 }
    }
}

impl Default for GoalConfig {
    fn default() -> Self {
        Self {
            idle_quiet: Duration::from_millis(15_000),
            kickoff_quiet: Duration::from_millis(3_000),
            resume_kickoff: Duration::from_millis(250),
            max_auto_turns: 20,
            message_limit: 40,
            audit_timeout: Duration::from_millis(60_000),
            max_retry_attempts: 4,
            max_dispatch_attempts: 3,
            dispatch_retry_delay: Duration::from_millis(250),
            lease: Duration::from_millis(40_000),
            sweep_interval: Duration::from_millis(300_000),
            evidence: EvidenceConfig::default(),
            provider_limits: ProviderLimits::default(),
            derive_criteria: true,
            review_timeout: Duration::from_millis(600_000),
            wrap_up: true,
            silence_watch: true,
        }
    }
}

/// Size limits of the digest (all configurable through the runtime's `evidence` option).
#[derive(Debug, Clone, PartialEq)]
pub struct EvidenceLimits {
    /// Tool calls listed (the newest are kept; the rest are counted).
    pub max_tool_calls: usize,
    /// Characters of a shell command.
    pub max_command_chars: usize,
    /// Lines of failing output kept (the last ones).
    pub output_tail_lines: usize,
    /// Characters of failing output kept.
    pub output_tail_chars: usize,
    /// Files of the session diff listed.
    pub max_files: usize,
    /// Todos listed.
    pub max_todos: usize,
    /// Characters of the rendered digest (JSON) sent to the auditor.
    pub max_digest_chars: usize,
}

impl Default for EvidenceLimits {
    fn default() -> Self {
        Self {
            max_tool_calls: 40,
            max_command_chars: 300,
            output_tail_lines: 12,
            output_tail_chars: 1500,
            max_files: 40,
            max_todos: 30,
            max_digest_chars: 12_000,
        }
    }
}

/// Evidence and breaker settings of a goal runtime.
#[derive(Debug, Clone, PartialEq)]
pub struct EvidenceConfig {
    /// Digest sizes.
    pub limits: EvidenceLimits,
    /// Consecutive no-progress turns that settle the goal `blocked` (0 disables).
    pub no_progress_turns: u32,
    /// Records kept in `goals/<sessionId>.history.jsonl` (oldest dropped).
    pub history_max_records: usize,
}

impl Default for EvidenceConfig {
    fn default() -> Self {
        Self { limits: EvidenceLimits::default(), no_progress_turns: 3, history_max_records: 500 }
    }
}
