//! Server-side orchestration: create a session, send to one, or fork one, optionally as a goal.
//!
//! Every path keeps the same order: objective file → goal metadata → dispatch, so the loop never
//! sees a turn of a goal it cannot read, and a dispatch never runs before its goal exists. Input
//! is validated before anything is written. A failure after a step took effect says which step
//! (`partial`), so a host can show "session created, prompt failed" instead of a bare error.

//!
//! What is sent is prepared elsewhere: the prompt's options, selection and body in `prompt.rs`,
//! a slash command's resolution and body in `slash_command.rs`.

use std::time::Duration;

use serde_json::{json, Map, Value};
use tracing::{warn, Instrument};

use crate::control::create::{
    check_session_id, create_session_goal, ControlContext, CreatedGoal, GoalError, ModelChoice, NewGoal, PartialAction,
};
use crate::control::goal_settings::GoalSettings;
use crate::control::prompt::{
    check_prompt_options, check_selection, goal_intro_part, non_empty, pick_selection, prompt_body, recent_history,
    CheckedPrompt, PromptOptions, MAX_PROMPT_BYTES,
};
use crate::control::slash_command::{command_body, resolve_command, ResolvedCommand};
use crate::error::{ErrorKind, Warning};
use crate::io::opencode::{session_path, DispatchOutcome};
use crate::record::session::{Selection, SessionView};

/// How long a dispatch waits for its message to show up in the session (the reference's
/// `waitForPromptLanded`: 5 s at 150 ms).
pub const DEFAULT_LANDING_TIMEOUT: Duration = Duration::from_millis(5_000);
/// Poll interval of the landing wait.
pub const DEFAULT_LANDING_POLL: Duration = Duration::from_millis(150);
/// Timeout of `POST /session/:id/command`, which OpenCode answers only after the whole turn.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(600);

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
            model: match selection.names_model() {
                true => {
                    ModelChoice { provider_id: selection.provider_id.clone(), model_id: selection.model_id.clone() }
                }
                false => ModelChoice::default(),
            },
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
    let (fork_id, now) = (fork.id.clone(), ctx.client.clock().now_ms());
    let result = crate::io::writer::try_write_goal(
        &ctx.client,
        &fork.id,
        directory,
        &crate::io::writer::GoalGuard::SameId(copied.id.clone()),
        crate::io::writer::Marking::MarkUnowned,
        |g| {
            if g.status != crate::record::GoalStatus::Active || g.session_id.as_deref() == Some(fork_id.as_str()) {
                return Err(crate::error::Cancelled);
            }
            crate::goal::decide::lineage::adopt_paused(g, &fork_id, &owner, now);
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
