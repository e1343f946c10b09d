//! HTTP client construction. TLS uses rustls with the `ring` provider (smaller than aws-lc-rs
//! and it needs no cmake, which keeps cross builds simple); the provider is installed once per
//! process before the first client is built, unless the host installed one already (that one
//! stays a process-wide `Once`: rustls's default provider is itself process-wide). The pools
//! built from it belong to a context ([`HttpPools`], held by [`crate::io::shared::SharedContext`]).

use std::sync::{Once, OnceLock};
use std::time::Duration;

/// A `reqwest` client builder with a rustls crypto provider in place.
pub fn client_builder() -> reqwest::ClientBuilder {
    static PROVIDER: Once = Once::new();
    PROVIDER.call_once(|| {
        // Err means the host (e.g. a Tauri app) installed its own provider first: use that one.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    reqwest::Client::builder()
}

/// The connection pools of one context, each built on first use: OpenCode (never through a
/// proxy: it runs on this machine or a host the user points at directly), public small-model
/// providers (through the environment's proxy), and loopback model servers (never proxied).
#[derive(Default)]
pub struct HttpPools {
    opencode: OnceLock<reqwest::Client>,
    provider_public: OnceLock<reqwest::Client>,
    provider_local: OnceLock<reqwest::Client>,
}

/// How long an idle pooled connection is kept.
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(30);

impl HttpPools {
    /// The pool for OpenCode calls.
    pub fn opencode(&self) -> reqwest::Client {
        pooled(&self.opencode, true)
    }

    /// The pool for small-model provider calls; `loopback` for a model server on this machine.
    pub fn provider(&self, loopback: bool) -> reqwest::Client {
        if loopback {
            pooled(&self.provider_local, true)
        } else {
            pooled(&self.provider_public, false)
        }
    }
}

fn pooled(cell: &OnceLock<reqwest::Client>, no_proxy: bool) -> reqwest::Client {
    cell.get_or_init(|| {
        let builder = client_builder().pool_idle_timeout(POOL_IDLE_TIMEOUT);
        let builder = if no_proxy { builder.no_proxy() } else { builder };
        builder.build().unwrap_or_else(|_| reqwest::Client::new())
    })
    .clone()
}

#[cfg(test)]
mod tests {
    #[test]
    fn builds_a_client_with_tls() {
        let client = super::client_builder().no_proxy().build();
        assert!(client.is_ok());
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
    }
}
