//! Server-side orchestration: create a session, send to one, or fork one, optionally as a goal.
//!
//! Every path keeps the same order: objective file → goal metadata → dispatch, so the loop never
//! sees a turn of a goal it cannot read, and a dispatch never runs before its goal exists. Input
//! is validated before anything is written. A failure after a step took effect says which step
//! (`partial`), so a host can show "session created, prompt failed" instead of a bare error.

use std::time::Duration;

use serde_json::{json, Map, Value};
use tracing::{debug, warn, Instrument};

use crate::control::create::{
    check_session_id, create_session_goal, ControlContext, CreatedGoal, GoalError, ModelChoice, NewGoal, PartialAction,
};
use crate::control::settings::GoalSettings;
use crate::error::{ErrorKind, Warning, WarningCode};
use crate::io::opencode::{session_path, DispatchOutcome};
use crate::record::session::{chronological, Message, Role, SessionView};
use crate::text::commands::{command_list, command_objective, parse_slash, SlashInvocation};
use crate::text::prompts::goal_intro_text;

/// Largest prompt accepted (the reference's JSON body limit).
pub const MAX_PROMPT_BYTES: usize = 1_000_000;
/// Messages read to find the selection and the baseline of the last exchange.
const RECENT_MESSAGES: usize = 40;
/// How long a dispatch waits for its message to show up in the session (the reference's
/// `waitForPromptLanded`: 5 s at 150 ms).
pub const DEFAULT_LANDING_TIMEOUT: Duration = Duration::from_millis(5_000);
/// Poll interval of the landing wait.
pub const DEFAULT_LANDING_POLL: Duration = Duration::from_millis(150);
/// Timeout of `POST /session/:id/command`, which OpenCode answers only after the whole turn.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(600);

/// What to send and how (shared by create, send and fork).
#[derive(Debug, Clone, Default)]
pub struct PromptOptions {
    /// Prompt text; a leading `/name` runs that OpenCode command.
    pub prompt: String,
    /// `provider/model`.
    pub model: Option<String>,
    /// Provider id (with `model_id`, instead of `model`).
    pub provider_id: Option<String>,
    /// Model id (with `provider_id`).
    pub model_id: Option<String>,
    /// Agent.
    pub agent: Option<String>,
    /// Model variant.
    pub variant: Option<String>,
    /// Start a goal with this prompt as the objective, with these settings.
    pub goal: Option<GoalSettings>,
}

/// Options checked and normalized.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CheckedPrompt {
    /// Prompt (untrimmed text is sent as written; empty means none).
    pub prompt: String,
    /// Explicit model.
    pub model: Option<ModelChoice>,
    /// Explicit agent.
    pub agent: Option<String>,
    /// Explicit variant.
    pub variant: Option<String>,
    /// The goal requested, if any.
    pub goal: Option<GoalSettings>,
}

fn non_empty(value: &Option<String>) -> Option<String> {
    value.as_deref().map(str::trim).filter(|v| !v.is_empty()).map(str::to_string)
}

/// Parses `provider/model` (the model id may itself contain slashes).
pub fn parse_model(text: &str) -> Option<ModelChoice> {
    let (provider, model) = text.trim().split_once('/')?;
    (!provider.is_empty() && !model.is_empty())
        .then(|| ModelChoice { provider_id: provider.to_string(), model_id: model.to_string() })
}

/// Validates the options before anything is written: prompt size, goal and budget rules, and
/// the model's shape.
pub fn check_prompt_options(options: &PromptOptions, prompt_required: bool) -> Result<CheckedPrompt, GoalError> {
    if options.prompt.len() > MAX_PROMPT_BYTES {
        return Err(GoalError::new(
            ErrorKind::TooLarge,
            format!("prompt is too large (limit {MAX_PROMPT_BYTES} bytes)"),
        ));
    }
    let has_prompt = !options.prompt.trim().is_empty();
    if options.goal.is_some() && !has_prompt {
        return Err(GoalError::invalid("prompt", "goal requires a prompt"));
    }
    if prompt_required && !has_prompt {
        return Err(GoalError::invalid("prompt", "prompt is required"));
    }
    let model = match (non_empty(&options.model), non_empty(&options.provider_id), non_empty(&options.model_id)) {
        (Some(text), None, None) => {
            Some(parse_model(&text).ok_or_else(|| GoalError::invalid("model", "model must look like provider/model"))?)
        }
        (None, Some(provider_id), Some(model_id)) => Some(ModelChoice { provider_id, model_id }),
        (None, None, None) => None,
        _ => return Err(GoalError::invalid("model", "pass either model (provider/model) or providerID with modelID")),
    };
    Ok(CheckedPrompt {
        prompt: if has_prompt { options.prompt.clone() } else { String::new() },
        model,
        agent: non_empty(&options.agent),
        variant: non_empty(&options.variant),
        goal: options.goal.clone(),
    })
}

