//! What the host provides: a small model, a notification sink, settings on disk.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::opencode::BoxFuture;

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
    /// Tokens the call cost, when the model reported its usage.
    pub tokens: Option<u64>,
}

/// Total tokens of a usage object in any of the usual shapes: `totalTokens` / `total_tokens`, or
/// input + output (`inputTokens`/`outputTokens`, `prompt_tokens`/`completion_tokens`,
/// `input_tokens`/`output_tokens`, the latter with Anthropic's cache counts). `None` when absent.
pub fn usage_total(usage: Option<&Value>) -> Option<u64> {
    let usage = usage?.as_object()?;
    let count = |key: &str| usage.get(key).and_then(Value::as_f64).filter(|n| n.is_finite() && *n >= 0.0).map(|n| n as u64);
    if let Some(total) = count("totalTokens").or_else(|| count("total_tokens")) {
        return Some(total);
    }
    let pairs = [("inputTokens", "outputTokens"), ("prompt_tokens", "completion_tokens"), ("input_tokens", "output_tokens")];
    pairs.iter().find_map(|(input, output)| {
        let (i, o) = (count(input), count(output));
        (i.is_some() || o.is_some()).then(|| {
            i.unwrap_or(0) + o.unwrap_or(0) + count("cache_creation_input_tokens").unwrap_or(0) + count("cache_read_input_tokens").unwrap_or(0)
        })
    })
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

/// A small model.
pub trait SmallModel: Send + Sync {
    /// Generates text.
    fn generate(&self, request: SmallModelRequest) -> BoxFuture<'_, Result<SmallModelReply, SmallModelError>>;
}

/// No small model: every audit is unavailable (404, silent).
pub struct NoSmallModel;

impl SmallModel for NoSmallModel {
    fn generate(&self, _request: SmallModelRequest) -> BoxFuture<'_, Result<SmallModelReply, SmallModelError>> {
        Box::pin(async { Err(SmallModelError { status: Some(404), code: String::new() }) })
    }
}

/// Where notifications go.
pub trait Notifier: Send + Sync {
    /// Delivers one settle notification (fire and forget).
    fn notify(&self, event: Value);
}

/// Drops notifications.
pub struct NoNotifier;

impl Notifier for NoNotifier {
    fn notify(&self, _event: Value) {}
}

/// The OpenChamber data directory: explicit, else `OPENCHAMBER_DATA_DIR`, else
/// `~/.config/openchamber`.
pub fn resolve_data_dir(explicit: Option<&str>) -> PathBuf {
    if let Some(dir) = explicit.filter(|d| !d.trim().is_empty()) {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("OPENCHAMBER_DATA_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME")
        .or_else(|| std::env::var_os("USERPROFILE"))
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    home.join(".config").join("openchamber")
}

/// The switches read from `<dataDir>/settings.json` at fire time. A read error means "on".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SettingsFlags {
    /// `sessionGoalEnabled !== false`.
    pub goal_enabled: bool,
    /// `sessionAssistEnabled !== false`.
    pub assist_enabled: bool,
    /// `sessionRecapEnabled !== false`.
    pub recap_enabled: bool,
    /// `sessionSuggestionEnabled !== false`.
    pub suggestion_enabled: bool,
    /// `notifyOnCompletion !== false`.
    pub notify_on_completion: bool,
}

impl SettingsFlags {
    /// Everything on (missing or unreadable settings).
    pub const DEFAULT: SettingsFlags = SettingsFlags {
        goal_enabled: true,
        assist_enabled: true,
        recap_enabled: true,
        suggestion_enabled: true,
        notify_on_completion: true,
    };

    /// Parses settings text; unparseable text means defaults.
    pub fn parse(text: &str) -> SettingsFlags {
        let Ok(value) = serde_json::from_str::<Value>(text) else {
            return Self::DEFAULT;
        };
        let on = |key: &str| value.get(key) != Some(&Value::Bool(false));
        SettingsFlags {
            goal_enabled: on("sessionGoalEnabled"),
            assist_enabled: on("sessionAssistEnabled"),
            recap_enabled: on("sessionRecapEnabled"),
            suggestion_enabled: on("sessionSuggestionEnabled"),
            notify_on_completion: on("notifyOnCompletion"),
        }
    }
}

/// The settings file and the objective files.
#[derive(Debug, Clone)]
pub struct DataDir {
    root: PathBuf,
}

impl DataDir {
    /// A data directory.
    pub fn new(root: PathBuf) -> Self {
        Self { root }
    }

    /// Its path.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Reads the switches now (never cached: the user may flip them at any time).
    pub async fn flags(&self) -> SettingsFlags {
        match tokio::fs::read_to_string(self.root.join("settings.json")).await {
            Ok(text) => SettingsFlags::parse(&text),
            Err(_) => SettingsFlags::DEFAULT,
        }
    }

    /// Reads an objective file fresh. `None` when invalid id, missing, unreadable or empty.
    pub async fn read_objective(&self, session_id: &str) -> Option<String> {
        crate::objectives::read_objective(&self.root, session_id).await
    }
}

/// The host services one runtime uses.
#[derive(Clone)]
pub struct Services {
    /// Small model.
    pub small_model: Arc<dyn SmallModel>,
    /// Notifications.
    pub notifier: Arc<dyn Notifier>,
    /// Settings and objective files.
    pub data_dir: DataDir,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_in_every_shape() {
        use serde_json::json;
        assert_eq!(usage_total(Some(&json!({"totalTokens": 120}))), Some(120));
        assert_eq!(usage_total(Some(&json!({"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}))), Some(120));
        assert_eq!(usage_total(Some(&json!({"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 5}))), Some(125));
        assert_eq!(usage_total(Some(&json!({"inputTokens": 7}))), Some(7));
        assert_eq!(usage_total(Some(&json!({"other": 1}))), None);
        assert_eq!(usage_total(Some(&json!("lots"))), None);
        assert_eq!(usage_total(None), None);
    }

    #[test]
    fn settings_default_on_and_only_false_disables() {
        assert_eq!(SettingsFlags::parse("not json"), SettingsFlags::DEFAULT);
        let flags = SettingsFlags::parse(r#"{"sessionGoalEnabled": false, "sessionAssistEnabled": 0, "notifyOnCompletion": "false"}"#);
        assert!(!flags.goal_enabled);
        assert!(flags.assist_enabled);
        assert!(flags.notify_on_completion);
    }
}
