//! Session goal loop and session assist for OpenCode sessions.
//!
//! The crate has no napi dependency: a Node binding (the top-level crate) or a Tauri shell links
//! it directly. Layout follows the architecture: pure decisions (`model`, `accounting`,
//! `decide`, `prompts`, `jsonx`, `script_guard`) apart from I/O (`opencode`, `writer`,
//! `dispatch`, `tick`, `scheduler`, `assist`), apart from the binding.

pub mod jsonx;
pub mod prompts;
pub mod script_guard;
pub mod accounting;
pub mod decide;
pub mod model;
pub mod objectives;
pub mod opencode;
pub mod services;
pub mod notify;
pub mod tick;
pub mod writer;
pub mod scheduler;
pub mod intake;
pub mod runtime;
pub mod assist;
pub mod commands;
pub mod create;
pub mod orchestrate;
pub mod actions;
pub mod small_model;
pub mod evidence;
pub mod active_time;
pub mod hours;
pub mod history;
pub mod tick_evidence;