/// The model, agent and variant a dispatch uses.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selection {
    /// Model (none: OpenCode's default).
    pub model: Option<ModelChoice>,
    /// Agent (none: OpenCode's default).
    pub agent: Option<String>,
    /// Variant.
    pub variant: Option<String>,
}

/// What the recent messages of a session tell a dispatch.
#[derive(Debug, Clone, Default)]
struct History {
    /// Model/agent/variant of the newest user message.
    last_selection: Selection,
    /// Newest user message id (the landing check waits for a newer one).
    last_user_id: Option<String>,
    /// Newest assistant message id.
    last_assistant_id: Option<String>,
}

fn read_history(raw: &Value) -> History {
    let Some(messages) = Message::list_from_value(raw) else {
        return History::default();
    };
    let ordered = chronological(&messages);
    let newest = |role: Role| ordered.iter().rev().find(|m| m.role == role && !m.id.is_empty()).map(|m| m.id.clone());
    let mut history =
        History { last_user_id: newest(Role::User), last_assistant_id: newest(Role::Assistant), ..Default::default() };
    // The selection lives on the user message's info (`model`, `agent`, `variant`), which the
    // tolerant Message view does not keep: read it from the raw entry.
    if let Some(id) = &history.last_user_id {
        let info = raw
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|entry| entry.get("info"))
            .find(|info| info.get("id").and_then(Value::as_str) == Some(id.as_str()));
        if let Some(info) = info {
            let text =
                |value: Option<&Value>| value.and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
            let model = info.get("model");
            history.last_selection = Selection {
                model: match (text(model.and_then(|m| m.get("providerID"))), text(model.and_then(|m| m.get("modelID"))))
                {
                    (Some(provider_id), Some(model_id)) => Some(ModelChoice { provider_id, model_id }),
                    _ => None,
                },
                agent: text(info.get("agent")),
                variant: text(model.and_then(|m| m.get("variant"))).or_else(|| text(info.get("variant"))),
            };
        }
    }
    history
}

async fn recent_history(ctx: &ControlContext, session_id: &str, directory: &str) -> Option<History> {
    let path = format!("{}?limit={RECENT_MESSAGES}", session_path(session_id, "/message").ok()?);
    match ctx.client.call("GET", &path, directory, None).await {
        Ok(raw) => Some(read_history(&raw)),
        Err(error) => {
            debug!(target: "session_goal", session = session_id, %error, "recent messages unreadable");
            None
        }
    }
}

/// Checks an explicit model against `GET /config/providers` and an explicit agent against
/// `GET /agent` (sub-agents cannot run a prompt). A catalog that cannot be read is not a reason
/// to refuse: OpenCode will judge the dispatch itself.
async fn check_selection(ctx: &ControlContext, directory: &str, checked: &CheckedPrompt) -> Result<(), GoalError> {
    if let Some(model) = &checked.model {
        if let Ok(catalog) = ctx.client.call("GET", "/config/providers", directory, None).await {
            let providers = catalog.get("providers").and_then(Value::as_array);
            if let Some(providers) = providers {
                let known = providers.iter().any(|provider| {
                    provider.get("id").and_then(Value::as_str) == Some(model.provider_id.as_str())
                        && provider.get("models").and_then(|m| m.get(&model.model_id)).is_some()
                });
                if !known {
                    return Err(GoalError::invalid(
                        "model",
                        format!("unknown model {}/{}", model.provider_id, model.model_id),
                    ));
                }
            }
        }
    }
    if let Some(agent) = &checked.agent {
        if let Ok(Value::Array(agents)) = ctx.client.call("GET", "/agent", directory, None).await {
            let found = agents.iter().find(|a| a.get("name").and_then(Value::as_str) == Some(agent.as_str()));
            match found {
                None => return Err(GoalError::invalid("agent", format!("unknown agent {agent}"))),
                Some(info) if info.get("mode").and_then(Value::as_str) == Some("subagent") => {
                    return Err(GoalError::invalid(
                        "agent",
                        format!("agent {agent} is a subagent and cannot run a prompt"),
                    ));
                }
                Some(_) => {}
            }
        }
    }
    Ok(())
}

