//! Text in and out of the models, all pure: the prompts, JSON found in a model's reply, the
//! guard against a script the conversation never used, and slash commands as objectives.

pub mod commands;
pub mod jsonx;
pub mod prompts;
pub mod script_guard;

/// Keeps at most `max` characters (not bytes).
pub fn truncate_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((byte, _)) => text[..byte].to_string(),
        None => text.to_string(),
    }
}
