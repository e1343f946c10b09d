//! The stages of a tick and how long each may take: the bound a tick declares as it enters a
//! stage (the stage of the decision it carries out, [`Stage::of`]), from which the scheduler's
//! watchdog (`sched/watchdog.rs`) cancels a tick that outlives the sum. A stage's bound is the sum of its own waits: its request rounds (each bounded by
//! the fetch timeout), the audit's timeout, each check's `timeoutMs`, the review's timeout,
//! the echo of a write. Generous on purpose: the watchdog is the backstop for a wait that
//! would never end, not a second timeout. Pure.

use std::time::Duration;

use crate::config::GoalConfig;
use crate::goal::decide::decision::{ClaimFor, Decision, Effect, Need, Slot};
use crate::record::AcceptanceCheck;

/// Slack past the audit's own timeout before the executor gives the small model's call up; the
/// audit stage's bound carries it.
pub const AUDIT_SLACK: Duration = Duration::from_millis(500);
/// What a check run may take past its `timeoutMs` (the abort and its answer).
const CHECK_SLACK: Duration = Duration::from_secs(20);

/// One stage of a tick, in the order a tick meets them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// The session and its goal, then ownership and the lease (`start.rs`).
    Observe,
    /// Guards that cannot be read, and the objective.
    Guards,
    /// Status, children, messages and todos.
    Live,
    /// Provider parks and cut turns (`provider.rs`).
    Provider,
    /// The time stage and the plan's own writes (a pause, a settle, a waiting note).
    Plan,
    /// A stranded message posted again (`planning.rs`, `strand_rules.rs`).
    Strand,
    /// The evidence, the audit call and the grading.
    Audit,
    /// The acceptance checks, each with its own timeout; the sum of those is carried.
    Checks(Duration),
    /// The reviewer's child session (two attempts, each with the review timeout).
    Review,
    /// The reservation write and its echo.
    Reserve,
    /// The read-back and the posts of the continuation.
    Deliver,
    /// A terminal write and its notification.
    Settle,
}

impl Stage {
    /// The name the watchdog logs.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Observe => "observe",
            Stage::Guards => "guards",
            Stage::Live => "live state",
            Stage::Provider => "provider",
            Stage::Plan => "plan",
            Stage::Strand => "strand",
            Stage::Audit => "audit",
            Stage::Checks(_) => "checks",
            Stage::Review => "review",
            Stage::Reserve => "reserve",
            Stage::Deliver => "deliver",
            Stage::Settle => "settle",
        }
    }

    /// How long the stage may take, on `config`, with `request` the bound of one request (the
    /// fetch timeout and its slack).
    pub fn bound(self, config: &GoalConfig, request: Duration) -> Duration {
        // The sequential request rounds the stage may make (a guarded write is about three: the
        // slot, a read, the patch).
        let rounds = |n: u32| request.saturating_mul(n);
        // An echo of a write waits at most the quiet window (`goal/act/echo.rs`).
        let echo = config.idle_quiet;
        match self {
            Stage::Observe => rounds(8),
            Stage::Guards => rounds(4),
            Stage::Live => rounds(4),
            Stage::Provider => rounds(6),
            Stage::Plan => rounds(6) + echo,
            Stage::Strand => rounds(6) + config.dispatch_retry_delay * config.max_dispatch_attempts,
            Stage::Audit => rounds(8) + config.audit_timeout + AUDIT_SLACK + echo,
            Stage::Checks(timeouts) => rounds(8) + timeouts + CHECK_SLACK + echo,
            Stage::Review => rounds(12) + config.review_timeout * 2 + echo,
            Stage::Reserve => rounds(6) + echo,
            Stage::Deliver => {
                let attempts = config.max_dispatch_attempts.max(1);
                // Each post with its pause (doubling, capped), and the read of the transcript
                // after an unclear answer.
                rounds(4 + attempts * 2)
                    + crate::time::backoff::MAX_RETRY_DELAY * attempts
                    + config.dispatch_retry_delay
            }
            Stage::Settle => rounds(6) + echo,
        }
    }
}

impl Stage {
    /// The stage a decision belongs to (`None` for the end of the tick); `checks` are the goal's
    /// acceptance checks (their time limits are the checks stage's budget).
    pub fn of(decision: &Decision, checks: &[AcceptanceCheck]) -> Option<Stage> {
        let checks_stage = || Stage::Checks(checks_time(checks.iter().map(|c| c.effective_timeout_ms())));
        Some(match decision {
            Decision::End(_) => return None,
            Decision::Read(need) => match need {
                Need::First | Need::Owners => Stage::Observe,
                Need::Objective => Stage::Guards,
                Need::Live | Need::OpenRequests => Stage::Live,
                Need::FreshTail | Need::ChangedFiles => Stage::Provider,
                Need::Evidence { .. } => Stage::Audit,
                Need::CheckTranscript => checks_stage(),
                Need::FinishedReview { .. } | Need::CitedFiles(_) | Need::ReviewerCost(_) => Stage::Review,
                Need::ReadBack | Need::PostSession | Need::Stored(_) | Need::Reconcile => Stage::Deliver,
            },
            Decision::Act(effect) => match effect {
                Effect::Audit(_) => Stage::Audit,
                Effect::Claim { run: ClaimFor::Review, .. } => Stage::Review,
                Effect::Claim { .. } | Effect::RunCheck { .. } | Effect::ConcludeCheck { .. } => checks_stage(),
                Effect::OpenReviewer { .. } | Effect::AskReviewer { .. } | Effect::RecordReview { .. } => Stage::Review,
                Effect::Watched(write) => match write.slot {
                    Slot::ChecksHeld => checks_stage(),
                    Slot::ReviewHeld => Stage::Review,
                    _ => Stage::Reserve,
                },
                Effect::ClaimDispatch => Stage::Reserve,
                Effect::Post { .. } | Effect::Pause { .. } | Effect::HearLate | Effect::AnnounceContinuation => {
                    Stage::Deliver
                }
                Effect::Write(write) if write.slot == Slot::GiveBack => Stage::Deliver,
                Effect::Write(write) if write.slot == Slot::Reposted => Stage::Strand,
                Effect::Repost { .. } => Stage::Strand,
                Effect::Settle { .. } | Effect::Announce { .. } => Stage::Settle,
                Effect::Write(_)
                | Effect::Trail(_)
                | Effect::CopyObjective { .. }
                | Effect::RememberCarrier
                | Effect::InputsSettled(_) => Stage::Plan,
            },
        })
    }
}

/// The checks stage's carried sum: each check's timeout plus the slack of its abort.
pub fn checks_time(timeouts_ms: impl IntoIterator<Item = u64>) -> Duration {
    timeouts_ms.into_iter().map(|ms| Duration::from_millis(ms) + CHECK_SLACK).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bound_covers_the_stage_s_own_timeouts() {
        let config = GoalConfig::default();
        let request = Duration::from_millis(10_250);
        assert!(Stage::Audit.bound(&config, request) > config.audit_timeout);
        assert!(Stage::Review.bound(&config, request) > config.review_timeout * 2);
        let checks = checks_time([60_000, 120_000]);
        assert!(Stage::Checks(checks).bound(&config, request) > Duration::from_millis(180_000));
        let deliver = Stage::Deliver.bound(&config, request);
        assert!(deliver > request * config.max_dispatch_attempts, "every post may time out");
        assert!(Stage::Observe.bound(&config, request) >= request * 4);
        assert_eq!(Stage::Checks(checks).name(), "checks");
    }
}