/// A slash invocation resolved against OpenCode's command list.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedCommand {
    /// Command name.
    pub name: String,
    /// Raw arguments.
    pub arguments: String,
    /// The goal objective: the expanded template (or the raw invocation).
    pub objective: String,
}

/// Resolves a slash prompt through `GET /command`. `Ok(None)`: an ordinary prompt (no slash,
/// or no such command). The error is a warning: the list could not be read, so the prompt is
/// sent as text.
pub async fn resolve_command(
    ctx: &ControlContext,
    directory: &str,
    prompt: &str,
) -> Result<Option<ResolvedCommand>, Warning> {
    let Some(invocation) = parse_slash(prompt) else {
        return Ok(None);
    };
    let list = ctx.client.call("GET", "/command", directory, None).await.map_err(|error| {
        let message = format!("command list unavailable ({error}); the prompt was sent as text");
        Warning::new(WarningCode::CommandListUnavailable, message)
    })?;
    let commands = command_list(&list).ok_or_else(|| {
        Warning::new(WarningCode::CommandListUnavailable, "command list unreadable; the prompt was sent as text")
    })?;
    Ok(commands
        .iter()
        .find(|c| c.name == invocation.name)
        .map(|command| resolved(&invocation, Some(&command.template))))
}

fn resolved(invocation: &SlashInvocation, template: Option<&str>) -> ResolvedCommand {
    ResolvedCommand {
        name: invocation.name.clone(),
        arguments: invocation.arguments.clone(),
        objective: command_objective(invocation, template),
    }
}

/// The synthetic goal-mode reminder part attached after the prompt text.
pub fn goal_intro_part(token_budget: Option<u64>) -> Value {
    json!({ "type": "text", "text": goal_intro_text(token_budget), "synthetic": true })
}

/// `prompt_async` body: the prompt text, then the goal intro (synthetic) when a goal starts.
pub fn prompt_body(prompt: &str, selection: &Selection, goal_intro: Option<Value>) -> Value {
    let mut parts = vec![json!({ "type": "text", "text": prompt })];
    parts.extend(goal_intro);
    let mut body = Map::new();
    body.insert("parts".into(), Value::Array(parts));
    if let Some(model) = &selection.model {
        body.insert("model".into(), json!({ "providerID": model.provider_id, "modelID": model.model_id }));
    }
    if let Some(agent) = &selection.agent {
        body.insert("agent".into(), Value::from(agent.clone()));
    }
    if let Some(variant) = &selection.variant {
        body.insert("variant".into(), Value::from(variant.clone()));
    }
    Value::Object(body)
}

/// `POST /session/:id/command` body (commands take the model as `provider/model`).
pub fn command_body(command: &ResolvedCommand, selection: &Selection) -> Value {
    let mut body = Map::new();
    body.insert("command".into(), Value::from(command.name.clone()));
    body.insert("arguments".into(), Value::from(command.arguments.clone()));
    if let Some(model) = &selection.model {
        body.insert("model".into(), Value::from(format!("{}/{}", model.provider_id, model.model_id)));
    }
    if let Some(agent) = &selection.agent {
        body.insert("agent".into(), Value::from(agent.clone()));
    }
    if let Some(variant) = &selection.variant {
        body.insert("variant".into(), Value::from(variant.clone()));
    }
    Value::Object(body)
}

/// Waits until a user message newer than `baseline` shows up (the prompt landed). A lookup
/// failure counts as landed, as in the reference: the dispatch itself was accepted.
async fn wait_landed(ctx: &ControlContext, session_id: &str, directory: &str, baseline: Option<&str>) -> bool {
    let deadline = tokio::time::Instant::now() + ctx.landing_timeout;
    loop {
        match recent_history(ctx, session_id, directory).await {
            None => return true,
            Some(history) if history.last_user_id.is_some() && history.last_user_id.as_deref() != baseline => {
                return true
            }
            Some(_) => {}
        }
        if tokio::time::Instant::now() + ctx.landing_poll > deadline {
            return false;
        }
        tokio::time::sleep(ctx.landing_poll).await;
    }
}

