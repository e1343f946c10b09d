//! What goal control operations take: the control's options and each operation's request,
//! with the conversions into the core's inputs.

use napi_derive::napi;

use goal_core::GoalTarget;
use goal_core::DEFAULT_CALL_TIMEOUT;
use goal_core::DEFAULT_FETCH_TIMEOUT;
use goal_core::{ControlContext, GoalError, ModelChoice};
use goal_core::{PromptOptions, DEFAULT_COMMAND_TIMEOUT, DEFAULT_LANDING_POLL, DEFAULT_LANDING_TIMEOUT};

use crate::env_context::EnvContext;
use crate::goal_settings::{GoalSettingsInput, SettingsRequest};
use crate::options::{millis, OpenCodeConnection};
use crate::types::small_model::SmallModelOptions;
use crate::RuntimeSettingsOptions;

/// Options of `createSessionGoalControl` (the native `createGoalControl`): how to reach OpenCode
/// (`openCode`, as for the runtimes), where the objective files live, and the small model used
/// to distill objectives over 5,000 chars (without one, the built-in small model; a long
/// objective it cannot distill is excerpted).
#[napi(object, object_to_js = false)]
pub struct GoalControlOptions {
    /// How to reach OpenCode.
    pub open_code: Option<OpenCodeConnection>,
    /// Settings location (`settings.dataDir`).
    pub settings: Option<RuntimeSettingsOptions>,
    /// Data directory (wins over `settings.dataDir`; default `OPENCHAMBER_DATA_DIR`, else
    /// `~/.config/openchamber`).
    pub data_dir: Option<String>,
    /// The small model that distills long objectives.
    pub small_model: Option<SmallModelOptions>,
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
    pub(crate) fn resolve(self, context: &EnvContext) -> std::result::Result<ControlContext, GoalError> {
        let client = OpenCodeConnection::client(self.open_code, context, DEFAULT_FETCH_TIMEOUT)?;
        let small_model = SmallModelOptions::model(self.small_model, context, &client);
        Ok(ControlContext {
            client,
            small_model,
            data_dir: RuntimeSettingsOptions::data_dir(self.settings, self.data_dir),
            small_model_timeout: millis(self.small_model_timeout_ms, DEFAULT_CALL_TIMEOUT),
            landing_timeout: millis(self.landing_timeout_ms, DEFAULT_LANDING_TIMEOUT),
            landing_poll: DEFAULT_LANDING_POLL,
            command_timeout: millis(self.command_timeout_ms, DEFAULT_COMMAND_TIMEOUT),
        })
    }
}

/// A request's `providerID` and `modelID`: the model a goal's turns run on, either part unset.
pub(crate) struct ModelIds {
    /// Provider id.
    pub provider_id: Option<String>,
    /// Model id.
    pub model_id: Option<String>,
}

/// The core's choice (an unset part is empty, which the core reads as unset).
impl From<ModelIds> for ModelChoice {
    fn from(ids: ModelIds) -> Self {
        ModelChoice { provider_id: ids.provider_id.unwrap_or_default(), model_id: ids.model_id.unwrap_or_default() }
    }
}

/// `createSessionGoal` input (its goal settings, `GoalSettingsInput`, sit beside these fields).
#[napi(object)]
pub struct SessionGoalRequest {
    /// Session to put the goal on (existing metadata is kept).
    pub session_id: String,
    /// Its directory (default: the one OpenCode reports).
    pub directory: Option<String>,
    /// Objective text; over 5,000 chars it is distilled (or excerpted).
    pub objective: String,
    /// Provider the goal's turns run on (the distillation prefers it).
    #[napi(js_name = "providerID")]
    pub provider_id: Option<String>,
    /// Model the goal's turns run on.
    #[napi(js_name = "modelID")]
    pub model_id: Option<String>,
}

