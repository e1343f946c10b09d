//! Everything that talks to the outside: HTTP pools, the OpenCode client and the classification
//! of its prompt answers, guarded goal-metadata writes and the per-session locks behind them,
//! objective files, the audit history, the host services, and what a host's runtimes share.

pub mod history;
pub mod http;
pub mod locks;
pub mod objectives;
pub mod opencode;
pub mod prompt_outcome;
pub mod services;
pub mod shared;
pub mod small_model_call;
pub mod transport;
pub mod writer;
