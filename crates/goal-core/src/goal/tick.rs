//! One tick: gather → decide → act, until the decision ends it. The decision
//! (`decide/mod.rs`) is pure and sees only what the tick has gathered and done so far; the
//! gatherer (`gather/`) answers what it needs to know; the executor (`act/`) carries out what it
//! decides and reports the result. The tick enters the stage of each step it takes (the
//! watchdog's budget, `decide/stages.rs`).

use tracing::warn;

use crate::config::GoalConfig;
use crate::goal::act::TickIo;
use crate::goal::context::TickContext;
use crate::goal::decide::check_rules::CLAIM_ROUNDS;
use crate::goal::decide::stages::Stage;
use crate::goal::decide::{decide, Decision, Need, Seen};
use crate::record::MAX_CHECKS;
use crate::sched::{TickOutcome, TickStart};

/// More steps than any tick takes (each check is at most three and its claim's rounds, a review
/// eight and its claim's, each post of the continuation four and two more): a decision that would
/// go on for ever is cut here and looked at again with backoff.
fn max_steps(config: &GoalConfig) -> usize {
    let posts = 4 * config.max_dispatch_attempts as usize + 2;
    64 + (3 + CLAIM_ROUNDS) * MAX_CHECKS + 8 + CLAIM_ROUNDS + posts
}

/// Runs one tick. `start.attempt` counts consecutive read failures (0 on a normal wake-up).
pub async fn run_tick(ctx: &TickContext, start: TickStart) -> TickOutcome {
    let TickStart { session_id, directory, attempt, generation, watch } = start;
    let holder = ctx.holder.get().await;
    let mut seen = Seen::new(&session_id, &directory, holder, attempt);
    // Goal events are watched from just before the first read: a write built on it can tell a
    // change another writer made in between (`act/echo_watch.rs`).
    let watch_guard = ctx.memory.echoes.watch(&session_id);
    let mut io = TickIo { generation, base: None, watch: Some(watch_guard), dispatch_claim: None, late: None };
    let (reader, executor) = (ctx.reader(), ctx.executor(holder));
    let mut stage = Some(Stage::Observe);
    for _ in 0..max_steps(&ctx.config) {
        seen.current = io.generation.is_current();
        let decision = decide(&seen, &ctx.config, ctx.now_ms());
        let checks = seen.goal().map(|g| g.checks.as_slice()).unwrap_or_default();
        if let Some(next) = Stage::of(&decision, checks).filter(|next| Some(*next) != stage) {
            watch.enter(next.name(), next.bound(&ctx.config, ctx.client.request_bound()));
            stage = Some(next);
        }
        match decision {
            Decision::Read(Need::First) => {
                let (observations, base) = reader.first(&seen).await;
                io.base = base;
                observations.into_iter().for_each(|observation| seen.absorb(observation));
            }
            Decision::Read(need) => reader.read(&seen, need).await.into_iter().for_each(|o| seen.absorb(o)),
            Decision::Act(effect) => seen.absorb(executor.run(&seen, &mut io, effect).await),
            Decision::End(outcome) => return outcome,
        }
    }
    warn!(target: "session_goal", session = %session_id, "a tick took more steps than any tick takes; looking again with backoff");
    TickOutcome::Retry
}
