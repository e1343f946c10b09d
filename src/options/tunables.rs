//! `tunables: {…}`: each runtime's timings, caps and limits in one nested object, moved field
//! for field into the core's `GoalTunables` / `AssistTunables`. Both sides are declared from one
//! list each in `crates/goal-core/src/config/tunables.rs` (`goal_tunables!`, `evidence_tunables!`,
//! `assist_tunables!`), whose rules (shared with a Rust host's builder) make the runtime's config:
//! an unusable number (absent, NaN, negative, below the setting's minimum) means the default and
//! a huge one is capped, so a host that mistypes a number gets the default, not a runtime that
//! will not start.
//!
//! Only this nested form reaches native code: OpenChamber's flat names (`idleQuietMs` beside
//! the callbacks) are moved in here by the package entry, in `lib/drop-in.js`.

use napi_derive::napi;

use goal_core::{AssistTunables, EvidenceTunables, GoalTunables};

goal_core::goal_tunables! {
    #[doc = " The goal runtime's tunables (`createSessionGoalRuntime({tunables})`); every one is optional"]
    #[doc = " and `goalRuntimeDefaults()` lists the defaults."]
    #[napi(object)]
    pub struct GoalTunablesInput { evidence: EvidenceOptions } => GoalTunables
}

goal_core::evidence_tunables! {
    #[doc = " Size limits of the evidence digest (tool calls, exit codes, file changes, todos) that each"]
    #[doc = " audit carries, and of the audit trail (`goals/<sessionId>.history.jsonl`)."]
    #[napi(object)]
    pub struct EvidenceOptions => EvidenceTunables
}

goal_core::assist_tunables! {
    #[doc = " The assist runtime's tunables (`createSessionAssistRuntime({tunables})`)."]
    #[napi(object)]
    pub struct AssistTunablesInput => AssistTunables
}
