//! Binding of goal creation and control: the objective store, `GoalControl` (create / send /
//! fork with a goal, scheduled-task stamping, edit / pause / resume / complete / clear, views).
//! Failures come back as `GoalFailure` values (`failed: true`, `statusCode`, `partialAction`);
//! the package entry turns them into thrown `GoalError`s. Every call runs in its own task, so
//! a panic becomes a failure value instead of crossing into Node.

use std::future::Future;
use std::path::PathBuf;

use napi::bindgen_prelude::*;
use napi::threadsafe_function::UnknownReturnValue;
use napi_derive::napi;

use goal_core::resolve_data_dir;
use goal_core::Goal;
use goal_core::DEFAULT_CALL_TIMEOUT;
use goal_core::DEFAULT_FETCH_TIMEOUT;
use goal_core::{ActionReport, GoalEdit, GoalTarget, GoalView, LimitEdit};
use goal_core::{ControlContext, CreatedGoal, ErrorKind, GoalError, ModelChoice, NewGoal};
use goal_core::{
    CreateSession, DispatchReport, ForkSession, PromptOptions, ScheduledGoal, SendPrompt, DEFAULT_COMMAND_TIMEOUT,
    DEFAULT_LANDING_POLL, DEFAULT_LANDING_TIMEOUT,
};

use crate::callbacks::{HeadersCallback, ModelCallback, UrlCallback};
use crate::env_context::EnvContext;
use crate::goal_settings::GoalSettingsInput;
use crate::options::{self, connection_of, millis};
use crate::{OpenCodeTarget, RuntimeSettingsOptions};

/// A failed goal operation, as the native module hands it to the package entry: `lib/goals.js`
/// turns it into a thrown `SessionGoalError` in one place, so no host ever sees this shape.
#[napi(object, object_from_js = false)]
pub struct GoalFailure {
    /// Always `true` (tells a failure from a result).
    #[napi(ts_type = "true")]
    pub failed: bool,
    /// The error code (docs/errors.md).
    #[napi(ts_type = "'invalidInput' | 'notFound' | 'conflict' | 'tooLarge' | 'openCode' | 'timeout' | 'local'")]
    pub code: String,
    /// What went wrong (never prompt text, model output or credentials).
    pub message: String,
    /// The request field at fault, when one is.
    pub field: Option<String>,
    /// The HTTP status OpenCode answered with, when it answered.
    pub status: Option<u32>,
    /// The underlying failure (an OpenCode call's own error), when there was one.
    pub cause: Option<String>,
    /// `session-created`, `fork-created` or `goal-configured`: what had already taken effect.
    #[napi(ts_type = "'session-created' | 'fork-created' | 'goal-configured'")]
    pub partial_action: Option<String>,
    /// The session concerned (the new one after create or fork).
    pub session_id: Option<String>,
    /// Its directory.
    pub directory: Option<String>,
}

pub(crate) fn failure(error: GoalError) -> GoalFailure {
    GoalFailure {
        failed: true,
        code: error.kind.code().to_string(),
        field: error.field.map(str::to_string),
        status: error.opencode_status.map(u32::from),
        cause: std::error::Error::source(&error).map(|source| source.to_string()),
        message: error.message,
        partial_action: error.partial.map(|p| p.as_str().to_string()),
        session_id: (!error.session_id.is_empty()).then_some(error.session_id),
        directory: (!error.directory.is_empty()).then_some(error.directory),
    }
}

/// A partial success's caveat: the operation took effect, with this warning.
#[napi(object, object_from_js = false)]
pub struct GoalWarning {
    /// `objectiveInline`, `abortFailed` or `commandListUnavailable` (docs/errors.md).
    #[napi(ts_type = "'objectiveInline' | 'abortFailed' | 'commandListUnavailable'")]
    pub code: String,
    /// One sentence for a person.
    pub message: String,
    /// The request field concerned, when one is.
    pub field: Option<String>,
}

fn warnings_of(warnings: &[goal_core::Warning]) -> Vec<GoalWarning> {
    warnings
        .iter()
        .map(|warning| GoalWarning {
            code: warning.code.code().to_string(),
            message: warning.message.clone(),
            field: warning.field.map(str::to_string),
        })
        .collect()
}

/// Runs one operation in its own task: a panic is a 500 failure, never a crash.
pub(crate) async fn guarded<T, F>(work: F) -> Either<T, GoalFailure>
where
    T: Send + 'static,
    F: Future<Output = std::result::Result<T, GoalError>> + Send + 'static,
{
    match tokio::spawn(work).await {
        Ok(Ok(value)) => Either::A(value),
        Ok(Err(error)) => Either::B(failure(error)),
        Err(_) => {
            tracing::error!(target: "session_goal", "goal operation panicked");
            Either::B(failure(GoalError::new(ErrorKind::Local, "internal error")))
        }
    }
}

