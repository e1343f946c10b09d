//! Text in and out of the models, all pure: the prompts, JSON found in a model's reply, the
//! guard against a script the conversation never used, and slash commands as objectives.

pub mod commands;
pub mod jsonx;
pub mod prompts;
pub mod script_guard;
