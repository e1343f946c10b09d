//! The crate's error types. Each implements `std::error::Error`, so a host can `?` them into
//! its own errors.

/// Why a call failed. Messages never carry bodies or headers (they may hold credentials or
/// conversation text).
#[derive(Debug, Clone, PartialEq)]
pub enum HttpError {
    /// The host could not resolve the URL.
    Resolve(String),
    /// Connection refused, reset, DNS…
    Network(String),
    /// No answer within the timeout.
    Timeout,
    /// A non-2xx answer.
    Status(u16),
    /// A 2xx answer whose body is not the JSON we need (HTML from a proxy, truncated JSON).
    Body(u16),
}

impl HttpError {
    /// The server answered that the thing asked for is not there, or that the request itself is
    /// wrong (400, 404, 410, 414, 422, 431): asking again cannot help. Everything else (no answer, a
    /// refused connection, 5xx, 429, 401/403 while credentials are fixed, a proxy's garbage) may
    /// pass once the server or the network recovers.
    pub fn is_definite(&self) -> bool {
        matches!(self, HttpError::Status(400 | 404 | 410 | 414 | 422 | 431))
    }
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HttpError::Resolve(why) => write!(f, "cannot resolve OpenCode URL: {why}"),
            HttpError::Network(kind) => write!(f, "network error: {kind}"),
            HttpError::Timeout => write!(f, "timed out"),
            HttpError::Status(code) => write!(f, "HTTP {code}"),
            HttpError::Body(code) => write!(f, "HTTP {code} with an unusable body"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_server_saying_no_is_definite() {
        for code in [400, 404, 410, 414, 422, 431] {
            assert!(HttpError::Status(code).is_definite(), "{code}");
        }
        for error in [
            HttpError::Timeout,
            HttpError::Network("reset".into()),
            HttpError::Resolve("x".into()),
            HttpError::Status(500),
            HttpError::Status(503),
            HttpError::Status(429),
            HttpError::Status(401),
            HttpError::Body(200),
        ] {
            assert!(!error.is_definite(), "{error}");
        }
    }
}
