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

/// Declares a struct of tunables: every field `Option<_>` (`None` means the default), each
/// `field: Type` of the list given as `Option<Type>` under its documentation. With `=> Target`,
/// also `From<Struct> for Target`, field for field (`Into` on each value). The core's
/// [`GoalTunables`], [`EvidenceTunables`] and [`AssistTunables`] and the Node binding's
/// `tunables: {…}` objects are all declared by it from one list each ([`goal_tunables!`],
/// [`evidence_tunables!`], [`assist_tunables!`]), so a tunable cannot be added to one side only.
///
/// The lists write their documentation as `#[doc = "…"]` lines: a `///` comment that passes
/// through a macro reaches napi-derive as a raw string, which it would copy into index.d.ts with
/// its `r"` prefix. A binding's invocation writes its struct's documentation the same way.
#[doc(hidden)]
#[macro_export]
macro_rules! tunables_struct {
    ([$(#[$($meta:tt)*])* $vis:vis struct $name:ident] $($(#[doc = $doc:tt])* $field:ident: $ty:ident,)*) => {
        $(#[$($meta)*])*
        $vis struct $name {
            $($(#[doc = $doc])* pub $field: Option<$ty>,)*
        }
    };
    ([$(#[$($meta:tt)*])* $vis:vis struct $name:ident => $target:path] $($(#[doc = $doc:tt])* $field:ident: $ty:ident,)*) => {
        $crate::tunables_struct! { [$(#[$($meta)*])* $vis struct $name] $($(#[doc = $doc])* $field: $ty,)* }
        impl From<$name> for $target {
            fn from(input: $name) -> Self {
                Self { $($field: input.$field.map(Into::into),)* }
            }
        }
    };
}

/// Declares a struct with the goal runtime's tunables, in the units and under the names of the
/// Node package's `tunables: {…}` (`idleQuietMs` is `idle_quiet_ms`), its `evidence` sizes of the
/// type named; `=> Target` adds the conversion into `Target` (see `tunables_struct!`). Declares
/// [`GoalTunables`] here and the binding's `GoalTunablesInput`.
#[macro_export]
macro_rules! goal_tunables {
    ($(#[$($meta:tt)*])* $vis:vis struct $name:ident { evidence: $evidence:ident } $(=> $target:path)?) => {
        $crate::tunables_struct! {
            [$(#[$($meta)*])* $vis struct $name $(=> $target)?]
            #[doc = " How long a session must stay quiet after `idle` before its goal is evaluated (default"]
            #[doc = " 15000 ms); busy, retry or a new message restarts the wait."]
            idle_quiet_ms: f64,
            #[doc = " Delay before a fresh goal on an idle session gets its first turn (default 3000 ms)."]
            kickoff_quiet_ms: f64,
            #[doc = " Delay before a resumed goal gets its next turn (default 250 ms)."]
            resume_kickoff_ms: f64,
            #[doc = " Continuations the runtime sends for one goal before it settles it (default 20, at least"]
            #[doc = " 1); the continuation prompt shows it as \"turn N/M\"."]
            max_auto_turns: f64,
            #[doc = " Newest messages read per evaluation (default 40, at least 1)."]
            message_fetch_limit: f64,
            #[doc = " Time one progress audit (a single small-model call, which also grades the criteria) may"]
            #[doc = " take (default 60000 ms)."]
            audit_timeout_ms: f64,
            #[doc = " Retries of an unreadable session before its goal settles blocked (default 4: after the"]
            #[doc = " first read, four more at quiet × 1, 2, 4 and 8; the last of them settles the goal)."]
            max_retry_attempts: f64,
            #[doc = " Attempts to post one continuation before the goal settles blocked (default 3)."]
            max_dispatch_attempts: f64,
            #[doc = " How long an evaluation's lease keeps other hosts' runtimes off the session (default"]
            #[doc = " 40000 ms)."]
            lease_ms: f64,
            #[doc = " How often (ms) every goal on the server is swept for active goals on idle sessions with"]
            #[doc = " no pending wake-up, e.g. after an idle event the host never forwarded: a census of the"]
            #[doc = " server's sessions and one status read per directory holding an active goal (default"]
            #[doc = " 300000; 0 disables)."]
            sweep_interval_ms: f64,
            #[doc = " Consecutive turns with no file change, no successful tool call and near-identical replies"]
            #[doc = " that settle a goal `blocked` (`statusReason: 'no progress'`), whatever the auditor says."]
            #[doc = " Default 3; 0 turns the breaker off."]
            no_progress_turns: f64,
            #[doc = " Size limits of the evidence digest sent with each audit, and of the audit trail."]
            evidence: $evidence,
            #[doc = " Longest single wait (ms) of a goal parked on a provider's rate or usage limit, whatever"]
            #[doc = " reset time the provider states (default 21600000, 6 hours)."]
            max_provider_wait_ms: f64,
            #[doc = " Parks in a row, with no turn that produced output, before a goal that keeps hitting a"]
            #[doc = " provider limit settles `blocked` with cause `providerQuota` (default 6)."]
            max_provider_waits: f64,
            #[doc = " Whether a goal without acceptance criteria gets 2 to 6 derived ones from its first audit,"]
            #[doc = " in the same audit call (default true; `false` turns derivation off)."]
            derive_criteria: bool,
            #[doc = " Time one reviewer turn (a goal with `review`) may take before it is aborted and asked"]
            #[doc = " once more (default 600000 ms)."]
            review_timeout_ms: f64,
            #[doc = " Whether a goal near its token, cost or time budget or its turn cap ends with one"]
            #[doc = " wrap-up turn (a handoff) inside it, for goals whose own `wrapUp` says nothing"]
            #[doc = " (default true)."]
            wrap_up: bool,
        }
    };
}

/// Declares a struct with the evidence digest's and the audit trail's sizes (the package's
/// `tunables.evidence`), each at least 1; `=> Target` adds the conversion (see
/// `tunables_struct!`). Declares [`EvidenceTunables`] here and the binding's `EvidenceOptions`.
#[macro_export]
macro_rules! evidence_tunables {
    ($(#[$($meta:tt)*])* $vis:vis struct $name:ident $(=> $target:path)?) => {
        $crate::tunables_struct! {
            [$(#[$($meta)*])* $vis struct $name $(=> $target)?]
            #[doc = " Tool calls listed per audit; the newest are kept (default 40)."]
            max_tool_calls: f64,
            #[doc = " Characters of a shell command (default 300)."]
            max_command_chars: f64,
            #[doc = " Last lines of a failing command's output (default 12)."]
            output_tail_lines: f64,
            #[doc = " Characters of a failing command's output (default 1500)."]
            output_tail_chars: f64,
            #[doc = " Files of the session diff listed (default 40)."]
            max_files: f64,
            #[doc = " Todos listed (default 30)."]
            max_todos: f64,
            #[doc = " Characters of the whole digest (default 12000, at least 500)."]
            max_digest_chars: f64,
            #[doc = " Records kept in a goal's audit trail; the oldest are dropped (default 500)."]
            history_max_records: f64,
        }
    };
}

/// Declares a struct with the assist runtime's tunables (the package's `tunables: {…}` of
/// `createSessionAssistRuntime`); `=> Target` adds the conversion (see `tunables_struct!`).
/// Declares [`AssistTunables`] here and the binding's `AssistTunablesInput`.
#[macro_export]
macro_rules! assist_tunables {
    ($(#[$($meta:tt)*])* $vis:vis struct $name:ident $(=> $target:path)?) => {
        $crate::tunables_struct! {
            [$(#[$($meta)*])* $vis struct $name $(=> $target)?]
            #[doc = " How long a session must stay quiet after `idle` before the recap and suggestion are"]
            #[doc = " generated (default 60000 ms); busy, retry or a newer user message cancels the wait."]
            quiet_ms: f64,
            #[doc = " Messages read for the last exchange and for the re-check before writing (default 12)."]
            message_fetch_limit: f64,
            #[doc = " Time one small-model call may take (default 60000 ms)."]
            model_timeout_ms: f64,
        }
    };
}

goal_tunables! {
    /// The goal runtime's tunables, in the units and under the names of the Node package's
    /// `tunables: {…}` (`idleQuietMs` is `idle_quiet_ms`); `None` means the default. Converted
    /// once into a [`GoalConfig`]; `goalRuntimeDefaults()` lists the defaults.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct GoalTunables { evidence: EvidenceTunables }
}

evidence_tunables! {
    /// The evidence sizes of [`GoalTunables`] (the package's `tunables.evidence`), each at least
    /// 1 (`MIN_DIGEST_CHARS` for the digest); `None` means the default of [`EvidenceLimits`] /
    /// [`EvidenceConfig`].
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct EvidenceTunables
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
            evidence: evidence_config(
                tunables.no_progress_turns,
                &tunables.evidence.unwrap_or_default(),
                defaults.evidence,
            ),
            provider_limits: provider_limits(tunables.max_provider_waits, tunables.max_provider_wait_ms),
            derive_criteria: tunables.derive_criteria.unwrap_or(defaults.derive_criteria),
            review_timeout: millis(tunables.review_timeout_ms, defaults.review_timeout),
            wrap_up: tunables.wrap_up.unwrap_or(defaults.wrap_up),
            silence_watch: defaults.silence_watch,
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

assist_tunables! {
    /// The assist runtime's tunables, in the units and under the names of the Node package's
    /// `tunables: {…}` of `createSessionAssistRuntime`; `None` means the default. Converted once
    /// into the assist runtime's `AssistConfig`.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct AssistTunables
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
            evidence: Some(evidence),
            max_provider_wait_ms: Some(13.0),
            max_provider_waits: Some(14.0),
            derive_criteria: Some(false),
            review_timeout_ms: Some(15.0),
            wrap_up: Some(false),
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
        assert!(!c.wrap_up);
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