// Read from the goal's own stored form (the core's field table defines every field once), so
// no field is copied here by hand; only the derived times are computed (see `record`).
/// A goal as stored in `metadata.openchamber.goal`.
#[napi(object, object_from_js = false)]
#[derive(Default, serde::Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct GoalRecord {
    /// Goal id (`Date.now().toString(36)` + 6 random base-36 chars for new goals).
    pub id: String,
    /// Inline objective; empty when the text lives in the objective file.
    pub objective: String,
    /// The objective lives in `<dataDir>/goals/<sessionId>.md`.
    pub objective_file: bool,
    /// `active`, `paused`, `blocked`, `budgetLimited` or `complete`.
    pub status: String,
    /// Token budget, if any.
    pub token_budget: Option<f64>,
    /// Tokens charged to the goal.
    pub tokens_used: f64,
    /// Accounting baseline of the current segment.
    pub tokens_baseline: f64,
    /// Tokens of closed segments.
    pub tokens_committed: f64,
    /// Automatic continuations sent.
    pub turns_used: f64,
    /// Consecutive `blocked` verdicts.
    pub blocked_streak: f64,
    /// Consecutive failed audits.
    pub audit_fail_streak: f64,
    /// Latest audit note.
    pub note: String,
    /// Why the goal is in its status.
    pub status_reason: String,
    /// Provider of the latest audit.
    #[napi(js_name = "evaluationProviderID")]
    #[serde(rename = "evaluationProviderID")]
    pub evaluation_provider_id: String,
    /// Model of the latest audit.
    #[napi(js_name = "evaluationModelID")]
    #[serde(rename = "evaluationModelID")]
    pub evaluation_model_id: String,
    /// Accounting cursor.
    #[napi(js_name = "lastAccountedMessageID")]
    #[serde(rename = "lastAccountedMessageID")]
    pub last_accounted_message_id: String,
    /// Creation time (ms since the epoch).
    pub created_at: f64,
    /// Last write (ms since the epoch).
    pub updated_at: f64,
    /// Time budget (ms), if any.
    #[serde(skip)]
    pub time_budget_ms: Option<f64>,
    /// Cost budget in US dollars, if any.
    #[serde(skip)]
    pub cost_budget: Option<f64>,
    /// US dollars the session's replies cost since the goal began (0 on a model without a price).
    #[serde(skip)]
    pub cost_used: f64,
    /// Active time so far (ms): since `createdAt`, minus time paused or waiting.
    #[serde(skip)]
    pub active_ms: f64,
    /// Working hours `{start, end, timeZone}`, if any.
    #[napi(ts_type = "{ start: string; end: string; timeZone: string } | undefined")]
    #[serde(skip)]
    pub active_hours: Option<serde_json::Value>,
    /// The session the goal belongs to (`sessionId`), when it names one.
    pub session_id: Option<String>,
    /// When a goal parked on a provider limit goes on by itself (ms since the epoch).
    pub wake_at: Option<f64>,
    /// Acceptance checks run before the goal may settle `complete`, if any.
    #[napi(ts_type = "Array<{ command: string; timeoutMs?: number }> | undefined")]
    pub checks: Option<serde_json::Value>,
    /// Acceptance criteria the auditor grades one by one against evidence, if any.
    #[napi(
        ts_type = "Array<{ id: string; text: string; source: 'user' | 'derived'; state: 'unmet' | 'met' | 'unclear'; evidence?: string[]; since?: number }> | undefined"
    )]
    pub criteria: Option<serde_json::Value>,
    /// Why the goal stopped or waits (`{code, since, detail?, until?, fix?}`); absent while it runs.
    #[napi(ts_type = "{ code: string; since: number; detail?: string; until?: number; fix?: string } | undefined")]
    pub cause: Option<serde_json::Value>,
}

fn record(goal: &Goal) -> GoalRecord {
    // The stored form is well typed by construction; a mismatch could only come from a change in
    // the core, and then the fields that did read are still shown rather than failing the call.
    let stored: GoalRecord = serde_json::from_value(goal.to_value()).unwrap_or_default();
    GoalRecord {
        time_budget_ms: goal_core::time_budget_ms(goal).map(|b| b as f64),
        cost_budget: goal_core::cost_budget(goal),
        cost_used: goal_core::cost_used(goal),
        active_ms: goal_core::active_ms(goal, goal_core::now_ms()).floor(),
        active_hours: goal.active_hours.get().cloned().map(serde_json::Value::Object),
        session_id: goal.session_id.clone(),
        wake_at: goal_core::provider_wake_at(goal),
        ..stored
    }
}

/// A goal just installed on a session.
#[napi(object, object_from_js = false)]
pub struct InstalledGoal {
    /// Session.
    pub session_id: String,
    /// Directory.
    pub directory: String,
    /// The goal written.
    pub goal: GoalRecord,
    /// The effective objective (what the auditor judges against).
    pub objective: String,
    /// `verbatim`, `distilled` (small model, over 5,000 chars) or `excerpt` (head + tail).
    #[napi(ts_type = "'verbatim' | 'distilled' | 'excerpt'")]
    pub objective_fit: String,
    /// The objective went to the objective file (false: stored inline after a file error).
    pub objective_file: bool,
    /// The id of a goal this one replaced.
    pub replaced_goal_id: Option<String>,
    /// Non-fatal problems.
    pub warnings: Vec<GoalWarning>,
}

fn installed(created: &CreatedGoal, session_id: &str) -> InstalledGoal {
    InstalledGoal {
        session_id: session_id.to_string(),
        directory: created.directory.clone(),
        goal: record(&created.goal),
        objective: created.objective.clone(),
        objective_fit: created.fit.as_str().to_string(),
        objective_file: created.goal.objective_file,
        replaced_goal_id: created.replaced_goal_id.clone(),
        warnings: warnings_of(&created.warnings),
    }
}

