//! A partial success's caveats: the operation took effect, with `GoalWarning`s beside its result.

use napi_derive::napi;

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

impl From<&goal_core::Warning> for GoalWarning {
    fn from(warning: &goal_core::Warning) -> Self {
        GoalWarning {
            code: warning.code.as_str().to_string(),
            message: warning.message.clone(),
            field: warning.field.map(str::to_string),
        }
    }
}
