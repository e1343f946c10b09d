//! The built-in small model, used when the host brings none: it asks OpenCode which models and
//! keys exist (`GET /config`, `GET /config/providers`; cached briefly), picks a model
//! (`catalog::resolve`), and calls the provider directly (`wire`).
//!
//! Credentials seen in OpenCode's answers stay in memory: they are never logged, never put in an
//! error and never handed to JavaScript.

pub mod catalog;
pub mod wire;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::Value;
use tracing::debug;

use crate::io::http::HttpPools;
use crate::io::opencode::{BoxFuture, HttpError, OpenCodeClient};
use crate::io::services::{SmallModel, SmallModelError, SmallModelQuery, SmallModelReply};
use crate::io::shared::SharedContext;
use catalog::{resolve, Catalog, ModelRef, Preference};
use wire::{build_call, parse_reply, ProviderCall};

/// How long OpenCode's model catalog is reused.
pub const CATALOG_TTL: Duration = Duration::from_secs(30);

/// Per-call timeout when the request sets none.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// Largest provider answer read (a small model's answer is a few KB).
const MAX_REPLY_BYTES: usize = 4 * 1024 * 1024;

/// Most directories whose catalog is kept.
const MAX_CACHED_DIRECTORIES: usize = 32;

/// The built-in small model.
pub struct BuiltinSmallModel {
    client: OpenCodeClient,
    pools: Arc<HttpPools>,
    explicit: Option<ModelRef>,
    ttl: Duration,
    cache: Mutex<HashMap<String, (Instant, Arc<Catalog>)>>,
}

impl BuiltinSmallModel {
    /// A small model that reads OpenCode through `client` and calls providers through the
    /// pools of `context`; `explicit` overrides every other choice (the runtime's `smallModel`
    /// option).
    pub fn new(context: &SharedContext, client: OpenCodeClient, explicit: Option<ModelRef>) -> Self {
        Self::with_ttl(context, client, explicit, CATALOG_TTL)
    }

    /// Same, with another catalog lifetime (tests).
    pub fn with_ttl(
        context: &SharedContext,
        client: OpenCodeClient,
        explicit: Option<ModelRef>,
        ttl: Duration,
    ) -> Self {
        Self { client, pools: context.http().clone(), explicit, ttl, cache: Mutex::new(HashMap::new()) }
    }

    /// OpenCode's catalog for a directory, cached for `ttl`. Only complete reads are cached.
    async fn catalog(&self, directory: &str) -> Result<Arc<Catalog>, SmallModelError> {
        if let Some((at, catalog)) = self.cache.lock().get(directory) {
            if at.elapsed() < self.ttl {
                return Ok(catalog.clone());
            }
        }
        let (config, providers) =
            tokio::join!(self.client.call("GET", "/config", directory, None), self.providers(directory),);
        let unavailable = |error: HttpError| {
            debug!(target: "session_goal", %error, "small model: OpenCode catalog unreadable");
            SmallModelError { status: None, code: "opencode-unavailable".into() }
        };
        let catalog = Arc::new(Catalog::from_values(&config.map_err(unavailable)?, &providers.map_err(unavailable)?));
        let mut cache = self.cache.lock();
        if cache.len() >= MAX_CACHED_DIRECTORIES {
            let ttl = self.ttl;
            cache.retain(|_, (at, _)| at.elapsed() < ttl);
            if cache.len() >= MAX_CACHED_DIRECTORIES {
                cache.clear();
            }
        }
        cache.insert(directory.to_string(), (Instant::now(), catalog.clone()));
        Ok(catalog)
    }

    /// The connected providers. `GET /config/providers` answers in milliseconds with a few KB;
    /// `GET /provider` carries the whole public catalog (6 MB, seconds on 1.18.33), so it is only
    /// the fallback for servers without the first route.
    async fn providers(&self, directory: &str) -> Result<Value, HttpError> {
        match self.client.call("GET", "/config/providers", directory, None).await {
            Err(HttpError::Status(404)) => self.client.call("GET", "/provider", directory, None).await,
            other => other,
        }
    }