/// Result of create / send / fork.
#[napi(object, object_from_js = false)]
pub struct SessionDispatch {
    /// `create`, `send` or `fork`.
    #[napi(ts_type = "'create' | 'send' | 'fork'")]
    pub action: String,
    /// The session prompted (the new one for create and fork).
    pub session_id: String,
    /// Its directory.
    pub directory: String,
    /// Its title.
    pub title: String,
    /// Fork: the session forked from.
    pub source_session_id: Option<String>,
    /// Model used (`provider/model`), when one was chosen or inherited.
    pub model: Option<String>,
    /// Agent used, when chosen or inherited.
    pub agent: Option<String>,
    /// Variant used.
    pub variant: Option<String>,
    /// A prompt or command was dispatched (false: create without a prompt).
    pub prompt_dispatched: bool,
    /// The dispatched message showed up in the session before returning.
    pub prompt_landed: bool,
    /// It ran as an OpenCode slash command.
    pub dispatched_as_command: bool,
    /// The command name.
    pub command: Option<String>,
    /// A goal was installed.
    pub goal_enabled: bool,
    /// Its budget.
    pub goal_token_budget: Option<f64>,
    /// The goal installed.
    pub goal: Option<InstalledGoal>,
    /// Newest assistant message before the dispatch (the reply comes after it).
    pub baseline_assistant_message_id: Option<String>,
    /// Non-fatal problems.
    pub warnings: Vec<GoalWarning>,
}

fn dispatch_result(action: &str, report: DispatchReport) -> SessionDispatch {
    let goal = report.goal.as_ref().map(|g| installed(g, &report.session_id));
    SessionDispatch {
        action: action.to_string(),
        goal_enabled: goal.is_some(),
        goal_token_budget: report.goal.as_ref().and_then(|g| g.goal.token_budget).map(|b| b as f64),
        goal,
        model: report.selection.model.as_ref().map(|m| format!("{}/{}", m.provider_id, m.model_id)),
        agent: report.selection.agent.clone(),
        variant: report.selection.variant.clone(),
        session_id: report.session_id,
        directory: report.directory,
        title: report.title,
        source_session_id: report.source_session_id,
        prompt_dispatched: report.prompt_dispatched,
        prompt_landed: report.prompt_landed,
        dispatched_as_command: report.dispatched_as_command,
        command: report.command,
        baseline_assistant_message_id: report.baseline_assistant_message_id,
        warnings: warnings_of(&report.warnings),
    }
}

/// A goal stamped onto a scheduled task's session, and how to dispatch the task.
#[napi(object, object_from_js = false)]
pub struct ScheduledGoalStamp {
    /// The goal installed.
    pub goal: InstalledGoal,
    /// Set when the task prompt is an OpenCode command: dispatch with
    /// `POST /session/:id/command {command, arguments}` (no synthetic part possible).
    pub command: Option<String>,
    /// The command's arguments.
    pub command_arguments: Option<String>,
    /// Append to the `prompt_async` parts after the prompt text.
    #[napi(ts_type = "{ type: 'text'; text: string; synthetic: true }")]
    pub intro_part: serde_json::Value,
    /// Non-fatal problems.
    pub warnings: Vec<GoalWarning>,
}

/// Result of a goal action.
#[napi(object, object_from_js = false)]
pub struct GoalActionResult {
    /// Session.
    pub session_id: String,
    /// Directory used.
    pub directory: String,
    /// The goal after the action (absent after clear).
    pub goal: Option<GoalRecord>,
    /// Status before the action.
    pub previous_status: Option<String>,
    /// Something was written (false: already in the requested state).
    pub changed: bool,
    /// Pause / clear of an active goal: the running turn was aborted.
    pub aborted: Option<bool>,
    /// Clear: an objective file was removed.
    pub objective_deleted: bool,
    /// Edit: how the new objective was fitted.
    pub objective_fit: Option<String>,
    /// Non-fatal problems.
    pub warnings: Vec<GoalWarning>,
}

fn action_result(report: ActionReport) -> GoalActionResult {
    GoalActionResult {
        session_id: report.session_id,
        directory: report.directory,
        goal: report.goal.as_ref().map(record),
        previous_status: report.previous_status.map(|s| s.as_str().to_string()),
        changed: report.changed,
        aborted: report.aborted,
        objective_deleted: report.objective_deleted,
        objective_fit: report.fit.map(|f| f.as_str().to_string()),
        warnings: warnings_of(&report.warnings),
    }
}

/// A session's goal with its effective objective.
#[napi(object, object_from_js = false)]
pub struct SessionGoalView {
    /// Session.
    pub session_id: String,
    /// Directory.
    pub directory: String,
    /// Session title.
    pub title: String,
    /// The goal (absent: no goal).
    pub goal: Option<GoalRecord>,
    /// The objective the loop audits against (file text, else inline).
    pub objective: String,
    /// `file`, `inline` or `missing`.
    #[napi(ts_type = "'file' | 'inline' | 'missing'")]
    pub objective_source: Option<String>,
}

fn view_result(view: GoalView) -> SessionGoalView {
    SessionGoalView {
        goal: view.goal.as_ref().map(record),
        session_id: view.session_id,
        directory: view.directory,
        title: view.title,
        objective: view.objective,
        objective_source: view.objective_source.map(|s| s.as_str().to_string()),
    }
}

