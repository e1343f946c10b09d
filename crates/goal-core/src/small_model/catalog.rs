//! Which model answers a small-model request: OpenCode's provider list and config, read into a
//! catalog, and the resolution order, as pure functions.
//!
//! Order: an explicit override → OpenCode's `small_model` → within the session's own provider the
//! newest model of the families gemini-flash, gpt-nano, claude-haiku → the session's own model →
//! (only when the request allows other providers) the same families across the other connected
//! providers. With `restrict_to_preferred_provider`, conversation content only ever goes to the
//! session's provider unless the user chose the small model explicitly (override or config).

use std::fmt;

use serde_json::Value;

/// Model families tried within a provider, cheapest-and-good-enough first.
pub const FAMILY_PRIORITY: &[&str] = &["gemini-flash", "gpt-nano", "claude-haiku"];

/// A `provider/model` pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRef {
    /// Provider id (`anthropic`, `openai`, a config provider…).
    pub provider_id: String,
    /// Model id within the provider.
    pub model_id: String,
}

impl ModelRef {
    /// A pair from its parts; `None` when either is blank.
    pub fn new(provider_id: &str, model_id: &str) -> Option<ModelRef> {
        let (provider_id, model_id) = (provider_id.trim(), model_id.trim());
        if provider_id.is_empty() || model_id.is_empty() {
            return None;
        }
        Some(ModelRef { provider_id: provider_id.to_string(), model_id: model_id.to_string() })
    }

    /// Parses OpenCode's `"provider/model"` (the model part may itself contain `/`).
    pub fn parse(text: &str) -> Option<ModelRef> {
        let (provider, model) = text.trim().split_once('/')?;
        ModelRef::new(provider, model)
    }
}

/// A credential held in memory only. Its `Debug` never shows the value.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value.
    pub fn new(value: String) -> Self {
        Secret(value)
    }

    /// The value, for building a request header (never for logs).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_empty() { "Secret(none)" } else { "Secret(***)" })
    }
}

/// One model of a provider, reduced to what the small model needs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelEntry {
    /// Id within the provider (what OpenCode and the goal metadata name).
    pub id: String,
    /// Id the provider's API expects (`api.id`; often the same).
    pub api_id: String,
    /// Endpoint from the catalog (`api.url`), used when the provider has no `baseURL` option.
    pub api_url: String,
    /// AI SDK package (`api.npm`): decides the wire format.
    pub npm: String,
    /// Catalog family (`gpt-nano`, `claude-haiku`…).
    pub family: String,
    /// `release_date` (ISO date; compares as text).
    pub release_date: String,
    /// `limit.output` (0 unknown).
    pub output_limit: u32,
    /// Reads and writes plain text (not an image, speech or embedding model).
    pub text_io: bool,
    /// `status: deprecated`.
    pub deprecated: bool,
}

impl ModelEntry {
    fn from_value(key: &str, value: &Value) -> ModelEntry {
        let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").trim().to_string();
        let id = Some(text(value.get("id"))).filter(|s| !s.is_empty()).unwrap_or_else(|| key.to_string());
        let api = value.get("api");
        let api_id = Some(text(api.and_then(|a| a.get("id")))).filter(|s| !s.is_empty()).unwrap_or_else(|| id.clone());
        let capabilities = value.get("capabilities");
        let io = |side: &str, kind: &str| {
            capabilities.and_then(|c| c.get(side)).and_then(|s| s.get(kind)).and_then(Value::as_bool)
        };
        // Unknown capabilities (a config-defined model) count as plain text.
        let text_io = io("input", "text") != Some(false)
            && io("output", "text") != Some(false)
            && io("output", "image") != Some(true)
            && io("output", "audio") != Some(true);
        let output_limit = value
            .get("limit")
            .and_then(|l| l.get("output"))
            .and_then(Value::as_f64)
            .filter(|n| n.is_finite() && *n >= 1.0)
            .map(|n| n.min(u32::MAX as f64) as u32)
            .unwrap_or(0);
        ModelEntry {
            id,
            api_id,
            api_url: text(api.and_then(|a| a.get("url"))),
            npm: text(api.and_then(|a| a.get("npm"))),
            family: text(value.get("family")),
            release_date: text(value.get("release_date")),
            output_limit,
            text_io,
            deprecated: value.get("status").and_then(Value::as_str) == Some("deprecated"),
        }
    }

    /// A model the catalog does not list but the user or the session named.
    fn named(id: &str) -> ModelEntry {
        ModelEntry { id: id.to_string(), api_id: id.to_string(), text_io: true, ..ModelEntry::default() }
    }
}

