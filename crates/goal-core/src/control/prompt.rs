//! A prompt of create, send and fork, before it is sent: its options checked (size, goal, the
//! model's shape), the model, agent and variant it runs with (the caller's, else the session's
//! last user message's, checked against OpenCode's catalog), and the `prompt_async` body with
//! the goal-mode intro part.

use serde_json::{json, Value};
use tracing::debug;

use crate::control::create::{ControlContext, GoalError, ModelChoice};
use crate::control::goal_settings::GoalSettings;
use crate::error::ErrorKind;
use crate::io::opencode::session_path;
use crate::record::session::{chronological, Message, Role, Selection};
use crate::text::prompts::goal_intro_text;

/// Largest prompt accepted (the reference's JSON body limit).
pub const MAX_PROMPT_BYTES: usize = 1_000_000;
/// Messages read to find the selection and the baseline of the last exchange.
const RECENT_MESSAGES: usize = 40;

/// What to send and how (shared by create, send and fork).
#[derive(Debug, Clone, Default)]
pub struct PromptOptions {
    /// Prompt text; a leading `/name` runs that OpenCode command.
    pub prompt: String,
    /// `provider/model`.
    pub model: Option<String>,
    /// Provider id (with `model_id`, instead of `model`).
    pub provider_id: Option<String>,
    /// Model id (with `provider_id`).
    pub model_id: Option<String>,
    /// Agent.
    pub agent: Option<String>,
    /// Model variant.
    pub variant: Option<String>,
    /// Start a goal with this prompt as the objective, with these settings.
    pub goal: Option<GoalSettings>,
}

/// Options checked and normalized.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CheckedPrompt {
    /// Prompt (untrimmed text is sent as written; empty means none).
    pub prompt: String,
    /// Explicit model.
    pub model: Option<ModelChoice>,
    /// Explicit agent.
    pub agent: Option<String>,
    /// Explicit variant.
    pub variant: Option<String>,
    /// The goal requested, if any.
    pub goal: Option<GoalSettings>,
}

/// The trimmed text of an optional option, `None` when it is absent or blank.
pub(crate) fn non_empty(value: &Option<String>) -> Option<String> {
    value.as_deref().map(str::trim).filter(|v| !v.is_empty()).map(str::to_string)
}

/// Parses `provider/model` (the model id may itself contain slashes).
pub fn parse_model(text: &str) -> Option<ModelChoice> {
    let (provider, model) = text.trim().split_once('/')?;
    (!provider.is_empty() && !model.is_empty())
        .then(|| ModelChoice { provider_id: provider.to_string(), model_id: model.to_string() })
}

/// Validates the options before anything is written: prompt size, goal and budget rules, and
/// the model's shape.
pub fn check_prompt_options(options: &PromptOptions, prompt_required: bool) -> Result<CheckedPrompt, GoalError> {
    if options.prompt.len() > MAX_PROMPT_BYTES {
        return Err(GoalError::new(
            ErrorKind::TooLarge,
            format!("prompt is too large (limit {MAX_PROMPT_BYTES} bytes)"),
        ));
    }
    let has_prompt = !options.prompt.trim().is_empty();
    if options.goal.is_some() && !has_prompt {
        return Err(GoalError::invalid("prompt", "goal requires a prompt"));
    }
    if prompt_required && !has_prompt {
        return Err(GoalError::invalid("prompt", "prompt is required"));
    }
    let model = match (non_empty(&options.model), non_empty(&options.provider_id), non_empty(&options.model_id)) {
        (Some(text), None, None) => {
            Some(parse_model(&text).ok_or_else(|| GoalError::invalid("model", "model must look like provider/model"))?)
        }
        (None, Some(provider_id), Some(model_id)) => Some(ModelChoice { provider_id, model_id }),
        (None, None, None) => None,
        _ => return Err(GoalError::invalid("model", "pass either model (provider/model) or providerID with modelID")),
    };
    Ok(CheckedPrompt {
        prompt: if has_prompt { options.prompt.clone() } else { String::new() },
        model,
        agent: non_empty(&options.agent),
        variant: non_empty(&options.variant),
        goal: options.goal.clone(),
    })
}

