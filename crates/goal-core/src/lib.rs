//! Session goal loop and session assist for OpenCode sessions.
//!
//! The crate has no napi dependency: a Node binding (the top-level crate) or a Tauri shell links
//! it directly, through the items re-exported here (the modules themselves are private).
//!
//! # Layout: concept → file
//! Layers, bottom up: 1. `wire`, `record`, `config`, `error`, `text`, `time`; 2. `evidence`, `intake`;
//! 3. `io`, `sched`; 4. `goal`, `small_model`, `assist`, `control`; 5. `runtime`, `embed`. A
//! module imports only from layers below it and pure modules import no I/O module
//! (`scripts/module-graph.mjs` checks both, with the rest of the structure checks).
//! `docs/layout.md` describes the layers, names every file and points here for this map.
//!
//! | concept | file |
//! |---|---|
//! | an enum's wire names declared once (`wire_enum!`) | `wire.rs` |
//! | the goal record: every field once, unknown fields kept | `record/fields.rs`, `record/mod.rs` |
//! | why a goal stopped or waits: cause codes, their fixes, status reasons | `record/cause.rs` |
//! | acceptance criteria as stored, with their grades | `record/criteria.rs` |
//! | the ids of acceptance-check runs, recognised in a transcript | `record/check_id.rs` |
//! | the ids of the parts the runtime posts | `record/part_id.rs` |
//! | a continuation's message id, the same on every host and retry | `record/continuation_id.rs` |
//! | one small-model call as plain data (the query, the reply) | `record/small_model_call.rs` |
//! | the multi-host lease | `record/lease.rs` |
//! | a failed reply's provider error and its table (limit, quota, auth, context, filter) | `record/provider_error.rs` |
//! | sessions, messages, live status; metadata merge | `record/session.rs`, `record/metadata.rs` |
//! | every tunable and its default | `config/mod.rs` (`tunables.rs`; OpenChamber's settings file's switches: `settings_file.rs`) |
//! | errors (`std::error::Error`), the `Cancelled` decline | `error.rs` |
//! | prompts, JSON in replies, script guard, slash commands | `text/` |
//! | a host's wall clock (the system's, or tokio's paused one in the simulator) | `time/clock.rs` |
//! | active time; working hours | `time/active.rs`, `time/hours.rs` |
//! | absolute times in rate-limit headers (RFC 3339, HTTP dates) | `time/stamp.rs` |
//! | the evidence digest (and as the auditor reads it), its trail counts | `evidence/digest.rs`, `evidence/audit_block.rs`, `evidence/summary.rs` |
//! | the no-progress breaker; the complete override | `evidence/no_progress.rs`, `evidence/complete_override.rs` |
//! | which events are read and how they parse | `intake.rs` |
//! | OpenCode's event stream followed for a host (Rust, or Node through the binding): reconnects with the backoff, recovers on each connection | `io/event_follower.rs` |
//! | OpenCode client, HTTP pools, prompt outcome classes | `io/opencode.rs`, `io/http.rs`, `io/prompt_outcome.rs` |
//! | the one place every OpenCode request passes (HTTP, or the simulator's OpenCode) | `io/transport.rs` |
//! | guarded metadata writes; write slots, dispatch claims | `io/writer.rs`, `io/locks.rs` |
//! | objective files, the audit trail's file, host services | `io/objectives.rs`, `io/trail_file.rs`, `io/services.rs` |
//! | blocking file work, a few jobs at a time for the whole process | `io/file_io.rs` |
//! | a data directory kept in memory (no files; the simulator's) | `io/memory_dir.rs` |
//! | what a host's runtimes share | `io/shared.rs` |
//! | scheduler: timers, retries, generations (its task; its commands; what it publishes) | `sched/mod.rs`, `sched/actor.rs`, `sched/command.rs`, `sched/job.rs`, `sched/facts.rs`, `sched/snapshot.rs` |
//! | fired ticks waiting for a slot (at most 32 run at once), in firing order | `sched/tick_queue.rs` |
//! | the tick watchdog: each step's stage and bound, a tick past their sum cancelled | `sched/watchdog.rs`, `sched/stage_watch.rs`, `goal/decide/stages.rs` |
//! | the sweep: OpenCode's status replaces what events said about busy | `runtime/sweep.rs`, `sched/actor.rs` (`swept`) |
//! | bounded silence: a quiet stream swept, a session remembered busy re-read | `runtime/watch.rs`, `sched/silence.rs` (pure) |
//! | the one backoff rule of every repeated request (doubling, capped at 10 s) | `time/backoff.rs` |
//! | one tick: gather → decide → act until the decision ends it | `goal/tick.rs` (`goal/context.rs`: what ticks share) |
//! | the decision, pure: what was seen, the settings and now in; read, act or end out | `goal/decide/mod.rs`, `goal/decide/decision.rs`, `goal/decide/seen.rs` |
//! | every change a tick makes to its goal, as data | `goal/decide/change.rs` |
//! | the steps of the decision, in branch order | `goal/decide/start.rs`, `provider.rs`, `planning.rs`, `verdict.rs`, `acceptance.rs`, `review.rs`, `delivery.rs` |
//! | whose goal it is: a fork's copy adopted paused, a resumed copy claimed | `goal/decide/lineage.rs`; owner lists: `goal/gather/owners.rs`, `goal/gather/holders.rs`, `goal/decide/list_rules.rs`, `goal/gather/list_gate.rs` |
//! | guards: an unreadable guard stops the goal (`invalidGoal`); lenient readings kept as stored | `goal/decide/guard_rules.rs`, `record/guard_read.rs` |
//! | provider limits: park and resume, typed provider stops, cut turns | `goal/decide/provider.rs`, `goal/decide/limit_rules.rs` (`limit_rules/reset.rs`: reset headers) |
//! | plan: decisions, gates, quiet window, token accounting | `goal/decide/plan_rules.rs`, `goal/decide/gates.rs`, `goal/decide/accounting.rs` |
//! | the budgets, one file each with its rule and its check: tokens, cost (US dollars), active time | `goal/decide/budgets/` |
//! | the time stage: a spent time budget, working hours (again on the clock of the post) | `goal/decide/planning.rs`, `goal/decide/delivery.rs` |
//! | a stranded message posted again under its own ids | `goal/decide/planning.rs`, `goal/decide/strand_rules.rs` |
//! | the audit: the evidence read before it, the verdict reviewed after it | `goal/decide/verdict.rs` (the reads: `goal/gather/mod.rs`; the call: `goal/act/runs.rs`) |
//! | graded completion: each criterion graded against numbered evidence | `goal/decide/grading.rs` |
//! | checks before settle-complete, claimed across hosts; the reviewer after them | `goal/decide/acceptance.rs`, `goal/decide/check_rules.rs`, `goal/decide/review.rs`, `goal/decide/review_rules.rs` (`record/review.rs`: the setting, the last review) |
//! | reserve, read back, post under an idempotent message id, the outcome | `goal/decide/delivery.rs`, `goal/decide/dispatch_rules.rs`, `record/continuation_id.rs` |
//! | the reads a decision asks for | `goal/gather/mod.rs` |
//! | the one executor: writes, posts, notifications, trail lines, one attempt per effect | `goal/act/mod.rs`, `goal/act/runs.rs` |
//! | lost-update repair around a watched write | `goal/act/echo_watch.rs`, `goal/act/echo.rs` |
//! | the ids this runtime posted, so their events are no user activity | `goal/act/own_posts.rs` |
//! | a code's stored cause; notification; console lines; the trail's lines | `goal/decide/causes.rs`, `goal/decide/notify.rs`, `goal/act/operator.rs` |
//! | a goal waiting on a failing request says so (`waitingForOpenCode`) | `goal/decide/wait_rules.rs` |
//! | the built-in small model | `small_model/` |
//! | session assist (recap, suggestion) | `assist/` |
//! | a goal's settings: one value for create, schedule, send, fork and edit | `control/goal_settings.rs` |
//! | create and act on goals; `explain` | `control/create.rs`, `control/actions.rs`, `control/explain.rs` (`control/explain/parts.rs`: its report as typed values) |
//! | orchestrate a session (create, send, fork, schedule); a prompt's selection and body; a slash command resolved | `control/orchestrate.rs`, `control/prompt.rs`, `control/slash_command.rs` |
//! | the goal runtime: events → scheduler → ticks | `runtime/mod.rs` |
//! | the Rust embedding API | `embed.rs` |
//!
//! What a host's runtimes share is one explicit [`SharedContext`], passed to every client and
//! runtime; the core keeps no hidden statics beyond process identity (the lease holder seed,
//! create ids) and the TLS provider install.

