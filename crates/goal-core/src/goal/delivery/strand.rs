//! The strand stage: when the newest message is a user message that nothing answers and the
//! session is idle, the message is posted again under its own ids (see `strand_rules.rs`). Each
//! post is recorded in the goal before it goes out (`reposted`), so every host and every restart
//! counts the same posts; after the last one the goal settles `blocked` (`dispatchFailed`).

use std::time::Duration;

use tracing::{debug, info, warn};

use crate::goal::context::{log_write, Tick};
use crate::goal::delivery::strand_rules::{next_step, repost_body, stranded_tail, StrandStep, MAX_REPOSTS};
use crate::goal::observation::observe::Live;
use crate::goal::settling::settle::blocked;
use crate::io::prompt_outcome::DispatchOutcome;
use crate::io::writer::{write_goal, GoalWrite};
use crate::record::cause::CauseCode;
use crate::record::reasons::REASON_MESSAGE_UNANSWERED;
use crate::record::Reposted;
use crate::sched::TickOutcome;

/// Slack after the quiet window, so the next look lands after it.
const MARGIN: Duration = Duration::from_millis(20);

/// Handles a tail that is a user message on an idle session. `None`: the tail is not a stranded
/// message (the caller keeps its own handling).
pub async fn recover(tick: &Tick<'_>, live: &Live) -> Option<TickOutcome> {
    let tail = stranded_tail(&live.messages)?;
    let quiet = tick.ctx.config.idle_quiet;
    let step = next_step(tail, tick.goal.reposted.get(), tick.now_ms(), quiet);
    Some(match step {
        StrandStep::Wait(wait) => {
            debug!(target: "session_goal", session = tick.session_id, wait_ms = wait.as_millis() as u64, "newest message unanswered; looking again after the quiet window");
            TickOutcome::BackOff(wait + MARGIN)
        }
        StrandStep::GiveUp => give_up(tick, &tail.id).await,
        StrandStep::Repost { posts } => {
            let entry =
                live.raw_messages.get(tail.index).filter(|e| e["info"]["id"].as_str() == Some(tail.id.as_str()));
            match entry.and_then(repost_body) {
                Some(body) => repost(tick, &tail.id, posts, &body).await,
                None => {
                    warn!(target: "session_goal", session = tick.session_id, "unanswered message cannot be posted again under its ids");
                    give_up(tick, &tail.id).await
                }
            }
        }
    })
}

/// Records post number `posts`, then posts the message again; looks again a quiet window later.
async fn repost(tick: &Tick<'_>, message_id: &str, posts: u64, body: &serde_json::Value) -> TickOutcome {
    if !tick.generation.is_current() {
        return TickOutcome::Done;
    }
    let Some(_claim) = tick.ctx.dispatch_claims.claim(tick.session_id) else {
        return TickOutcome::BackOff(tick.ctx.config.idle_quiet);
    };
    let record = Reposted { message_id: message_id.to_string(), posts, at: tick.now_ms() };
    let written = write_goal(&tick.ctx.client, tick.session_id, tick.directory, &tick.guard, move |g| {
        g.reposted.set(record);
    })
    .await;
    log_write(tick.session_id, "repost", &written);
    match written {
        Ok(GoalWrite::Written(_)) => {}
        Ok(GoalWrite::Stale) => return TickOutcome::Done,
        Err(_) => return tick.late_retry(),
    }
    if !tick.generation.is_current() {
        return TickOutcome::Done;
    }
    tick.ctx.own_posts.record(tick.session_id, message_id);
    match tick.ctx.client.prompt_async(tick.session_id, tick.directory, body).await {
        DispatchOutcome::Sent => {
            info!(target: "session_goal", session = tick.session_id, posts, "unanswered message posted again under its own ids")
        }
        DispatchOutcome::NotAdmitted(code) => {
            warn!(target: "session_goal", session = tick.session_id, code, posts, "re-post of the unanswered message not admitted")
        }
        DispatchOutcome::Ambiguous(why) => {
            warn!(target: "session_goal", session = tick.session_id, %why, posts, "re-post of the unanswered message: outcome unknown")
        }
    }
    TickOutcome::BackOff(tick.ctx.config.idle_quiet + MARGIN)
}

/// Posted [`MAX_REPOSTS`] times (or not postable) and still unanswered: `blocked`.
async fn give_up(tick: &Tick<'_>, message_id: &str) -> TickOutcome {
    let mut settlement = blocked(&tick.goal, REASON_MESSAGE_UNANSWERED, CauseCode::DispatchFailed);
    settlement.detail = Some(format!("message {message_id} unanswered after {MAX_REPOSTS} posts"));
    // A resume is the user asking to try again: it gets its own posts.
    tick.settle_then(settlement, |g| {
        g.reposted.clear();
    })
    .await
}
