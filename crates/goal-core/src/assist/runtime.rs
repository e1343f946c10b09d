//! The assist runtime: a quiet window per session after `idle` (busy/retry or a newer user
//! message clears it), then one run: settings → session → last exchange → small model → tail
//! re-check → merged metadata write. It shares its context's event intake, HTTP pools and
//! per-session metadata write slots with the goal runtime, so neither erases the other's keys.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tracing::{debug, warn};

use super::content::{assist_payload, parse_reply, tail_reply, AssistFields, LastExchange, Targets};
use crate::config::tunables::{count, millis, AssistTunables};
use crate::error::Cancelled;
use crate::intake::{Consumer, IntakeEvent};
use crate::io::opencode::OpenCodeClient;
use crate::io::services::{DataDir, SmallModel, SmallModelQuery, SmallModelReply};
use crate::io::writer::write_namespace_key;
use crate::sched::{ArmMode, Job, Scheduler, SchedulerSnapshot};
use crate::sched::{Generation, TickFuture, TickOutcome, TickStart};
use crate::text::prompts::{assist_system_prompt, assist_user_prompt};
use crate::time::clock::now_ms;

/// The metadata key under `openchamber` that the assist owns.
pub const ASSIST_KEY: &str = "assist";

/// Assist tunables (the reference runtime's values by default).
#[derive(Debug, Clone)]
pub struct AssistConfig {
    /// Quiet window after `idle` before generating (60 s).
    pub quiet: Duration,
    /// Messages fetched for the exchange and for the tail re-check (12).
    pub message_limit: usize,
    /// Small-model call timeout (60 s).
    pub model_timeout: Duration,
}

/// Timeout of one OpenCode call of the assist runtime when the host sets none (shorter than the
/// goal runtime's: nothing waits on an assist).
pub const DEFAULT_ASSIST_FETCH_TIMEOUT: Duration = Duration::from_millis(5_000);

impl Default for AssistConfig {
    fn default() -> Self {
        Self { quiet: Duration::from_millis(60_000), message_limit: 12, model_timeout: Duration::from_millis(60_000) }
    }
}

impl From<AssistTunables> for AssistConfig {
    /// The host's numbers under the goal runtime's rules (`config::tunables`): an unusable one
    /// means the default.
    fn from(tunables: AssistTunables) -> Self {
        let defaults = AssistConfig::default();
        AssistConfig {
            quiet: millis(tunables.quiet_ms, defaults.quiet),
            message_limit: count(tunables.message_fetch_limit, defaults.message_limit as u64, 1) as usize,
            model_timeout: millis(tunables.model_timeout_ms, defaults.model_timeout),
        }
    }
}

/// Everything needed to build an assist runtime (its parts; in this crate "settings" are a goal's,
/// see `control/goal_settings.rs`).
pub struct AssistRuntimeParts {
    /// OpenCode client (its endpoint key is the intake group).
    pub client: OpenCodeClient,
    /// Small model (the host's service).
    pub small_model: Arc<dyn SmallModel>,
    /// Where `settings.json` is read from at fire time.
    pub data_dir: DataDir,
    /// Tunables.
    pub config: AssistConfig,
    /// What this runtime shares with the others of its host (it registers for events there).
    pub shared: crate::io::shared::SharedContext,
}

/// Outcome counters, for `snapshot()` and for measuring.
#[derive(Debug, Default)]
struct Counters {
    model_calls: AtomicU64,
    written: AtomicU64,
    dropped_stale: AtomicU64,
}

/// What `snapshot()` reports.
#[derive(Debug, Clone)]
pub struct AssistSnapshot {
    /// Sessions with an armed timer or a running generation, timers, generations running and
    /// started (its `ticks`), follow-ups (idles that arrived while a generation ran), panics.
    pub scheduler: SchedulerSnapshot,
    /// Small-model calls made.
    pub model_calls: u64,
    /// Payloads written to metadata.
    pub written: u64,
    /// Results dropped because the conversation moved on while the model ran.
    pub dropped_stale: u64,
    /// `stop()` was called.
    pub stopped: bool,
}

#[derive(Clone)]
struct AssistContext {
    client: OpenCodeClient,
    small_model: Arc<dyn SmallModel>,
    data_dir: DataDir,
    config: Arc<AssistConfig>,
    counters: Arc<Counters>,
}

struct AssistJob {
    ctx: AssistContext,
}

impl Job for AssistJob {
    fn run(&self, start: TickStart) -> TickFuture {
        let ctx = self.ctx.clone();
        Box::pin(async move {
            generate(&ctx, &start.session_id, &start.directory, &start.generation).await;
            // The assist never retries: the next idle cycle is the next chance.
            TickOutcome::Done
        })
    }

    fn quiet(&self) -> Duration {
        self.ctx.config.quiet
    }

    fn max_attempts(&self) -> u32 {
        1
    }
}

