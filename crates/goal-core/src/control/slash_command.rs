//! A slash prompt (`/name arguments`) resolved against OpenCode's command list: run as that
//! command (`POST /session/:id/command`), its expanded template the goal's objective; an
//! unknown name, or a list that cannot be read, leaves an ordinary prompt.

use serde_json::Value;

use crate::control::create::ControlContext;
use crate::error::{Warning, WarningCode};
use crate::record::session::Selection;
use crate::text::commands::{command_list, command_objective, parse_slash, SlashInvocation};

/// A slash invocation resolved against OpenCode's command list.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedCommand {
    /// Command name.
    pub name: String,
    /// Raw arguments.
    pub arguments: String,
    /// The goal objective: the expanded template (or the raw invocation).
    pub objective: String,
}

/// Resolves a slash prompt through `GET /command`. `Ok(None)`: an ordinary prompt (no slash,
/// or no such command). The error is a warning: the list could not be read, so the prompt is
/// sent as text.
pub async fn resolve_command(
    ctx: &ControlContext,
    directory: &str,
    prompt: &str,
) -> Result<Option<ResolvedCommand>, Warning> {
    let Some(invocation) = parse_slash(prompt) else {
        return Ok(None);
    };
    let list = ctx.client.call("GET", "/command", directory, None).await.map_err(|error| {
        let message = format!("command list unavailable ({error}); the prompt was sent as text");
        Warning::new(WarningCode::CommandListUnavailable, message)
    })?;
    let commands = command_list(&list).ok_or_else(|| {
        Warning::new(WarningCode::CommandListUnavailable, "command list unreadable; the prompt was sent as text")
    })?;
    Ok(commands
        .iter()
        .find(|c| c.name == invocation.name)
        .map(|command| resolved(&invocation, Some(&command.template))))
}

fn resolved(invocation: &SlashInvocation, template: Option<&str>) -> ResolvedCommand {
    ResolvedCommand {
        name: invocation.name.clone(),
        arguments: invocation.arguments.clone(),
        objective: command_objective(invocation, template),
    }
}

/// `POST /session/:id/command` body: the selection as a prompt names it, but with the model as
/// `provider/model` and no parts.
pub fn command_body(command: &ResolvedCommand, selection: &Selection) -> Value {
    let mut body = selection.prompt_body(Vec::new());
    body.remove("parts");
    if let Some(model) = selection.model_path() {
        body.insert("model".into(), Value::from(model));
    }
    body.insert("command".into(), Value::from(command.name.clone()));
    body.insert("arguments".into(), Value::from(command.arguments.clone()));
    Value::Object(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn command_bodies_take_the_model_as_provider_slash_model() {
        let selection =
            Selection { provider_id: "p".into(), model_id: "m".into(), agent: "build".into(), ..Default::default() };
        let command = ResolvedCommand { name: "review".into(), arguments: "a b".into(), objective: String::new() };
        assert_eq!(
            command_body(&command, &selection),
            json!({"command": "review", "arguments": "a b", "model": "p/m", "agent": "build"})
        );
    }
}
