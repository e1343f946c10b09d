//! Goal actions for hosts: edit, pause, resume, complete, clear, plus read-only views. Each one
//! decides from a fresh read inside the session's write slot (never from a stale copy) and
//! merges into the existing metadata. "Stop" means stop on both axes: pausing (or clearing) an
//! active goal also aborts the running turn, as an abort pauses the goal.

use crate::error::{Cancelled, ErrorKind, Warning, WarningCode};
use crate::goal::decide::change::{ApplyWith, Change, Refusal, UserAction};
use crate::record::criteria::CriterionSource;
use tracing::warn;

use crate::control::create::{fit_objective, store_objective, ControlContext, GoalError, ModelChoice, ObjectiveFit};
use crate::control::goal_settings::GoalSettings;
use crate::control::orchestrate::locate_session;
use crate::io::objectives::{delete_objective, read_objective};
use crate::io::writer::{try_write_goal, write_namespace_key, GoalGuard, GoalUpdate, Marking};
use crate::record::reasons::REASON_RESUMED;
use crate::record::session::{live_status, LiveStatus, SessionView};
use crate::record::{Goal, GoalStatus};

/// Which goal an action targets.
#[derive(Debug, Clone, Default)]
pub struct GoalTarget {
    /// The session whose goal the action changes.
    pub session_id: String,
    /// Directory (empty: the one OpenCode reports).
    pub directory: String,
    /// Act only if the session's goal still has this id (the goal the host showed).
    pub expected_goal_id: Option<String>,
}

impl GoalTarget {
    fn guard(&self) -> GoalGuard {
        match self.expected_goal_id.as_deref().map(str::trim).filter(|id| !id.is_empty()) {
            Some(id) => GoalGuard::SameId(id.to_string()),
            None => GoalGuard::Any,
        }
    }

    fn missing(&self) -> GoalError {
        match &self.expected_goal_id {
            Some(id) if !id.trim().is_empty() => {
                GoalError::new(ErrorKind::Conflict, format!("the session's goal is no longer {}", id.trim()))
            }
            _ => GoalError::new(ErrorKind::NotFound, "session has no goal"),
        }
    }
}

/// Result of an action.
#[derive(Debug, Clone, Default)]
pub struct ActionReport {
    /// The session acted on.
    pub session_id: String,
    /// Directory used.
    pub directory: String,
    /// The goal after the action (`None` after clear).
    pub goal: Option<Goal>,
    /// Status before the action.
    pub previous_status: Option<GoalStatus>,
    /// Something was written (false: the goal was already in the requested state).
    pub changed: bool,
    /// Pause/clear of an active goal: whether the running turn was aborted.
    pub aborted: Option<bool>,
    /// Clear: whether an objective file was removed.
    pub objective_deleted: bool,
    /// Edit: how a new objective was fitted.
    pub fit: Option<ObjectiveFit>,
    /// Non-fatal problems.
    pub warnings: Vec<Warning>,
}

enum Declined {
    Unchanged(Box<Goal>),
    Refused(Box<GoalError>),
}

async fn update(
    ctx: &ControlContext,
    target: &GoalTarget,
    directory: &str,
    mutate: impl FnOnce(&mut Goal) -> Result<(), Declined> + Send,
) -> Result<ActionReport, GoalError> {
    let result =
        try_write_goal(&ctx.client, &target.session_id, directory, &target.guard(), Marking::MarkUnowned, mutate)
            .await
            .map_err(|error| GoalError::from_http("goal write", &error))?;
    let mut report =
        ActionReport { session_id: target.session_id.clone(), directory: directory.to_string(), ..Default::default() };
    match result {
        GoalUpdate::Written { before, after } => {
            report.previous_status = Some(before.status);
            report.goal = Some(after);
            report.changed = true;
        }
        GoalUpdate::Declined(Declined::Unchanged(goal)) => {
            report.previous_status = Some(goal.status);
            report.goal = Some(*goal);
        }
        GoalUpdate::Declined(Declined::Refused(error)) => return Err(*error),
        GoalUpdate::Stale => return Err(target.missing()),
    }
    Ok(report)
}

async fn abort_turn(ctx: &ControlContext, session_id: &str, directory: &str, report: &mut ActionReport) {
    match ctx.client.abort(session_id, directory).await {
        Ok(()) => report.aborted = Some(true),
        Err(error) => {
            warn!(target: "session_goal", session = session_id, %error, "abort after goal stop failed");
            report.aborted = Some(false);
            report.warnings.push(Warning::new(
                WarningCode::AbortFailed,
                format!("the running turn could not be aborted ({error})"),
            ));
        }
    }
}

/// Pauses an active goal (status paused, reason cleared, blocked streak reset), then aborts the
/// running turn. The goal is written first, so the abort event finds it paused already and a
/// tick in flight is invalidated before the abort lands. Already paused: unchanged.
pub async fn pause_goal(ctx: &ControlContext, target: &GoalTarget) -> Result<ActionReport, GoalError> {
    let (_, directory) = locate_session(ctx, &target.session_id, target.directory.trim()).await?;
    let mut report = transition(ctx, target, &directory, UserAction::Pause).await?;
    if report.changed {
        abort_turn(ctx, &target.session_id, &directory, &mut report).await;
    }
    Ok(report)
}

