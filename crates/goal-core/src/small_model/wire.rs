//! Provider wire formats, as pure functions: the HTTP request for a chosen model, and the text (or
//! the classified failure) in a provider's answer. Two formats cover the providers OpenCode users
//! have: OpenAI-compatible chat completions (OpenAI, Google's OpenAI endpoint, OpenRouter, Groq,
//! any `@ai-sdk/openai-compatible` provider…) and Anthropic's messages API.

use std::fmt;

use serde_json::{json, Value};

use super::catalog::Choice;
use crate::record::small_model_call::{SmallModelError, SmallModelQuery};

/// Output tokens asked for when the request sets no cap.
pub const DEFAULT_MAX_OUTPUT_TOKENS: u32 = 4_000;

/// `anthropic-version` header value of the messages API.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// How to talk to a provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireFormat {
    /// `POST {base}/chat/completions`, bearer key.
    OpenAiChat,
    /// `POST {base}/messages`, `x-api-key`, `anthropic-version`.
    AnthropicMessages,
}

/// The format of a model: Anthropic for `@ai-sdk/anthropic` models or the `anthropic` provider,
/// OpenAI-compatible chat completions for everything else.
pub fn wire_format(provider_id: &str, npm: &str) -> WireFormat {
    if npm == "@ai-sdk/anthropic" || provider_id == "anthropic" {
        WireFormat::AnthropicMessages
    } else {
        WireFormat::OpenAiChat
    }
}

/// The public endpoint of a provider package, for providers configured without `baseURL`.
fn default_base_url(provider_id: &str, npm: &str) -> Option<&'static str> {
    match (npm, provider_id) {
        ("@ai-sdk/anthropic", _) | (_, "anthropic") => Some("https://api.anthropic.com/v1"),
        ("@ai-sdk/openai", _) | (_, "openai") => Some("https://api.openai.com/v1"),
        // Google's OpenAI-compatible endpoint takes the same API key as a bearer token.
        ("@ai-sdk/google", _) | (_, "google") => Some("https://generativelanguage.googleapis.com/v1beta/openai"),
        ("@ai-sdk/groq", _) | (_, "groq") => Some("https://api.groq.com/openai/v1"),
        ("@openrouter/ai-sdk-provider", _) | (_, "openrouter") => Some("https://openrouter.ai/api/v1"),
        ("@ai-sdk/deepseek", _) | (_, "deepseek") => Some("https://api.deepseek.com/v1"),
        ("@ai-sdk/mistral", _) | (_, "mistral") => Some("https://api.mistral.ai/v1"),
        ("@ai-sdk/xai", _) | (_, "xai") => Some("https://api.x.ai/v1"),
        _ => None,
    }
}

/// A ready HTTP call. Its `Debug` shows neither header values (keys) nor the body (prompts).
#[derive(Clone, PartialEq)]
pub struct ProviderCall {
    /// Full URL.
    pub url: String,
    /// Headers, credentials included.
    pub headers: Vec<(String, String)>,
    /// JSON body.
    pub body: Value,
    /// Format, for reading the answer.
    pub format: WireFormat,
}

impl fmt::Debug for ProviderCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderCall")
            .field("url", &self.url)
            .field("headers", &self.headers.iter().map(|(name, _)| name.as_str()).collect::<Vec<_>>())
            .field("format", &self.format)
            .finish_non_exhaustive()
    }
}

