//! The objective store's native functions (`<dataDir>/goals/<sessionId>.md`), wrapped by
//! lib/goals.js.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use goal_core::GoalError;

use super::results::*;
use crate::RuntimeSettingsOptions;

/// Writes `<dataDir>/goals/<sessionId>.md` atomically (trimmed, at most 5,000 chars). The id
/// must match `^[A-Za-z0-9_-]{4,128}$` (checked before any file access). Rejects with
/// `invalidInput` for an invalid id or empty content, `local` for a file-system error.
#[napi]
pub fn write_objective_file(
    env: &Env,
    session_id: String,
    content: String,
    data_dir: Option<String>,
) -> Result<PromiseRaw<'_, ObjectiveWritten>> {
    crate::failure::settle(env, async move {
        let root = RuntimeSettingsOptions::data_dir(None, data_dir);
        goal_core::write_objective(&root, &session_id, &content)
            .await
            .map(|content| ObjectiveWritten { content })
            .map_err(GoalError::from)
    })
}

/// Reads an objective file: its text, or `null` for an invalid id, a missing file or empty text.
#[napi(ts_return_type = "Promise<string | null>")]
pub fn read_objective_file(
    env: &Env,
    session_id: String,
    data_dir: Option<String>,
) -> Result<PromiseRaw<'_, Option<String>>> {
    let root = RuntimeSettingsOptions::data_dir(None, data_dir);
    crate::failure::resolve(env, async move {
        tokio::spawn(async move { goal_core::read_objective(&root, &session_id).await }).await.ok().flatten()
    })
}

/// Deletes an objective file, best effort: whether a file was removed (false for an invalid id).
#[napi]
pub fn delete_objective_file(env: &Env, session_id: String, data_dir: Option<String>) -> Result<PromiseRaw<'_, bool>> {
    let root = RuntimeSettingsOptions::data_dir(None, data_dir);
    crate::failure::resolve(env, async move {
        tokio::spawn(async move { goal_core::delete_objective(&root, &session_id).await }).await.unwrap_or(false)
    })
}