/// How a dispatch went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Dispatched {
    landed: bool,
}

async fn dispatch_prompt(
    ctx: &ControlContext,
    session_id: &str,
    directory: &str,
    body: &Value,
    baseline: Option<&str>,
) -> Result<Dispatched, GoalError> {
    match ctx.client.prompt_async(session_id, directory, body).await {
        DispatchOutcome::Sent => Ok(Dispatched { landed: wait_landed(ctx, session_id, directory, baseline).await }),
        DispatchOutcome::NotAdmitted(0) => {
            Err(GoalError::new(ErrorKind::OpenCode, "prompt not sent: OpenCode URL unavailable"))
        }
        DispatchOutcome::NotAdmitted(code) => {
            Err(GoalError::refused(code, format!("OpenCode refused the prompt (HTTP {code})")))
        }
        DispatchOutcome::Ambiguous(why) => {
            // Maybe admitted: look before calling it a failure (and never re-send).
            if wait_landed(ctx, session_id, directory, baseline).await {
                Ok(Dispatched { landed: true })
            } else {
                Err(GoalError::new(ErrorKind::OpenCode, format!("prompt dispatch failed: {why}")))
            }
        }
    }
}

/// Runs a command. OpenCode answers `POST /session/:id/command` only after the whole turn, so
/// the call runs in the background with a long timeout and the dispatch returns once the
/// command's user message has landed (or the call itself answered).
async fn dispatch_command(
    ctx: &ControlContext,
    session_id: &str,
    directory: &str,
    body: Value,
    baseline: Option<&str>,
) -> Result<Dispatched, GoalError> {
    let client = ctx.client.with_timeout(ctx.command_timeout);
    let path = session_path(session_id, "/command").map_err(|error| GoalError::from_http("command", &error))?;
    let (session, dir) = (session_id.to_string(), directory.to_string());
    let mut call = tokio::spawn(
        async move {
            let result = client.call("POST", &path, &dir, Some(&body)).await;
            if let Err(error) = &result {
                warn!(target: "session_goal", session = %session, %error, "command call failed");
            }
            result
        }
        .in_current_span(),
    );
    // Give an immediate refusal (unknown command, bad agent) the chance to answer first.
    let landed = async {
        tokio::time::sleep(ctx.landing_poll).await;
        wait_landed(ctx, session_id, directory, baseline).await
    };
    tokio::select! {
        joined = &mut call => match joined {
            Ok(Ok(_)) => Ok(Dispatched { landed: true }),
            Ok(Err(crate::io::opencode::HttpError::Status(code))) if (400..500).contains(&code) && code != 408 && code != 429 => {
                Err(GoalError::refused(code, format!("OpenCode refused the command (HTTP {code})")))
            }
            Ok(Err(error)) => {
                if wait_landed(ctx, session_id, directory, baseline).await {
                    Ok(Dispatched { landed: true })
                } else {
                    Err(GoalError::new(ErrorKind::OpenCode, format!("command dispatch failed: {error}")))
                }
            }
            Err(_) => Err(GoalError::new(ErrorKind::Local, "command dispatch task failed")),
        },
        landed = landed => {
            // Still running (a whole turn): leave the call to finish in the background.
            Ok(Dispatched { landed })
        }
    }
}

/// Result of create / send / fork.
#[derive(Debug, Clone, Default)]
pub struct DispatchReport {
    /// `create`, `send` or `fork`.
    pub action: &'static str,
    /// The session the prompt went to (the new one for create and fork).
    pub session_id: String,
    /// Its directory.
    pub directory: String,
    /// Its title.
    pub title: String,
    /// Fork: the session forked from.
    pub source_session_id: Option<String>,
    /// The selection used.
    pub selection: Selection,
    /// A prompt or command was dispatched.
    pub prompt_dispatched: bool,
    /// The dispatched message showed up in the session before returning.
    pub prompt_landed: bool,
    /// It ran as an OpenCode command.
    pub dispatched_as_command: bool,
    /// The command name, when it did.
    pub command: Option<String>,
    /// The goal installed, when one was requested.
    pub goal: Option<CreatedGoal>,
    /// Newest assistant message before the dispatch (to wait for the reply after it).
    pub baseline_assistant_message_id: Option<String>,
    /// Non-fatal problems.
    pub warnings: Vec<Warning>,
}

