//! Evidence, not prose: what really happened since the previous audit, read from OpenCode's JSON
//! as it arrived. Pure. One job per file:
//!
//! - `digest.rs`: the digest (tool calls with their status, shell commands with exit codes and
//!   the tail of failing output, the session diff, the todo list), bounded and sanitised;
//! - `audit_block.rs`: the digest as the auditor reads it (an escaped `<evidence>` block) and
//!   the citations it gives back;
//! - `summary.rs`: the digest's counts as the audit trail keeps them;
//! - `no_progress.rs`: the per-turn progress fingerprint and the no-progress breaker;
//! - `complete_override.rs`: a `complete` verdict while a command fails, held back once;
//! - `person_words.rs`: what a person typed since the last continuation, for the auditor.

pub mod audit_block;
pub mod complete_override;
pub mod digest;
pub mod no_progress;
pub mod person_words;
pub mod summary;

#[cfg(test)]
mod tests;
