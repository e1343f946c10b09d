//! Everything that talks to the outside: HTTP pools, the OpenCode client and the classification
//! of its prompt answers, its session lists, the follower of OpenCode's event stream, guarded goal-metadata writes and the per-session locks behind them,
//! objective files, the audit trail's file, the few file jobs run at once, the host services, this host's identity, and what a host's runtimes share.

pub mod event_follower;
pub mod file_io;
pub mod host_identity;
pub mod http;
pub mod locks;
pub mod memory_dir;
pub mod objectives;
pub mod opencode;
pub mod prompt_outcome;
pub mod services;
pub mod session_lists;
pub mod shared;
pub mod trail_file;
pub mod transport;
pub mod writer;

/// Runs side work that nothing waits for on the ambient tokio runtime. One boxed future type for
/// every such site, so the task machinery is compiled once (the addon's size is budgeted). It
/// runs in the caller's tracing span (the runtime's log identity).
pub fn spawn_detached(work: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>) {
    tokio::spawn(tracing::Instrument::in_current_span(work));
}