/// Installs the goal (when requested) and dispatches, in that order, on an existing session.
/// `created` names what already exists if this step fails (a new session or fork).
async fn goal_then_dispatch(
    ctx: &ControlContext,
    session: &SessionView,
    directory: &str,
    checked: &CheckedPrompt,
    selection: Selection,
    created: Option<PartialAction>,
    report: &mut DispatchReport,
) -> Result<(), GoalError> {
    let session_id = session.id.as_str();
    let fail = |error: GoalError, partial: Option<PartialAction>| error.after(partial, session_id, directory);
    let command = match resolve_command(ctx, directory, &checked.prompt).await {
        Ok(command) => command,
        Err(warning) => {
            report.warnings.push(warning);
            None
        }
    };
    let history = recent_history(ctx, session_id, directory).await.unwrap_or_default();
    report.baseline_assistant_message_id = history.last_assistant_id.clone();
    if let Some(settings) = &checked.goal {
        let objective = command.as_ref().map(|c| c.objective.clone()).unwrap_or_else(|| checked.prompt.clone());
        let request = NewGoal {
            session_id: session_id.to_string(),
            directory: directory.to_string(),
            objective,
            model: selection.model.clone().unwrap_or_default(),
            settings: settings.clone(),
        };
        let goal = create_session_goal(ctx, &request).await.map_err(|e| fail(e, created))?;
        report.warnings.extend(goal.warnings.iter().cloned());
        report.goal = Some(goal);
    }
    let after_goal = if checked.goal.is_some() { Some(PartialAction::GoalConfigured) } else { created };
    let baseline = history.last_user_id.as_deref();
    let dispatched = match &command {
        Some(command) => {
            dispatch_command(ctx, session_id, directory, command_body(command, &selection), baseline).await
        }
        None => {
            let intro = checked.goal.as_ref().map(|settings| goal_intro_part(settings.token_budget()));
            dispatch_prompt(ctx, session_id, directory, &prompt_body(&checked.prompt, &selection, intro), baseline)
                .await
        }
    }
    .map_err(|e| fail(e, after_goal))?;
    report.prompt_dispatched = true;
    report.prompt_landed = dispatched.landed;
    report.dispatched_as_command = command.is_some();
    report.command = command.map(|c| c.name);
    report.selection = selection;
    Ok(())
}

fn pick_selection(checked: &CheckedPrompt, inherited: Option<&Selection>) -> Selection {
    let inherited = inherited.cloned().unwrap_or_default();
    let same_model = checked.model.is_none();
    Selection {
        model: checked.model.clone().or(inherited.model),
        agent: checked.agent.clone().or(inherited.agent),
        // A variant belongs to its model: inherit it only with the model.
        variant: checked.variant.clone().or(if same_model { inherited.variant } else { None }),
    }
}

fn report_for(action: &'static str, session: &SessionView, directory: &str) -> DispatchReport {
    DispatchReport {
        action,
        session_id: session.id.clone(),
        directory: directory.to_string(),
        title: session.title.clone(),
        ..Default::default()
    }
}

/// Reads a session and settles the directory every later call passes: the caller's, else the
/// one OpenCode reports.
pub async fn locate_session(
    ctx: &ControlContext,
    session_id: &str,
    directory: &str,
) -> Result<(SessionView, String), GoalError> {
    check_session_id(session_id)?;
    let session = ctx
        .client
        .get_session(session_id, directory)
        .await
        .map_err(|error| GoalError::from_http("session lookup", &error))?;
    let directory = if directory.is_empty() { session.directory.clone() } else { directory.to_string() };
    Ok((session, directory))
}

/// Input of [`create_session`].
#[derive(Debug, Clone, Default)]
pub struct CreateSession {
    /// Project directory (required).
    pub directory: String,
    /// Title.
    pub title: Option<String>,
    /// Prompt and goal options (the prompt is optional here).
    pub options: PromptOptions,
}