/// One goal of a directory.
#[napi(object, object_from_js = false)]
pub struct GoalListEntry {
    /// Session.
    pub session_id: String,
    /// Directory.
    pub directory: String,
    /// Session title.
    pub title: String,
    /// The goal.
    pub goal: GoalRecord,
    /// A turn is running now.
    pub working: bool,
}

/// The objective file after a write.
#[napi(object, object_from_js = false)]
pub struct ObjectiveWritten {
    /// The stored text (trimmed, at most 5,000 chars).
    pub content: String,
}

/// Options of `createGoalControl`: where OpenCode is (same forms as the runtime), where the
/// objective files live, and the small model used to distill objectives over 5,000 chars.
#[napi(object, object_to_js = false)]
pub struct GoalControlOptions {
    /// A fixed OpenCode base URL and headers.
    pub open_code: Option<OpenCodeTarget>,
    /// OpenChamber: builds the URL of an OpenCode API path.
    #[napi(ts_type = "(path: string, prefix: string) => string")]
    pub build_open_code_url: Option<UrlCallback>,
    /// OpenChamber: the headers for OpenCode (may be async).
    #[napi(ts_type = "() => Record<string, string> | Promise<Record<string, string>>")]
    pub get_open_code_auth_headers: Option<HeadersCallback>,
    /// Settings location (`settings.dataDir`).
    pub settings: Option<RuntimeSettingsOptions>,
    /// Data directory (wins over `settings.dataDir`; default `OPENCHAMBER_DATA_DIR`, else
    /// `~/.config/openchamber`).
    pub data_dir: Option<String>,
    /// Small model for distilling long objectives: `{text, providerID, modelID}` or
    /// `{error: {statusCode?, code?}}`. Without one, long objectives are excerpted.
    #[napi(ts_type = "(request: SmallModelRequest) => Promise<SmallModelResult>")]
    pub generate_small_model_text: Option<ModelCallback>,
    /// The built-in small model's choice (`{providerID, modelID}`), used only when the host passes
    /// no small-model service; else OpenCode's `small_model`, else the session provider's own.
    pub small_model: Option<crate::SmallModelChoice>,
    /// OpenChamber's form of the small model (adapted by the package entry).
    #[allow(dead_code)] // typed here; the package entry turns it into generateSmallModelText
    #[napi(
        ts_type = "() => Promise<{ generateSmallModelText(request: SmallModelRequest): Promise<SmallModelResult> } | null | undefined>"
    )]
    pub get_small_model_service: Option<UnknownReturnValue>,
    /// Timeout of every OpenCode call (default 10000 ms).
    pub fetch_timeout_ms: Option<f64>,
    /// Timeout of a distillation call (default 60000 ms).
    pub small_model_timeout_ms: Option<f64>,
    /// How long a dispatch waits for its message to show up (default 5000 ms).
    pub landing_timeout_ms: Option<f64>,
    /// Timeout of a slash-command call, which OpenCode answers after the whole turn (default
    /// 600000 ms; the dispatch itself returns once the command has landed).
    pub command_timeout_ms: Option<f64>,
}

impl GoalControlOptions {
    /// The control context these options describe, every unset or unusable option at the core's
    /// default. Fails only without an OpenCode location.
    fn resolve(self, context: &EnvContext) -> Result<ControlContext> {
        let client = connection_of!(self).resolve(context, DEFAULT_FETCH_TIMEOUT)?;
        let small_model =
            crate::small_model_for(context, self.generate_small_model_text, &client, self.small_model.as_ref());
        Ok(ControlContext {
            client,
            small_model,
            data_dir: options::data_dir(self.data_dir, self.settings),
            small_model_timeout: millis(self.small_model_timeout_ms, DEFAULT_CALL_TIMEOUT),
            landing_timeout: millis(self.landing_timeout_ms, DEFAULT_LANDING_TIMEOUT),
            landing_poll: DEFAULT_LANDING_POLL,
            command_timeout: millis(self.command_timeout_ms, DEFAULT_COMMAND_TIMEOUT),
        })
    }
}

fn model_choice(provider_id: Option<String>, model_id: Option<String>) -> ModelChoice {
    ModelChoice { provider_id: provider_id.unwrap_or_default(), model_id: model_id.unwrap_or_default() }
}

fn data_dir_of(explicit: Option<String>) -> PathBuf {
    resolve_data_dir(explicit.as_deref())
}

