//! HTTP client construction. TLS uses rustls with the `ring` provider (smaller than aws-lc-rs
//! and it needs no cmake, which keeps cross builds simple), without its private-key loader: no
//! request presents a client certificate, and the signing code the loader keeps alive is 43 KB
//! of the release addon. The provider is installed once per process before the first client is
//! built, unless the host installed one already (that one stays a process-wide `Once`: rustls's
//! default provider is itself process-wide). The pools built from it belong to a context
//! ([`HttpPools`], held by [`crate::io::shared::SharedContext`]).

use std::sync::{Once, OnceLock};
use std::time::Duration;

/// A `reqwest` client builder with a rustls crypto provider in place.
pub fn client_builder() -> reqwest::ClientBuilder {
    static PROVIDER: Once = Once::new();
    PROVIDER.call_once(|| {
        // Err means the host (e.g. a Tauri app) installed its own provider first: use that one.
        let _ = client_provider().install_default();
    });
    reqwest::Client::builder()
}

/// ring's provider for a client that presents no certificate of its own: it loads no private
/// key, so the code that parses and signs with one (RSA, ECDSA, Ed25519) is not in the binary.
fn client_provider() -> rustls::crypto::CryptoProvider {
    rustls::crypto::CryptoProvider { key_provider: &NoClientKey, ..rustls::crypto::ring::default_provider() }
}

/// The key provider of a client without a certificate: every key is refused.
#[derive(Debug)]
struct NoClientKey;

impl rustls::crypto::KeyProvider for NoClientKey {
    fn load_private_key(
        &self,
        _key: rustls::pki_types::PrivateKeyDer<'static>,
    ) -> Result<std::sync::Arc<dyn rustls::sign::SigningKey>, rustls::Error> {
        Err(rustls::Error::General("goal-core presents no client certificate".into()))
    }
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
    fn the_provider_is_rings_for_connections_and_loads_no_key() {
        let ours = super::client_provider();
        let ring = rustls::crypto::ring::default_provider();
        let suites = |p: &rustls::crypto::CryptoProvider| p.cipher_suites.iter().map(|s| s.suite()).collect::<Vec<_>>();
        let groups = |p: &rustls::crypto::CryptoProvider| p.kx_groups.iter().map(|g| g.name()).collect::<Vec<_>>();
        assert_eq!(suites(&ours), suites(&ring), "every cipher suite ring offers");
        assert_eq!(groups(&ours), groups(&ring), "every key exchange ring offers");
        assert_eq!(
            ours.signature_verification_algorithms.mapping.len(),
            ring.signature_verification_algorithms.mapping.len()
        );
        // An Ed25519 key in PKCS#8 (v1) with a made-up seed of 32 × 0x01: ring's loader takes it.
        let mut der =
            vec![0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20];
        der.extend([0x01; 32]);
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(der.into());
        assert!(ring.key_provider.load_private_key(key.clone_key()).is_ok(), "a key ring's loader takes");
        assert!(ours.key_provider.load_private_key(key).is_err(), "no client key is loaded");
    }

    #[test]
    fn builds_a_client_with_tls() {
        let client = super::client_builder().no_proxy().build();
        assert!(client.is_ok());
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
    }
}