/// Why a run ended without writing (debug logging only; never carries text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Skip {
    Disabled,
    SessionUnreadable,
    Subagent,
    MessagesUnreadable,
    NoExchange,
    ModelUnavailable,
    NothingUsable,
    Invalidated,
    TailMovedOn,
    WriteFailed,
}

async fn generate(ctx: &AssistContext, session_id: &str, directory: &str, generation: &Generation) {
    if let Err(skip) = try_generate(ctx, session_id, directory, generation).await {
        debug!(target: "session_assist", session = session_id, reason = ?skip, "no assist written");
    }
}

async fn try_generate(
    ctx: &AssistContext,
    session_id: &str,
    directory: &str,
    generation: &Generation,
) -> Result<(), Skip> {
    // Read at fire time: the user may flip the switches at any moment.
    let targets = Targets::from_flags(&ctx.data_dir.flags().await);
    if !targets.any() {
        return Err(Skip::Disabled);
    }
    let session = ctx.client.get_session(session_id, directory).await.map_err(|error| {
        warn!(target: "session_assist", session = session_id, %error, "session unreadable");
        Skip::SessionUnreadable
    })?;
    if session.is_subagent() {
        return Err(Skip::Subagent);
    }
    let messages = ctx.client.messages(session_id, directory, ctx.config.message_limit).await.map_err(|error| {
        warn!(target: "session_assist", session = session_id, %error, "messages unreadable");
        Skip::MessagesUnreadable
    })?;
    let exchange = LastExchange::from_messages(&messages).ok_or(Skip::NoExchange)?;

    let reply = ask_model(ctx, session_id, directory, &exchange, targets).await?;

    let parsed = parse_reply(&reply.text, targets, &exchange.script_reference());
    if !parsed.dropped_for_script.is_empty() {
        debug!(target: "session_assist", session = session_id, fields = ?parsed.dropped_for_script, "dropped output in a foreign script");
    }
    if parsed.fields.is_empty() {
        if !parsed.object_found {
            warn!(
                target: "session_assist",
                provider = %reply.provider_id,
                model = %reply.model_id,
                output_chars = reply.text.chars().count(),
                "[session-assist:diagnostic] no JSON object in the output"
            );
        }
        return Err(Skip::NothingUsable);
    }

    write_if_current(ctx, session_id, directory, generation, &exchange, &parsed.fields).await?;
    ctx.counters.written.fetch_add(1, Ordering::Relaxed);
    debug!(target: "session_assist", session = session_id, "assist written");
    Ok(())
}

/// Asks the small model for the recap and suggestion of the last exchange.
async fn ask_model(
    ctx: &AssistContext,
    session_id: &str,
    directory: &str,
    exchange: &LastExchange,
    targets: Targets,
) -> Result<SmallModelReply, Skip> {
    let request = SmallModelQuery {
        prompt: assist_user_prompt(
            &exchange.transcript(),
            exchange.language_sample(),
            targets.recap,
            targets.suggestion,
        ),
        system: assist_system_prompt(targets.recap, targets.suggestion),
        directory: directory.to_string(),
        preferred_provider_id: exchange.provider_id.clone(),
        preferred_model_id: exchange.model_id.clone(),
        // Conversation text never goes to a provider the user did not pick for this session.
        restrict_to_preferred_provider: true,
        max_output_tokens: None,
        timeout_ms: ctx.config.model_timeout.as_millis() as u64,
    };
    ctx.counters.model_calls.fetch_add(1, Ordering::Relaxed);
    let call = ctx.small_model.generate(request);
    match tokio::time::timeout(ctx.config.model_timeout + Duration::from_millis(500), call).await {
        Ok(Ok(reply)) => Ok(reply),
        Ok(Err(error)) => {
            // 404 is "no small model for this provider": expected, silent.
            if !error.is_silent() {
                warn!(target: "session_assist", session = session_id, status = ?error.status, code = %error.code, "small model failed");
            }
            Err(Skip::ModelUnavailable)
        }
        Err(_) => {
            warn!(target: "session_assist", session = session_id, "small model timed out");
            Err(Skip::ModelUnavailable)
        }
    }
}