/// Builds the provider call for a request. Fails (422, `small-model-provider-unsupported`) when
/// the provider has no endpoint we know how to reach.
pub fn build_call(choice: &Choice, request: &SmallModelQuery) -> Result<ProviderCall, SmallModelError> {
    let provider = &choice.provider;
    let model = &choice.model;
    let format = wire_format(&provider.id, &model.npm);
    let base = [provider.base_url.as_str(), model.api_url.as_str()]
        .into_iter()
        .find(|url| url.starts_with("http://") || url.starts_with("https://"))
        .or_else(|| default_base_url(&provider.id, &model.npm))
        .ok_or(SmallModelError { status: Some(422), code: "small-model-provider-unsupported".into() })?
        .trim_end_matches('/')
        .to_string();
    let mut max_output = request.max_output_tokens.filter(|n| *n > 0).unwrap_or(DEFAULT_MAX_OUTPUT_TOKENS);
    if model.output_limit > 0 {
        max_output = max_output.min(model.output_limit);
    }
    let mut headers: Vec<(String, String)> = provider.headers.clone();
    headers.push(("content-type".into(), "application/json".into()));
    let key = provider.api_key.expose();
    let (url, body) = match format {
        WireFormat::OpenAiChat => {
            if !key.is_empty() {
                headers.push(("authorization".into(), format!("Bearer {key}")));
            }
            let mut messages = Vec::new();
            if !request.system.trim().is_empty() {
                messages.push(json!({ "role": "system", "content": request.system }));
            }
            messages.push(json!({ "role": "user", "content": request.prompt }));
            // OpenAI's own API rejects `max_tokens` for its reasoning models; everyone else that
            // speaks the format still expects `max_tokens`.
            let cap_field = if model.npm == "@ai-sdk/openai" || provider.id == "openai" {
                "max_completion_tokens"
            } else {
                "max_tokens"
            };
            let mut body = json!({ "model": model.api_id, "messages": messages, "stream": false });
            body[cap_field] = Value::from(max_output);
            (format!("{base}/chat/completions"), body)
        }
        WireFormat::AnthropicMessages => {
            if !key.is_empty() {
                headers.push(("x-api-key".into(), key.to_string()));
            }
            headers.push(("anthropic-version".into(), ANTHROPIC_VERSION.into()));
            let mut body = json!({
                "model": model.api_id,
                "max_tokens": max_output,
                "messages": [{ "role": "user", "content": request.prompt }],
            });
            if !request.system.trim().is_empty() {
                body["system"] = Value::from(request.system.clone());
            }
            (format!("{base}/messages"), body)
        }
    };
    Ok(ProviderCall { url, headers, body, format })
}

/// Classifies a non-2xx provider answer. 401/403 and 404 are "unavailable" with that status (the
/// goal loop treats 404 as silent); others keep their status.
pub fn status_error(status: u16) -> SmallModelError {
    let (status, code) = match status {
        401 | 403 => (401, "provider-unauthorized"),
        404 => (404, "provider-model-not-found"),
        429 => (429, "provider-rate-limited"),
        other => (other, "provider-error"),
    };
    SmallModelError { status: Some(status), code: code.into() }
}

fn error(code: &str) -> SmallModelError {
    SmallModelError { status: None, code: code.into() }
}