/// Declares the request of create, send or fork: its own fields first, then the prompt choices
/// all three take alike (declared here once, so the three cannot drift apart), and
/// `prompt_options`, which moves those choices out as the core's [`PromptOptions`]. napi objects
/// cannot flatten a nested struct into their JavaScript shape, hence a macro. Its input writes
/// doc comments as `#[doc = "…"]` (a `///` passed through a macro arrives as a raw string, which
/// napi misreads) and field types as names (`String`, `Option<String>`), which napi must see as
/// written to tell an optional field.
macro_rules! prompt_request {
    (
        $(#[$doc:meta])*
        pub struct $name:ident {
            $( $(#[$field_doc:meta])* pub $field:ident: $type:ident $(<$inner:ident>)?, )*
        }
    ) => {
        $(#[$doc])*
        #[napi(object)]
        pub struct $name {
            $( $(#[$field_doc])* pub $field: $type $(<$inner>)?, )*
            /// `provider/model` (send and fork: default the last user message's in the session, or
            /// in the one forked).
            pub model: Option<String>,
            /// Provider id (with `modelID`, instead of `model`).
            #[napi(js_name = "providerID")]
            pub provider_id: Option<String>,
            /// Model id.
            #[napi(js_name = "modelID")]
            pub model_id: Option<String>,
            /// Agent, a primary one (send and fork: default as for `model`).
            pub agent: Option<String>,
            /// Model variant.
            pub variant: Option<String>,
            /// Install a goal with the prompt as its objective before dispatching (merged into the
            /// session's metadata): `true` or its settings.
            #[napi(ts_type = "boolean | GoalSettingsInput")]
            pub goal: Option<GoalSettingsInput>,
        }

        impl $name {
            /// What the request sends: `prompt` with the request's prompt choices, moved out of
            /// it, and the goal's settings converted once.
            pub(crate) fn prompt_options(&mut self, prompt: String) -> std::result::Result<PromptOptions, GoalError> {
                let goal = self
                    .goal
                    .take()
                    .map(|settings| goal_core::GoalSettings::try_from(SettingsRequest::nested(settings)))
                    .transpose()?;
                Ok(PromptOptions {
                    prompt,
                    model: self.model.take(),
                    provider_id: self.provider_id.take(),
                    model_id: self.model_id.take(),
                    agent: self.agent.take(),
                    variant: self.variant.take(),
                    goal,
                })
            }
        }
    };
}

prompt_request! {
    #[doc = " `createSession` input."]
    pub struct CreateSessionRequest {
        #[doc = " Project directory (required)."]
        pub directory: String,
        #[doc = " Session title."]
        pub title: Option<String>,
        #[doc = " First prompt; a leading `/name` runs that command. Required with `goal`."]
        pub prompt: Option<String>,
    }
}

prompt_request! {
    #[doc = " `sendPrompt` input."]
    pub struct SendPromptRequest {
        #[doc = " Target session."]
        pub session_id: String,
        #[doc = " Its directory (default: the one OpenCode reports)."]
        pub directory: Option<String>,
        #[doc = " Prompt (required); a leading `/name` runs that command."]
        pub prompt: String,
    }
}

prompt_request! {
    #[doc = " `forkSession` input."]
    pub struct ForkSessionRequest {
        #[doc = " Session to fork."]
        pub session_id: String,
        #[doc = " Fork before this message (default: the whole session)."]
        pub message_id: Option<String>,
        #[doc = " Directory (default: the one OpenCode reports)."]
        pub directory: Option<String>,
        #[doc = " Prompt for the fork (required)."]
        pub prompt: String,
    }
}

/// `stampScheduledGoal` input (its goal settings, `GoalSettingsInput`, sit beside these fields).
#[napi(object)]
pub struct ScheduledGoalRequest {
    /// The task's fresh session.
    pub session_id: String,
    /// Its directory.
    pub directory: Option<String>,
    /// The task prompt (a slash command's expanded template becomes the objective).
    pub prompt: String,
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

/// `editGoal` input (the settings to set, `GoalSettingsInput`, and to remove,
/// `GoalSettingsRemoval`, sit beside these fields).
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
    /// Provider preferred when distilling a long objective.
    #[napi(js_name = "providerID")]
    pub provider_id: Option<String>,
    /// Model preferred when distilling.
    #[napi(js_name = "modelID")]
    pub model_id: Option<String>,
}

/// The goal an action is for (an unset directory is empty: the one OpenCode reports).
impl From<GoalActionRequest> for GoalTarget {
    fn from(request: GoalActionRequest) -> Self {
        GoalTarget {
            session_id: request.session_id,
            directory: request.directory.unwrap_or_default(),
            expected_goal_id: request.goal_id,
        }
    }
}
