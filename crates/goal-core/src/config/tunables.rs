//! The tunables as a host states them ([`GoalTunables`], [`AssistTunables`]: milliseconds and
//! counts, each optional) and how they become the runtimes' config: anything unusable (absent,
//! NaN, negative, below a minimum) means the default, and huge values are capped. The one place
//! these rules live, for the Node binding's `tunables: {…}` and a Rust host's
//! `GoalRuntimeBuilder::tunables` alike. Pure.

use std::time::Duration;

use super::{EvidenceConfig, EvidenceLimits, GoalConfig, ProviderLimits};

/// Longest duration an option may ask for (one day).
const MAX_MILLIS: f64 = 86_400_000.0;
/// Largest count an option may ask for.
const MAX_COUNT: f64 = 1_000_000.0;

/// A millisecond option as a duration: `default` unless it is a finite, non-negative number
/// (capped at one day).
pub fn millis(value: Option<f64>, default: Duration) -> Duration {
    match value {
        Some(ms) if ms.is_finite() && ms >= 0.0 => Duration::from_millis(ms.min(MAX_MILLIS) as u64),
        _ => default,
    }
}

/// A count option: `default` unless it is a finite number of at least `min` (floored, capped).
pub fn count(value: Option<f64>, default: u64, min: u64) -> u64 {
    match value {
        Some(n) if n.is_finite() && n >= min as f64 => n.min(MAX_COUNT).floor() as u64,
        _ => default,
    }
}

/// The goal runtime's tunables, in the units and under the names of the Node package's
/// `tunables: {…}` (`idleQuietMs` is `idle_quiet_ms`); `None` means the default. Converted once
/// into a [`GoalConfig`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GoalTunables {
    /// Quiet window after `idle`, ms ([`GoalConfig::idle_quiet`]).
    pub idle_quiet_ms: Option<f64>,
    /// Kickoff delay of a fresh goal on an idle session, ms ([`GoalConfig::kickoff_quiet`]).
    pub kickoff_quiet_ms: Option<f64>,
    /// Kickoff delay after a resume, ms ([`GoalConfig::resume_kickoff`]).
    pub resume_kickoff_ms: Option<f64>,
    /// Continuation cap per goal, at least 1 ([`GoalConfig::max_auto_turns`]).
    pub max_auto_turns: Option<f64>,
    /// Messages read per evaluation, at least 1 ([`GoalConfig::message_limit`]).
    pub message_fetch_limit: Option<f64>,
    /// Timeout of one small-model call, ms ([`GoalConfig::audit_timeout`]).
    pub audit_timeout_ms: Option<f64>,
    /// Retries of an unreadable session, at least 1 ([`GoalConfig::max_retry_attempts`]).
    pub max_retry_attempts: Option<f64>,
    /// Attempts to post one continuation, at least 1 ([`GoalConfig::max_dispatch_attempts`]).
    pub max_dispatch_attempts: Option<f64>,
    /// Lease of one evaluation, ms ([`GoalConfig::lease`]).
    pub lease_ms: Option<f64>,
    /// Interval of the directory sweep, ms; 0 disables it ([`GoalConfig::sweep_interval`]).
    pub sweep_interval_ms: Option<f64>,
    /// No-progress turns that settle a goal blocked; 0 turns the breaker off
    /// ([`EvidenceConfig::no_progress_turns`]).
    pub no_progress_turns: Option<f64>,
    /// Evidence digest and audit trail sizes ([`EvidenceConfig`]).
    pub evidence: EvidenceTunables,
    /// Longest single provider-limit park, ms ([`ProviderLimits::max_wait_ms`]).
    pub max_provider_wait_ms: Option<f64>,
    /// Provider-limit parks in a row before a goal settles blocked, at least 1
    /// ([`ProviderLimits::max_waits`]).
    pub max_provider_waits: Option<f64>,
    /// Whether a goal without criteria gets derived ones ([`GoalConfig::derive_criteria`]).
    pub derive_criteria: Option<bool>,
    /// Time one reviewer turn may take, ms ([`GoalConfig::review_timeout`]).
    pub review_timeout_ms: Option<f64>,
}