/// Creates a session, then (with a prompt) installs the goal and dispatches.
pub async fn create_session(ctx: &ControlContext, request: &CreateSession) -> Result<DispatchReport, GoalError> {
    let directory = request.directory.trim();
    if directory.is_empty() {
        return Err(GoalError::invalid("directory", "directory is required"));
    }
    let checked = check_prompt_options(&request.options, false)?;
    check_selection(ctx, directory, &checked).await?;
    let mut body = Map::new();
    if let Some(title) = non_empty(&request.title) {
        body.insert("title".into(), Value::from(title));
    }
    let created = ctx
        .client
        .call("POST", "/session", directory, Some(&Value::Object(body)))
        .await
        .map_err(|error| GoalError::from_http("session create", &error))?;
    let session = SessionView::from_value(&created)
        .filter(|s| !s.id.is_empty())
        .ok_or_else(|| GoalError::new(ErrorKind::OpenCode, "session create: OpenCode answered without a session"))?;
    let directory = if session.directory.is_empty() { directory.to_string() } else { session.directory.clone() };
    let mut report = report_for("create", &session, &directory);
    if checked.prompt.is_empty() {
        return Ok(report);
    }
    let selection = pick_selection(&checked, None);
    goal_then_dispatch(
        ctx,
        &session,
        &directory,
        &checked,
        selection,
        Some(PartialAction::SessionCreated),
        &mut report,
    )
    .await?;
    Ok(report)
}

/// Input of [`send_prompt`].
#[derive(Debug, Clone, Default)]
pub struct SendPrompt {
    /// Target session.
    pub session_id: String,
    /// Its directory (empty: the one OpenCode reports).
    pub directory: String,
    /// Prompt (required) and goal options.
    pub options: PromptOptions,
}

/// Sends a prompt to an existing session; with `goal`, installs a fresh goal first (merged into
/// the existing metadata). Model, agent and variant default to the last user message's.
pub async fn send_prompt(ctx: &ControlContext, request: &SendPrompt) -> Result<DispatchReport, GoalError> {
    check_session_id(&request.session_id)?;
    let checked = check_prompt_options(&request.options, true)?;
    let (session, directory) = locate_session(ctx, &request.session_id, request.directory.trim()).await?;
    check_selection(ctx, &directory, &checked).await?;
    let inherited = recent_history(ctx, &session.id, &directory).await.map(|h| h.last_selection);
    let selection = pick_selection(&checked, inherited.as_ref());
    let mut report = report_for("send", &session, &directory);
    goal_then_dispatch(ctx, &session, &directory, &checked, selection, None, &mut report).await?;
    Ok(report)
}

/// Input of [`fork_session`].
#[derive(Debug, Clone, Default)]
pub struct ForkSession {
    /// Session to fork.
    pub session_id: String,
    /// Fork before this message (all messages without it).
    pub message_id: Option<String>,
    /// Directory (empty: the one OpenCode reports).
    pub directory: String,
    /// Prompt (required) and goal options.
    pub options: PromptOptions,
}

/// Forks a session (OpenCode's own fork, at the optional message), then installs the goal on the
/// fork and dispatches there.
pub async fn fork_session(ctx: &ControlContext, request: &ForkSession) -> Result<DispatchReport, GoalError> {
    check_session_id(&request.session_id)?;
    let message_id = non_empty(&request.message_id);
    if let Some(id) = &message_id {
        if !id.starts_with("msg") || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
            return Err(GoalError::invalid("messageId", "invalid message id"));
        }
    }
    let checked = check_prompt_options(&request.options, true)?;
    let (source, directory) = locate_session(ctx, &request.session_id, request.directory.trim()).await?;
    check_selection(ctx, &directory, &checked).await?;
    let inherited = recent_history(ctx, &source.id, &directory).await.map(|h| h.last_selection);
    let body = match &message_id {
        Some(id) => json!({ "messageID": id }),
        None => json!({}),
    };
    let fork_path = session_path(&source.id, "/fork").map_err(|error| GoalError::from_http("fork", &error))?;
    let forked = ctx
        .client
        .call("POST", &fork_path, &directory, Some(&body))
        .await
        .map_err(|error| GoalError::from_http("fork", &error))?;
    let fork = SessionView::from_value(&forked)
        .filter(|s| !s.id.is_empty())
        .ok_or_else(|| GoalError::new(ErrorKind::OpenCode, "fork: OpenCode answered without a session"))?;
    let fork_directory = if fork.directory.is_empty() { directory.clone() } else { fork.directory.clone() };
    let mut report = report_for("fork", &fork, &fork_directory);
    report.source_session_id = Some(source.id.clone());
    if checked.goal.is_none() {
        // The fork carries a copy of the source's goal: it must not run on both sessions.
        pause_copied_goal(ctx, &fork, &fork_directory, &source.id)
            .await
            .map_err(|e| e.after(Some(PartialAction::ForkCreated), &fork.id, &fork_directory))?;
    }
    let selection = pick_selection(&checked, inherited.as_ref());
    goal_then_dispatch(ctx, &fork, &fork_directory, &checked, selection, Some(PartialAction::ForkCreated), &mut report)
        .await?;
    Ok(report)
}

