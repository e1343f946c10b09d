//! One small-model call as plain data: the request the runtimes send, the reply, the failure.
//! Pure: the wire format (`small_model::wire`), the host binding and the tests share it.

use serde_json::Value;

/// A small-model request (the reference's `generateSmallModelText` argument).
#[derive(Debug, Clone, Default)]
pub struct SmallModelRequest {
    /// User prompt.
    pub prompt: String,
    /// System prompt.
    pub system: String,
    /// Project directory.
    pub directory: String,
    /// The session's provider.
    pub preferred_provider_id: String,
    /// The session's model.
    pub preferred_model_id: String,
    /// Never send conversation content to another provider.
    pub restrict_to_preferred_provider: bool,
    /// Output cap, when set.
    pub max_output_tokens: Option<u32>,
    /// Per-call timeout in ms.
    pub timeout_ms: u64,
}

impl SmallModelRequest {
    /// The request as the reference's JS service takes it.
    pub fn to_value(&self) -> Value {
        let mut object = serde_json::json!({
            "prompt": self.prompt,
            "system": self.system,
            "directory": self.directory,
            "restrictToPreferredProvider": self.restrict_to_preferred_provider,
            "timeoutMs": self.timeout_ms,
        });
        if !self.preferred_provider_id.is_empty() {
            object["preferredProviderID"] = Value::from(self.preferred_provider_id.clone());
        }
        if !self.preferred_model_id.is_empty() {
            object["preferredModelID"] = Value::from(self.preferred_model_id.clone());
        }
        if let Some(max) = self.max_output_tokens {
            object["maxOutputTokens"] = Value::from(max);
        }
        object
    }
}

/// A small-model answer.
#[derive(Debug, Clone, Default)]
pub struct SmallModelReply {
    /// Output text (trimmed).
    pub text: String,
    /// Provider that answered.
    pub provider_id: String,
    /// Model that answered.
    pub model_id: String,
}

/// A small-model failure. `status == Some(404)` means "no small model": silent.
#[derive(Debug, Clone, Default)]
pub struct SmallModelError {
    /// HTTP-like status (`statusCode` or `status`).
    pub status: Option<u16>,
    /// Machine code (`output-exhausted`, `no-provider-login`, …).
    pub code: String,
}

impl SmallModelError {
    /// Unavailable without a status (callback threw, timed out, returned garbage).
    pub fn unavailable() -> Self {
        Self::default()
    }

    /// Whether the failure should be logged (404 is the expected "no small model").
    pub fn is_silent(&self) -> bool {
        self.status == Some(404)
    }
}