/// The evidence sizes of [`GoalTunables`] (the package's `tunables.evidence`), each at least 1;
/// `None` means the default of [`EvidenceLimits`] / [`EvidenceConfig`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EvidenceTunables {
    /// Tool calls listed per audit.
    pub max_tool_calls: Option<f64>,
    /// Characters of a shell command.
    pub max_command_chars: Option<f64>,
    /// Last lines of a failing command's output.
    pub output_tail_lines: Option<f64>,
    /// Characters of a failing command's output.
    pub output_tail_chars: Option<f64>,
    /// Files of the session diff listed.
    pub max_files: Option<f64>,
    /// Todos listed.
    pub max_todos: Option<f64>,
    /// Characters of the whole digest, at least [`MIN_DIGEST_CHARS`].
    pub max_digest_chars: Option<f64>,
    /// Records kept in a goal's audit trail.
    pub history_max_records: Option<f64>,
}

/// Most consecutive no-progress turns the breaker may be set to wait for.
pub const MAX_NO_PROGRESS_TURNS: u64 = 10_000;
/// Fewest characters a digest may be cut to: below it the digest could not hold its own
/// structure, so a smaller number means the default.
pub const MIN_DIGEST_CHARS: u64 = 500;

impl From<GoalTunables> for GoalConfig {
    fn from(tunables: GoalTunables) -> Self {
        let defaults = GoalConfig::default();
        GoalConfig {
            idle_quiet: millis(tunables.idle_quiet_ms, defaults.idle_quiet),
            kickoff_quiet: millis(tunables.kickoff_quiet_ms, defaults.kickoff_quiet),
            resume_kickoff: millis(tunables.resume_kickoff_ms, defaults.resume_kickoff),
            max_auto_turns: count(tunables.max_auto_turns, defaults.max_auto_turns, 1),
            message_limit: count(tunables.message_fetch_limit, defaults.message_limit as u64, 1) as usize,
            audit_timeout: millis(tunables.audit_timeout_ms, defaults.audit_timeout),
            max_retry_attempts: count(tunables.max_retry_attempts, defaults.max_retry_attempts.into(), 1) as u32,
            max_dispatch_attempts: count(tunables.max_dispatch_attempts, defaults.max_dispatch_attempts.into(), 1)
                as u32,
            // Not a host option: the pause between two attempts of one dispatch.
            dispatch_retry_delay: defaults.dispatch_retry_delay,
            lease: millis(tunables.lease_ms, defaults.lease),
            sweep_interval: millis(tunables.sweep_interval_ms, defaults.sweep_interval),
            evidence: evidence_config(tunables.no_progress_turns, &tunables.evidence, defaults.evidence),
            provider_limits: provider_limits(tunables.max_provider_waits, tunables.max_provider_wait_ms),
            derive_criteria: tunables.derive_criteria.unwrap_or(defaults.derive_criteria),
            review_timeout: millis(tunables.review_timeout_ms, defaults.review_timeout),
        }
    }
}

fn evidence_config(
    no_progress_turns: Option<f64>,
    sizes: &EvidenceTunables,
    defaults: EvidenceConfig,
) -> EvidenceConfig {
    let limits = &defaults.limits;
    let pick = |value: Option<f64>, default: usize| count(value, default as u64, 1) as usize;
    EvidenceConfig {
        limits: EvidenceLimits {
            max_tool_calls: pick(sizes.max_tool_calls, limits.max_tool_calls),
            max_command_chars: pick(sizes.max_command_chars, limits.max_command_chars),
            output_tail_lines: pick(sizes.output_tail_lines, limits.output_tail_lines),
            output_tail_chars: pick(sizes.output_tail_chars, limits.output_tail_chars),
            max_files: pick(sizes.max_files, limits.max_files),
            max_todos: pick(sizes.max_todos, limits.max_todos),
            max_digest_chars: count(sizes.max_digest_chars, limits.max_digest_chars as u64, MIN_DIGEST_CHARS) as usize,
        },
        no_progress_turns: count(no_progress_turns, defaults.no_progress_turns.into(), 0).min(MAX_NO_PROGRESS_TURNS)
            as u32,
        history_max_records: pick(sizes.history_max_records, defaults.history_max_records),
    }
}

fn provider_limits(max_waits: Option<f64>, max_wait_ms: Option<f64>) -> ProviderLimits {
    let defaults = ProviderLimits::default();
    let longest_wait = millis(max_wait_ms, Duration::from_millis(defaults.max_wait_ms));
    ProviderLimits {
        max_waits: count(max_waits, defaults.max_waits, 1),
        max_wait_ms: longest_wait.as_millis().min(u128::from(u64::MAX)) as u64,
    }
}

