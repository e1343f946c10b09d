//! The crate's error types. Each implements `std::error::Error` (a wrapping error reports
//! what it wraps as its `source()`), so a host can `?` them into its own errors; and
//! [`Cancelled`], the named "do not write" answer of a write's decision closure.

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

impl std::error::Error for HttpError {}

/// A write's decision closure declining: the fresh read showed the write no longer applies, so
/// nothing is written (not a failure).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancelled;

impl std::fmt::Display for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the write no longer applies; nothing was written")
    }
}

impl std::error::Error for Cancelled {}

crate::wire::wire_enum! {
    /// Which step had already taken effect when an operation failed.
    pub enum PartialAction {
        #[doc = "A session was created; the goal or the dispatch failed afterwards."] SessionCreated = "session-created",
        #[doc = "A fork was created; its goal step (or, without a goal, the dispatch) failed."] ForkCreated = "fork-created",
        #[doc = "The goal is installed; the dispatch failed."] GoalConfigured = "goal-configured",
    }
}

crate::wire::wire_enum! {
    /// What kind of failure a [`GoalError`] is. The binding names it (`ErrorKind::as_str`) and hosts
    /// branch on it; no HTTP status is implied (OpenCode's own answer, when there was one, is
    /// [`GoalError::opencode_status`]).
    pub enum ErrorKind {
        #[doc = "The request itself is wrong (a bad id, a budget out of bounds, a missing field)."] InvalidInput = "invalidInput",
        #[doc = "The session, goal or objective does not exist."] NotFound = "notFound",
        #[doc = "The goal's state does not allow it (not active, complete, a different goal now)."] Conflict = "conflict",
        #[doc = "The input is over a size limit."] TooLarge = "tooLarge",
        #[doc = "OpenCode failed or refused."] OpenCode = "openCode",
        #[doc = "OpenCode did not answer in time."] Timeout = "timeout",
        #[doc = "Something on this machine failed (the file system, a task)."] Local = "local",
    }
}

/// A failed goal operation. Messages never carry prompt text, model output or credentials.
#[derive(Debug, Clone, PartialEq)]
pub struct GoalError {
    /// What kind of failure it is.
    pub kind: ErrorKind,
    /// What went wrong.
    pub message: String,
    /// The request field at fault, when one is (its API name, e.g. `goalTokenBudget`).
    pub field: Option<&'static str>,
    /// What had already taken effect.
    pub partial: Option<PartialAction>,
    /// The session concerned (the new one for create/fork), when known.
    pub session_id: String,
    /// Its directory, when known.
    pub directory: String,
    /// The HTTP status OpenCode answered with, when it answered.
    pub opencode_status: Option<u16>,
    /// The OpenCode failure behind it, when there was one (boxed: errors stay small to move).
    source: Option<Box<HttpError>>,
}

impl GoalError {
    /// A failure with no side effect.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            field: None,
            partial: None,
            session_id: String::new(),
            directory: String::new(),
            opencode_status: None,
            source: None,
        }
    }

    /// Bad input in one named request field.
    pub fn invalid(field: &'static str, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidInput, message).on_field(field)
    }

    /// Names the request field at fault.
    pub fn on_field(mut self, field: &'static str) -> Self {
        self.field = Some(field);
        self
    }

    /// OpenCode refused with this HTTP status.
    pub fn refused(status: u16, message: impl Into<String>) -> Self {
        Self { opencode_status: Some(status), ..Self::new(ErrorKind::OpenCode, message) }
    }

    /// Maps an OpenCode call failure; `what` names the call (e.g. "session lookup").
    pub fn from_http(what: &str, error: &HttpError) -> Self {
        let mapped = match error {
            HttpError::Status(404) => Self {
                opencode_status: Some(404),
                ..Self::new(ErrorKind::NotFound, format!("{what}: session not found"))
            },
            HttpError::Status(code) if (400..500).contains(code) => {
                Self::refused(*code, format!("{what}: OpenCode refused the request (HTTP {code})"))
            }
            HttpError::Status(code) => Self::refused(*code, format!("{what}: {error}")),
            HttpError::Timeout => Self::new(ErrorKind::Timeout, format!("{what}: OpenCode timed out")),
            other => Self::new(ErrorKind::OpenCode, format!("{what}: {other}")),
        };
        Self { source: Some(Box::new(error.clone())), ..mapped }
    }

    /// Records what had already happened.
    pub fn after(mut self, partial: Option<PartialAction>, session_id: &str, directory: &str) -> Self {
        if partial.is_some() {
            self.partial = partial;
        }
        if !session_id.is_empty() {
            self.session_id = session_id.to_string();
        }
        if !directory.is_empty() {
            self.directory = directory.to_string();
        }
        self
    }
}

crate::wire::wire_enum! {
    /// What went wrong in an operation that otherwise succeeded.
    pub enum WarningCode {
        #[doc = "The objective file could not be written; the objective is stored in the goal itself."] ObjectiveInline = "objectiveInline",
        #[doc = "The goal is paused or cleared, but the running turn could not be aborted."] AbortFailed = "abortFailed",
        #[doc = "OpenCode's command list could not be read; a slash prompt was sent as text."] CommandListUnavailable = "commandListUnavailable",
    }
}

