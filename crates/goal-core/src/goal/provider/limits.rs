//! The provider stage, before any audit: what the tail reply's error (or its absence, for a turn
//! cut by a restart) means for the goal, decided by its pure part `limit_rules`, and the writes
//! that follow: a park (the goal stays active and waits for the reset), the end of a stale park,
//! a settle with a typed cause, or a continuation over the failed or cut reply (not audited).

use std::time::Duration;

use serde_json::{json, Map, Value};
use tracing::{debug, info};

use crate::config::ProviderLimits;
use crate::error::HttpError;
use crate::goal::context::Tick;
use crate::goal::planning::accounting::account;
use crate::goal::planning::plan::Settlement;
use crate::goal::provider::limit_rules::{self, Park, TailStep};
use crate::goal::settling::causes::cause_of;
use crate::io::opencode::OpenCodeClient;
use crate::io::writer::{write_goal, GoalGuard, GoalWrite};
use crate::record::session::{chronological, Message, Role};
use crate::record::{Goal, GoalStatus};
use crate::sched::TickOutcome;

/// What the provider stage leaves to the rest of the tick.
#[derive(Debug, Clone, PartialEq)]
pub enum Stage {
    /// Nothing provider-related: plan as usual.
    Usual,
    /// Continue over the failed (or cut) reply without an audit: plan on `messages`, where that
    /// reply reads as finished; `cut` is the cut turn's number in the row.
    Continue {
        /// The message window with the tail made plannable.
        messages: Vec<Message>,
        /// Set for a cut turn.
        cut: Option<u64>,
    },
    /// Park the goal (the write follows).
    Park(Park),
    /// Still parked: look again at the wake-up time.
    Wait(Duration),
    /// Settle `blocked` with this stop (the settle follows).
    Block(limit_rules::Stop),
}

/// Whether an unfinished tail on an idle session is a cut turn rather than one just starting:
/// seen so on an earlier look of this wake-up (`attempt` > 0), or older than the quiet window.
pub fn cut_confirmed(tail: &Message, attempt: u32, now_ms: f64, quiet: Duration) -> bool {
    attempt > 0 || tail.created.is_some_and(|created| now_ms - created >= quiet.as_millis() as f64)
}

/// Decides the stage from the goal and the message window (the session is idle).
pub fn decide(
    goal: &Goal,
    messages: &[Message],
    now_ms: f64,
    limits: ProviderLimits,
    attempt: u32,
    quiet: Duration,
) -> Stage {
    let ordered = chronological(messages);
    let Some(tail) = ordered.last().copied() else { return Stage::Usual };
    if tail.role != Role::Assistant {
        return Stage::Usual;
    }
    let confirmed = cut_confirmed(tail, attempt, now_ms, quiet);
    match limit_rules::tail_step(goal, tail, now_ms, limits, confirmed) {
        TailStep::Usual => Stage::Usual,
        TailStep::Park(park) => Stage::Park(park),
        TailStep::Parked { until } => Stage::Wait(wait_until(until, now_ms)),
        TailStep::Block(stop) => Stage::Block(stop),
        TailStep::Resume => Stage::Continue { messages: plannable(messages, &tail.id), cut: None },
        TailStep::ContinueCut { nth } => Stage::Continue { messages: plannable(messages, &tail.id), cut: Some(nth) },
    }
}

/// How long until `until`, plus a little slack so the look lands after it.
pub fn wait_until(until: f64, now_ms: f64) -> Duration {
    Duration::from_millis(((until - now_ms).max(0.0) + 20.0).min(u64::MAX as f64 / 2.0) as u64)
}

/// The window with the reply `tail_id` reading as a finished, error-free reply, so the plan
/// (budget, turn cap, model to continue with) treats it as any other reply.
pub fn plannable(messages: &[Message], tail_id: &str) -> Vec<Message> {
    messages
        .iter()
        .cloned()
        .map(|mut message| {
            if message.id == tail_id {
                message.error = None;
                message.provider_error = None;
                message.completed = message.completed.or(message.created).or(Some(1.0));
                if message.finish.is_empty() || message.finish == "length" {
                    message.finish = "stop".into();
                }
            }
            message
        })
        .collect()
}

/// A trail record of a park.
pub fn park_record(goal: &Goal, park: &Park, now_ms: f64) -> Map<String, Value> {
    let mut record =
        crate::goal::settling::trail::line(goal, &park.tail, "park", limit_rules::REASON_WAITING_FOR_PROVIDER, now_ms);
    record.insert("until".into(), json!(park.until));
    record.insert("park".into(), json!(park.nth));
    if let Some(detail) = &park.cause.detail {
        record.insert("detail".into(), json!(detail));
    }
    record
}

