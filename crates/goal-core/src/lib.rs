//! Session goal loop and session assist for OpenCode sessions.
//!
//! The crate has no napi dependency: a Node binding (the top-level crate) or a Tauri shell links
//! it directly, through the items re-exported here (the modules themselves are private).
//!
//! # Layout: concept → file
//! Layers, bottom up; a module imports only from layers below it (`scripts/module-graph.mjs`
//! checks it, and that no function outside tests is longer than 100 lines).
//!
//! | concept | file |
//! |---|---|
//! | error types | `error.rs` |
//! | the goal record, its fields and status reasons | `record/mod.rs` |
//! | OpenCode sessions, messages, live status, metadata merge | `record/session.rs`, `record/metadata.rs` |
//! | the multi-host lease | `record/lease.rs` |
//! | every tunable and its default; option numbers; settings switches | `config/mod.rs`, `config/tunables.rs`, `config/settings.rs` |
//! | prompts, JSON in replies, script guard, slash commands | `text/` |
//! | active time and time budget, working hours, clock | `time/active.rs`, `time/hours.rs`, `time/clock.rs` |
//! | evidence digest, no-progress breaker, complete override | `evidence/mod.rs` |
//! | the intake contract (which payloads are read, how they parse) | `intake.rs` |
//! | HTTP pools, OpenCode client, prompt outcome classification | `io/http.rs`, `io/opencode.rs`, `io/prompt_outcome.rs` |
//! | guarded metadata writes; write slots and dispatch claims | `io/writer.rs`, `io/locks.rs` |
//! | objective files, audit history, host services, shared context | `io/objectives.rs`, `io/history.rs`, `io/services.rs`, `io/shared.rs` |
//! | the scheduler (one owner of per-session state), session facts | `sched/mod.rs`, `sched/facts.rs`, `sched/job.rs` |
//! | one goal tick: observe → plan → audit → reserve → dispatch → settle | `goal/tick.rs` |
//! | pure decisions and gates; token accounting | `goal/plan.rs`, `goal/gates.rs`, `goal/accounting.rs` |
//! | evidence in the tick (time gate, digest read, review, trail) | `goal/evidence.rs` |
//! | idempotent continuation ids and delivery | `goal/dispatch.rs` |
//! | lost-update repair (reservation echo) | `goal/repair.rs` |
//! | settle notification, operator log lines | `goal/notify.rs`, `goal/operator.rs` |
//! | the built-in small model | `small_model/` |
//! | session assist (recap, suggestion) | `assist/` |
//! | create, act on, orchestrate goals | `control/create.rs`, `control/actions.rs`, `control/orchestrate.rs` |
//! | the goal runtime (events → scheduler → ticks) | `runtime.rs` |
//! | the Rust embedding API | `embed.rs` |
//!
//! What a host's runtimes share is one explicit [`SharedContext`], passed to every client and
//! runtime; the core keeps no hidden statics beyond process identity (the lease holder seed,
//! create ids) and the TLS provider install.

// Layer 0: pure data and arithmetic.
mod config;
mod error;
mod record;
mod text;
mod time;
// Layer 1: pure readings of OpenCode's data.
mod evidence;
mod intake;
// Layer 2: I/O.
mod io;
mod sched;
// Layer 3: the loops and what drives them.
mod assist;
mod control;
mod goal;
mod small_model;
// Layer 4: runtimes and the embedding API.
mod embed;
mod runtime;

// The embedding API.
pub use embed::{EmbeddedGoalRuntime, GoalRuntimeBuilder};
pub use io::shared::SharedContext;

// Configuration and its defaults.
pub use config::settings::SettingsFlags;
pub use config::tunables::{count, millis};
pub use config::{EvidenceConfig, EvidenceLimits, GoalConfig, ProviderLimits};

// The goal record.
pub use goal::park::wake_at as provider_wake_at;
pub use goal::plan::REASON_VERIFIED;
pub use record::{Goal, GoalStatus, KNOWN_GOAL_FIELDS, OBJECTIVE_REVISION_FIELD};
pub use time::active::{
    active_ms, check_time_budget_ms, check_time_budget_value, format_duration, parse_duration, time_budget_ms,
    GoalTimeLimits,
};
pub use time::clock::now_ms;
pub use time::hours::{ActiveHours, ACTIVE_HOURS_FIELD};

// Errors.
pub use error::{Cancelled, GoalError, HttpError, ObjectiveError, PartialAction, SmallModelError};

// Runtimes.
pub use assist::runtime::DEFAULT_ASSIST_FETCH_TIMEOUT;
pub use assist::{AssistConfig, AssistRuntime, AssistRuntimeSettings, AssistSnapshot};
pub use runtime::{GoalRuntime, GoalRuntimeSettings, GoalSnapshot};
pub use sched::SessionSnapshot;

// OpenCode and host services.
pub use io::history::{delete as delete_history, read as read_history};
pub use io::objectives::{delete_objective, read_objective, write_objective};
pub use io::opencode::{BoxFuture, Endpoint, OpenCodeClient, RequestTarget, StaticEndpoint, DEFAULT_FETCH_TIMEOUT};
pub use io::services::{
    resolve_data_dir, usage_total, DataDir, NoNotifier, NoSmallModel, Notifier, Services, SmallModel,
};
pub use io::small_model_call::{SmallModelReply, SmallModelRequest};
pub use io::writer::write_namespace_key;
pub use small_model::catalog::ModelRef;
pub use small_model::{BuiltinSmallModel, DEFAULT_CALL_TIMEOUT};

// The intake contract.
pub use intake::{
    intake_payload_types, message_update_matters, parse_payload, reading_of, PayloadReading, WATCHED_METADATA_KEY,
};

// Goal control.
pub use control::actions::{
    clear_goal, complete_goal, edit_goal, get_goal, list_goals, pause_goal, resume_goal, ActionReport, BudgetEdit,
    GoalEdit, GoalTarget, GoalView, LimitEdit,
};
pub use control::create::{check_token_budget, create_session_goal, ControlContext, CreatedGoal, ModelChoice, NewGoal};
pub use control::orchestrate::{
    create_session, fork_session, send_prompt, stamp_scheduled_goal, CreateSession, DispatchReport, ForkSession,
    PromptOptions, ScheduledGoal, SendPrompt, DEFAULT_COMMAND_TIMEOUT, DEFAULT_LANDING_POLL, DEFAULT_LANDING_TIMEOUT,
};
pub use text::prompts::goal_intro_text;
