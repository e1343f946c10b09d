//! What every options struct shares: the connection to OpenCode and the data directory. Each
//! options struct has a `resolve()` beside it that turns it into the core's settings with this
//! module and `goal_core::tunables` (raw numbers to durations and counts); the defaults live in
//! `goal-core`, next to the settings they fill.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use napi::bindgen_prelude::*;

use goal_core::resolve_data_dir;
use goal_core::{Endpoint, OpenCodeClient, StaticEndpoint};

use crate::callbacks::{HeadersCallback, HostEndpoint, UrlCallback};
use crate::{OpenCodeTarget, RuntimeSettingsOptions};

pub use goal_core::{count, millis};

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
    /// `fetchTimeoutMs` is set. Fails only when no OpenCode location is given.
    pub fn resolve(self, default_timeout: Duration) -> Result<OpenCodeClient> {
        let endpoint = endpoint(self.open_code, self.build_url, self.headers)?;
        Ok(OpenCodeClient::new(crate::shared_context(), endpoint, millis(self.fetch_timeout_ms, default_timeout)))
    }
}

fn endpoint(
    open_code: Option<OpenCodeTarget>,
    build_url: Option<UrlCallback>,
    headers: Option<HeadersCallback>,
) -> Result<Arc<dyn Endpoint>> {
    if let Some(build_url) = build_url {
        return Ok(Arc::new(HostEndpoint::new(build_url, headers)));
    }
    match open_code {
        Some(target) if !target.base_url.trim().is_empty() => {
            let headers = target.headers.unwrap_or_default().into_iter().collect();
            Ok(Arc::new(StaticEndpoint::new(target.base_url.trim(), headers)))
        }
        _ => Err(Error::new(
            Status::InvalidArg,
            "session-goal-runtime: pass openCode: { baseUrl } or buildOpenCodeUrl(path, prefix)",
        )),
    }
}

/// The data directory: an explicit one, else `settings.dataDir`, else the environment's.
pub fn data_dir(explicit: Option<String>, settings: Option<RuntimeSettingsOptions>) -> PathBuf {
    let chosen = explicit.or_else(|| settings.and_then(|s| s.data_dir));
    resolve_data_dir(chosen.as_deref())
}
