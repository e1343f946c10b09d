//! What a failed reply's `error` says about the provider, and what the goal loop does with it.
//!
//! OpenCode ends a turn the provider refused with an `error` object on the assistant message
//! (see `docs/opencode.md`, "Provider failures"): a name (`APIError`, `ProviderAuthError`,
//! `ContextOverflowError`, …) and a `data` object whose shape depends on the name. This module
//! reads that object tolerantly (any field of the wrong type is absent, every string bounded) and
//! maps it onto the closed table of [`ProviderFailure`]. Pure: no I/O, no clock.

use serde_json::{Map, Value};

use crate::text::truncate_chars;

/// Most response headers kept from one error (a provider sends a few dozen at most).
pub const MAX_HEADERS: usize = 64;
/// Longest header name or value kept, in characters.
pub const HEADER_CHAR_LIMIT: usize = 200;
/// Characters of the provider's response body inspected for quota markers.
pub const BODY_CHAR_LIMIT: usize = 4000;
/// Characters of the provider id kept (it is shown in `cause.detail` and `cause.fix`).
pub const PROVIDER_CHAR_LIMIT: usize = 60;

/// The error OpenCode attached to a reply, reduced to what the classification reads.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProviderError {
    /// `error.name` (empty when absent or not a string).
    pub name: String,
    /// `data.statusCode` (a number, or a numeric string), when it is an HTTP status.
    pub status: Option<u16>,
    /// `data.isRetryable`, when it is a boolean.
    pub retryable: Option<bool>,
    /// `data.responseHeaders`, names lowercased, values bounded; at most [`MAX_HEADERS`].
    pub headers: Vec<(String, String)>,
    /// The start of `data.responseBody` (or of `data.message` when there is no body), bounded.
    pub body: String,
    /// `data.providerID` (ProviderAuthError names it), when present.
    pub provider_id: Option<String>,
    /// `data.message`, bounded (empty when absent): quoted in a failed turn's cause detail.
    pub message: String,
}

impl ProviderError {
    /// Reads an `error` value; `None` when it is not an object.
    pub fn from_value(error: &Value) -> Option<ProviderError> {
        let object = error.as_object()?;
        let name = object.get("name").and_then(Value::as_str).unwrap_or("").trim();
        let empty = Map::new();
        let data = object.get("data").and_then(Value::as_object).unwrap_or(&empty);
        let body = data
            .get("responseBody")
            .and_then(Value::as_str)
            .or_else(|| data.get("message").and_then(Value::as_str))
            .unwrap_or("");
        Some(ProviderError {
            name: truncate_chars(name, HEADER_CHAR_LIMIT),
            status: data.get("statusCode").and_then(http_status),
            retryable: data.get("isRetryable").and_then(Value::as_bool),
            headers: data.get("responseHeaders").map(headers_of).unwrap_or_default(),
            body: truncate_chars(body, BODY_CHAR_LIMIT),
            provider_id: data
                .get("providerID")
                .and_then(Value::as_str)
                .map(|p| truncate_chars(p.trim(), PROVIDER_CHAR_LIMIT))
                .filter(|p| !p.is_empty()),
            message: truncate_chars(
                data.get("message").and_then(Value::as_str).unwrap_or("").trim(),
                HEADER_CHAR_LIMIT,
            ),
        })
    }

    /// The value of a header (names are stored lowercased).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str())
    }
}

fn http_status(value: &Value) -> Option<u16> {
    let number = match value {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().parse::<f64>().ok()?,
        _ => return None,
    };
    (number.fract() == 0.0 && (100.0..=599.0).contains(&number)).then_some(number as u16)
}

fn headers_of(value: &Value) -> Vec<(String, String)> {
    let Some(object) = value.as_object() else { return Vec::new() };
    object
        .iter()
        .filter_map(|(key, value)| {
            let text = match value {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                _ => return None,
            };
            Some((
                truncate_chars(&key.to_ascii_lowercase(), HEADER_CHAR_LIMIT),
                truncate_chars(text.trim(), HEADER_CHAR_LIMIT),
            ))
        })
        .take(MAX_HEADERS)
        .collect()
}

/// What a failed reply means for the goal (the table docs/provider-limits.md documents).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProviderFailure {
    /// A rate or usage limit that resets: the goal parks until it does.
    Resetting,
    /// A quota that will not reset soon (`insufficient_quota`, 402, a 429 marked not
    /// retryable): settles `blocked` / `providerQuota`.
    Quota,
    /// The provider refused the credentials: settles `blocked` / `providerAuth`.
    Auth {
        /// The provider, when known (from the error, else from the reply).
        provider: String,
    },
    /// The conversation no longer fits the model: settles `blocked` / `contextOverflow`.
    ContextOverflow,
    /// The provider's content filter stopped the reply: settles `blocked` / `contentFilter`.
    ContentFilter,
    /// Any other error (unknown names and shapes, non-retryable 5xx, aborts, length cuts): not a
    /// provider failure. An abort pauses and a length cut is recovered; the rest settle `blocked`
    /// at once with the error's name (`turnFailed`, see `goal/decide/plan_rules.rs`).
    Other,
}

/// Markers in a provider's body that say the account is out of credit rather than rate limited.
const QUOTA_MARKERS: [&str; 4] =
    ["insufficient_quota", "billing_hard_limit", "credit balance is too low", "exceeded your current quota"];