/// The assist runtime's tunables, in the units and under the names of the Node package's
/// `tunables: {…}` of `createSessionAssistRuntime`; `None` means the default. Converted once
/// into the assist runtime's `AssistConfig`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AssistTunables {
    /// Quiet window after `idle` before generating, ms.
    pub quiet_ms: Option<f64>,
    /// Messages read for the last exchange and the re-check before writing, at least 1.
    pub message_fetch_limit: Option<f64>,
    /// Timeout of one small-model call, ms.
    pub model_timeout_ms: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn millis_takes_only_usable_numbers() {
        let default = Duration::from_millis(7);
        assert_eq!(millis(None, default), default);
        assert_eq!(millis(Some(f64::NAN), default), default);
        assert_eq!(millis(Some(-1.0), default), default);
        assert_eq!(millis(Some(0.0), default), Duration::ZERO);
        assert_eq!(millis(Some(1e12), default), Duration::from_millis(86_400_000));
    }

    #[test]
    fn count_floors_and_respects_the_minimum() {
        assert_eq!(count(Some(2.9), 5, 1), 2);
        assert_eq!(count(Some(0.0), 5, 1), 5);
        assert_eq!(count(Some(f64::INFINITY), 5, 1), 5);
        assert_eq!(count(Some(1e9), 5, 1), 1_000_000);
    }

    #[test]
    fn no_goal_tunables_is_the_default_config() {
        let config = GoalConfig::from(GoalTunables::default());
        assert_eq!(format!("{config:?}"), format!("{:?}", GoalConfig::default()));
    }

    #[test]
    fn every_goal_tunable_reaches_its_setting() {
        let ms = Duration::from_millis;
        let evidence = EvidenceTunables {
            max_tool_calls: Some(11.0),
            max_digest_chars: Some(499.0),
            history_max_records: Some(12.0),
            ..EvidenceTunables::default()
        };
        let config = GoalConfig::from(GoalTunables {
            idle_quiet_ms: Some(1.0),
            kickoff_quiet_ms: Some(2.0),
            resume_kickoff_ms: Some(3.0),
            max_auto_turns: Some(4.0),
            message_fetch_limit: Some(5.0),
            audit_timeout_ms: Some(6.0),
            max_retry_attempts: Some(7.0),
            max_dispatch_attempts: Some(8.0),
            lease_ms: Some(9.0),
            sweep_interval_ms: Some(10.0),
            no_progress_turns: Some(0.0),
            evidence,
            max_provider_wait_ms: Some(13.0),
            max_provider_waits: Some(14.0),
            derive_criteria: Some(false),
            review_timeout_ms: Some(15.0),
        });
        let c = &config;
        assert_eq!(c.review_timeout, ms(15));
        assert_eq!((c.idle_quiet, c.kickoff_quiet, c.resume_kickoff, c.audit_timeout), (ms(1), ms(2), ms(3), ms(6)));
        assert_eq!((c.max_auto_turns, c.message_limit, c.max_retry_attempts, c.max_dispatch_attempts), (4, 5, 7, 8));
        assert_eq!((c.lease, c.sweep_interval), (ms(9), ms(10)));
        assert_eq!((c.evidence.no_progress_turns, c.evidence.history_max_records), (0, 12));
        assert_eq!(c.evidence.limits.max_tool_calls, 11);
        assert_eq!(c.evidence.limits.max_digest_chars, EvidenceLimits::default().max_digest_chars);
        assert_eq!((c.provider_limits.max_wait_ms, c.provider_limits.max_waits), (13, 14));
        assert!(!c.derive_criteria);
    }

    #[test]
    fn counts_below_their_minimum_are_the_default() {
        let config = GoalConfig::from(GoalTunables {
            max_auto_turns: Some(0.0),
            max_provider_waits: Some(0.5),
            no_progress_turns: Some(1e9),
            ..GoalTunables::default()
        });
        let defaults = GoalConfig::default();
        assert_eq!(config.max_auto_turns, defaults.max_auto_turns);
        assert_eq!(config.provider_limits.max_waits, defaults.provider_limits.max_waits);
        assert_eq!(u64::from(config.evidence.no_progress_turns), MAX_NO_PROGRESS_TURNS);
    }
}
