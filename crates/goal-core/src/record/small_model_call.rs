//! One small-model call as plain data: the request the runtimes send, the reply, the failure.
//! Pure: the wire format (`small_model::wire`), the host binding and the tests share it.

use serde_json::Value;

/// What one small-model call asks (the binding hands it to a host as `SmallModelRequest`, the
/// reference's `generateSmallModelText` argument).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SmallModelQuery {
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

impl SmallModelQuery {
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
    /// Tokens the call cost, when the model reported its usage.
    pub tokens: Option<u64>,
}

pub use crate::error::SmallModelError;

/// Total tokens of a usage object in any of the usual shapes: `totalTokens` / `total_tokens`, or
/// input + output (`inputTokens`/`outputTokens`, `prompt_tokens`/`completion_tokens`,
/// `input_tokens`/`output_tokens`, the latter with Anthropic's cache counts). `None` when absent.
pub fn usage_total(usage: Option<&Value>) -> Option<u64> {
    let usage = usage?.as_object()?;
    let count =
        |key: &str| usage.get(key).and_then(Value::as_f64).filter(|n| n.is_finite() && *n >= 0.0).map(|n| n as u64);
    if let Some(total) = count("totalTokens").or_else(|| count("total_tokens")) {
        return Some(total);
    }
    let pairs =
        [("inputTokens", "outputTokens"), ("prompt_tokens", "completion_tokens"), ("input_tokens", "output_tokens")];
    pairs.iter().find_map(|(input, output)| {
        let (i, o) = (count(input), count(output));
        (i.is_some() || o.is_some()).then(|| {
            i.unwrap_or(0)
                + o.unwrap_or(0)
                + count("cache_creation_input_tokens").unwrap_or(0)
                + count("cache_read_input_tokens").unwrap_or(0)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_in_every_shape() {
        use serde_json::json;
        assert_eq!(usage_total(Some(&json!({"totalTokens": 120}))), Some(120));
        assert_eq!(
            usage_total(Some(&json!({"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}))),
            Some(120)
        );
        assert_eq!(
            usage_total(Some(&json!({"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 5}))),
            Some(125)
        );
        assert_eq!(usage_total(Some(&json!({"inputTokens": 7}))), Some(7));
        assert_eq!(usage_total(Some(&json!({"other": 1}))), None);
        assert_eq!(usage_total(Some(&json!("lots"))), None);
        assert_eq!(usage_total(None), None);
    }
}
