//! What a host asks for directly, outside the loop: create a goal, act on one (pause, resume,
//! edit, complete, clear, read), and orchestrate a session (create, prompt, fork, schedule:
//! `orchestrate.rs`, with the prompt's selection and body in `prompt.rs` and a slash command's
//! resolution in `slash_command.rs`); a goal's settings, which all of them carry (`goal_settings.rs`).

pub mod actions;
pub mod create;
pub mod explain;
pub mod goal_settings;
pub mod orchestrate;
pub mod prompt;
pub mod slash_command;