/// `createSessionGoal` input.
#[napi(object)]
pub struct SessionGoalRequest {
    /// Session to put the goal on (existing metadata is kept).
    pub session_id: String,
    /// Its directory (default: the one OpenCode reports).
    pub directory: Option<String>,
    /// Objective text; over 5,000 chars it is distilled (or excerpted).
    pub objective: String,
    /// Token budget: an integer in [1000, 100000000].
    pub token_budget: Option<f64>,
    /// Time budget in ms (active time: paused and waiting time excluded); at least 1000.
    pub time_budget_ms: Option<f64>,
    /// Working hours: `{start: "HH:MM", end: "HH:MM", timeZone: "Europe/Berlin"}` (IANA zone;
    /// `end < start` crosses midnight). Outside them no continuation is sent.
    #[napi(ts_type = "{ start: string; end: string; timeZone: string }")]
    pub active_hours: Option<serde_json::Value>,
    /// Acceptance checks `[{command, timeoutMs?}]`, run before the goal may settle `complete`.
    #[napi(ts_type = "Array<{ command: string; timeoutMs?: number } | string>")]
    pub checks: Option<serde_json::Value>,
    /// Cost budget in US dollars (at least 0.01): the goal settles `budgetLimited` when its
    /// replies' `info.cost` reach it.
    pub cost_budget: Option<f64>,
    /// Acceptance criteria (at most 8 strings of at most 300 characters), graded one by one.
    pub criteria: Option<Vec<String>>,
    /// Provider the goal's turns run on (the distillation prefers it).
    #[napi(js_name = "providerID")]
    pub provider_id: Option<String>,
    /// Model the goal's turns run on.
    #[napi(js_name = "modelID")]
    pub model_id: Option<String>,
}

/// `createSession` input.
#[napi(object)]
pub struct CreateSessionRequest {
    /// Project directory (required).
    pub directory: String,
    /// Session title.
    pub title: Option<String>,
    /// First prompt; a leading `/name` runs that command. Required with `goal`.
    pub prompt: Option<String>,
    /// `provider/model`.
    pub model: Option<String>,
    /// Provider id (with `modelID`, instead of `model`).
    #[napi(js_name = "providerID")]
    pub provider_id: Option<String>,
    /// Model id.
    #[napi(js_name = "modelID")]
    pub model_id: Option<String>,
    /// Agent (primary agents only).
    pub agent: Option<String>,
    /// Model variant.
    pub variant: Option<String>,
    /// Start a goal with the prompt as its objective: `true` or its settings.
    #[napi(ts_type = "boolean | GoalSettingsInput")]
    pub goal: Option<GoalSettingsInput>,
}

/// `sendPrompt` input.
#[napi(object)]
pub struct SendPromptRequest {
    /// Target session.
    pub session_id: String,
    /// Its directory (default: the one OpenCode reports).
    pub directory: Option<String>,
    /// Prompt (required); a leading `/name` runs that command.
    pub prompt: String,
    /// `provider/model` (default: the last user message's).
    pub model: Option<String>,
    /// Provider id (with `modelID`).
    #[napi(js_name = "providerID")]
    pub provider_id: Option<String>,
    /// Model id.
    #[napi(js_name = "modelID")]
    pub model_id: Option<String>,
    /// Agent (default: the last user message's).
    pub agent: Option<String>,
    /// Variant.
    pub variant: Option<String>,
    /// Install a fresh goal (merged into the existing metadata) before dispatching: `true` or its settings.
    #[napi(ts_type = "boolean | GoalSettingsInput")]
    pub goal: Option<GoalSettingsInput>,
}

/// `forkSession` input.
#[napi(object)]
pub struct ForkSessionRequest {
    /// Session to fork.
    pub session_id: String,
    /// Fork before this message (default: the whole session).
    pub message_id: Option<String>,
    /// Directory (default: the one OpenCode reports).
    pub directory: Option<String>,
    /// Prompt for the fork (required).
    pub prompt: String,
    /// `provider/model` (default: the source's last user message's).
    pub model: Option<String>,
    /// Provider id (with `modelID`).
    #[napi(js_name = "providerID")]
    pub provider_id: Option<String>,
    /// Model id.
    #[napi(js_name = "modelID")]
    pub model_id: Option<String>,
    /// Agent.
    pub agent: Option<String>,
    /// Variant.
    pub variant: Option<String>,
    /// Install a goal on the fork before dispatching: `true` or its settings.
    #[napi(ts_type = "boolean | GoalSettingsInput")]
    pub goal: Option<GoalSettingsInput>,
}

/// `stampScheduledGoal` input.
#[napi(object)]
pub struct ScheduledGoalRequest {
    /// The task's fresh session.
    pub session_id: String,
    /// Its directory.
    pub directory: Option<String>,
    /// The task prompt (a slash command's expanded template becomes the objective).
    pub prompt: String,
    /// Token budget: an integer in [1000, 100000000].
    pub token_budget: Option<f64>,
    /// The task's provider.
    #[napi(js_name = "providerID")]
    pub provider_id: Option<String>,
    /// The task's model.
    #[napi(js_name = "modelID")]
    pub model_id: Option<String>,
}

/// Target of pause / resume / complete / clear.
#[napi(object)]
pub struct GoalActionRequest {
    /// Session.
    pub session_id: String,
    /// Directory (default: the one OpenCode reports).
    pub directory: Option<String>,
    /// Act only if the session's goal still has this id (409 otherwise).
    pub goal_id: Option<String>,
}

