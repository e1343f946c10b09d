//! What every options struct shares: the connection to OpenCode (`openCode`), the small model
//! (`smallModel`, `small_model.rs`) and the data directory. Each options struct has a
//! `resolve()` beside it that turns it into the core's settings with this module; the runtimes'
//! `tunables` (`tunables.rs`) become the core's config under the rules of
//! `goal_core::tunables` (raw numbers to durations and counts), and the defaults live in
//! `goal-core`, next to the settings they fill.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use napi_derive::napi;

use goal_core::resolve_data_dir;
use goal_core::GoalError;
use goal_core::{Endpoint, OpenCodeClient, StaticEndpoint};

use crate::callbacks::{HeadersCallback, HostEndpoint, UrlCallback};
use crate::env_context::EnvContext;

pub use goal_core::millis;

pub mod goal_runtime;
pub mod tunables;

/// How to reach OpenCode (`openCode`), one object for every runtime and the goal control: a
/// fixed `baseUrl` and `headers`, or `buildUrl` and `getHeaders` asked per request (a host that
/// restarts OpenCode on another port is followed); `buildUrl` wins when both are given.
/// OpenChamber's flat names (`buildOpenCodeUrl`, `getOpenCodeAuthHeaders`, `fetchTimeoutMs`)
/// are moved in here by the package entry (`lib/drop-in.js`).
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub struct OpenCodeConnection {
    /// Base URL, e.g. `http://127.0.0.1:4096`.
    pub base_url: Option<String>,
    /// Headers sent with every request (e.g. `authorization`). Never logged.
    pub headers: Option<HashMap<String, String>>,
    /// Builds the URL of an OpenCode API path (called per request).
    #[napi(ts_type = "(path: string, prefix: string) => string")]
    pub build_url: Option<UrlCallback>,
    /// Returns the headers for OpenCode (may be async; called per request).
    #[napi(ts_type = "() => Record<string, string> | Promise<Record<string, string>>")]
    pub get_headers: Option<HeadersCallback>,
    /// Timeout of every OpenCode call, ms (default 10000; the assist runtime's 5000).
    pub fetch_timeout_ms: Option<f64>,
}

/// Where OpenChamber-style settings and objective files live.
#[napi(object)]
pub struct RuntimeSettingsOptions {
    /// Data directory (default: `OPENCHAMBER_DATA_DIR`, else `~/.config/openchamber`). The
    /// runtime reads `settings.json` and `goals/<sessionId>.md` from it at fire time.
    pub data_dir: Option<String>,
}

impl OpenCodeConnection {
    /// The OpenCode client this connection describes; `default_timeout` when no valid
    /// `fetchTimeoutMs` is set. Fails only when no OpenCode location is given (`invalidInput`).
    /// The client belongs to `context`'s JavaScript environment: it shares that environment's
    /// pools and write slots, and sends nothing once the environment has ended.
    pub(crate) fn client(
        connection: Option<Self>,
        context: &EnvContext,
        default_timeout: Duration,
    ) -> std::result::Result<OpenCodeClient, GoalError> {
        let connection = connection.unwrap_or_default();
        let timeout = millis(connection.fetch_timeout_ms, default_timeout);
        let endpoint = Self::guarded_endpoint(Some(connection), context)?;
        Ok(OpenCodeClient::new(context.shared(), endpoint, timeout))
    }

    /// Where this connection reaches OpenCode (its URLs and headers), for `context`'s JavaScript
    /// environment: it answers nothing once the environment has ended, and its key is the intake
    /// group of every runtime built from the same connection (an event follower's use).
    pub(crate) fn guarded_endpoint(
        connection: Option<Self>,
        context: &EnvContext,
    ) -> std::result::Result<Arc<dyn Endpoint>, GoalError> {
        Ok(context.guard(connection.unwrap_or_default().endpoint()?))
    }

    fn endpoint(self) -> std::result::Result<Arc<dyn Endpoint>, GoalError> {
        if let Some(build_url) = self.build_url {
            return Ok(Arc::new(HostEndpoint::new(build_url, self.get_headers)));
        }
        match self.base_url.as_deref().map(str::trim) {
            Some(base_url) if !base_url.is_empty() => {
                let headers = self.headers.unwrap_or_default().into_iter().collect();
                Ok(Arc::new(StaticEndpoint::new(base_url, headers)))
            }
            _ => Err(GoalError::invalid(
                "openCode",
                "session-goal-runtime: pass openCode: { baseUrl } or openCode: { buildUrl(path, prefix) } (OpenChamber: buildOpenCodeUrl)",
            )),
        }
    }
}

impl RuntimeSettingsOptions {
    /// The data directory: `explicit`, else `settings.dataDir`, else the environment's.
    pub(crate) fn data_dir(settings: Option<Self>, explicit: Option<String>) -> PathBuf {
        let chosen = explicit.or_else(|| settings.and_then(|s| s.data_dir));
        resolve_data_dir(chosen.as_deref())
    }
}