/// What the recent messages of a session tell a dispatch.
#[derive(Debug, Clone, Default)]
pub(crate) struct History {
    /// Model/agent/variant of the newest user message.
    pub(crate) last_selection: Selection,
    /// Newest user message id (the landing check waits for a newer one).
    pub(crate) last_user_id: Option<String>,
    /// Newest assistant message id.
    pub(crate) last_assistant_id: Option<String>,
}

fn read_history(raw: &Value) -> History {
    let Some(messages) = Message::list_from_value(raw) else {
        return History::default();
    };
    let ordered = chronological(&messages);
    let newest = |role: Role| ordered.iter().rev().find(|m| m.role == role && !m.id.is_empty());
    History {
        last_selection: newest(Role::User).map(|m| m.selection.clone()).unwrap_or_default(),
        last_user_id: newest(Role::User).map(|m| m.id.clone()),
        last_assistant_id: newest(Role::Assistant).map(|m| m.id.clone()),
    }
}

/// The recent messages of a session, read for its selection and the landing baseline (`None`:
/// unreadable).
pub(crate) async fn recent_history(ctx: &ControlContext, session_id: &str, directory: &str) -> Option<History> {
    let path = format!("{}?limit={RECENT_MESSAGES}", session_path(session_id, "/message").ok()?);
    match ctx.client.call("GET", &path, directory, None).await {
        Ok(raw) => Some(read_history(&raw)),
        Err(error) => {
            debug!(target: "session_goal", session = session_id, %error, "recent messages unreadable");
            None
        }
    }
}

/// Checks an explicit model against `GET /config/providers` and an explicit agent against
/// `GET /agent` (sub-agents cannot run a prompt). A catalog that cannot be read is not a reason
/// to refuse: OpenCode will judge the dispatch itself.
pub(crate) async fn check_selection(
    ctx: &ControlContext,
    directory: &str,
    checked: &CheckedPrompt,
) -> Result<(), GoalError> {
    if let Some(model) = &checked.model {
        if let Ok(catalog) = ctx.client.call("GET", "/config/providers", directory, None).await {
            let providers = catalog.get("providers").and_then(Value::as_array);
            if let Some(providers) = providers {
                let known = providers.iter().any(|provider| {
                    provider.get("id").and_then(Value::as_str) == Some(model.provider_id.as_str())
                        && provider.get("models").and_then(|m| m.get(&model.model_id)).is_some()
                });
                if !known {
                    return Err(GoalError::invalid(
                        "model",
                        format!("unknown model {}/{}", model.provider_id, model.model_id),
                    ));
                }
            }
        }
    }
    if let Some(agent) = &checked.agent {
        if let Ok(Value::Array(agents)) = ctx.client.call("GET", "/agent", directory, None).await {
            let found = agents.iter().find(|a| a.get("name").and_then(Value::as_str) == Some(agent.as_str()));
            match found {
                None => return Err(GoalError::invalid("agent", format!("unknown agent {agent}"))),
                Some(info) if info.get("mode").and_then(Value::as_str) == Some("subagent") => {
                    return Err(GoalError::invalid(
                        "agent",
                        format!("agent {agent} is a subagent and cannot run a prompt"),
                    ));
                }
                Some(_) => {}
            }
        }
    }
    Ok(())
}

/// The selection of a dispatch: what the caller chose, else what the session last used.
pub(crate) fn pick_selection(checked: &CheckedPrompt, inherited: Option<&Selection>) -> Selection {
    let inherited = inherited.cloned().unwrap_or_default();
    let (provider_id, model_id, variant) = match &checked.model {
        Some(model) => (model.provider_id.clone(), model.model_id.clone(), String::new()),
        // A variant belongs to its model: inherit it only with the model.
        None => (inherited.provider_id, inherited.model_id, inherited.variant),
    };
    Selection {
        provider_id,
        model_id,
        agent: checked.agent.clone().unwrap_or(inherited.agent),
        variant: checked.variant.clone().unwrap_or(variant),
    }
}

/// The synthetic goal-mode reminder part attached after the prompt text.
pub fn goal_intro_part(token_budget: Option<u64>) -> Value {
    json!({ "type": "text", "text": goal_intro_text(token_budget), "synthetic": true })
}

