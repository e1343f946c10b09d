//! What the runtimes of one host share, as one explicit object instead of process-wide statics:
//! the event intake registry (a payload forwarded to any runtime reaches every runtime of the
//! same OpenCode server). The host binding creates one and hands it to every runtime it builds.

use std::sync::Arc;

use crate::intake::IntakeRegistry;

/// The state shared by the runtimes built from one context. Cloning it shares the same state.
#[derive(Clone, Default)]
pub struct SharedContext {
    intake: Arc<IntakeRegistry>,
}

impl SharedContext {
    /// A fresh context: runtimes built from it see only each other.
    pub fn new() -> Self {
        Self::default()
    }

    /// The event intake registry.
    pub fn intake(&self) -> &IntakeRegistry {
        &self.intake
    }
}