/// Classifies an error. `reply_provider` is the provider of the failed reply (named in an auth
/// failure when the error itself does not name one).
pub fn classify(error: &ProviderError, reply_provider: &str) -> ProviderFailure {
    match error.name.as_str() {
        "ProviderAuthError" => {
            return ProviderFailure::Auth { provider: provider_name(error, reply_provider) };
        }
        "ContextOverflowError" => return ProviderFailure::ContextOverflow,
        "ContentFilterError" => return ProviderFailure::ContentFilter,
        "APIError" => {}
        _ => return ProviderFailure::Other,
    }
    let Some(status) = error.status else { return ProviderFailure::Other };
    let quota_body = says_quota(&error.body);
    match status {
        401 | 403 => ProviderFailure::Auth { provider: provider_name(error, reply_provider) },
        402 => ProviderFailure::Quota,
        429 if quota_body || error.retryable == Some(false) => ProviderFailure::Quota,
        429 => ProviderFailure::Resetting,
        503 | 529 if error.retryable == Some(true) => {
            if quota_body {
                ProviderFailure::Quota
            } else {
                ProviderFailure::Resetting
            }
        }
        _ => ProviderFailure::Other,
    }
}

fn says_quota(body: &str) -> bool {
    let lowered = body.to_ascii_lowercase();
    QUOTA_MARKERS.iter().any(|marker| lowered.contains(marker))
}

fn provider_name(error: &ProviderError, reply_provider: &str) -> String {
    let from_reply = truncate_chars(reply_provider.trim(), PROVIDER_CHAR_LIMIT);
    error.provider_id.clone().filter(|p| !p.is_empty()).unwrap_or(from_reply)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn api(status: Value, retryable: Value, body: &str) -> ProviderError {
        ProviderError::from_value(&json!({"name": "APIError", "data": {
            "message": "provider said no", "statusCode": status, "isRetryable": retryable, "responseBody": body,
            "responseHeaders": {"Retry-After": "7", "x-ratelimit-reset-requests": "7s"}}}))
        .unwrap()
    }

    #[test]
    fn the_classification_table() {
        let rows: Vec<(ProviderError, ProviderFailure)> = vec![
            (api(json!(429), json!(true), "{\"error\":\"rate_limit_exceeded\"}"), ProviderFailure::Resetting),
            (api(json!("429"), json!(null), ""), ProviderFailure::Resetting),
            (api(json!(429), json!(true), "<html><body>Too Many Requests</body></html>"), ProviderFailure::Resetting),
            (api(json!(429), json!(false), ""), ProviderFailure::Quota),
            (api(json!(429), json!(true), "{\"error\":{\"code\":\"insufficient_quota\"}}"), ProviderFailure::Quota),
            (api(json!(402), json!(false), ""), ProviderFailure::Quota),
            (api(json!(529), json!(true), "overloaded"), ProviderFailure::Resetting),
            (api(json!(503), json!(true), ""), ProviderFailure::Resetting),
            (api(json!(503), json!(false), ""), ProviderFailure::Other),
            (api(json!(500), json!(true), ""), ProviderFailure::Other),
            (api(json!(401), json!(false), ""), ProviderFailure::Auth { provider: "openai".into() }),
            (api(json!(403), json!(false), ""), ProviderFailure::Auth { provider: "openai".into() }),
            (api(json!(null), json!(true), ""), ProviderFailure::Other),
            (api(json!(4290), json!(true), ""), ProviderFailure::Other),
        ];
        for (error, expected) in rows {
            assert_eq!(classify(&error, "openai"), expected, "{error:?}");
        }
        let named = |value: Value| classify(&ProviderError::from_value(&value).unwrap(), "mock");
        assert_eq!(
            named(json!({"name": "ProviderAuthError", "data": {"providerID": "anthropic", "message": "bad key"}})),
            ProviderFailure::Auth { provider: "anthropic".into() }
        );
        assert_eq!(named(json!({"name": "ProviderAuthError"})), ProviderFailure::Auth { provider: "mock".into() });
        assert_eq!(
            named(json!({"name": "ContextOverflowError", "data": {"message": "too long"}})),
            ProviderFailure::ContextOverflow
        );
        assert_eq!(named(json!({"name": "ContentFilterError"})), ProviderFailure::ContentFilter);
        for other in
            ["UnknownError", "StructuredOutputError", "MessageAbortedError", "MessageOutputLengthError", "", "Weird"]
        {
            assert_eq!(named(json!({"name": other, "data": {"statusCode": 429}})), ProviderFailure::Other, "{other}");
        }
    }

    #[test]
    fn odd_error_shapes_are_read_safely() {
        assert!(ProviderError::from_value(&json!("APIError")).is_none());
        assert!(ProviderError::from_value(&json!(null)).is_none());
        let odd = ProviderError::from_value(&json!({"name": 7, "data": "nope"})).unwrap();
        assert_eq!(odd, ProviderError::default());
        let headers = json!({"data": {"statusCode": 429, "responseHeaders": {"A": 1, "B": {"x": 1}, "C": null, "Retry-After": " 9 "}}});
        let error = ProviderError::from_value(&headers).unwrap();
        assert_eq!(error.header("a"), Some("1"));
        assert_eq!(error.header("b"), None);
        assert_eq!(error.header("retry-after"), Some("9"));
        let many: Map<String, Value> = (0..500).map(|i| (format!("h{i}"), json!("x".repeat(10_000)))).collect();
        let big = ProviderError::from_value(
            &json!({"name": "APIError", "data": {"responseHeaders": many, "responseBody": "y".repeat(100_000)}}),
        )
        .unwrap();
        assert_eq!(big.headers.len(), MAX_HEADERS);
        assert!(big.headers.iter().all(|(_, v)| v.chars().count() == HEADER_CHAR_LIMIT));
        assert_eq!(big.body.chars().count(), BODY_CHAR_LIMIT);
        for bad_status in [json!(-1), json!(42.5), json!("abc"), json!(true), json!(1e300)] {
            let error =
                ProviderError::from_value(&json!({"name": "APIError", "data": {"statusCode": bad_status}})).unwrap();
            assert_eq!(error.status, None);
        }
    }
}
