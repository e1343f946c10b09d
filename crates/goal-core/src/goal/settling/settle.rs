//! The settle stage: a terminal status (or a pause) written under the tick's guard, the host
//! notified; and the other status writes a tick makes without settling (waiting for the user,
//! the pause after an abort).

use crate::goal::context::{log_write, written_outcome, Tick};
use crate::goal::planning::plan::Settlement;
use crate::goal::settling::causes::cause_of;
use crate::goal::settling::notify::goal_notification;
use crate::io::opencode::OpenCodeClient;
use crate::io::writer::{write_goal, GoalGuard, GoalWrite};
use crate::record::cause::CauseCode;
use crate::record::reasons::{NOTE_TURN_CUT, REASON_PAUSED_AFTER_ABORT, REASON_RESUMED, WAITING_FOR_USER};
use crate::record::{truncate_chars, Goal, GoalStatus, NOTE_CHAR_LIMIT, REASON_CHAR_LIMIT};
use crate::sched::TickOutcome;
use crate::time::active::begin_inactive;

/// A `blocked` settlement for `goal` with the given reason and cause, its accounting unchanged.
pub fn blocked(goal: &Goal, reason: &str, cause: CauseCode) -> Settlement {
    Settlement {
        status: GoalStatus::Blocked,
        reason: reason.into(),
        note: None,
        accounting: crate::goal::planning::accounting::Accounting::of(goal),
        evaluation: None,
        cause,
        detail: None,
    }
}

impl Tick<'_> {
    /// Writes a terminal status and notifies the host; how the tick ends (see [`written_outcome`]).
    pub async fn settle(&self, settlement: Settlement) -> TickOutcome {
        self.settle_on(&self.goal, &self.guard, settlement, |_| {}).await
    }

    /// [`Tick::settle`] with a change made in the same write after the settlement's own fields
    /// (the graded criteria, a blocker's fix on the cause).
    pub async fn settle_then(&self, settlement: Settlement, after: impl FnOnce(&mut Goal) + Send) -> TickOutcome {
        self.settle_with(&self.goal, &self.guard, settlement, |_| {}, after).await
    }

    /// Settles `blocked` with the given reason and cause.
    pub async fn settle_blocked(&self, reason: &str, cause: CauseCode) -> TickOutcome {
        self.settle(blocked(&self.goal, reason, cause)).await
    }

    /// [`Tick::settle`] on a goal other than the one read at the start (the reservation's), with
    /// an extra change made in the same write.
    pub async fn settle_on(
        &self,
        goal: &Goal,
        guard: &GoalGuard,
        settlement: Settlement,
        extra: impl FnOnce(&mut Goal) + Send,
    ) -> TickOutcome {
        self.settle_with(goal, guard, settlement, extra, |_| {}).await
    }

    /// The settle write: `before` and `after` run around the settlement's own fields.
    async fn settle_with(
        &self,
        goal: &Goal,
        guard: &GoalGuard,
        settlement: Settlement,
        before: impl FnOnce(&mut Goal) + Send,
        after: impl FnOnce(&mut Goal) + Send,
    ) -> TickOutcome {
        self.enter(crate::goal::stages::Stage::Settle);
        let (ctx, session_id, directory, now) = (self.ctx, self.session_id, self.directory, self.now_ms());
        let result = write_goal(&ctx.client, session_id, directory, guard, |g| {
            before(g);
            apply_settlement(g, &settlement, session_id, now);
            after(g);
        })
        .await;
        log_write(session_id, "settle", &result);
        if let Ok(GoalWrite::Written(written)) = &result {
            crate::goal::settling::operator::settled(session_id, written);
            // Settled: its carriers need not be remembered (a copy seen later is listed again).
            ctx.holders.forget(&written.id);
            let flags = ctx.services.data_dir.flags().await;
            if flags.notify_on_completion && written.status != GoalStatus::Paused {
                let objective = if self.objective.is_empty() { goal.objective.as_str() } else { &self.objective };
                ctx.services.notifier.notify(goal_notification(session_id, directory, written, objective));
            }
        }
        self.after_write(&result)
    }

    /// How the tick ends after a terminal write (`written_outcome`); a write that failed retries
    /// on the late backoff (`Tick::late_retry`): the tick made its reads already.
    fn after_write(&self, result: &Result<GoalWrite, crate::error::HttpError>) -> TickOutcome {
        match written_outcome(result) {
            TickOutcome::Retry => self.late_retry(),
            outcome => outcome,
        }
    }

    /// Pauses the goal after an abort the messages show (the plan's pause).
    pub async fn pause(&self, accounting: crate::goal::planning::accounting::Accounting) -> TickOutcome {
        self.enter(crate::goal::stages::Stage::Settle);
        let result = write_goal(&self.ctx.client, self.session_id, self.directory, &self.guard, |g| {
            g.status = GoalStatus::Paused;
            g.status_reason = REASON_PAUSED_AFTER_ABORT.into();
            g.set_cause(Some(cause_of(CauseCode::UserAborted, self.now_ms(), self.session_id, None)));
            accounting.apply(g);
            g.lease.clear();
            // Paused time is not active time.
            begin_inactive(g, self.now_ms());
        })
        .await;
        log_write(self.session_id, "pause", &result);
        self.after_write(&result)
    }

    /// Records in `statusReason` that the goal waits on the user (permission or question).
    pub async fn note_waiting(&self) {
        let result = write_goal(&self.ctx.client, self.session_id, self.directory, &self.guard, |g| {
            if g.status_reason != REASON_RESUMED {
                g.status_reason = WAITING_FOR_USER.into();
            }
            g.set_cause(Some(cause_of(CauseCode::WaitingForUser, self.now_ms(), self.session_id, None)));
            // Waiting for the user is not active time.
            begin_inactive(g, self.now_ms());
        })
        .await;
        log_write(self.session_id, "waiting", &result);
    }
}