// Layer 1: pure data and arithmetic.
mod config;
mod error;
mod record;
mod text;
mod time;
mod wire;
// Layer 2: readings of OpenCode's data, no I/O (the evidence digest; the intake contract and
// the registry that fans events out).
mod evidence;
mod intake;
// Layer 3: I/O.
mod io;
mod sched;
// Layer 4: the loops and what drives them.
mod assist;
mod control;
mod goal;
mod small_model;
// Layer 5: runtimes and the embedding API.
mod embed;
mod runtime;

// The embedding API.
pub use embed::{EmbeddedGoalRuntime, GoalRuntimeBuilder};
pub use io::shared::SharedContext;

// Configuration and its defaults.
pub use config::settings_file::SettingsFlags;
pub use config::tunables::{count, millis, AssistTunables, EvidenceTunables, GoalTunables};
pub use config::{EvidenceConfig, EvidenceLimits, GoalConfig, ProviderLimits};

// The goal record.
pub use evidence::person_words::quote as quote_person;
pub use goal::decide::accounting::cost_used;
pub use goal::decide::budgets::cost::{format_usd, provider_reports_no_cost, MAX_COST_BUDGET, MIN_COST_BUDGET};
pub use goal::decide::budgets::time::parse_duration;
pub use goal::decide::causes::{cause_of, fix_action, fix_sentence};
pub use goal::decide::limit_rules::wake_at as provider_wake_at;
pub use record::cause::{Cause, CauseCode, FixAction};
/// Every `statusReason` this package writes.
pub use record::reasons;
pub use record::{
    parse_checks, AcceptanceCheck, ChecksError, Goal, GoalStatus, CHECK_COMMAND_CHAR_LIMIT, DEFAULT_CHECK_TIMEOUT_MS,
    KNOWN_GOAL_FIELDS, MAX_CHECKS, OBJECTIVE_REVISION_FIELD, REVISION_LIST_FIELDS,
};
pub use time::active::{active_ms, format_duration};
pub use time::clock::{now_ms, Clock};
pub use time::hours::{ActiveHours, HoursPart, HoursProblem};

