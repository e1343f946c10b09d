//! HTTP client construction. TLS uses rustls with the `ring` provider (smaller than aws-lc-rs
//! and it needs no cmake, which keeps cross builds simple); the provider is installed once per
//! process before the first client is built, unless the host installed one already.

use std::sync::Once;

/// A `reqwest` client builder with a rustls crypto provider in place.
pub fn client_builder() -> reqwest::ClientBuilder {
    static PROVIDER: Once = Once::new();
    PROVIDER.call_once(|| {
        // Err means the host (e.g. a Tauri app) installed its own provider first: use that one.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    reqwest::Client::builder()
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