/// A trail record of a continuation over a cut turn (`nth` in the row): not audited, and why.
pub fn cut_record(
    goal: &Goal,
    basis: &crate::goal::planning::plan::Basis,
    nth: u64,
    now_ms: f64,
) -> Map<String, Value> {
    let reason = crate::record::reasons::NOTE_TURN_CUT;
    let mut record =
        crate::goal::settling::trail::line(goal, &basis.tail_message_id, "continue (turn cut)", reason, now_ms);
    record.insert("cut".into(), json!(nth));
    record
}

/// What the tick plans on after the provider stage: the window (the failed or cut reply made
/// plannable when it is continued), whether the audit is skipped, and a cut turn's number.
pub struct AfterStage {
    /// The window to plan on, when it differs from the one read.
    pub messages: Option<Vec<Message>>,
    /// A cut turn's number in the row (its continuation records it).
    pub cut: Option<u64>,
}

impl Tick<'_> {
    /// The provider stage (see the module). `Err` ends the tick: parked, still parked, or
    /// settled with a typed cause.
    pub async fn provider_stage(&self, messages: &[Message]) -> Result<AfterStage, TickOutcome> {
        let (ctx, now) = (self.ctx, self.now_ms());
        let stage = decide(&self.goal, messages, now, ctx.config.provider_limits, self.attempt, ctx.config.idle_quiet);
        match stage {
            Stage::Usual => {
                end_stale_park(&ctx.client, self.session_id, self.directory, &self.guard, &self.goal, messages)
                    .await
                    .map_err(|outcome| if outcome == TickOutcome::Retry { self.late_retry() } else { outcome })?;
                Ok(AfterStage { messages: None, cut: None })
            }
            Stage::Continue { messages: plannable, cut: Some(nth) } => {
                self.confirm_cut(messages).await?;
                Ok(AfterStage { messages: Some(plannable), cut: Some(nth) })
            }
            Stage::Continue { messages, cut } => Ok(AfterStage { messages: Some(messages), cut }),
            Stage::Wait(wait) => {
                debug!(target: "session_goal", session = self.session_id, wait_ms = wait.as_millis() as u64, "parked on a provider limit");
                Err(TickOutcome::BackOff(wait))
            }
            Stage::Park(park) => {
                let (outcome, result) = write_park(self, messages, &park, now).await;
                if let Ok(GoalWrite::Written(written)) = &result {
                    self.append_trail(park_record(written, &park, now)).await;
                }
                Err(outcome)
            }
            Stage::Block(stop) => Err(self.provider_stop(messages, stop, now).await),
        }
    }

    /// A cut turn is judged on two reads, the transcript's and the status', made at once: the
    /// status may have been answered after the reply finished (a slow status read saw the turn's
    /// end; the transcript, answered sooner, did not). The transcript is read once more: a tail
    /// that finished meanwhile is no cut, and the tick looks again after the quiet window (the
    /// simulator found a finished turn continued as cut, its tokens never counted).
    async fn confirm_cut(&self, messages: &[Message]) -> Result<(), TickOutcome> {
        let Some(tail) = chronological(messages).last().map(|m| m.id.clone()) else { return Ok(()) };
        let limit = self.ctx.config.message_limit;
        match self.ctx.client.messages(self.session_id, self.directory, limit).await {
            Ok(fresh) => match fresh.iter().find(|m| m.id == tail) {
                Some(now) if now.is_completed() || now.error.is_some() => Err(TickOutcome::Rearm),
                _ => Ok(()),
            },
            Err(_) => Err(self.late_retry()),
        }
    }

    /// Settles `blocked` with the stop's reason and cause (never audited, never continued).
    async fn provider_stop(&self, messages: &[Message], stop: limit_rules::Stop, now: f64) -> TickOutcome {
        info!(target: "session_goal", session = self.session_id, cause = stop.cause.code.as_str(), "provider failure or cut turns: settling");
        let tail = chronological(messages).last().map(|m| m.id.clone()).unwrap_or_default();
        let settlement = Settlement {
            status: GoalStatus::Blocked,
            reason: stop.reason.to_string(),
            note: None,
            accounting: account(&self.goal, messages),
            evaluation: None,
            cause: stop.cause.code,
            detail: stop.cause.detail.clone(),
        };
        self.append_trail(crate::goal::settling::trail::line(&self.goal, &tail, "blocked", stop.reason, now)).await;
        // The settle writes the cause from the settlement (its fix from the cause table).
        self.settle_on(&self.goal, &self.guard, settlement, limit_rules::clear_park).await
    }
}