/// Resumes a goal that is not active: status active, reason `resumed` (the runtime kicks it off
/// within its resume delay), a fresh turn allowance and a reset blocked streak. A goal copied
/// from another session (a fork) becomes this session's own. An active goal parked for a
/// provider limit stops waiting and goes on now; any other active goal is unchanged.
pub async fn resume_goal(ctx: &ControlContext, target: &GoalTarget) -> Result<ActionReport, GoalError> {
    let (_, directory) = locate_session(ctx, &target.session_id, target.directory.trim()).await?;
    transition(ctx, target, &directory, UserAction::Resume).await
}

/// Marks a goal complete (`marked by user`). Already complete: unchanged.
pub async fn complete_goal(ctx: &ControlContext, target: &GoalTarget) -> Result<ActionReport, GoalError> {
    let (_, directory) = locate_session(ctx, &target.session_id, target.directory.trim()).await?;
    transition(ctx, target, &directory, UserAction::Complete).await
}

/// The user's `action` on the goal read fresh, as the tick's transition table has it
/// (`Change::User`), at the host clock's now.
async fn transition(
    ctx: &ControlContext,
    target: &GoalTarget,
    directory: &str,
    action: UserAction,
) -> Result<ActionReport, GoalError> {
    let (now, session_id) = (ctx.client.clock().now_ms(), target.session_id.clone());
    update(ctx, target, directory, move |goal| match action.admits(goal) {
        Ok(()) => {
            let with = ApplyWith { session_id: &session_id, holder: "", now, lease_ms: 0.0 };
            Change::User(action).apply(goal, &with).map_err(|_| Declined::Unchanged(Box::new(goal.clone())))
        }
        Err(Refusal::Unchanged) => Err(Declined::Unchanged(Box::new(goal.clone()))),
        Err(Refusal::NotActive(status)) => Err(Declined::Refused(Box::new(GoalError::new(
            ErrorKind::Conflict,
            format!("goal is {}; only an active goal can be paused", status.as_str()),
        )))),
    })
    .await
}

/// Input of [`edit_goal`].
#[derive(Debug, Clone, Default)]
pub struct GoalEdit {
    /// Which goal.
    pub target: GoalTarget,
    /// New objective (fitted like a new goal's; written to the file first).
    pub objective: Option<String>,
    /// The settings to set or remove (checked when they were given); the rest stay.
    pub settings: GoalSettings,
    /// Model whose provider the distillation of a long objective prefers.
    pub model: ModelChoice,
}

/// Edits a goal's objective and/or settings, keeping its id and counters: status active, reason
/// `resumed` (the runtime picks it up at once), blocked streak reset. A completed goal is not
/// edited (start a new goal instead).
pub async fn edit_goal(ctx: &ControlContext, edit: &GoalEdit) -> Result<ActionReport, GoalError> {
    let target = &edit.target;
    let objective = edit.objective.as_deref().map(str::trim).filter(|o| !o.is_empty());
    if objective.is_none() && edit.settings.is_unchanged() {
        return Err(GoalError::new(
            ErrorKind::InvalidInput,
            "nothing to edit: pass an objective, a token budget, a cost budget, a time budget, working hours, checks or criteria change",
        ));
    }
    let (session, directory) = locate_session(ctx, &target.session_id, target.directory.trim()).await?;
    // Refuse before touching the objective file.
    match session.goal() {
        None => return Err(target.missing()),
        Some(goal) if goal.status == GoalStatus::Complete => {
            return Err(GoalError::new(
                ErrorKind::Conflict,
                "goal is complete; start a new goal instead of editing it",
            ));
        }
        Some(goal) if matches!(&target.guard(), GoalGuard::SameId(id) if *id != goal.id) => {
            return Err(target.missing())
        }
        Some(_) => {}
    }
    let mut warnings = Vec::new();
    let mut fit = None;
    let new_objective = match objective {
        Some(text) => {
            let fitted = fit_objective(ctx, text, &directory, &edit.model).await;
            let (in_file, warning) = store_objective(ctx, &target.session_id, &fitted.text).await;
            warnings.extend(warning);
            fit = Some(fitted.fit);
            Some((fitted.text, in_file))
        }
        None => None,
    };
    let (settings, now) = (edit.settings.clone(), ctx.client.clock().now_ms());
    let mut report = update(ctx, target, &directory, move |goal| {
        if goal.status == GoalStatus::Complete {
            return Err(Declined::Refused(Box::new(GoalError::new(
                ErrorKind::Conflict,
                "goal is complete; start a new goal instead of editing it",
            ))));
        }
        if let Some((text, in_file)) = new_objective {
            goal.objective_file = in_file;
            goal.objective = if in_file { String::new() } else { text };
            goal.bump_objective_revision();
            // A new objective derives its criteria again; the user's stay.
            let kept = goal.criteria.iter().filter(|c| c.source == CriterionSource::User).cloned().collect();
            goal.set_criteria(kept);
        }
        settings.apply_to(goal);
        crate::time::active::count_stopped_time(goal, now);
        // An edit ends a park: the goal goes on with its new content now.
        crate::goal::decide::limit_rules::clear_park(goal);
        goal.status = GoalStatus::Active;
        goal.status_reason = REASON_RESUMED.into();
        // A goal that is simply running carries no cause.
        goal.set_cause(None);
        goal.blocked_streak = 0;
        Ok(())
    })
    .await?;
    report.fit = fit;
    report.warnings = warnings;
    Ok(report)
}