/// `editGoal` input.
#[napi(object)]
pub struct GoalEditRequest {
    /// Session.
    pub session_id: String,
    /// Directory (default: the one OpenCode reports).
    pub directory: Option<String>,
    /// Act only if the session's goal still has this id.
    pub goal_id: Option<String>,
    /// New objective (written to the objective file first).
    pub objective: Option<String>,
    /// New token budget: an integer in [1000, 100000000].
    pub token_budget: Option<f64>,
    /// Remove the token budget.
    pub clear_token_budget: Option<bool>,
    /// New time budget in ms (active time; at least 1000).
    pub time_budget_ms: Option<f64>,
    /// Remove the time budget.
    pub clear_time_budget: Option<bool>,
    /// New working hours `{start: "HH:MM", end: "HH:MM", timeZone}`.
    #[napi(ts_type = "{ start: string; end: string; timeZone: string }")]
    pub active_hours: Option<serde_json::Value>,
    /// Remove the working hours.
    pub clear_active_hours: Option<bool>,
    /// New acceptance checks `[{command, timeoutMs?}]` (replace the list).
    #[napi(ts_type = "Array<{ command: string; timeoutMs?: number } | string>")]
    pub checks: Option<serde_json::Value>,
    /// Remove the acceptance checks.
    pub clear_checks: Option<bool>,
    /// New cost budget in US dollars (at least 0.01).
    pub cost_budget: Option<f64>,
    /// Remove the cost budget.
    pub clear_cost_budget: Option<bool>,
    /// New acceptance criteria (replace the list; a text already there keeps its grade).
    pub criteria: Option<Vec<String>>,
    /// Remove the acceptance criteria.
    pub clear_criteria: Option<bool>,
    /// Provider preferred when distilling a long objective.
    #[napi(js_name = "providerID")]
    pub provider_id: Option<String>,
    /// Model preferred when distilling.
    #[napi(js_name = "modelID")]
    pub model_id: Option<String>,
}

/// The prompt options of a create / send / fork request (all three name them alike), with the
/// prompt text given separately (optional for create only).
/// What create, send and fork send, with the goal's settings converted once.
fn prompt_options(
    prompt: String,
    (model, provider_id, model_id): (Option<String>, Option<String>, Option<String>),
    (agent, variant): (Option<String>, Option<String>),
    goal: Option<GoalSettingsInput>,
) -> std::result::Result<PromptOptions, GoalError> {
    let goal = goal.map(goal_core::GoalSettings::try_from).transpose()?;
    Ok(PromptOptions { prompt, model, provider_id, model_id, agent, variant, goal })
}

/// A cost budget checked by the core's rule (US dollars, at least 0.01).
fn cost_budget_value(dollars: f64) -> std::result::Result<f64, GoalError> {
    goal_core::check_cost_budget(dollars).map_err(|message| GoalError::invalid("costBudget", message))
}

fn target(session_id: String, directory: Option<String>, goal_id: Option<String>) -> GoalTarget {
    GoalTarget { session_id, directory: directory.unwrap_or_default(), expected_goal_id: goal_id }
}

/// Goal creation and control against one OpenCode server. Results resolve to a value or a
/// `GoalFailure` (`failed: true`); nothing is thrown for a failed operation.
#[napi]
pub struct GoalControl {
    ctx: ControlContext,
}

/// Creates a goal control. Throws only for unusable options (no OpenCode location).
#[napi(catch_unwind)]
pub fn create_goal_control(env: Env, options: GoalControlOptions) -> Result<GoalControl> {
    crate::logging::init();
    let ctx = options.resolve(&*EnvContext::of(&env)?)?;
    Ok(GoalControl { ctx })
}

#[napi]
impl GoalControl {
    /// The data directory the objective files live in.
    #[napi(getter)]
    pub fn data_dir(&self) -> String {
        self.ctx.data_dir.to_string_lossy().into_owned()
    }

    /// The goal's audit trail (`goals/<sessionId>.history.jsonl`), oldest first; `limit` keeps the
    /// newest records. An unknown session or a missing trail reads as an empty list.
    #[napi]
    pub async fn history(&self, session_id: String, limit: Option<f64>) -> Result<Vec<crate::GoalHistoryRecord>> {
        let limit = limit.filter(|n| n.is_finite() && *n >= 1.0).map(|n| n.min(100_000.0) as usize);
        Ok(crate::history_records(goal_core::read_history(&self.ctx.data_dir, &session_id, limit).await))
    }

    /// Why the session's goal is where it is (see the runtime's `explain`); read only. Resolves
    /// to a `GoalFailure` when OpenCode cannot be read.
    #[napi]
    pub async fn explain(
        &self,
        session_id: String,
        directory: Option<String>,
    ) -> Result<Either<crate::GoalExplanation, GoalFailure>> {
        let ctx = self.ctx.clone();
        let directory = directory.unwrap_or_default();
        Ok(guarded(async move {
            goal_core::explain_goal(&ctx.client, &ctx.data_dir, &session_id, &directory, None)
                .await
                .map_err(|error| GoalError::from_http("explain", &error))
                .and_then(crate::explanation_of)
        })
        .await)
    }

    /// Installs a fresh active goal on a session: objective fitted (distilled over 5,000 chars),
    /// objective file written first (inline on failure), then merged into the session metadata.
    #[napi]
    pub async fn create_session_goal(&self, request: SessionGoalRequest) -> Result<Either<InstalledGoal, GoalFailure>> {
        let ctx = self.ctx.clone();
        Ok(guarded(async move {
            let new_goal = NewGoal {
                session_id: request.session_id.clone(),
                directory: request.directory.unwrap_or_default(),
                objective: request.objective,
                token_budget: request.token_budget.map(goal_core::check_token_budget).transpose()?,
                model: model_choice(request.provider_id, request.model_id),
                time_limits: goal_core::GoalTimeLimits::check(request.time_budget_ms, request.active_hours.as_ref())
                    .map_err(|message| GoalError::new(ErrorKind::InvalidInput, message))?,
                checks: goal_core::check_goal_checks(request.checks.as_ref())?,
                cost_budget: request.cost_budget.map(cost_budget_value).transpose()?,
                criteria: goal_core::check_goal_criteria(
                    request.criteria.map(|list| serde_json::json!(list)).as_ref(),
                    "criteria",
                )?,
            };
            let created = goal_core::create_session_goal(&ctx, &new_goal).await?;
            Ok(installed(&created, &request.session_id))
        })
        .await)
    }