/// Writes a park: the goal stays active and waits. How the tick ends: looking again at the
/// wake-up time when written; done when the goal changed meanwhile; retried when the write failed.
pub async fn write_park(
    tick: &Tick<'_>,
    messages: &[Message],
    park: &Park,
    now_ms: f64,
) -> (TickOutcome, Result<GoalWrite, HttpError>) {
    let accounting = account(&tick.goal, messages);
    // The stored cause takes its fix sentence from the cause table, like every other cause.
    let mut park = park.clone();
    park.cause = cause_of(park.cause.code, park.cause.since, tick.session_id, park.cause.detail.as_deref())
        .with_until(park.until);
    let park = &park;
    let result = write_goal(&tick.ctx.client, tick.session_id, tick.directory, &tick.guard, |g| {
        accounting.apply(g);
        limit_rules::apply_park(g, park, now_ms);
        g.lease.clear();
    })
    .await;
    let outcome = match &result {
        Ok(GoalWrite::Written(_)) => {
            info!(target: "session_goal", session = tick.session_id, park = park.nth, wait_ms = (park.until - now_ms).max(0.0) as u64, "provider limit: parked until it resets");
            TickOutcome::BackOff(wait_until(park.until, now_ms))
        }
        Ok(GoalWrite::Stale) => TickOutcome::Done,
        Err(_) => tick.late_retry(),
    };
    (outcome, result)
}

/// A park the tail no longer matches (the user typed, the reply changed): its reason and cause
/// go at once, so the goal does not show a wait that is over. `Err` ends the tick.
pub async fn end_stale_park(
    client: &OpenCodeClient,
    session_id: &str,
    directory: &str,
    guard: &GoalGuard,
    goal: &Goal,
    messages: &[Message],
) -> Result<Option<Goal>, TickOutcome> {
    let Some(parked) = limit_rules::parked_for(goal) else { return Ok(None) };
    let tail = chronological(messages).last().map(|m| m.id.clone()).unwrap_or_default();
    if parked == tail {
        return Ok(None);
    }
    debug!(target: "session_goal", session = session_id, "the parked reply is no longer the tail; the park is over");
    match write_goal(client, session_id, directory, guard, limit_rules::clear_park).await {
        Ok(GoalWrite::Written(goal)) => Ok(Some(*goal)),
        Ok(GoalWrite::Stale) => Err(TickOutcome::Done),
        Err(_) => Err(TickOutcome::Retry),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(value: Value) -> Vec<Message> {
        Message::list_from_value(&value).unwrap()
    }

    #[test]
    fn a_failed_or_cut_tail_becomes_plannable() {
        let messages = window(json!([
            {"info": {"id": "m1", "role": "user", "time": {"created": 1}}},
            {"info": {"id": "m2", "role": "assistant", "time": {"created": 2},
                "error": {"name": "APIError", "data": {"statusCode": 429}}}},
        ]));
        let fixed = plannable(&messages, "m2");
        assert!(fixed[1].error.is_none() && fixed[1].provider_error.is_none());
        assert_eq!((fixed[1].completed, fixed[1].finish.as_str()), (Some(2.0), "stop"));
        assert_eq!(fixed[0], messages[0]);
    }

    #[test]
    fn the_stage_follows_the_tail() {
        let limits = ProviderLimits::default();
        let quiet = Duration::from_millis(400);
        let goal = Goal::from_value(&json!({"id": "g", "status": "active", "objective": "o"})).unwrap();
        let cut = window(json!([
            {"info": {"id": "m1", "role": "user", "time": {"created": 1000}}},
            {"info": {"id": "m2", "role": "assistant", "time": {"created": 1000}}},
        ]));
        assert_eq!(decide(&goal, &cut, 1100.0, limits, 0, quiet), Stage::Usual, "may be a turn starting");
        assert!(matches!(decide(&goal, &cut, 1100.0, limits, 1, quiet), Stage::Continue { cut: Some(1), .. }));
        assert!(matches!(decide(&goal, &cut, 1500.0, limits, 0, quiet), Stage::Continue { cut: Some(1), .. }));
        let user_tail = window(json!([{"info": {"id": "m1", "role": "user", "time": {"created": 1}}}]));
        assert_eq!(decide(&goal, &user_tail, 5.0, limits, 3, quiet), Stage::Usual);
        assert_eq!(decide(&goal, &[], 5.0, limits, 3, quiet), Stage::Usual);
        assert_eq!(wait_until(1000.0, 2000.0), Duration::from_millis(20));
    }
}
