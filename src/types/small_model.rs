//! The small-model contract: the host's service (OpenChamber's `generateSmallModelText`) or the
//! built-in small model, and the request and result shapes both speak. The request a host
//! receives is built as JSON by the core (`SmallModelQuery::to_value`) and the result is read as
//! JSON (`callbacks.rs`); the structs here declare both for TypeScript, and
//! `__test__/types.test.mjs` holds the real ones to them member for member.

use std::sync::Arc;

use napi_derive::napi;

use goal_core::{BuiltinSmallModel, ModelRef, OpenCodeClient, SmallModel};

use crate::callbacks::{self, ModelCallback};
use crate::env_context::EnvContext;

/// The small model (`smallModel`), one object for every runtime and the goal control: the host's
/// own service (`generate`), or the built-in small model, which calls OpenCode's providers itself
/// on `{providerID, modelID}` when given, else on OpenCode's `small_model`, else on a small
/// model of the session's own provider. OpenChamber's `getSmallModelService` and the flat
/// `generateSmallModelText` are moved in here by the package entry (`lib/drop-in.js`).
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub struct SmallModelOptions {
    /// The host's small model: resolves to `{text, providerID, modelID}` or `{error: {statusCode?,
    /// code?}}`; a rejection or throw counts as "unavailable" (`statusCode` 404: silent).
    #[napi(ts_type = "(request: SmallModelRequest) => Promise<SmallModelResult>")]
    pub generate: Option<ModelCallback>,
    /// The built-in small model's provider, as OpenCode names it (`anthropic`, a config
    /// provider…); used only without `generate`, and only with `modelID`.
    #[napi(js_name = "providerID")]
    pub provider_id: Option<String>,
    /// The built-in small model's model within that provider.
    #[napi(js_name = "modelID")]
    pub model_id: Option<String>,
}

impl SmallModelOptions {
    /// The small model these options choose: the host's service when it passed one, else the
    /// built-in small model on the explicit choice (see `goal_core::small_model`).
    pub(crate) fn model(options: Option<Self>, context: &EnvContext, client: &OpenCodeClient) -> Arc<dyn SmallModel> {
        let options = options.unwrap_or_default();
        if let Some(callback) = options.generate {
            return Arc::new(callbacks::HostSmallModel::new(callback));
        }
        let explicit = match (&options.provider_id, &options.model_id) {
            (Some(provider_id), Some(model_id)) => ModelRef::new(provider_id, model_id),
            _ => None,
        };
        Arc::new(BuiltinSmallModel::new(context.shared(), client.clone(), explicit))
    }
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
    /// Tokens the call cost, in any of the usual shapes (`totalTokens`, or input and output
    /// counts: `inputTokens`/`outputTokens`, `prompt_tokens`/`completion_tokens`); the audit trail
    /// records the total as `auditTokens`.
    #[napi(ts_type = "Record<string, number>")]
    pub usage: Option<serde_json::Value>,
}

/// A small-model failure as a value.
#[napi(object)]
pub struct SmallModelFailure {
    /// HTTP-like status (404: no small model for this provider).
    pub status_code: Option<u32>,
    /// Machine code such as `output-exhausted`.
    pub code: Option<String>,
}