/// One provider as OpenCode reports it (`GET /config/providers` or `GET /provider`). Its `Debug`
/// shows neither the key nor header values.
#[derive(Clone, Default, PartialEq)]
pub struct ProviderEntry {
    /// Provider id.
    pub id: String,
    /// `options.baseURL`.
    pub base_url: String,
    /// `options.apiKey`, else the provider's resolved `key`.
    pub api_key: Secret,
    /// `options.headers` (string values only). May carry credentials: never logged.
    pub headers: Vec<(String, String)>,
    /// Its models, in catalog order.
    pub models: Vec<ModelEntry>,
}

impl fmt::Debug for ProviderEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderEntry")
            .field("id", &self.id)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key)
            .field("headers", &self.headers.iter().map(|(name, _)| name.as_str()).collect::<Vec<_>>())
            .field("models", &self.models.len())
            .finish()
    }
}

impl ProviderEntry {
    fn from_value(value: &Value) -> Option<ProviderEntry> {
        let id = value.get("id").and_then(Value::as_str)?.trim().to_string();
        if id.is_empty() {
            return None;
        }
        let options = value.get("options");
        let option =
            |key: &str| options.and_then(|o| o.get(key)).and_then(Value::as_str).unwrap_or("").trim().to_string();
        let mut api_key = option("apiKey");
        if api_key.is_empty() {
            api_key = value.get("key").and_then(Value::as_str).unwrap_or("").trim().to_string();
        }
        let headers = options
            .and_then(|o| o.get("headers"))
            .and_then(Value::as_object)
            .map(|h| h.iter().filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string()))).collect())
            .unwrap_or_default();
        let models = match value.get("models") {
            Some(Value::Object(map)) => map.iter().map(|(key, model)| ModelEntry::from_value(key, model)).collect(),
            Some(Value::Array(list)) => {
                list.iter().map(|model| ModelEntry::from_value("", model)).filter(|m| !m.id.is_empty()).collect()
            }
            _ => Vec::new(),
        };
        Some(ProviderEntry { id, base_url: option("baseURL"), api_key: Secret::new(api_key), headers, models })
    }

    /// The catalog entry of a model, or a bare entry for a model the catalog does not list.
    pub fn model_or_named(&self, model_id: &str) -> ModelEntry {
        self.models.iter().find(|m| m.id == model_id).cloned().unwrap_or_else(|| ModelEntry::named(model_id))
    }

    /// The newest usable model of a family.
    pub fn newest_of_family(&self, family: &str) -> Option<&ModelEntry> {
        self.models
            .iter()
            .filter(|m| m.family == family && m.text_io && !m.deprecated)
            .max_by(|a, b| a.release_date.cmp(&b.release_date).then_with(|| b.id.cmp(&a.id)))
    }
}

/// What OpenCode says about models for one directory.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Catalog {
    /// `small_model` from the merged config.
    pub small_model: Option<ModelRef>,
    /// Usable providers (connected ones when OpenCode says which).
    pub providers: Vec<ProviderEntry>,
}

impl Catalog {
    /// Builds the catalog from `GET /config` and a provider listing: `GET /config/providers`
    /// (`{providers: [...]}`) or `GET /provider` (`{all: [...], connected: [...]}`).
    pub fn from_values(config: &Value, providers: &Value) -> Catalog {
        let small_model = config.get("small_model").and_then(Value::as_str).and_then(ModelRef::parse);
        let list = providers
            .get("providers")
            .or_else(|| providers.get("all"))
            .or(Some(providers))
            .and_then(Value::as_array)
            .map(|list| list.iter().filter_map(ProviderEntry::from_value).collect::<Vec<_>>())
            .unwrap_or_default();
        let connected: Option<Vec<&str>> = providers
            .get("connected")
            .and_then(Value::as_array)
            .map(|ids| ids.iter().filter_map(Value::as_str).collect());
        let providers = match connected {
            Some(ids) => list.into_iter().filter(|p| ids.contains(&p.id.as_str())).collect(),
            None => list,
        };
        Catalog { small_model, providers }
    }

    /// A provider by id.
    pub fn provider(&self, id: &str) -> Option<&ProviderEntry> {
        self.providers.iter().find(|p| p.id == id)
    }
}

/// Why a model was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The runtime's `smallModel` option.
    Override,
    /// OpenCode's `small_model` config.
    Config,
    /// A small family model of the session's own provider.
    Family,
    /// The session's own model.
    SessionModel,
    /// A small family model of another connected provider (unrestricted requests only).
    Scan,
}

impl Source {
    /// The reference's `source` string.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Override => "request",
            Source::Config => "config",
            Source::Family => "family-scan",
            Source::SessionModel => "session-model",
            Source::Scan => "family-scan",
        }
    }
}

