//! A slash prompt (`/name arguments`) resolved against OpenCode's command list: run as that
//! command (`POST /session/:id/command`), its expanded template the goal's objective; an
//! unknown name, or a list that cannot be read, leaves an ordinary prompt.

use serde_json::{Map, Value};

use crate::control::create::ControlContext;
use crate::control::prompt::Selection;
use crate::error::{Warning, WarningCode};
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

/// `POST /session/:id/command` body (commands take the model as `provider/model`).
pub fn command_body(command: &ResolvedCommand, selection: &Selection) -> Value {
    let mut body = Map::new();
    body.insert("command".into(), Value::from(command.name.clone()));
    body.insert("arguments".into(), Value::from(command.arguments.clone()));
    if let Some(model) = &selection.model {
        body.insert("model".into(), Value::from(format!("{}/{}", model.provider_id, model.model_id)));
    }
    if let Some(agent) = &selection.agent {
        body.insert("agent".into(), Value::from(agent.clone()));
    }
    if let Some(variant) = &selection.variant {
        body.insert("variant".into(), Value::from(variant.clone()));
    }
    Value::Object(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::create::ModelChoice;
    use serde_json::json;

    #[test]
    fn command_bodies_take_the_model_as_provider_slash_model() {
        let selection = Selection {
            model: Some(ModelChoice { provider_id: "p".into(), model_id: "m".into() }),
            agent: Some("build".into()),
            variant: None,
        };
        let command = ResolvedCommand { name: "review".into(), arguments: "a b".into(), objective: String::new() };
        assert_eq!(
            command_body(&command, &selection),
            json!({"command": "review", "arguments": "a b", "model": "p/m", "agent": "build"})
        );
    }
}
