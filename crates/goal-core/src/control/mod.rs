//! What a host asks for directly, outside the loop: create a goal, act on one (pause, resume,
//! edit, complete, clear, read), and orchestrate a session (create, prompt, fork, schedule);
//! a goal's settings, which all of them carry (`settings.rs`).

pub mod actions;
pub mod create;
pub mod explain;
pub mod orchestrate;
pub mod settings;