/// `prompt_async` body: the prompt text, then the goal intro (synthetic) when a goal starts.
pub fn prompt_body(prompt: &str, selection: &Selection, goal_intro: Option<Value>) -> Value {
    let mut parts = vec![json!({ "type": "text", "text": prompt })];
    parts.extend(goal_intro);
    Value::Object(selection.prompt_body(parts))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(prompt: &str) -> PromptOptions {
        PromptOptions { prompt: prompt.into(), ..Default::default() }
    }

    #[test]
    fn goal_and_prompt_rules() {
        let goal_without_prompt = PromptOptions { goal: Some(GoalSettings::default()), ..options("  ") };
        assert_eq!(check_prompt_options(&goal_without_prompt, false).unwrap_err().message, "goal requires a prompt");
        assert_eq!(check_prompt_options(&options(""), true).unwrap_err().message, "prompt is required");
        let settings = GoalSettings {
            token_budget: crate::control::goal_settings::SettingChange::Set(5000),
            ..GoalSettings::default()
        };
        let with_goal = PromptOptions { goal: Some(settings.clone()), ..options("x") };
        assert_eq!(check_prompt_options(&with_goal, true).unwrap().goal, Some(settings));
        let huge = options(&"x".repeat(MAX_PROMPT_BYTES + 1));
        assert_eq!(check_prompt_options(&huge, true).unwrap_err().kind, ErrorKind::TooLarge);
    }

    #[test]
    fn model_forms() {
        let checked = check_prompt_options(
            &PromptOptions { model: Some("openrouter/anthropic/claude".into()), ..options("x") },
            true,
        )
        .unwrap();
        assert_eq!(
            checked.model,
            Some(ModelChoice { provider_id: "openrouter".into(), model_id: "anthropic/claude".into() })
        );
        for bad in ["nomodel", "/m", "p/"] {
            assert!(
                check_prompt_options(&PromptOptions { model: Some(bad.into()), ..options("x") }, true).is_err(),
                "{bad}"
            );
        }
        let split = PromptOptions { provider_id: Some("p".into()), model_id: Some("m".into()), ..options("x") };
        assert_eq!(
            check_prompt_options(&split, true).unwrap().model,
            Some(ModelChoice { provider_id: "p".into(), model_id: "m".into() })
        );
        let half = PromptOptions { provider_id: Some("p".into()), ..options("x") };
        assert!(check_prompt_options(&half, true).is_err());
    }

    #[test]
    fn bodies() {
        let selection =
            Selection { provider_id: "p".into(), model_id: "m".into(), agent: "build".into(), ..Default::default() };
        let body = prompt_body("do it", &selection, Some(goal_intro_part(Some(2000))));
        assert_eq!(body["parts"][0], json!({"type": "text", "text": "do it"}));
        assert_eq!(body["parts"][1]["synthetic"], json!(true));
        assert!(body["parts"][1]["text"].as_str().unwrap().contains("2000 tokens"));
        assert_eq!(body["model"], json!({"providerID": "p", "modelID": "m"}));
        assert!(body.get("variant").is_none());
    }

    #[test]
    fn selection_inherits_the_last_user_choice() {
        let raw = json!([
            {"info": {"id": "msg_1", "role": "user", "time": {"created": 1}, "agent": "plan", "model": {"providerID": "a", "modelID": "b", "variant": "high"}}},
            {"info": {"id": "msg_2", "role": "assistant", "time": {"created": 2}}},
        ]);
        let history = read_history(&raw);
        assert_eq!(history.last_user_id.as_deref(), Some("msg_1"));
        assert_eq!(history.last_assistant_id.as_deref(), Some("msg_2"));
        let inherited = pick_selection(&CheckedPrompt::default(), Some(&history.last_selection));
        assert_eq!((inherited.agent.as_str(), inherited.variant.as_str()), ("plan", "high"));
        assert_eq!(inherited.model_path().as_deref(), Some("a/b"));
        let explicit = CheckedPrompt {
            model: Some(ModelChoice { provider_id: "x".into(), model_id: "y".into() }),
            ..Default::default()
        };
        let mixed = pick_selection(&explicit, Some(&history.last_selection));
        assert_eq!(mixed.model_path().as_deref(), Some("x/y"));
        assert_eq!(mixed.variant, "", "a variant is not carried over to another model");
        assert_eq!(mixed.agent, "plan");
    }
}