/// Writes the assist fields, unless the exchange is no longer current (a newer user message,
/// or the tail moved on).
async fn write_if_current(
    ctx: &AssistContext,
    session_id: &str,
    directory: &str,
    generation: &Generation,
    exchange: &LastExchange,
    fields: &AssistFields,
) -> Result<(), Skip> {
    // A user message created after the run started bumped the generation.
    if !generation.is_current() {
        ctx.counters.dropped_stale.fetch_add(1, Ordering::Relaxed);
        return Err(Skip::Invalidated);
    }
    let tail = ctx.client.messages(session_id, directory, ctx.config.message_limit).await.map_err(|error| {
        warn!(target: "session_assist", session = session_id, %error, "messages unreadable for the tail check");
        Skip::MessagesUnreadable
    })?;
    if tail_reply(&tail).map(|m| m.id.as_str()) != Some(exchange.assistant_id.as_str()) {
        ctx.counters.dropped_stale.fetch_add(1, Ordering::Relaxed);
        return Err(Skip::TailMovedOn);
    }

    let payload = assist_payload(fields, &exchange.assistant_id, now_ms() as u64);
    let written = write_namespace_key(&ctx.client, session_id, directory, ASSIST_KEY, |_fresh| {
        // Checked again inside the write slot: the last moment before the PATCH.
        if generation.is_current() {
            Ok(Some(payload))
        } else {
            Err(Cancelled)
        }
    })
    .await
    .map_err(|error| {
        warn!(target: "session_assist", session = session_id, %error, "assist write failed");
        Skip::WriteFailed
    })?;
    if written.is_none() {
        ctx.counters.dropped_stale.fetch_add(1, Ordering::Relaxed);
        return Err(Skip::Invalidated);
    }
    Ok(())
}

struct Inner {
    scheduler: Scheduler,
    config: Arc<AssistConfig>,
    counters: Arc<Counters>,
    group: String,
    stopped: AtomicBool,
}

/// The native session assist runtime.
#[derive(Clone)]
pub struct AssistRuntime {
    inner: Arc<Inner>,
}

impl AssistRuntime {
    /// Starts the runtime on `runtime` and registers it with the shared intake.
    pub fn start(parts: AssistRuntimeParts, runtime: &tokio::runtime::Handle) -> AssistRuntime {
        let config = Arc::new(parts.config);
        let counters = Arc::new(Counters::default());
        let ctx = AssistContext {
            client: parts.client.clone(),
            small_model: parts.small_model,
            data_dir: parts.data_dir,
            config: config.clone(),
            counters: counters.clone(),
        };
        let scheduler = Scheduler::start(Arc::new(AssistJob { ctx }), runtime);
        let inner =
            Arc::new(Inner { scheduler, config, counters, group: parts.client.key(), stopped: AtomicBool::new(false) });
        let consumer: Arc<dyn Consumer> = inner.clone();
        parts.shared.intake().register(&consumer);
        AssistRuntime { inner }
    }

    /// The intake group (events dispatched to this key reach this runtime).
    pub fn group(&self) -> String {
        self.inner.group.clone()
    }

    /// Feeds one event directly (without the shared fan-out).
    pub fn accept(&self, event: &IntakeEvent) {
        self.inner.accept(event);
    }

    /// Counters and tracked sessions.
    pub fn snapshot(&self) -> AssistSnapshot {
        let counters = &self.inner.counters;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        AssistSnapshot {
            scheduler: self.inner.scheduler.snapshot(),
            model_calls: load(&counters.model_calls),
            written: load(&counters.written),
            dropped_stale: load(&counters.dropped_stale),
            stopped: self.inner.stopped.load(Ordering::SeqCst),
        }
    }

    /// Stops: no new work, timers cleared, running generations invalidated (nothing is written
    /// after this resolves) and awaited, bounded.
    pub async fn stop(&self) {
        self.inner.stopped.store(true, Ordering::SeqCst);
        self.inner.scheduler.stop().await;
    }
}

impl Consumer for Inner {
    fn accept(&self, event: &IntakeEvent) {
        if self.stopped.load(Ordering::SeqCst) {
            return;
        }
        match event {
            IntakeEvent::Status { session_id, directory, working } => {
                if *working {
                    self.scheduler.clear(session_id);
                } else {
                    self.scheduler.arm(session_id, directory, self.config.quiet, ArmMode::Replace);
                }
            }
            IntakeEvent::UserMessage { session_id, created, .. } => {
                // OpenCode re-emits old user messages after a turn settles: only one created
                // after the timer was armed means the user moved on.
                let at = if *created > 0.0 { *created } else { now_ms() };
                self.scheduler.user_activity(session_id, at);
            }
            // Sub-agent sessions are recognised at fire time (the status event does not say);
            // aborts, goals and permission prompts do not concern the assist.
            IntakeEvent::SessionUpdated { .. }
            | IntakeEvent::SessionDeleted { .. }
            | IntakeEvent::Aborted { .. }
            | IntakeEvent::UserInput { .. }
            | IntakeEvent::Connected
            | IntakeEvent::Heartbeat => {}
        }
    }

    fn group(&self) -> String {
        self.group.clone()
    }

    fn is_live(&self) -> bool {
        !self.stopped.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assist_tunables_reach_their_settings_and_unusable_ones_are_the_default() {
        let tuned = AssistConfig::from(AssistTunables {
            quiet_ms: Some(1.0),
            message_fetch_limit: Some(2.0),
            model_timeout_ms: Some(f64::NAN),
        });
        assert_eq!((tuned.quiet, tuned.message_limit), (Duration::from_millis(1), 2));
        assert_eq!(tuned.model_timeout, AssistConfig::default().model_timeout);
    }
}