    async fn generate_now(&self, request: SmallModelQuery) -> Result<SmallModelReply, SmallModelError> {
        if request.prompt.trim().is_empty() {
            return Err(SmallModelError { status: Some(400), code: "prompt-required".into() });
        }
        let catalog = self.catalog(&request.directory).await?;
        let preference = Preference {
            provider_id: &request.preferred_provider_id,
            model_id: &request.preferred_model_id,
            restrict: request.restrict_to_preferred_provider,
        };
        let Some(choice) = resolve(&catalog, self.explicit.as_ref(), preference) else {
            return Err(SmallModelError { status: Some(404), code: "no-small-model".into() });
        };
        debug!(
            target: "session_goal",
            provider = %choice.provider.id,
            model = %choice.model.id,
            source = choice.source.as_str(),
            "small model chosen"
        );
        let call = build_call(&choice, &request)?;
        let timeout =
            if request.timeout_ms > 0 { Duration::from_millis(request.timeout_ms) } else { DEFAULT_CALL_TIMEOUT };
        let (status, body) = send(&self.pools, &call, timeout).await?;
        let text = parse_reply(call.format, status, &body)?;
        let tokens = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| crate::io::services::usage_total(v.get("usage")));
        Ok(SmallModelReply { text, provider_id: choice.provider.id.clone(), model_id: choice.model.id.clone(), tokens })
    }
}

impl SmallModel for BuiltinSmallModel {
    fn generate(&self, request: SmallModelQuery) -> BoxFuture<'_, Result<SmallModelReply, SmallModelError>> {
        Box::pin(self.generate_now(request))
    }
}

fn is_loopback(url: &str) -> bool {
    let rest = url.split_once("://").map(|(_, rest)| rest).unwrap_or(url);
    let host = rest.split(['/', '?']).next().unwrap_or("");
    let host = host.rsplit_once('@').map(|(_, h)| h).unwrap_or(host);
    let host = if host.starts_with('[') {
        host.split(']').next().unwrap_or("").trim_start_matches('[')
    } else {
        host.split(':').next().unwrap_or("")
    };
    host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Sends a provider call; the answer's status and body (bounded). Errors never carry the URL's
/// query, headers or body.
async fn send(pools: &HttpPools, call: &ProviderCall, timeout: Duration) -> Result<(u16, Vec<u8>), SmallModelError> {
    let mut request = pools.provider(is_loopback(&call.url)).post(&call.url).timeout(timeout).json(&call.body);
    for (name, value) in &call.headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let failed = |error: reqwest::Error| SmallModelError {
        status: None,
        code: if error.is_timeout() {
            "timeout"
        } else if error.is_builder() {
            "provider-url-invalid"
        } else {
            "provider-unreachable"
        }
        .into(),
    };
    let work = async {
        let mut response = request.send().await.map_err(failed)?;
        let status = response.status().as_u16();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(failed)? {
            if body.len() + chunk.len() > MAX_REPLY_BYTES {
                return Err(SmallModelError { status: None, code: "provider-bad-response".into() });
            }
            body.extend_from_slice(&chunk);
        }
        Ok((status, body))
    };
    match tokio::time::timeout(timeout + Duration::from_millis(250), work).await {
        Ok(result) => result,
        Err(_) => Err(SmallModelError { status: None, code: "timeout".into() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        for url in ["http://127.0.0.1:9/v1", "http://localhost/v1", "http://[::1]:80/v1", "http://user:pw@127.0.0.2/x"]
        {
            assert!(is_loopback(url), "{url}");
        }
        for url in ["https://api.openai.com/v1", "http://127.0.0.1.example.com/v1", "http://10.0.0.1/v1"] {
            assert!(!is_loopback(url), "{url}");
        }
    }
}
