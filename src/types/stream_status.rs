//! What an event follower's `onStatus` receives (`src/event_follower.rs`): the core's
//! `StreamStatus` (`crates/goal-core/src/io/event_follower.rs`) as a JavaScript object.

use napi_derive::napi;

use goal_core::StreamStatus;

use crate::callbacks::HostCallback;

/// An event follower's `onStatus(status)`.
pub type StatusCallback = HostCallback<EventStreamStatus>;

/// What became of OpenCode's event stream: `connected` when the server accepted a connection,
/// `disconnected` (with why, and when the next attempt is) when it ended or could not be opened.
#[napi(object, object_from_js = false)]
pub struct EventStreamStatus {
    /// `connected` or `disconnected`.
    #[napi(ts_type = "'connected' | 'disconnected'")]
    pub state: String,
    /// `disconnected` only: what ended the stream (an HTTP status, the server closing it, a
    /// network error, no answer in time). Never holds the URL.
    pub reason: Option<String>,
    /// `disconnected` only: the wait before the next attempt, ms (doubling from `firstRetryMs`
    /// with each failure in a row, at most 10 s).
    pub retry_in_ms: Option<f64>,
}

impl From<&StreamStatus> for EventStreamStatus {
    fn from(status: &StreamStatus) -> Self {
        match status {
            StreamStatus::Connected => Self { state: "connected".into(), reason: None, retry_in_ms: None },
            StreamStatus::Disconnected { reason, retry_in } => Self {
                state: "disconnected".into(),
                reason: Some(reason.clone()),
                retry_in_ms: Some(retry_in.as_millis() as f64),
            },
        }
    }
}
