//! What goal control operations resolve to: installed goals, dispatch reports, action results
//! and views (the goal as stored, `GoalRecord`, is declared beside the settings' input in
//! `goal_settings.rs`).

use napi_derive::napi;

use goal_core::CreatedGoal;
use goal_core::DispatchReport;
use goal_core::{ActionReport, GoalView};

use super::warnings::*;
pub(crate) use crate::goal_settings::GoalRecord;

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

impl From<&CreatedGoal> for InstalledGoal {
    fn from(created: &CreatedGoal) -> Self {
        InstalledGoal {
            session_id: created.goal.session_id.clone().unwrap_or_default(),
            directory: created.directory.clone(),
            goal: GoalRecord::from(&created.goal),
            objective: created.objective.clone(),
            objective_fit: created.fit.as_str().to_string(),
            objective_file: created.goal.objective_file,
            replaced_goal_id: created.replaced_goal_id.clone(),
            warnings: created.warnings.iter().map(GoalWarning::from).collect(),
        }
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

impl From<DispatchReport> for SessionDispatch {
    fn from(report: DispatchReport) -> Self {
        let goal = report.goal.as_ref().map(InstalledGoal::from);
        SessionDispatch {
            action: report.action.to_string(),
            goal_enabled: goal.is_some(),
            goal_token_budget: report.goal.as_ref().and_then(|g| g.goal.token_budget).map(|b| b as f64),
            goal,
            model: report.selection.model_path(),
            agent: Some(report.selection.agent.clone()).filter(|a| !a.is_empty()),
            variant: Some(report.selection.variant.clone()).filter(|v| !v.is_empty()),
            session_id: report.session_id,
            directory: report.directory,
            title: report.title,
            source_session_id: report.source_session_id,
            prompt_dispatched: report.prompt_dispatched,
            prompt_landed: report.prompt_landed,
            dispatched_as_command: report.dispatched_as_command,
            command: report.command,
            baseline_assistant_message_id: report.baseline_assistant_message_id,
            warnings: report.warnings.iter().map(GoalWarning::from).collect(),
        }
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

impl From<ActionReport> for GoalActionResult {
    fn from(report: ActionReport) -> Self {
        GoalActionResult {
            session_id: report.session_id,
            directory: report.directory,
            goal: report.goal.as_ref().map(GoalRecord::from),
            previous_status: report.previous_status.map(|s| s.as_str().to_string()),
            changed: report.changed,
            aborted: report.aborted,
            objective_deleted: report.objective_deleted,
            objective_fit: report.fit.map(|f| f.as_str().to_string()),
            warnings: report.warnings.iter().map(GoalWarning::from).collect(),
        }
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

impl From<GoalView> for SessionGoalView {
    fn from(view: GoalView) -> Self {
        SessionGoalView {
            goal: view.goal.as_ref().map(GoalRecord::from),
            session_id: view.session_id,
            directory: view.directory,
            title: view.title,
            objective: view.objective,
            objective_source: view.objective_source.map(|s| s.as_str().to_string()),
        }
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
