//! What the runtimes of one host share, as one explicit object instead of process-wide statics:
//! the event intake registry (a payload forwarded to any runtime reaches every runtime of the
//! same OpenCode server), the HTTP connection pools, the per-session metadata write slots and
//! the dispatch claims, and the host's clock. The host binding creates one and hands it to every runtime and client it
//! builds; an embedder or a test makes its own, and two contexts share nothing.

use std::sync::Arc;

use crate::intake::IntakeRegistry;
use crate::io::http::HttpPools;
use crate::io::locks::{DispatchClaims, WriteSlots};
use crate::time::clock::Clock;

/// The state shared by the runtimes built from one context. Cloning it shares the same state.
#[derive(Clone, Default)]
pub struct SharedContext {
    intake: Arc<IntakeRegistry>,
    http: Arc<HttpPools>,
    write_slots: WriteSlots,
    dispatch_claims: DispatchClaims,
    clock: Clock,
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

    /// The connection pools (OpenCode and small-model providers).
    pub fn http(&self) -> &Arc<HttpPools> {
        &self.http
    }

    /// The per-session metadata write slots: every metadata write of the context waits for its
    /// session's slot, so goal, assist and host writes never erase each other's keys.
    pub fn write_slots(&self) -> &WriteSlots {
        &self.write_slots
    }

    /// The dispatch claims: one continuation in flight per session across the context's runtimes.
    pub fn dispatch_claims(&self) -> &DispatchClaims {
        &self.dispatch_claims
    }

    /// The same context reading the time from `clock` (a simulation's paused clock, a skewed
    /// host). Set it before building clients and runtimes: they copy it.
    pub fn with_clock(self, clock: Clock) -> Self {
        Self { clock, ..self }
    }

    /// The host's wall clock (the system clock unless [`SharedContext::with_clock`] set another).
    pub fn clock(&self) -> Clock {
        self.clock
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn clones_of_one_context_share_dispatch_claims() {
        let context = SharedContext::new();
        let (first_runtime, second_runtime) = (context.clone(), context.clone());
        let held = first_runtime.dispatch_claims().claim("ses_shared").expect("free");
        assert!(
            second_runtime.dispatch_claims().claim("ses_shared").is_none(),
            "the second runtime must not dispatch too"
        );
        drop(held);
        assert!(second_runtime.dispatch_claims().claim("ses_shared").is_some());
    }

    #[tokio::test]
    async fn two_contexts_share_neither_claims_nor_write_slots() {
        let (first, second) = (SharedContext::new(), SharedContext::new());
        let _claim = first.dispatch_claims().claim("ses_apart").expect("free");
        assert!(second.dispatch_claims().claim("ses_apart").is_some(), "another context has its own claims");
        let _slot = first.write_slots().acquire("ses_apart").await;
        let other = tokio::time::timeout(Duration::from_millis(50), second.write_slots().acquire("ses_apart")).await;
        assert!(other.is_ok(), "another context has its own write slots");
        let same =
            tokio::time::timeout(Duration::from_millis(50), first.clone().write_slots().acquire("ses_apart")).await;
        assert!(same.is_err(), "a clone of the context waits for the same slot");
    }
}