/// Adopts the active goal a fork copied from `source` as the fork's paused copy (see
/// `lineage`), before anything is sent to the fork. A fork without a goal, or with a goal
/// that is not running, is left as it is.
async fn pause_copied_goal(
    ctx: &ControlContext,
    fork: &SessionView,
    directory: &str,
    source: &str,
) -> Result<(), GoalError> {
    let copied = fork.goal().filter(|g| g.status == crate::record::GoalStatus::Active);
    let Some(copied) = copied else { return Ok(()) };
    let owner = copied.session_id.clone().unwrap_or_else(|| source.to_string());
    if copied.objective_file {
        // The copy reads its objective from a file named after the fork: give it the source's.
        crate::io::objectives::copy_objective(&ctx.data_dir, &owner, &fork.id).await;
    }
    let fork_id = fork.id.clone();
    let result = crate::io::writer::try_write_goal(
        &ctx.client,
        &fork.id,
        directory,
        &crate::io::writer::GoalGuard::SameId(copied.id.clone()),
        |g| {
            if g.status != crate::record::GoalStatus::Active || g.session_id.as_deref() == Some(fork_id.as_str()) {
                return Err(crate::error::Cancelled);
            }
            crate::goal::ownership::lineage::adopt_paused(g, &fork_id, &owner, crate::time::clock::now_ms());
            Ok(())
        },
    )
    .await;
    match result {
        Ok(_) => Ok(()),
        Err(error) => Err(GoalError::from_http("pausing the fork's copied goal", &error)),
    }
}

/// Input of [`stamp_scheduled_goal`].
#[derive(Debug, Clone, Default)]
pub struct ScheduledGoal {
    /// The task's fresh session.
    pub session_id: String,
    /// Its directory.
    pub directory: String,
    /// The task prompt (a slash command's expanded template becomes the objective).
    pub prompt: String,
    /// The task's model.
    pub model: ModelChoice,
    /// The goal's settings.
    pub settings: GoalSettings,
}

/// A goal stamped onto a scheduled task's session, and how the task should dispatch.
#[derive(Debug, Clone)]
pub struct StampedGoal {
    /// The goal installed.
    pub goal: CreatedGoal,
    /// The prompt is an OpenCode command: dispatch it with `POST /session/:id/command`
    /// (commands cannot carry the synthetic intro part).
    pub command: Option<ResolvedCommand>,
    /// The synthetic goal-mode part to append after the prompt text of `prompt_async`.
    pub intro_part: Value,
    /// Non-fatal problems.
    pub warnings: Vec<Warning>,
}

