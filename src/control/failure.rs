//! How a failed or partly failed operation reaches the package entry: a `GoalFailure` value
//! (thrown there as a `SessionGoalError`, lib/errors.js) and `GoalWarning`s; every operation
//! runs in its own task, so a panic is a failure, never a crash.

use std::future::Future;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use goal_core::{ErrorKind, GoalError};

/// A failed goal operation, as the native module hands it to the package entry: `lib/goals.js`
/// turns it into a thrown `SessionGoalError` in one place, so no host ever sees this shape.
#[napi(object, object_from_js = false)]
pub struct GoalFailure {
    /// Always `true` (tells a failure from a result).
    #[napi(ts_type = "true")]
    pub failed: bool,
    /// The error code (docs/errors.md).
    #[napi(ts_type = "'invalidInput' | 'notFound' | 'conflict' | 'tooLarge' | 'openCode' | 'timeout' | 'local'")]
    pub code: String,
    /// What went wrong (never prompt text, model output or credentials).
    pub message: String,
    /// The request field at fault, when one is.
    pub field: Option<String>,
    /// The HTTP status OpenCode answered with, when it answered.
    pub status: Option<u32>,
    /// The underlying failure (an OpenCode call's own error), when there was one.
    pub cause: Option<String>,
    /// `session-created`, `fork-created` or `goal-configured`: what had already taken effect.
    #[napi(ts_type = "'session-created' | 'fork-created' | 'goal-configured'")]
    pub partial_action: Option<String>,
    /// The session concerned (the new one after create or fork).
    pub session_id: Option<String>,
    /// Its directory.
    pub directory: Option<String>,
}

pub(crate) fn failure(error: GoalError) -> GoalFailure {
    GoalFailure {
        failed: true,
        code: error.kind.code().to_string(),
        field: error.field.map(str::to_string),
        status: error.opencode_status.map(u32::from),
        cause: std::error::Error::source(&error).map(|source| source.to_string()),
        message: error.message,
        partial_action: error.partial.map(|p| p.as_str().to_string()),
        session_id: (!error.session_id.is_empty()).then_some(error.session_id),
        directory: (!error.directory.is_empty()).then_some(error.directory),
    }
}

/// A partial success's caveat: the operation took effect, with this warning.
#[napi(object, object_from_js = false)]
pub struct GoalWarning {
    /// `objectiveInline`, `abortFailed` or `commandListUnavailable` (docs/errors.md).
    #[napi(ts_type = "'objectiveInline' | 'abortFailed' | 'commandListUnavailable'")]
    pub code: String,
    /// One sentence for a person.
    pub message: String,
    /// The request field concerned, when one is.
    pub field: Option<String>,
}

pub(crate) fn warnings_of(warnings: &[goal_core::Warning]) -> Vec<GoalWarning> {
    warnings
        .iter()
        .map(|warning| GoalWarning {
            code: warning.code.code().to_string(),
            message: warning.message.clone(),
            field: warning.field.map(str::to_string),
        })
        .collect()
}

/// Runs one operation in its own task: a panic is a 500 failure, never a crash.
pub(crate) async fn guarded<T, F>(work: F) -> Either<T, GoalFailure>
where
    T: Send + 'static,
    F: Future<Output = std::result::Result<T, GoalError>> + Send + 'static,
{
    match tokio::spawn(work).await {
        Ok(Ok(value)) => Either::A(value),
        Ok(Err(error)) => Either::B(failure(error)),
        Err(_) => {
            tracing::error!(target: "session_goal", "goal operation panicked");
            Either::B(failure(GoalError::new(ErrorKind::Local, "internal error")))
        }
    }
}
