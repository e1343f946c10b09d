//! Session goal loop and session assist for OpenCode sessions.
//!
//! The crate has no napi dependency: a Node binding (the top-level crate) or a Tauri shell links
//! it directly. Layout follows the architecture, pure code apart from I/O, apart from the binding:
//! - pure (imports only pure modules): `model` (OpenCode sessions, messages and the goal),
//!   `accounting`, `decide`, `prompts`, `jsonx`, `script_guard`, `commands`, `notify`,
//!   `settings`, `small_model_call`, `tunables`, `assist::content`, `small_model::catalog`,
//!   `small_model::wire`;
//! - the intake contract, `intake`: which payloads are read and how they parse (pure), and the
//!   registry that fans events out, held in `shared::SharedContext`;
//! - I/O: `opencode` (the HTTP client), `objectives` (files), `services` (host services,
//!   settings on disk), `writer` (metadata writes, leases), `tick`, `scheduler`, `runtime`,
//!   `assist::runtime`, `small_model` (the built-in small model), `create`, `orchestrate`,
//!   `actions`.

pub mod jsonx;
pub mod prompts;
pub mod tunables;
pub mod script_guard;
pub mod accounting;
pub mod decide;
pub mod goal_record;
pub mod session_data;
pub mod objectives;
pub mod opencode;
pub mod services;
pub mod settings;
pub mod small_model_call;
pub mod notify;
pub mod tick;
pub mod dispatch;
pub mod gates;
pub mod repair;
pub mod clock;
pub mod lease;
pub mod session_locks;
pub mod writer;
pub mod session_facts;
pub mod scheduler;
pub mod intake;
pub mod shared;
pub mod runtime;
pub mod assist;
pub mod commands;
pub mod create;
pub mod orchestrate;
pub mod actions;
pub mod small_model;
pub mod http;
pub mod operator;
pub mod embed;
pub mod evidence;
pub mod active_time;
pub mod hours;
pub mod history;
pub mod tick_evidence;