/// The model that will answer, with its provider's endpoint data.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// Provider (endpoint, key, headers).
    pub provider: ProviderEntry,
    /// The chosen model of that provider.
    pub model: ModelEntry,
    /// Why it was chosen.
    pub source: Source,
}

/// What the request says about the session.
#[derive(Debug, Clone, Copy, Default)]
pub struct Preference<'a> {
    /// The session's provider.
    pub provider_id: &'a str,
    /// The session's model.
    pub model_id: &'a str,
    /// Never send content to another provider (unless chosen explicitly).
    pub restrict: bool,
}

/// Picks the model for a request. `None` means no small model (a silent 404).
pub fn resolve(catalog: &Catalog, explicit: Option<&ModelRef>, preference: Preference<'_>) -> Option<Choice> {
    let chosen = |reference: &ModelRef, source: Source| {
        catalog.provider(&reference.provider_id).map(|provider| Choice {
            provider: provider.clone(),
            model: provider.model_or_named(&reference.model_id),
            source,
        })
    };
    // An explicit choice whose provider OpenCode does not know cannot be called (no endpoint,
    // no key): fall through to the next rule rather than fail every audit.
    if let Some(choice) = explicit.and_then(|r| chosen(r, Source::Override)) {
        return Some(choice);
    }
    if let Some(choice) = catalog.small_model.as_ref().and_then(|r| chosen(r, Source::Config)) {
        return Some(choice);
    }
    let preferred_id = preference.provider_id.trim();
    if let Some(provider) = catalog.provider(preferred_id).filter(|_| !preferred_id.is_empty()) {
        for family in FAMILY_PRIORITY {
            if let Some(model) = provider.newest_of_family(family) {
                return Some(Choice { provider: provider.clone(), model: model.clone(), source: Source::Family });
            }
        }
        let model_id = preference.model_id.trim();
        if !model_id.is_empty() {
            return Some(Choice {
                provider: provider.clone(),
                model: provider.model_or_named(model_id),
                source: Source::SessionModel,
            });
        }
    }
    if preference.restrict {
        return None;
    }
    for family in FAMILY_PRIORITY {
        for provider in catalog.providers.iter().filter(|p| p.id != preferred_id) {
            if let Some(model) = provider.newest_of_family(family) {
                return Some(Choice { provider: provider.clone(), model: model.clone(), source: Source::Scan });
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn model(id: &str, family: &str, date: &str) -> Value {
        json!({
            "id": id, "providerID": "x", "family": family, "release_date": date, "status": "active",
            "api": {"id": id, "url": "", "npm": "@ai-sdk/openai"},
            "capabilities": {"input": {"text": true}, "output": {"text": true, "image": false, "audio": false}},
            "limit": {"context": 400000, "output": 128000}
        })
    }

    fn catalog() -> Catalog {
        let providers = json!({
            "providers": [
                {"id": "openai", "options": {}, "key": "sk-env", "models": {
                    "gpt-5.4": model("gpt-5.4", "gpt", "2026-03-01"),
                    "gpt-5-nano": model("gpt-5-nano", "gpt-nano", "2025-08-07"),
                    "gpt-5.4-nano": model("gpt-5.4-nano", "gpt-nano", "2026-03-17"),
                    "gpt-4.1-nano": model("gpt-4.1-nano", "gpt-nano", "2025-04-14"),
                }},
                {"id": "google", "options": {"apiKey": "g-key"}, "models": {
                    "gemini-3-pro": model("gemini-3-pro", "gemini-pro", "2026-01-01"),
                    "gemini-3.1-flash-image-preview": {
                        "id": "gemini-3.1-flash-image-preview", "family": "gemini-flash", "release_date": "2026-09-01",
                        "capabilities": {"input": {"text": true}, "output": {"text": true, "image": true}}
                    },
                    "gemini-flash-latest": model("gemini-flash-latest", "gemini-flash", "2026-08-13"),
                }},
                {"id": "mock", "options": {"baseURL": "http://127.0.0.1:9/v1", "apiKey": "k", "headers": {"x-team": "t"}}, "models": {
                    "mock-model": {"id": "mock-model", "api": {"id": "mock-model", "url": "", "npm": "@ai-sdk/openai-compatible"}, "family": ""},
                }},
            ]
        });
        Catalog::from_values(&json!({}), &providers)
    }

    fn prefer<'a>(provider: &'a str, model: &'a str, restrict: bool) -> Preference<'a> {
        Preference { provider_id: provider, model_id: model, restrict }
    }

    #[test]
    fn parses_provider_listing_and_keys() {
        let catalog = catalog();
        assert_eq!(catalog.providers.len(), 3);
        let openai = catalog.provider("openai").unwrap();
        assert_eq!(openai.api_key.expose(), "sk-env", "the resolved key stands in for a missing apiKey option");
        let mock = catalog.provider("mock").unwrap();
        assert_eq!(mock.base_url, "http://127.0.0.1:9/v1");
        assert_eq!(mock.headers, vec![("x-team".to_string(), "t".to_string())]);
        assert_eq!(format!("{:?}", mock.api_key), "Secret(***)");
        let debug = format!("{mock:?}");
        assert!(!debug.contains("\"k\"") && !debug.contains("\"t\""), "no key or header value in {debug}");
        let image = catalog.provider("google").unwrap().models.iter().find(|m| m.id.contains("image")).unwrap();
        assert!(!image.text_io);
    }

    #[test]
    fn provider_listing_filters_to_connected() {
        let value = json!({"all": [{"id": "a", "models": {}}, {"id": "b", "models": {}}], "connected": ["b"]});
        let catalog = Catalog::from_values(&json!({"small_model": "b/m"}), &value);
        assert_eq!(catalog.providers.iter().map(|p| p.id.as_str()).collect::<Vec<_>>(), vec!["b"]);
        assert_eq!(catalog.small_model, ModelRef::new("b", "m"));
    }

    #[test]
    fn model_refs_parse() {
        assert_eq!(
            ModelRef::parse(" openrouter/google/gemini-flash "),
            ModelRef::new("openrouter", "google/gemini-flash")
        );
        assert_eq!(ModelRef::parse("nomodel"), None);
        assert_eq!(ModelRef::parse("/m"), None);
        assert_eq!(ModelRef::parse("p/ "), None);
    }

    #[test]
    fn override_wins_then_config() {
        let mut catalog = catalog();
        catalog.small_model = ModelRef::parse("google/gemini-flash-latest");
        let explicit = ModelRef::parse("mock/custom-small");
        let choice = resolve(&catalog, explicit.as_ref(), prefer("openai", "gpt-5.4", true)).unwrap();
        assert_eq!(
            (choice.provider.id.as_str(), choice.model.id.as_str(), choice.source),
            ("mock", "custom-small", Source::Override)
        );
        assert_eq!(choice.model.api_id, "custom-small", "a model the catalog does not list is called by its id");
        // Config goes to another provider even when restricted: the user chose it.
        let choice = resolve(&catalog, None, prefer("openai", "gpt-5.4", true)).unwrap();
        assert_eq!(
            (choice.provider.id.as_str(), choice.model.id.as_str(), choice.source),
            ("google", "gemini-flash-latest", Source::Config)
        );
    }

    #[test]
    fn unknown_explicit_provider_falls_through() {
        let explicit = ModelRef::parse("nowhere/model");
        let choice = resolve(&catalog(), explicit.as_ref(), prefer("openai", "gpt-5.4", true)).unwrap();
        assert_eq!(choice.source, Source::Family);
    }

    #[test]
    fn family_within_the_session_provider_newest_first() {
        let choice = resolve(&catalog(), None, prefer("openai", "gpt-5.4", true)).unwrap();
        assert_eq!((choice.model.id.as_str(), choice.source), ("gpt-5.4-nano", Source::Family));
        // gemini-flash before gpt-nano; image models never chosen even when newer.
        let choice = resolve(&catalog(), None, prefer("google", "gemini-3-pro", true)).unwrap();
        assert_eq!(choice.model.id, "gemini-flash-latest");
    }

    #[test]
    fn session_model_when_the_provider_has_no_small_family() {
        let choice = resolve(&catalog(), None, prefer("mock", "mock-model", true)).unwrap();
        assert_eq!(
            (choice.provider.id.as_str(), choice.model.id.as_str(), choice.source),
            ("mock", "mock-model", Source::SessionModel)
        );
    }

    #[test]
    fn restriction_keeps_content_on_the_session_provider() {
        // The session's provider is unknown to OpenCode: nothing may be chosen elsewhere.
        assert_eq!(resolve(&catalog(), None, prefer("ghost", "m", true)), None);
        assert_eq!(resolve(&catalog(), None, prefer("", "", true)), None);
        // Unrestricted: the same families across the other providers, family-major.
        let choice = resolve(&catalog(), None, prefer("ghost", "m", false)).unwrap();
        assert_eq!(
            (choice.provider.id.as_str(), choice.model.id.as_str(), choice.source),
            ("google", "gemini-flash-latest", Source::Scan)
        );
    }

    #[test]
    fn nothing_known_is_none() {
        assert_eq!(resolve(&Catalog::default(), None, prefer("openai", "gpt", false)), None);
    }
}