/// A partial success: the operation took effect, with this caveat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// What kind of caveat.
    pub code: WarningCode,
    /// One sentence for a person (no prompt text, model output or credentials).
    pub message: String,
    /// The request field concerned, when one is.
    pub field: Option<&'static str>,
}

impl Warning {
    /// A caveat that concerns no one field.
    pub fn new(code: WarningCode, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), field: None }
    }
}

impl std::fmt::Display for GoalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for GoalError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|error| error as &(dyn std::error::Error + 'static))
    }
}

/// Why an objective could not be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObjectiveError {
    /// The session id does not match `^[A-Za-z0-9_-]{4,128}$`.
    InvalidSessionId,
    /// Nothing left after trimming.
    Empty,
    /// The file system refused (message has no content).
    Io(String),
}

impl From<ObjectiveError> for GoalError {
    fn from(error: ObjectiveError) -> Self {
        let message = error.to_string();
        match error {
            ObjectiveError::InvalidSessionId => GoalError::invalid("sessionId", message),
            ObjectiveError::Empty => GoalError::invalid("content", message),
            ObjectiveError::Io(_) => GoalError::new(ErrorKind::Local, message),
        }
    }
}

impl std::fmt::Display for ObjectiveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ObjectiveError::InvalidSessionId => write!(f, "invalid session id"),
            ObjectiveError::Empty => write!(f, "objective content is required"),
            ObjectiveError::Io(kind) => write!(f, "failed to write objective: {kind}"),
        }
    }
}

impl std::error::Error for ObjectiveError {}

/// A small-model failure. `status == Some(404)` means "no small model": silent.
#[derive(Debug, Clone, Default)]
pub struct SmallModelError {
    /// HTTP-like status (`statusCode` or `status`).
    pub status: Option<u16>,
    /// Machine code (`output-exhausted`, `no-provider-login`, …).
    pub code: String,
}

impl SmallModelError {
    /// Unavailable without a status (callback threw, timed out, returned garbage).
    pub fn unavailable() -> Self {
        Self::default()
    }

    /// Whether the failure should be logged (404 is the expected "no small model").
    pub fn is_silent(&self) -> bool {
        self.status == Some(404)
    }
}

impl std::fmt::Display for SmallModelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.status, self.code.as_str()) {
            (Some(404), _) => f.write_str("no small model for this provider"),
            (Some(status), "") => write!(f, "small model failed (status {status})"),
            (Some(status), code) => write!(f, "small model failed (status {status}, {code})"),
            (None, "") => f.write_str("small model unavailable"),
            (None, code) => write!(f, "small model failed ({code})"),
        }
    }
}

impl std::error::Error for SmallModelError {}

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

    #[test]
    fn every_error_composes_with_question_mark_and_reports_its_cause() {
        fn host_call(which: u8) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
            match which {
                0 => Err(HttpError::Timeout)?,
                1 => Err(GoalError::from_http("session lookup", &HttpError::Status(503)))?,
                2 => Err(ObjectiveError::Empty)?,
                3 => Err(SmallModelError { status: Some(429), code: "rate-limited".into() })?,
                _ => Err(Cancelled)?,
            }
        }
        let messages: Vec<String> = (0..5).map(|which| host_call(which).unwrap_err().to_string()).collect();
        assert_eq!(
            messages,
            [
                "timed out",
                "session lookup: HTTP 503",
                "objective content is required",
                "small model failed (status 429, rate-limited)",
                "the write no longer applies; nothing was written",
            ]
        );
        let wrapped = GoalError::from_http("session lookup", &HttpError::Timeout);
        let source = std::error::Error::source(&wrapped).expect("the OpenCode failure");
        assert_eq!(source.to_string(), "timed out");
        assert!(std::error::Error::source(&GoalError::new(ErrorKind::InvalidInput, "bad")).is_none());
    }

    #[test]
    fn the_lists_hold_every_kind_and_code_once_in_order() {
        // Exhaustive matches: a new kind or warning code does not compile here until it has its
        // place in `ALL` (which the binding hands to the JavaScript parity test).
        let kind_position = |kind: ErrorKind| match kind {
            ErrorKind::InvalidInput => 0,
            ErrorKind::NotFound => 1,
            ErrorKind::Conflict => 2,
            ErrorKind::TooLarge => 3,
            ErrorKind::OpenCode => 4,
            ErrorKind::Timeout => 5,
            ErrorKind::Local => 6,
        };
        let positions: Vec<usize> = ErrorKind::ALL.iter().map(|kind| kind_position(*kind)).collect();
        assert_eq!(positions, (0..ErrorKind::ALL.len()).collect::<Vec<_>>());
        let warning_position = |code: WarningCode| match code {
            WarningCode::ObjectiveInline => 0,
            WarningCode::AbortFailed => 1,
            WarningCode::CommandListUnavailable => 2,
        };
        let positions: Vec<usize> = WarningCode::ALL.iter().map(|code| warning_position(*code)).collect();
        assert_eq!(positions, (0..WarningCode::ALL.len()).collect::<Vec<_>>());
    }
}