/// Stamps a goal onto a scheduled task's fresh session (objective file → metadata); the task
/// runner dispatches afterwards, which keeps the metadata-before-dispatch order.
pub async fn stamp_scheduled_goal(ctx: &ControlContext, request: &ScheduledGoal) -> Result<StampedGoal, GoalError> {
    check_session_id(&request.session_id)?;
    if request.prompt.len() > MAX_PROMPT_BYTES {
        return Err(GoalError::new(
            ErrorKind::TooLarge,
            format!("prompt is too large (limit {MAX_PROMPT_BYTES} bytes)"),
        ));
    }
    if request.prompt.trim().is_empty() {
        return Err(GoalError::invalid("prompt", "goal requires a prompt"));
    }
    let mut warnings = Vec::new();
    let command = match resolve_command(ctx, &request.directory, &request.prompt).await {
        Ok(command) => command,
        Err(warning) => {
            warnings.push(warning);
            None
        }
    };
    let objective = command.as_ref().map(|c| c.objective.clone()).unwrap_or_else(|| request.prompt.clone());
    let goal = create_session_goal(
        ctx,
        &NewGoal {
            session_id: request.session_id.clone(),
            directory: request.directory.clone(),
            objective,
            model: request.model.clone(),
            settings: request.settings.clone(),
        },
    )
    .await?;
    warnings.extend(goal.warnings.iter().cloned());
    let intro_part = goal_intro_part(request.settings.token_budget());
    Ok(StampedGoal { goal, command, intro_part, warnings })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(prompt: &str) -> PromptOptions {
        PromptOptions { prompt: prompt.into(), ..Default::default() }
    }

    #[test]
    fn goal_and_prompt_rules() {
        let goal_without_prompt = PromptOptions { goal: Some(GoalSettings::default()), ..options("  ") };
        assert_eq!(check_prompt_options(&goal_without_prompt, false).unwrap_err().message, "goal requires a prompt");
        assert_eq!(check_prompt_options(&options(""), true).unwrap_err().message, "prompt is required");
        let settings = GoalSettings {
            token_budget: crate::control::settings::SettingChange::Set(5000),
            ..GoalSettings::default()
        };
        let with_goal = PromptOptions { goal: Some(settings.clone()), ..options("x") };
        assert_eq!(check_prompt_options(&with_goal, true).unwrap().goal, Some(settings));
        let huge = options(&"x".repeat(MAX_PROMPT_BYTES + 1));
        assert_eq!(check_prompt_options(&huge, true).unwrap_err().kind, ErrorKind::TooLarge);
    }

    #[test]
    fn model_forms() {
        let checked = check_prompt_options(
            &PromptOptions { model: Some("openrouter/anthropic/claude".into()), ..options("x") },
            true,
        )
        .unwrap();
        assert_eq!(
            checked.model,
            Some(ModelChoice { provider_id: "openrouter".into(), model_id: "anthropic/claude".into() })
        );
        for bad in ["nomodel", "/m", "p/"] {
            assert!(
                check_prompt_options(&PromptOptions { model: Some(bad.into()), ..options("x") }, true).is_err(),
                "{bad}"
            );
        }
        let split = PromptOptions { provider_id: Some("p".into()), model_id: Some("m".into()), ..options("x") };
        assert_eq!(
            check_prompt_options(&split, true).unwrap().model,
            Some(ModelChoice { provider_id: "p".into(), model_id: "m".into() })
        );
        let half = PromptOptions { provider_id: Some("p".into()), ..options("x") };
        assert!(check_prompt_options(&half, true).is_err());
    }

    #[test]
    fn bodies() {
        let selection = Selection {
            model: Some(ModelChoice { provider_id: "p".into(), model_id: "m".into() }),
            agent: Some("build".into()),
            variant: None,
        };
        let body = prompt_body("do it", &selection, Some(goal_intro_part(Some(2000))));
        assert_eq!(body["parts"][0], json!({"type": "text", "text": "do it"}));
        assert_eq!(body["parts"][1]["synthetic"], json!(true));
        assert!(body["parts"][1]["text"].as_str().unwrap().contains("2000 tokens"));
        assert_eq!(body["model"], json!({"providerID": "p", "modelID": "m"}));
        assert!(body.get("variant").is_none());
        let command = ResolvedCommand { name: "review".into(), arguments: "a b".into(), objective: String::new() };
        assert_eq!(
            command_body(&command, &selection),
            json!({"command": "review", "arguments": "a b", "model": "p/m", "agent": "build"})
        );
    }

    #[test]
    fn selection_inherits_the_last_user_choice() {
        let raw = json!([
            {"info": {"id": "msg_1", "role": "user", "time": {"created": 1}, "agent": "plan", "model": {"providerID": "a", "modelID": "b", "variant": "high"}}},
            {"info": {"id": "msg_2", "role": "assistant", "time": {"created": 2}}},
        ]);
        let history = read_history(&raw);
        assert_eq!(history.last_user_id.as_deref(), Some("msg_1"));
        assert_eq!(history.last_assistant_id.as_deref(), Some("msg_2"));
        let inherited = pick_selection(&CheckedPrompt::default(), Some(&history.last_selection));
        assert_eq!(inherited.agent.as_deref(), Some("plan"));
        assert_eq!(inherited.variant.as_deref(), Some("high"));
        let explicit = CheckedPrompt {
            model: Some(ModelChoice { provider_id: "x".into(), model_id: "y".into() }),
            ..Default::default()
        };
        let mixed = pick_selection(&explicit, Some(&history.last_selection));
        assert_eq!(mixed.model.unwrap().provider_id, "x");
        assert_eq!(mixed.variant, None, "a variant is not carried over to another model");
        assert_eq!(mixed.agent.as_deref(), Some("plan"));
    }
}
