//! The small-model contract: the host's service (OpenChamber's `generateSmallModelText`) or the
//! built-in small model, and the request and result shapes both speak.

use std::sync::Arc;

use napi_derive::napi;

use goal_core::{BuiltinSmallModel, ModelRef, OpenCodeClient, SmallModel};

use crate::callbacks::{self, ModelCallback};
use crate::env_context::EnvContext;

/// A `provider/model` pair for the built-in small model (`smallModel` option).
#[napi(object)]
pub struct SmallModelChoice {
    /// Provider id as OpenCode names it (`anthropic`, `openai`, a config provider…).
    #[napi(js_name = "providerID")]
    pub provider_id: String,
    /// Model id within that provider.
    #[napi(js_name = "modelID")]
    pub model_id: String,
}

/// The host's small-model service when it passed one, else the built-in small model: the host's
/// explicit choice, else OpenCode's `small_model`, else a small model of the session's own
/// provider (see `goal_core::small_model`).
pub(crate) fn small_model_for(
    context: &EnvContext,
    host: Option<ModelCallback>,
    client: &OpenCodeClient,
    choice: Option<&SmallModelChoice>,
) -> Arc<dyn SmallModel> {
    if let Some(callback) = host {
        return Arc::new(callbacks::HostSmallModel::new(callback));
    }
    let explicit = choice.and_then(|c| ModelRef::new(&c.provider_id, &c.model_id));
    Arc::new(BuiltinSmallModel::new(context.shared(), client.clone(), explicit))
}

/// The request the runtime sends to a small-model service (OpenChamber's
/// `generateSmallModelText` argument).
#[napi(object)]
pub struct SmallModelRequest {
    /// The user prompt: the task (an audit, a recap, a distillation) and the text it is about.
    pub prompt: String,
    /// The system prompt: the reply format and the rules of the task.
    pub system: Option<String>,
    /// Project directory of the session the request is about.
    pub directory: Option<String>,
    /// The session's provider.
    #[napi(js_name = "preferredProviderID")]
    pub preferred_provider_id: Option<String>,
    /// The session's model.
    #[napi(js_name = "preferredModelID")]
    pub preferred_model_id: Option<String>,
    /// Never send conversation content to another provider (always true for goal and assist).
    pub restrict_to_preferred_provider: Option<bool>,
    /// Most output tokens to ask the model for.
    pub max_output_tokens: Option<u32>,
    /// How long the runtime gives the call, ms.
    pub timeout_ms: Option<f64>,
}

/// A small-model answer, or an error as a value (`statusCode` 404 = no small model, silent).
#[napi(object)]
pub struct SmallModelResult {
    /// The model's reply text.
    pub text: Option<String>,
    /// Provider that answered.
    #[napi(js_name = "providerID")]
    pub provider_id: Option<String>,
    /// Model that answered.
    #[napi(js_name = "modelID")]
    pub model_id: Option<String>,
    /// Set instead of `text` when the call failed.
    pub error: Option<SmallModelFailure>,
}

/// A small-model failure as a value.
#[napi(object)]
pub struct SmallModelFailure {
    /// HTTP-like status (404: no small model for this provider).
    pub status_code: Option<u32>,
    /// Machine code such as `output-exhausted`.
    pub code: Option<String>,
}
