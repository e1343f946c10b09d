//! Binding of goal creation and control: the objective store, `GoalControl` (create / send /
//! fork with a goal, scheduled-task stamping, edit / pause / resume / complete / clear, views).
//! A failed call rejects its promise with the error of `crate::failure` (code, field, status,
//! partialAction, cause); every call runs in its own task, so a panic is a failure, never a crash.

use std::future::Future;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use goal_core::GoalEdit;
use goal_core::{ActionReport, GoalTarget};
use goal_core::{BoxFuture, ExplainReport, HttpError};
use goal_core::{ControlContext, GoalError, GoalSettings, ModelChoice, NewGoal};
use goal_core::{CreateSession, ForkSession, ScheduledGoal, SendPrompt};

use crate::env_context::EnvContext;
use crate::goal_settings::{Beside, GoalSettingsInput, GoalSettingsRemoval, SettingsRequest};

mod objectives;
mod requests;
mod results;
mod warnings;

use crate::failure::{settle, thrown};
pub use requests::*;
pub use results::*;
pub use warnings::*;

/// Goal creation and control against one OpenCode server. A failed operation rejects with an
/// error carrying its `code`, `field`, `status` and `cause` (docs/errors.md).
#[napi]
pub struct GoalControl {
    ctx: ControlContext,
}

/// Creates a goal control. Throws only for unusable options (no OpenCode location).
#[napi(catch_unwind)]
pub fn create_goal_control(env: Env, options: GoalControlOptions) -> Result<GoalControl> {
    crate::logging::init();
    let ctx = options.resolve(&*EnvContext::of(&env)?).map_err(|failure| thrown(&env, failure))?;
    Ok(GoalControl { ctx })
}

impl GoalControl {
    /// One goal action (pause, resume, complete, clear) on the request's goal, run and settled
    /// like every other operation.
    fn act<'env, Action, Done>(
        &self,
        env: &'env Env,
        request: GoalActionRequest,
        action: Action,
    ) -> Result<PromiseRaw<'env, GoalActionResult>>
    where
        Action: FnOnce(ControlContext, GoalTarget) -> Done,
        Done: Future<Output = std::result::Result<ActionReport, GoalError>> + Send + 'static,
    {
        let work = action(self.ctx.clone(), GoalTarget::from(request));
        settle(env, async move { work.await.map(GoalActionResult::from) })
    }
}

crate::goal_reads::goal_read_methods!(GoalControl);

impl crate::goal_reads::GoalReads for GoalControl {
    fn trail(&self, session_id: String, limit: Option<usize>) -> BoxFuture<'static, Vec<serde_json::Value>> {
        let data_dir = self.ctx.data_dir.clone();
        Box::pin(async move { goal_core::read_history(&data_dir, &session_id, limit).await })
    }

    /// The explanation without a lease holder of its own: any live lease is another's.
    fn report(
        &self,
        session_id: String,
        directory: String,
    ) -> BoxFuture<'static, std::result::Result<ExplainReport, HttpError>> {
        let ctx = self.ctx.clone();
        Box::pin(async move {
            goal_core::explain_goal(
                &ctx.client,
                &goal_core::DataDir::new(ctx.data_dir.clone()),
                &session_id,
                &directory,
                None,
            )
            .await
        })
    }
}

#[napi]
impl GoalControl {
    /// The data directory the objective files live in.
    #[napi(getter)]
    pub fn data_dir(&self) -> String {
        self.ctx.data_dir.to_string_lossy().into_owned()
    }

