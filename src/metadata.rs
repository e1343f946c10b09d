//! Lets host code that writes session metadata join the per-session write queue the goal and
//! assist runtimes of the same JavaScript environment use (the main thread, or one Worker: see
//! `env_context.rs`), so no writer of that environment erases another's keys.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use goal_core::write_namespace_key;
use goal_core::{ErrorKind, GoalError};
use goal_core::{OpenCodeClient, DEFAULT_FETCH_TIMEOUT};

use crate::env_context::EnvContext;
use crate::options::OpenCodeConnection;

/// Longest accepted key under `metadata.openchamber`.
const MAX_KEY_CHARS: usize = 128;

/// One `metadata.openchamber.<key>` write.
#[napi(object, object_to_js = false)]
pub struct SessionMetadataKeyWrite {
    /// How to reach OpenCode.
    pub open_code: Option<OpenCodeConnection>,
    /// Session to write.
    pub session_id: String,
    /// Project directory of the session (sent as `?directory=`).
    pub directory: Option<String>,
    /// Key under `metadata.openchamber` (`goal` and `assist` belong to the runtimes).
    pub key: String,
    /// The new value; `null` or absent removes the key.
    #[napi(ts_type = "unknown")]
    pub value: Option<serde_json::Value>,
}

impl SessionMetadataKeyWrite {
    /// The write, checked: the client, the session, its directory, the key and the value to put
    /// (`None` removes the key).
    fn resolve(
        self,
        context: &EnvContext,
    ) -> std::result::Result<(OpenCodeClient, String, String, String, Option<serde_json::Value>), GoalError> {
        let session_id = self.session_id.trim().to_string();
        let key = self.key.trim().to_string();
        if session_id.is_empty() {
            return Err(GoalError::invalid("sessionId", "writeSessionMetadataKey: sessionId is required"));
        }
        if key.is_empty() || key.chars().count() > MAX_KEY_CHARS {
            return Err(GoalError::invalid("key", "writeSessionMetadataKey: key must be 1 to 128 characters"));
        }
        let client = OpenCodeConnection::client(self.open_code, context, DEFAULT_FETCH_TIMEOUT)?;
        Ok((client, session_id, self.directory.unwrap_or_default(), key, self.value.filter(|v| !v.is_null())))
    }
}

/// Writes `metadata.openchamber.<key>` through the per-session write queue of this JavaScript
/// environment: the session is read fresh inside the queue and only that key is replaced, so
/// concurrent goal, assist and host writes of the environment all survive (OpenCode's PATCH
/// replaces the whole metadata object). Resolves `true` once written; rejects with
/// `invalidInput` for a missing session id, key or OpenCode location, and with OpenCode's failure
/// when the session cannot be read or written.
#[napi]
pub fn write_session_metadata_key(env: &Env, write: SessionMetadataKeyWrite) -> Result<PromiseRaw<'_, bool>> {
    // Checked before the promise exists, but reported through it: bad input rejects, never throws.
    let resolved = EnvContext::of(env)
        .map_err(|error| GoalError::new(ErrorKind::Local, error.reason))
        .and_then(|context| write.resolve(&context));
    crate::failure::settle(env, async move {
        let (client, session_id, directory, key, value) = resolved?;
        write_namespace_key(&client, &session_id, &directory, &key, |_fresh| Ok(value))
            .await
            .map(|written| written.is_some())
            .map_err(|error| {
                // The call's own words ("HTTP 404"), with the kind and status OpenCode's answer gives.
                let mut failure = GoalError::from_http("writeSessionMetadataKey", &error);
                failure.message = format!("writeSessionMetadataKey: {error}");
                failure
            })
    })
}
