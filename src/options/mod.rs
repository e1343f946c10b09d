//! What every options struct shares: the connection to OpenCode and the data directory. Each
//! options struct has a `resolve()` beside it that turns it into the core's settings with this
//! module; the runtimes' `tunables` (`tunables.rs`) become the core's config under the rules of
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

/// Where OpenCode listens (native-first form).
#[napi(object)]
pub struct OpenCodeTarget {
    /// Base URL, e.g. `http://127.0.0.1:4096`.
    pub base_url: String,
    /// Headers sent with every request (e.g. `authorization`). Never logged.
    pub headers: Option<HashMap<String, String>>,
}

/// Where OpenChamber-style settings and objective files live.
#[napi(object)]
pub struct RuntimeSettingsOptions {
    /// Data directory (default: `OPENCHAMBER_DATA_DIR`, else `~/.config/openchamber`). The
    /// runtime reads `settings.json` and `goals/<sessionId>.md` from it at fire time.
    pub data_dir: Option<String>,
}

/// The connection fields every options struct carries (`openCode`, or OpenChamber's
/// `buildOpenCodeUrl` and `getOpenCodeAuthHeaders`; `fetchTimeoutMs`).
pub struct ConnectionOptions {
    /// Native-first: a fixed base URL and headers.
    pub open_code: Option<OpenCodeTarget>,
    /// OpenChamber: the URL of an API path, asked per request.
    pub build_url: Option<UrlCallback>,
    /// OpenChamber: the headers, asked per request.
    pub headers: Option<HeadersCallback>,
    /// Timeout of one call, when set.
    pub fetch_timeout_ms: Option<f64>,
}

/// The [`ConnectionOptions`] of an options struct, moved out of it (every options struct names
/// the connection fields alike: `openCode`, `buildOpenCodeUrl`, `getOpenCodeAuthHeaders`,
/// `fetchTimeoutMs`).
macro_rules! connection_of {
    ($options:expr) => {
        $crate::options::ConnectionOptions {
            open_code: $options.open_code,
            build_url: $options.build_open_code_url,
            headers: $options.get_open_code_auth_headers,
            fetch_timeout_ms: $options.fetch_timeout_ms,
        }
    };
}
pub(crate) use connection_of;

impl ConnectionOptions {
    /// The OpenCode client these options describe; `default_timeout` when no valid
    /// `fetchTimeoutMs` is set. Fails only when no OpenCode location is given (`invalidInput`).
    /// The client belongs to `context`'s JavaScript environment: it shares that environment's
    /// pools and write slots, and sends nothing once the environment has ended.
    pub fn resolve(
        self,
        context: &EnvContext,
        default_timeout: Duration,
    ) -> std::result::Result<OpenCodeClient, GoalError> {
        let endpoint = context.guard(endpoint(self.open_code, self.build_url, self.headers)?);
        Ok(OpenCodeClient::new(context.shared(), endpoint, millis(self.fetch_timeout_ms, default_timeout)))
    }
}

fn endpoint(
    open_code: Option<OpenCodeTarget>,
    build_url: Option<UrlCallback>,
    headers: Option<HeadersCallback>,
) -> std::result::Result<Arc<dyn Endpoint>, GoalError> {
    if let Some(build_url) = build_url {
        return Ok(Arc::new(HostEndpoint::new(build_url, headers)));
    }
    match open_code {
        Some(target) if !target.base_url.trim().is_empty() => {
            let headers = target.headers.unwrap_or_default().into_iter().collect();
            Ok(Arc::new(StaticEndpoint::new(target.base_url.trim(), headers)))
        }
        _ => Err(GoalError::invalid(
            "openCode",
            "session-goal-runtime: pass openCode: { baseUrl } or buildOpenCodeUrl(path, prefix)",
        )),
    }
}

/// The data directory: an explicit one, else `settings.dataDir`, else the environment's.
pub fn data_dir(explicit: Option<String>, settings: Option<RuntimeSettingsOptions>) -> PathBuf {
    let chosen = explicit.or_else(|| settings.and_then(|s| s.data_dir));
    resolve_data_dir(chosen.as_deref())
}