    /// Creates a session; with a prompt, installs the goal (if `goal`) and then dispatches.
    #[napi]
    pub async fn create_session(&self, request: CreateSessionRequest) -> Result<Either<SessionDispatch, GoalFailure>> {
        let ctx = self.ctx.clone();
        Ok(guarded(async move {
            let create = CreateSession {
                directory: request.directory,
                title: request.title,
                options: prompt_options(
                    request.prompt.unwrap_or_default(),
                    (request.model, request.provider_id, request.model_id),
                    (request.agent, request.variant),
                    request.goal,
                )?,
            };
            goal_core::create_session(&ctx, &create).await.map(|r| dispatch_result("create", r))
        })
        .await)
    }

    /// Sends a prompt to an existing session; with `goal`, installs a fresh goal first.
    #[napi]
    pub async fn send_prompt(&self, request: SendPromptRequest) -> Result<Either<SessionDispatch, GoalFailure>> {
        let ctx = self.ctx.clone();
        Ok(guarded(async move {
            let send = SendPrompt {
                session_id: request.session_id,
                directory: request.directory.unwrap_or_default(),
                options: prompt_options(
                    request.prompt,
                    (request.model, request.provider_id, request.model_id),
                    (request.agent, request.variant),
                    request.goal,
                )?,
            };
            goal_core::send_prompt(&ctx, &send).await.map(|r| dispatch_result("send", r))
        })
        .await)
    }

    /// Forks a session (at an optional message), installs the goal on the fork (if `goal`) and
    /// dispatches there.
    #[napi]
    pub async fn fork_session(&self, request: ForkSessionRequest) -> Result<Either<SessionDispatch, GoalFailure>> {
        let ctx = self.ctx.clone();
        Ok(guarded(async move {
            let fork = ForkSession {
                session_id: request.session_id,
                message_id: request.message_id,
                directory: request.directory.unwrap_or_default(),
                options: prompt_options(
                    request.prompt,
                    (request.model, request.provider_id, request.model_id),
                    (request.agent, request.variant),
                    request.goal,
                )?,
            };
            goal_core::fork_session(&ctx, &fork).await.map(|r| dispatch_result("fork", r))
        })
        .await)
    }

    /// Stamps a goal onto a scheduled task's fresh session and says how to dispatch the task
    /// (command, or `prompt_async` with `introPart` after the prompt text).
    #[napi]
    pub async fn stamp_scheduled_goal(
        &self,
        request: ScheduledGoalRequest,
    ) -> Result<Either<ScheduledGoalStamp, GoalFailure>> {
        let ctx = self.ctx.clone();
        Ok(guarded(async move {
            let directory = request.directory.unwrap_or_default();
            let stamp = ScheduledGoal {
                session_id: request.session_id.clone(),
                directory: directory.clone(),
                prompt: request.prompt,
                token_budget: request.token_budget,
                model: model_choice(request.provider_id, request.model_id),
            };
            let stamped = goal_core::stamp_scheduled_goal(&ctx, &stamp).await?;
            Ok(ScheduledGoalStamp {
                goal: installed(&stamped.goal, &request.session_id),
                command: stamped.command.as_ref().map(|c| c.name.clone()),
                command_arguments: stamped.command.map(|c| c.arguments),
                intro_part: stamped.intro_part,
                warnings: warnings_of(&stamped.warnings),
            })
        })
        .await)
    }

    /// Edits a goal's objective and/or budget (same id and counters; active, `resumed`).
    #[napi]
    pub async fn edit_goal(&self, request: GoalEditRequest) -> Result<Either<GoalActionResult, GoalFailure>> {
        let ctx = self.ctx.clone();
        Ok(guarded(async move {
            let criteria_list =
                |list: Vec<String>| goal_core::check_goal_criteria(Some(&serde_json::json!(list)), "criteria");
            let checks_list = |value: serde_json::Value| {
                goal_core::parse_checks(&value)
                    .map_err(|error| GoalError::invalid("checks", format!("checks: {error}")))
            };
            let edit = GoalEdit {
                target: target(request.session_id, request.directory, request.goal_id),
                objective: request.objective,
                budget: LimitEdit::of_pair(
                    request.token_budget,
                    request.clear_token_budget,
                    ("tokenBudget", "clearTokenBudget"),
                    goal_core::check_token_budget,
                )?,
                time_budget: LimitEdit::of_pair(
                    request.time_budget_ms,
                    request.clear_time_budget,
                    ("timeBudgetMs", "clearTimeBudget"),
                    |ms| goal_core::check_time_budget_ms(ms).map_err(|m| GoalError::invalid("timeBudgetMs", m)),
                )?,
                active_hours: LimitEdit::of_pair(
                    request.active_hours,
                    request.clear_active_hours,
                    ("activeHours", "clearActiveHours"),
                    |value| {
                        goal_core::ActiveHours::from_value(&value).map_err(|m| GoalError::invalid("activeHours", m))
                    },
                )?,
                checks: LimitEdit::of_pair(
                    request.checks.filter(|v| !v.is_null()),
                    request.clear_checks,
                    ("checks", "clearChecks"),
                    checks_list,
                )?,
                cost_budget: LimitEdit::of_pair(
                    request.cost_budget,
                    request.clear_cost_budget,
                    ("costBudget", "clearCostBudget"),
                    cost_budget_value,
                )?,
                criteria: LimitEdit::of_pair(
                    request.criteria,
                    request.clear_criteria,
                    ("criteria", "clearCriteria"),
                    criteria_list,
                )?,
                model: model_choice(request.provider_id, request.model_id),
            };
            goal_core::edit_goal(&ctx, &edit).await.map(action_result)
        })
        .await)
    }

