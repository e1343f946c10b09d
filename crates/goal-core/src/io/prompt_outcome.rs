//! What `prompt_async` answered, classified: admitted, proven not admitted, or unknown. Pure;
//! the client reduces the HTTP answer to a [`PromptAnswer`] and the dispatch acts on the outcome.

use crate::error::HttpError;

/// The classified result of `prompt_async`.
#[derive(Debug, Clone, PartialEq)]
pub enum DispatchOutcome {
    /// 2xx with an empty or JSON body: admitted.
    Sent,
    /// 4xx other than 408/429, or a request that was never sent: proven not admitted.
    NotAdmitted(u16),
    /// 5xx, 408, 429, network errors, timeouts, non-JSON 2xx bodies: unknown.
    Ambiguous(String),
}

/// What `prompt_async` answered, reduced to what the classification reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PromptAnswer {
    /// HTTP status.
    pub status: u16,
    /// The body is empty or white space.
    pub blank_body: bool,
    /// The body parses as JSON.
    pub json_body: bool,
    /// The content type says HTML (a proxy's page, not OpenCode).
    pub html: bool,
}

/// Classifies a `prompt_async` answer (or the transport error that replaced it). Pure.
pub fn classify(answer: Result<PromptAnswer, &HttpError>) -> DispatchOutcome {
    match answer {
        Ok(a) if (200..300).contains(&a.status) => {
            if (a.blank_body || a.json_body) && !a.html {
                DispatchOutcome::Sent
            } else {
                DispatchOutcome::Ambiguous(format!("HTTP {} with a non-JSON body", a.status))
            }
        }
        Ok(a) if a.status == 408 || a.status == 429 || a.status >= 500 => {
            DispatchOutcome::Ambiguous(format!("HTTP {}", a.status))
        }
        Ok(a) => DispatchOutcome::NotAdmitted(a.status),
        // A URL that cannot be resolved was never sent.
        Err(HttpError::Resolve(_)) => DispatchOutcome::NotAdmitted(0),
        Err(error) => DispatchOutcome::Ambiguous(error.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, blank_body: bool, json_body: bool, html: bool) -> PromptAnswer {
        PromptAnswer { status, blank_body, json_body, html }
    }

    #[test]
    fn classification_table() {
        assert_eq!(classify(Ok(answer(204, true, false, false))), DispatchOutcome::Sent);
        assert_eq!(classify(Ok(answer(200, false, true, false))), DispatchOutcome::Sent);
        assert!(
            matches!(classify(Ok(answer(200, false, false, true))), DispatchOutcome::Ambiguous(_)),
            "a proxy's HTML page"
        );
        assert!(matches!(classify(Ok(answer(200, true, false, true))), DispatchOutcome::Ambiguous(_)));
        assert!(
            matches!(classify(Ok(answer(200, false, false, false))), DispatchOutcome::Ambiguous(_)),
            "non-JSON 2xx"
        );
        assert_eq!(classify(Ok(answer(400, false, true, false))), DispatchOutcome::NotAdmitted(400));
        assert_eq!(classify(Ok(answer(404, false, true, false))), DispatchOutcome::NotAdmitted(404));
        for status in [408, 429, 500, 502, 503] {
            assert!(
                matches!(classify(Ok(answer(status, false, true, false))), DispatchOutcome::Ambiguous(_)),
                "{status}"
            );
        }
        assert!(matches!(classify(Err(&HttpError::Timeout)), DispatchOutcome::Ambiguous(_)));
        assert_eq!(classify(Err(&HttpError::Resolve("no url".into()))), DispatchOutcome::NotAdmitted(0));
    }
}