// Errors.
pub use error::{
    Cancelled, ErrorKind, GoalError, HttpError, ObjectiveError, PartialAction, SmallModelError, Warning, WarningCode,
};

// Runtimes.
pub use assist::runtime::DEFAULT_ASSIST_FETCH_TIMEOUT;
pub use assist::{AssistConfig, AssistRuntime, AssistRuntimeParts, AssistSnapshot};
pub use runtime::{GoalLoop, GoalLoopParts, GoalSnapshot};
pub use sched::{SchedulerSnapshot, SessionSnapshot};

// OpenCode and host services.
pub use io::event_follower::{
    EventFollower, EventFollowerBuilder, StreamStatus, DEFAULT_ANSWER_TIMEOUT, DEFAULT_FIRST_RETRY,
};
pub use io::memory_dir::MemoryDir;
pub use io::objectives::{delete_objective, is_valid_session_id, read_objective, write_objective};
pub use io::opencode::{BoxFuture, Endpoint, OpenCodeClient, RequestTarget, StaticEndpoint, DEFAULT_FETCH_TIMEOUT};
pub use io::services::{
    resolve_data_dir, usage_total, DataDir, NoNotifier, NoSmallModel, Notifier, Services, SmallModel,
};
pub use io::trail_file::{delete as delete_history, read as read_history};
pub use io::transport::{HttpTransport, Transport, WireAnswer, WireRequest};
pub use io::writer::write_namespace_key;
pub use record::small_model_call::{SmallModelQuery, SmallModelReply};
pub use small_model::catalog::ModelRef;
pub use small_model::{BuiltinSmallModel, DEFAULT_CALL_TIMEOUT};

// The intake contract.
pub use intake::{
    intake_payload_types, message_update_matters, parse_payload, reading_of, unwrap_envelope, IntakeEvent,
    PayloadReading, WATCHED_METADATA_KEY,
};

// Goal control.
pub use control::actions::{
    clear_goal, complete_goal, edit_goal, get_goal, list_goals, pause_goal, resume_goal, ActionReport, GoalEdit,
    GoalTarget, GoalView,
};
pub use control::create::{create_session_goal, ControlContext, CreatedGoal, ModelChoice, NewGoal};
pub use control::explain::explain as explain_goal;
pub use control::explain::{
    AuditSummary, ExplainReport, Finding, GoalCost, LastReview, PendingKind, PendingRequest, RecordedCheckRun,
};
pub use control::goal_settings::{rule, GoalSettings, SettingChange};
pub use control::orchestrate::{
    create_session, fork_session, send_prompt, stamp_scheduled_goal, CreateSession, DispatchReport, ForkSession,
    ScheduledGoal, SendPrompt, DEFAULT_COMMAND_TIMEOUT, DEFAULT_LANDING_POLL, DEFAULT_LANDING_TIMEOUT,
};
pub use control::prompt::PromptOptions;
pub use evidence::summary::{DigestSummary, FailingCommand, TodoCounts};
pub use goal::decide::check_rules::{CheckResult, CheckRun};
pub use record::criteria::{Criterion, CriterionSource, CriterionState, RecordedGrade};
pub use record::Lease;
pub use text::prompts::goal_intro_text;