    /// Pauses an active goal and aborts the running turn.
    #[napi]
    pub async fn pause_goal(&self, request: GoalActionRequest) -> Result<Either<GoalActionResult, GoalFailure>> {
        let ctx = self.ctx.clone();
        let target = target(request.session_id, request.directory, request.goal_id);
        Ok(guarded(async move { goal_core::pause_goal(&ctx, &target).await.map(action_result) }).await)
    }

    /// Resumes a goal: active, `resumed`, a fresh turn allowance (the runtime kicks it off within
    /// its resume delay, 250 ms by default).
    #[napi]
    pub async fn resume_goal(&self, request: GoalActionRequest) -> Result<Either<GoalActionResult, GoalFailure>> {
        let ctx = self.ctx.clone();
        let target = target(request.session_id, request.directory, request.goal_id);
        Ok(guarded(async move { goal_core::resume_goal(&ctx, &target).await.map(action_result) }).await)
    }

    /// Marks a goal complete (`marked by user`).
    #[napi]
    pub async fn complete_goal(&self, request: GoalActionRequest) -> Result<Either<GoalActionResult, GoalFailure>> {
        let ctx = self.ctx.clone();
        let target = target(request.session_id, request.directory, request.goal_id);
        Ok(guarded(async move { goal_core::complete_goal(&ctx, &target).await.map(action_result) }).await)
    }

    /// Removes the goal (other metadata kept), deletes its objective file, aborts if it was active.
    #[napi]
    pub async fn clear_goal(&self, request: GoalActionRequest) -> Result<Either<GoalActionResult, GoalFailure>> {
        let ctx = self.ctx.clone();
        let target = target(request.session_id, request.directory, request.goal_id);
        Ok(guarded(async move { goal_core::clear_goal(&ctx, &target).await.map(action_result) }).await)
    }

    /// A session's goal and its effective objective (file text, else inline).
    #[napi]
    pub async fn get_goal(
        &self,
        session_id: String,
        directory: Option<String>,
    ) -> Result<Either<SessionGoalView, GoalFailure>> {
        let ctx = self.ctx.clone();
        Ok(guarded(async move {
            goal_core::get_goal(&ctx, &session_id, directory.as_deref().unwrap_or("")).await.map(view_result)
        })
        .await)
    }

    /// The goals of a directory's top-level sessions (newest first).
    #[napi]
    pub async fn list_goals(&self, directory: String) -> Result<Either<Vec<GoalListEntry>, GoalFailure>> {
        let ctx = self.ctx.clone();
        Ok(guarded(async move {
            let rows = goal_core::list_goals(&ctx, &directory).await?;
            Ok(rows
                .into_iter()
                .map(|row| GoalListEntry {
                    goal: record(&row.goal),
                    directory: if row.session.directory.is_empty() {
                        directory.clone()
                    } else {
                        row.session.directory.clone()
                    },
                    session_id: row.session.id,
                    title: row.session.title,
                    working: row.working,
                })
                .collect())
        })
        .await)
    }
}

/// Writes `<dataDir>/goals/<sessionId>.md` atomically (trimmed, at most 5,000 chars). The id
/// must match `^[A-Za-z0-9_-]{4,128}$` (checked before any file access). Failures come back as
/// values: 400 invalid id or empty content, 500 file-system error.
#[napi]
pub async fn write_objective_file(
    session_id: String,
    content: String,
    data_dir: Option<String>,
) -> Result<Either<ObjectiveWritten, GoalFailure>> {
    Ok(guarded(async move {
        let root = data_dir_of(data_dir);
        goal_core::write_objective(&root, &session_id, &content)
            .await
            .map(|content| ObjectiveWritten { content })
            .map_err(GoalError::from)
    })
    .await)
}

/// Reads an objective file: its text, or `null` for an invalid id, a missing file or empty text.
#[napi]
pub async fn read_objective_file(session_id: String, data_dir: Option<String>) -> Result<Option<String>> {
    let root = data_dir_of(data_dir);
    Ok(tokio::spawn(async move { goal_core::read_objective(&root, &session_id).await }).await.ok().flatten())
}

/// Deletes an objective file, best effort: whether a file was removed (false for an invalid id).
#[napi]
pub async fn delete_objective_file(session_id: String, data_dir: Option<String>) -> Result<bool> {
    let root = data_dir_of(data_dir);
    Ok(tokio::spawn(async move { goal_core::delete_objective(&root, &session_id).await }).await.unwrap_or(false))
}