/// The fields a settlement writes: status, reason, note, streaks, accounting, the auditor, and
/// no reservation or lease left behind.
fn apply_settlement(g: &mut Goal, settlement: &Settlement, session_id: &str, now: f64) {
    // Checks or criteria that became unreadable after the tick read them: never `complete`.
    let stopped = crate::goal::guarding::guard_rules::instead_of_complete(g, settlement);
    let settlement = stopped.as_ref().unwrap_or(settlement);
    g.status = settlement.status;
    g.set_cause(Some(cause_of(settlement.cause, now, session_id, settlement.detail.as_deref())));
    g.status_reason = truncate_chars(&settlement.reason, REASON_CHAR_LIMIT);
    if let Some(note) = &settlement.note {
        g.note = truncate_chars(note, NOTE_CHAR_LIMIT);
    } else if g.note == NOTE_TURN_CUT {
        g.note.clear();
    }
    g.blocked_streak = 0;
    g.audit_fail_streak = 0;
    settlement.accounting.apply(g);
    if let Some((provider, model)) = &settlement.evaluation {
        g.evaluation_provider_id = provider.clone();
        g.evaluation_model_id = model.clone();
    }
    g.continuation_for.clear();
    g.continuation_id.clear();
    g.lease.clear();
    // From here the goal is not working (time budget after a resume).
    begin_inactive(g, now);
}

/// The event-path pause: an abort landed for this session. Pauses an active goal unless the user
/// resumed it after that abort.
pub async fn pause_after_abort(client: &OpenCodeClient, session_id: &str, directory: &str, aborted_at: f64) -> bool {
    let now = client.clock().now_ms();
    let result = write_goal(client, session_id, directory, &GoalGuard::AnyWithStatus(GoalStatus::Active), |g| {
        let resumed_since = g.status_reason == REASON_RESUMED && aborted_at > 0.0 && aborted_at <= g.updated_at;
        if !resumed_since {
            g.status = GoalStatus::Paused;
            g.status_reason = REASON_PAUSED_AFTER_ABORT.into();
            g.set_cause(Some(cause_of(CauseCode::UserAborted, now, session_id, None)));
            g.lease.clear();
            // Paused time is not active time.
            begin_inactive(g, now);
        }
    })
    .await;
    log_write(session_id, "abort-pause", &result);
    matches!(result, Ok(GoalWrite::Written(ref g)) if g.status == GoalStatus::Paused)
}