/// Reads the answer of a provider call: trimmed output text, or the classified failure.
/// Empty output with a length stop, or reasoning without any answer, is `output-exhausted`.
pub fn parse_reply(format: WireFormat, status: u16, body: &[u8]) -> Result<String, SmallModelError> {
    if !(200..300).contains(&status) {
        return Err(status_error(status));
    }
    let value: Value = serde_json::from_slice(body).map_err(|_| error("provider-bad-response"))?;
    let (text, exhausted) = match format {
        WireFormat::OpenAiChat => {
            let choice = value
                .get("choices")
                .and_then(Value::as_array)
                .and_then(|c| c.first())
                .ok_or_else(|| error("provider-bad-response"))?;
            let message = choice.get("message");
            let text = match message.and_then(|m| m.get("content")) {
                Some(Value::String(text)) => text.clone(),
                // Some gateways answer with content parts.
                Some(Value::Array(parts)) => {
                    parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("")
                }
                _ => String::new(),
            };
            let reasoned = ["reasoning_content", "reasoning"].iter().any(|key| {
                message.and_then(|m| m.get(*key)).and_then(Value::as_str).is_some_and(|r| !r.trim().is_empty())
            });
            let length = choice.get("finish_reason").and_then(Value::as_str) == Some("length");
            (text, length || reasoned)
        }
        WireFormat::AnthropicMessages => {
            let blocks =
                value.get("content").and_then(Value::as_array).ok_or_else(|| error("provider-bad-response"))?;
            let text = blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("");
            let thought = blocks
                .iter()
                .any(|b| matches!(b.get("type").and_then(Value::as_str), Some("thinking" | "redacted_thinking")));
            let length = value.get("stop_reason").and_then(Value::as_str) == Some("max_tokens");
            (text, length || thought)
        }
    };
    let text = text.trim().to_string();
    if text.is_empty() {
        return Err(error(if exhausted { "output-exhausted" } else { "empty-output" }));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::super::catalog::{Catalog, ModelEntry, ProviderEntry, Secret, Source};
    use super::*;

    fn choice(provider_id: &str, npm: &str, base_url: &str, key: &str) -> Choice {
        Choice {
            provider: ProviderEntry {
                id: provider_id.into(),
                base_url: base_url.into(),
                api_key: Secret::new(key.into()),
                headers: vec![("x-extra".into(), "1".into())],
                models: vec![],
            },
            model: ModelEntry {
                id: "small".into(),
                api_id: "small-api".into(),
                npm: npm.into(),
                output_limit: 1024,
                text_io: true,
                ..ModelEntry::default()
            },
            source: Source::Config,
        }
    }

    fn request() -> SmallModelQuery {
        SmallModelQuery { prompt: "judge this".into(), system: "be terse".into(), ..SmallModelQuery::default() }
    }

    fn header<'a>(call: &'a ProviderCall, name: &str) -> Option<&'a str> {
        call.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    #[test]
    fn openai_compatible_request() {
        let call = build_call(&choice("mock", "@ai-sdk/openai-compatible", "http://127.0.0.1:9/v1/", "k1"), &request())
            .unwrap();
        assert_eq!(call.url, "http://127.0.0.1:9/v1/chat/completions");
        assert_eq!(call.format, WireFormat::OpenAiChat);
        assert_eq!(header(&call, "authorization"), Some("Bearer k1"));
        assert_eq!(header(&call, "x-extra"), Some("1"));
        assert_eq!(
            call.body,
            json!({
                "model": "small-api",
                "messages": [{"role": "system", "content": "be terse"}, {"role": "user", "content": "judge this"}],
                "stream": false,
                "max_tokens": 1024,
            }),
            "the default cap (4000) is clamped to the model's output limit"
        );
        let debug = format!("{call:?}");
        assert!(!debug.contains("k1") && !debug.contains("judge this"), "Debug hides keys and prompts: {debug}");
    }

    #[test]
    fn openai_itself_gets_max_completion_tokens_and_its_default_url() {
        let mut request = request();
        request.max_output_tokens = Some(300);
        request.system.clear();
        let call = build_call(&choice("openai", "@ai-sdk/openai", "", "sk"), &request).unwrap();
        assert_eq!(call.url, "https://api.openai.com/v1/chat/completions");
        assert_eq!(call.body["max_completion_tokens"], 300);
        assert!(call.body.get("max_tokens").is_none());
        assert_eq!(call.body["messages"].as_array().unwrap().len(), 1, "no empty system message");
    }

    #[test]
    fn anthropic_request() {
        let call = build_call(&choice("anthropic", "@ai-sdk/anthropic", "", "ak"), &request()).unwrap();
        assert_eq!(call.url, "https://api.anthropic.com/v1/messages");
        assert_eq!(call.format, WireFormat::AnthropicMessages);
        assert_eq!(header(&call, "x-api-key"), Some("ak"));
        assert_eq!(header(&call, "anthropic-version"), Some(ANTHROPIC_VERSION));
        assert_eq!(header(&call, "authorization"), None);
        assert_eq!(
            call.body,
            json!({"model": "small-api", "max_tokens": 1024, "system": "be terse", "messages": [{"role": "user", "content": "judge this"}]})
        );
        // A config provider using the Anthropic package at its own URL.
        let call = build_call(&choice("proxy", "@ai-sdk/anthropic", "http://127.0.0.1:5/v1", ""), &request()).unwrap();
        assert_eq!(call.url, "http://127.0.0.1:5/v1/messages");
        assert_eq!(header(&call, "x-api-key"), None, "no key, no header");
    }

    #[test]
    fn unknown_endpoint_is_unsupported() {
        let error = build_call(&choice("plugin-provider", "some-plugin", "", "k"), &request()).unwrap_err();
        assert_eq!((error.status, error.code.as_str()), (Some(422), "small-model-provider-unsupported"));
        // The catalog's api.url stands in for a missing baseURL.
        let mut with_url = choice("zen", "@ai-sdk/openai-compatible", "", "k");
        with_url.model.api_url = "https://zen.example/v1".into();
        assert_eq!(build_call(&with_url, &request()).unwrap().url, "https://zen.example/v1/chat/completions");
    }

    #[test]
    fn openai_replies() {
        let ok = br#"{"choices":[{"message":{"role":"assistant","content":"  {\"verdict\":\"complete\"} "},"finish_reason":"stop"}]}"#;
        assert_eq!(parse_reply(WireFormat::OpenAiChat, 200, ok).unwrap(), r#"{"verdict":"complete"}"#);
        let parts = br#"{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}]}"#;
        assert_eq!(parse_reply(WireFormat::OpenAiChat, 200, parts).unwrap(), "ab");
        let length = br#"{"choices":[{"message":{"content":""},"finish_reason":"length"}]}"#;
        assert_eq!(parse_reply(WireFormat::OpenAiChat, 200, length).unwrap_err().code, "output-exhausted");
        let reasoning =
            br#"{"choices":[{"message":{"content":null,"reasoning_content":"thinking..."},"finish_reason":"stop"}]}"#;
        assert_eq!(parse_reply(WireFormat::OpenAiChat, 200, reasoning).unwrap_err().code, "output-exhausted");
        let empty = br#"{"choices":[{"message":{"content":""},"finish_reason":"stop"}]}"#;
        assert_eq!(parse_reply(WireFormat::OpenAiChat, 200, empty).unwrap_err().code, "empty-output");
        assert_eq!(parse_reply(WireFormat::OpenAiChat, 200, b"<html>").unwrap_err().code, "provider-bad-response");
        assert_eq!(parse_reply(WireFormat::OpenAiChat, 200, b"{}").unwrap_err().code, "provider-bad-response");
    }

    #[test]
    fn anthropic_replies() {
        let ok = br#"{"content":[{"type":"thinking","thinking":"..."},{"type":"text","text":"{\"verdict\":\"continue\"}"}],"stop_reason":"end_turn"}"#;
        assert_eq!(parse_reply(WireFormat::AnthropicMessages, 200, ok).unwrap(), r#"{"verdict":"continue"}"#);
        let exhausted = br#"{"content":[],"stop_reason":"max_tokens"}"#;
        assert_eq!(parse_reply(WireFormat::AnthropicMessages, 200, exhausted).unwrap_err().code, "output-exhausted");
        let thought_only = br#"{"content":[{"type":"thinking","thinking":"..."}],"stop_reason":"end_turn"}"#;
        assert_eq!(parse_reply(WireFormat::AnthropicMessages, 200, thought_only).unwrap_err().code, "output-exhausted");
    }

    #[test]
    fn http_failures_are_classified() {
        for (status, expected) in [
            (401, (Some(401), "provider-unauthorized")),
            (403, (Some(401), "provider-unauthorized")),
            (404, (Some(404), "provider-model-not-found")),
            (429, (Some(429), "provider-rate-limited")),
            (503, (Some(503), "provider-error")),
        ] {
            let error = parse_reply(WireFormat::OpenAiChat, status, b"{\"error\":{}}").unwrap_err();
            assert_eq!((error.status, error.code.as_str()), expected, "status {status}");
        }
        assert!(status_error(404).is_silent());
        assert!(!status_error(401).is_silent());
    }

    #[test]
    fn catalog_to_call_end_to_end() {
        let providers = json!({"providers": [{"id": "mock", "options": {"baseURL": "http://127.0.0.1:7/v1", "apiKey": "t"}, "models": {
            "mock-small": {"id": "mock-small", "api": {"id": "mock-small", "url": "", "npm": "@ai-sdk/openai-compatible"}, "limit": {"context": 32000, "output": 2048}}
        }}]});
        let catalog = Catalog::from_values(&json!({"small_model": "mock/mock-small"}), &providers);
        let choice = super::super::catalog::resolve(&catalog, None, Default::default()).unwrap();
        let call = build_call(&choice, &request()).unwrap();
        assert_eq!(call.url, "http://127.0.0.1:7/v1/chat/completions");
        assert_eq!(call.body["max_tokens"], 2048);
    }
}
