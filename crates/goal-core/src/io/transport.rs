//! The one place every OpenCode request passes through: a [`WireRequest`] goes out, a
//! [`WireAnswer`] (or an [`HttpError`]) comes back. [`HttpTransport`] sends it over HTTP with
//! reqwest; the simulator (`crates/goal-sim`) puts a simulated OpenCode here and keeps the rest
//! of the loop as it is. The client (`io/opencode.rs`) builds the request (its URL, query and
//! body) and bounds the whole exchange by its timeout, whatever the transport does.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::error::HttpError;

/// A boxed, sendable future (no async-trait dependency).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One request, ready to send.
#[derive(Debug, Clone)]
pub struct WireRequest {
    /// `GET`, `POST`, `PATCH` or `DELETE`.
    pub method: String,
    /// The absolute URL, query string included.
    pub url: String,
    /// Headers (an authorization among them: never logged).
    pub headers: Vec<(String, String)>,
    /// The JSON body, serialised.
    pub body: Option<Vec<u8>>,
    /// How long the whole exchange may take.
    pub timeout: Duration,
}

/// One answer, read whole.
#[derive(Debug, Clone, Default)]
pub struct WireAnswer {
    /// The HTTP status.
    pub status: u16,
    /// The body's bytes.
    pub body: Vec<u8>,
    /// `Content-Type`, lower-cased (empty when absent).
    pub content_type: String,
}

/// Sends requests to OpenCode.
pub trait Transport: Send + Sync {
    /// Sends one request and reads its whole answer.
    fn send(&self, request: WireRequest) -> BoxFuture<'_, Result<WireAnswer, HttpError>>;
}

/// Largest body read from OpenCode (a hostile or broken server cannot exhaust memory).
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// The transport of every real host: HTTP through a context's connection pool.
#[derive(Clone)]
pub struct HttpTransport {
    http: reqwest::Client,
}

impl HttpTransport {
    /// A transport on `http` (a context's OpenCode pool, `io/http.rs`).
    pub fn new(http: reqwest::Client) -> Self {
        Self { http }
    }

    async fn exchange(&self, request: WireRequest) -> Result<WireAnswer, HttpError> {
        let method = reqwest::Method::from_bytes(request.method.as_bytes()).map_err(|_| HttpError::Status(405))?;
        let mut builder = self.http.request(method, &request.url).timeout(request.timeout);
        for (name, value) in &request.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        if let Some(body) = request.body {
            // A JSON content type unless the endpoint's headers name one.
            if !request.headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("content-type")) {
                builder = builder.header(reqwest::header::CONTENT_TYPE, "application/json");
            }
            builder = builder.body(body);
        }
        let mut response = builder.send().await.map_err(classify)?;
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        // Sized once from Content-Length (bounded): growing by doubling would hold up to twice a
        // large list while it is read.
        let expected = response.content_length().unwrap_or(0).min(MAX_BODY_BYTES as u64) as usize;
        let mut bytes = Vec::with_capacity(expected);
        while let Some(chunk) = response.chunk().await.map_err(classify)? {
            if bytes.len() + chunk.len() > MAX_BODY_BYTES {
                return Err(HttpError::Body(status));
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(WireAnswer { status, body: bytes, content_type })
    }
}

impl Transport for HttpTransport {
    fn send(&self, request: WireRequest) -> BoxFuture<'_, Result<WireAnswer, HttpError>> {
        Box::pin(self.exchange(request))
    }
}

fn classify(error: reqwest::Error) -> HttpError {
    if error.is_timeout() {
        HttpError::Timeout
    } else if error.is_builder() {
        // The URL itself was refused before any connection (the addon's URLs take ASCII host
        // names only: see docs/api.md).
        HttpError::Resolve(
            "not a usable URL (a host name must be ASCII; write an international one in punycode)".into(),
        )
    } else if error.is_connect() {
        HttpError::Network("connect".into())
    } else if error.is_body() || error.is_decode() {
        HttpError::Network("body".into())
    } else {
        HttpError::Network("request".into())
    }
}