    /// Installs a fresh active goal on a session: objective fitted (distilled over 5,000 chars),
    /// objective file written first (inline on failure), then merged into the session metadata.
    #[napi(ts_args_type = "request: SessionGoalRequest & GoalSettingsInput")]
    pub fn create_session_goal<'env>(
        &self,
        env: &'env Env,
        request: Beside<SessionGoalRequest, GoalSettingsInput>,
    ) -> Result<PromiseRaw<'env, InstalledGoal>> {
        let ctx = self.ctx.clone();
        let Beside { request, settings } = request;
        settle(env, async move {
            let new_goal = NewGoal {
                session_id: request.session_id.clone(),
                directory: request.directory.unwrap_or_default(),
                objective: request.objective,
                model: ModelChoice::from(ModelIds { provider_id: request.provider_id, model_id: request.model_id }),
                settings: GoalSettings::try_from(SettingsRequest::beside(settings))?,
            };
            let created = goal_core::create_session_goal(&ctx, &new_goal).await?;
            Ok(InstalledGoal::from(&created))
        })
    }

    /// Creates a session; with a prompt, installs the goal (if `goal`) and then dispatches.
    #[napi]
    pub fn create_session<'env>(
        &self,
        env: &'env Env,
        mut request: CreateSessionRequest,
    ) -> Result<PromiseRaw<'env, SessionDispatch>> {
        let ctx = self.ctx.clone();
        settle(env, async move {
            let prompt = request.prompt.take().unwrap_or_default();
            let create = CreateSession {
                options: request.prompt_options(prompt)?,
                directory: request.directory,
                title: request.title,
            };
            goal_core::create_session(&ctx, &create).await.map(SessionDispatch::from)
        })
    }

    /// Sends a prompt to an existing session; with `goal`, installs a fresh goal first.
    #[napi]
    pub fn send_prompt<'env>(
        &self,
        env: &'env Env,
        mut request: SendPromptRequest,
    ) -> Result<PromiseRaw<'env, SessionDispatch>> {
        let ctx = self.ctx.clone();
        settle(env, async move {
            let prompt = std::mem::take(&mut request.prompt);
            let send = SendPrompt {
                options: request.prompt_options(prompt)?,
                session_id: request.session_id,
                directory: request.directory.unwrap_or_default(),
            };
            goal_core::send_prompt(&ctx, &send).await.map(SessionDispatch::from)
        })
    }

    /// Forks a session (at an optional message), installs the goal on the fork (if `goal`) and
    /// dispatches there.
    #[napi]
    pub fn fork_session<'env>(
        &self,
        env: &'env Env,
        mut request: ForkSessionRequest,
    ) -> Result<PromiseRaw<'env, SessionDispatch>> {
        let ctx = self.ctx.clone();
        settle(env, async move {
            let prompt = std::mem::take(&mut request.prompt);
            let fork = ForkSession {
                options: request.prompt_options(prompt)?,
                session_id: request.session_id,
                message_id: request.message_id,
                directory: request.directory.unwrap_or_default(),
            };
            goal_core::fork_session(&ctx, &fork).await.map(SessionDispatch::from)
        })
    }

    /// Stamps a goal onto a scheduled task's fresh session and says how to dispatch the task
    /// (command, or `prompt_async` with `introPart` after the prompt text).
    #[napi(ts_args_type = "request: ScheduledGoalRequest & GoalSettingsInput")]
    pub fn stamp_scheduled_goal<'env>(
        &self,
        env: &'env Env,
        request: Beside<ScheduledGoalRequest, GoalSettingsInput>,
    ) -> Result<PromiseRaw<'env, ScheduledGoalStamp>> {
        let ctx = self.ctx.clone();
        let Beside { request, settings } = request;
        settle(env, async move {
            let stamp = ScheduledGoal {
                session_id: request.session_id.clone(),
                directory: request.directory.unwrap_or_default(),
                prompt: request.prompt,
                model: ModelChoice::from(ModelIds { provider_id: request.provider_id, model_id: request.model_id }),
                settings: GoalSettings::try_from(SettingsRequest::beside(settings))?,
            };
            let stamped = goal_core::stamp_scheduled_goal(&ctx, &stamp).await?;
            Ok(ScheduledGoalStamp {
                goal: InstalledGoal::from(&stamped.goal),
                command: stamped.command.as_ref().map(|c| c.name.clone()),
                command_arguments: stamped.command.map(|c| c.arguments),
                intro_part: stamped.intro_part,
                warnings: stamped.warnings.iter().map(GoalWarning::from).collect(),
            })
        })
    }

    /// Edits a goal's objective and/or settings (same id and counters; active, `resumed`).
    #[napi(ts_args_type = "request: GoalEditRequest & GoalSettingsInput & GoalSettingsRemoval")]
    pub fn edit_goal<'env>(
        &self,
        env: &'env Env,
        request: Beside<GoalEditRequest, Beside<GoalSettingsInput, GoalSettingsRemoval>>,
    ) -> Result<PromiseRaw<'env, GoalActionResult>> {
        let ctx = self.ctx.clone();
        let Beside { request, settings: Beside { request: values, settings: removals } } = request;
        settle(env, async move {
            let edit = GoalEdit {
                target: GoalTarget::from(GoalActionRequest {
                    session_id: request.session_id,
                    directory: request.directory,
                    goal_id: request.goal_id,
                }),
                objective: request.objective,
                settings: GoalSettings::try_from(SettingsRequest { values, removals, nested: false })?,
                model: ModelChoice::from(ModelIds { provider_id: request.provider_id, model_id: request.model_id }),
            };
            goal_core::edit_goal(&ctx, &edit).await.map(GoalActionResult::from)
        })
    }

    /// Pauses an active goal and aborts the running turn.
    #[napi]
    pub fn pause_goal<'env>(
        &self,
        env: &'env Env,
        request: GoalActionRequest,
    ) -> Result<PromiseRaw<'env, GoalActionResult>> {
        self.act(env, request, |ctx, target| async move { goal_core::pause_goal(&ctx, &target).await })
    }

    /// Resumes a goal: active, `resumed`, a fresh turn allowance (the runtime kicks it off within
    /// its resume delay, 250 ms by default).
    #[napi]
    pub fn resume_goal<'env>(
        &self,
        env: &'env Env,
        request: GoalActionRequest,
    ) -> Result<PromiseRaw<'env, GoalActionResult>> {
        self.act(env, request, |ctx, target| async move { goal_core::resume_goal(&ctx, &target).await })
    }

    /// Marks a goal complete (`marked by user`).
    #[napi]
    pub fn complete_goal<'env>(
        &self,
        env: &'env Env,
        request: GoalActionRequest,
    ) -> Result<PromiseRaw<'env, GoalActionResult>> {
        self.act(env, request, |ctx, target| async move { goal_core::complete_goal(&ctx, &target).await })
    }

    /// Removes the goal (other metadata kept), deletes its objective file, aborts if it was active.
    #[napi]
    pub fn clear_goal<'env>(
        &self,
        env: &'env Env,
        request: GoalActionRequest,
    ) -> Result<PromiseRaw<'env, GoalActionResult>> {
        self.act(env, request, |ctx, target| async move { goal_core::clear_goal(&ctx, &target).await })
    }

    /// A session's goal and its effective objective (file text, else inline).
    #[napi]
    pub fn get_goal<'env>(
        &self,
        env: &'env Env,
        session_id: String,
        directory: Option<String>,
    ) -> Result<PromiseRaw<'env, SessionGoalView>> {
        let ctx = self.ctx.clone();
        settle(env, async move {
            goal_core::get_goal(&ctx, &session_id, directory.as_deref().unwrap_or("")).await.map(SessionGoalView::from)
        })
    }

    /// The goals of a directory's top-level sessions (newest first).
    #[napi]
    pub fn list_goals<'env>(&self, env: &'env Env, directory: String) -> Result<PromiseRaw<'env, Vec<GoalListEntry>>> {
        let ctx = self.ctx.clone();
        settle(env, async move {
            let rows = goal_core::list_goals(&ctx, &directory).await?;
            Ok(rows
                .into_iter()
                .map(|row| GoalListEntry {
                    goal: GoalRecord::from(&row.goal),
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
    }
}
