//! Session goal loop and session assist for OpenCode sessions.
//!
//! The crate has no napi dependency: a Node binding (the top-level crate) or a Tauri shell links
//! it directly. Layout follows the architecture, pure code apart from I/O, apart from the binding:
//! - pure (imports only pure modules): `goal_record` (the goal stored in session metadata),
//!   `session_data` (OpenCode sessions, messages, live status, the metadata merge), `lease`
//!   (the multi-host lease and holder id), `clock`, `accounting`, `decide`, `prompts`, `jsonx`,
//!   `script_guard`, `commands`, `notify`, `settings`, `small_model_call`, `tunables`,
//!   `operator`, `gates`, `repair`, `evidence`, `active_time`, `hours`, `session_facts` (what
//!   events showed of each session, owned by the scheduler task), `assist::content`,
//!   `small_model::catalog`, `small_model::wire`;
//! - the intake contract, `intake`: which payloads are read and how they parse (pure), and the
//!   registry that fans events out;
//! - what a host's runtimes share, `shared::SharedContext`: the intake registry, the HTTP pools
//!   (`http`), and the per-session write slots and dispatch claims (`session_locks`). It is
//!   passed explicitly to every client and runtime; the core keeps no hidden statics beyond
//!   process identity (the lease holder seed, create ids) and the TLS provider install;
//! - I/O: `http`, `opencode` (the HTTP client), `dispatch` (continuation ids, posting, outcome
//!   classification), `objectives` (files), `services` (host services, settings on disk),
//!   `writer` (guarded metadata writes), `tick` (+ `tick_evidence`), `history`, `scheduler` (the
//!   one owner of per-session state), `runtime`, `assist::runtime`, `small_model` (the built-in
//!   small model), `create`, `orchestrate`, `actions`, `embed` (the Rust embedding API).

pub mod accounting;
pub mod actions;
pub mod active_time;
pub mod assist;
pub mod cause;
pub mod clock;
pub mod commands;
pub mod create;
pub mod decide;
pub mod dispatch;
pub mod embed;
pub mod evidence;
pub mod gates;
pub mod goal_record;
pub mod history;
pub mod hours;
pub mod http;
pub mod intake;
pub mod jsonx;
pub mod lease;
pub mod lineage;
pub mod notify;
pub mod objectives;
pub mod opencode;
pub mod operator;
pub mod orchestrate;
pub mod prompts;
pub mod provider;
pub mod repair;
pub mod runtime;
pub mod scheduler;
pub mod script_guard;
pub mod services;
pub mod session_data;
pub mod session_facts;
pub mod session_locks;
pub mod settings;
pub mod shared;
pub mod small_model;
pub mod small_model_call;
pub mod tick;
pub mod tick_evidence;
pub mod tunables;
pub mod writer;