/// Clears a goal: removes `openchamber.goal` (other keys kept), deletes its objective file
/// (best effort), and aborts the running turn if the goal was active.
pub async fn clear_goal(ctx: &ControlContext, target: &GoalTarget) -> Result<ActionReport, GoalError> {
    let (_, directory) = locate_session(ctx, &target.session_id, target.directory.trim()).await?;
    let guard = target.guard();
    // The same fresh-read-and-merge as every goal write, removing the key instead of setting it.
    let mut previous = None;
    write_namespace_key(&ctx.client, &target.session_id, &directory, "goal", |session| {
        previous = session.goal().filter(|goal| match &guard {
            GoalGuard::SameId(id) => goal.id == *id,
            _ => true,
        });
        previous.as_ref().map(|_| None).ok_or(Cancelled)
    })
    .await
    .map_err(|error| GoalError::from_http("goal clear", &error))?;
    let Some(previous) = previous else {
        return Err(target.missing());
    };
    let mut report = ActionReport {
        session_id: target.session_id.clone(),
        directory: directory.clone(),
        previous_status: Some(previous.status),
        changed: true,
        objective_deleted: delete_objective(&ctx.data_dir, &target.session_id).await,
        ..Default::default()
    };
    if previous.status == GoalStatus::Active {
        abort_turn(ctx, &target.session_id, &directory, &mut report).await;
    }
    Ok(report)
}

crate::wire::wire_enum! {
    /// Where a goal's effective objective came from.
    pub enum ObjectiveSource {
        #[doc = "The objective file."] File = "file",
        #[doc = "The inline objective (not file-backed, or the file is unreadable)."] Inline = "inline",
        #[doc = "File-backed, unreadable, and no inline text."] Missing = "missing",
    }
}

/// A session's goal with its effective objective.
#[derive(Debug, Clone)]
pub struct GoalView {
    /// The session that carries the goal.
    pub session_id: String,
    /// The project directory the session was read from.
    pub directory: String,
    /// Session title.
    pub title: String,
    /// The goal (`None`: the session has no goal).
    pub goal: Option<Goal>,
    /// Effective objective text (what the loop audits against).
    pub objective: String,
    /// Where it came from.
    pub objective_source: Option<ObjectiveSource>,
}

/// Reads a session's goal and its effective objective, exactly as a tick resolves it.
pub async fn get_goal(ctx: &ControlContext, session_id: &str, directory: &str) -> Result<GoalView, GoalError> {
    let (session, directory) = locate_session(ctx, session_id, directory.trim()).await?;
    let goal = session.goal();
    let (objective, source) = match &goal {
        None => (String::new(), None),
        Some(goal) => {
            let file = if goal.objective_file { read_objective(&ctx.data_dir, session_id).await } else { None };
            match file {
                Some(text) => (text, Some(ObjectiveSource::File)),
                None if !goal.objective.is_empty() => (goal.objective.clone(), Some(ObjectiveSource::Inline)),
                None => (String::new(), Some(ObjectiveSource::Missing)),
            }
        }
    };
    Ok(GoalView {
        session_id: session.id.clone(),
        directory,
        title: session.title.clone(),
        goal,
        objective,
        objective_source: source,
    })
}

/// One row of [`list_goals`].
#[derive(Debug, Clone)]
pub struct GoalRow {
    /// The session as OpenCode lists it.
    pub session: SessionView,
    /// Its goal.
    pub goal: Goal,
    /// A turn is running now (`busy` or `retry`).
    pub working: bool,
}

/// The goals of one directory's top-level sessions, newest session first.
pub async fn list_goals(ctx: &ControlContext, directory: &str) -> Result<Vec<GoalRow>, GoalError> {
    let directory = directory.trim();
    if directory.is_empty() {
        return Err(GoalError::invalid("directory", "directory is required"));
    }
    let sessions =
        ctx.client.list_sessions(directory).await.map_err(|error| GoalError::from_http("session list", &error))?;
    let statuses = ctx.client.status_map(directory).await.ok();
    Ok(sessions
        .into_iter()
        .filter(|session| !session.is_subagent())
        .filter_map(|session| {
            let goal = session.goal()?;
            let working = statuses.as_ref().is_some_and(|map| live_status(map, &session.id) == LiveStatus::Working);
            Some(GoalRow { session, goal, working })
        })
        .collect())
}
