//! The tick watchdog. Every stage of a tick says, as it begins, how long it may take (its
//! requests' timeouts, the audit's, a check's `timeoutMs`, the review's); a tick that outlives
//! the sum of the bounds of the stages it entered is cancelled, and the stage it was in is
//! named. No tick can then hold its session (and its claim, its write slot) for ever, whatever
//! it awaits.

use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::sched::outcome::TickOutcome;
use crate::sched::stage_watch::StageWatch;

/// How a supervised tick ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Supervised {
    /// It ended by itself.
    Finished(TickOutcome),
    /// It panicked (the panic was caught).
    Panicked,
    /// It outlived its stages' bounds and was cancelled in the named stage.
    TimedOut(&'static str),
}

/// Waits for the tick running as `handle`, and cancels it once it outlives `watch`'s deadline.
pub async fn supervise(mut handle: JoinHandle<TickOutcome>, watch: &StageWatch) -> Supervised {
    loop {
        let deadline = watch.deadline();
        tokio::select! {
            biased;
            joined = &mut handle => {
                return match joined {
                    Ok(outcome) => Supervised::Finished(outcome),
                    Err(join) if join.is_panic() => Supervised::Panicked,
                    // Cancelled from outside (the runtime stopping): nothing more to do.
                    Err(_) => Supervised::Finished(TickOutcome::Done),
                };
            }
            () = tokio::time::sleep_until(deadline) => {
                // A stage entered meanwhile moved the deadline out: keep waiting.
                if watch.deadline() <= Instant::now() {
                    handle.abort();
                    return Supervised::TimedOut(watch.stage());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn a_tick_within_its_stages_bounds_finishes_and_one_past_them_is_cancelled_in_its_stage() {
        let watch = StageWatch::start("observe", Duration::from_secs(10));
        let inner = watch.clone();
        let handle = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(8)).await;
            inner.enter("audit", Duration::from_secs(60));
            // 8 s + 50 s is inside 10 s + 60 s.
            tokio::time::sleep(Duration::from_secs(50)).await;
            TickOutcome::Continued
        });
        assert_eq!(supervise(handle, &watch).await, Supervised::Finished(TickOutcome::Continued));

        let watch = StageWatch::start("observe", Duration::from_secs(10));
        let inner = watch.clone();
        let (dropped, was_dropped) = tokio::sync::oneshot::channel::<()>();
        let started = Instant::now();
        let handle = tokio::spawn(async move {
            let _held = dropped;
            inner.enter("deliver", Duration::from_secs(5));
            std::future::pending::<()>().await;
            TickOutcome::Done
        });
        assert_eq!(supervise(handle, &watch).await, Supervised::TimedOut("deliver"));
        assert_eq!(started.elapsed(), Duration::from_secs(15), "the sum of the bounds entered");
        assert!(was_dropped.await.is_err(), "the cancelled tick's state was dropped");
    }

    #[tokio::test(start_paused = true)]
    async fn a_panicking_tick_is_reported_as_such() {
        let watch = StageWatch::start("observe", Duration::from_secs(10));
        let handle = tokio::spawn(async { panic!("boom") });
        assert_eq!(supervise(handle, &watch).await, Supervised::Panicked);
    }
}
