//! Session assist: after a session has been quiet for a while, a short recap of the agent's last
//! reply and one suggested follow-up message, written to `metadata.openchamber.assist`.
//!
//! `content` is pure (which exchange to show the model, how to read its answer, what to store);
//! `runtime` does the I/O on the shared scheduler, OpenCode client and metadata write queue.

pub mod content;
pub mod runtime;

pub use runtime::{AssistConfig, AssistRuntime, AssistRuntimeParts, AssistSnapshot};
