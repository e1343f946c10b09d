//! Slash commands as a goal objective: parsing `/name args` from a prompt and expanding the
//! command's template the way OpenCode does before it runs it, so the auditor judges against the
//! text the agent actually receives. Pure functions; the command list comes from `GET /command`.

use serde_json::Value;

/// A prompt of the form `/name args…`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlashInvocation {
    /// Command name without the slash.
    pub name: String,
    /// Everything after the name (later lines included), trimmed.
    pub arguments: String,
}

/// Parses a slash invocation: the prompt (leading whitespace ignored) starts with `/`, the name
/// runs to the first whitespace and is not empty. `None` for an ordinary prompt.
pub fn parse_slash(prompt: &str) -> Option<SlashInvocation> {
    let rest = prompt.trim_start().strip_prefix('/')?;
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let name = &rest[..end];
    if name.is_empty() || name.starts_with('/') {
        return None;
    }
    Some(SlashInvocation { name: name.to_string(), arguments: rest[end..].trim().to_string() })
}

/// One entry of `GET /command` that matters here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandInfo {
    /// Name (invoked as `/name`).
    pub name: String,
    /// Prompt template with `$ARGUMENTS` / `$1…$N` placeholders.
    pub template: String,
}

/// Reads the command list; entries without a string name are skipped.
pub fn command_list(value: &Value) -> Option<Vec<CommandInfo>> {
    let entries = value.as_array()?;
    Some(
        entries
            .iter()
            .filter_map(|entry| {
                let name = entry.get("name")?.as_str()?.to_string();
                let template = entry.get("template").and_then(Value::as_str).unwrap_or("").to_string();
                Some(CommandInfo { name, template })
            })
            .collect(),
    )
}

/// Splits arguments like OpenCode: whitespace separates, `"…"` and `'…'` group (the quotes are
/// dropped), `[Image N]` stays one argument, and a quote without its partner is skipped.
pub fn split_arguments(arguments: &str) -> Vec<String> {
    let chars: Vec<char> = arguments.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if let Some(end) = image_reference_end(&chars, i) {
            out.push(chars[i..end].iter().collect());
            i = end;
            continue;
        }
        if c == '"' || c == '\'' {
            match chars[i + 1..].iter().position(|&d| d == c) {
                Some(offset) => {
                    out.push(chars[i + 1..i + 1 + offset].iter().collect());
                    i += offset + 2;
                }
                None => i += 1,
            }
            continue;
        }
        let start = i;
        while i < chars.len() && !chars[i].is_whitespace() && chars[i] != '"' && chars[i] != '\'' {
            i += 1;
        }
        out.push(chars[start..i].iter().collect());
    }
    out
}

/// `[Image 12]` (case-insensitive, any whitespace run) starting at `start`: its end index.
fn image_reference_end(chars: &[char], start: usize) -> Option<usize> {
    let word: String = chars.get(start..start + 6)?.iter().collect();
    if !word.eq_ignore_ascii_case("[image") {
        return None;
    }
    let mut i = start + 6;
    let spaces = i;
    while i < chars.len() && chars[i].is_whitespace() {
        i += 1;
    }
    let digits = i;
    while i < chars.len() && chars[i].is_ascii_digit() {
        i += 1;
    }
    (i > digits && digits > spaces && chars.get(i) == Some(&']')).then_some(i + 1)
}

/// Positions of `$N` placeholders (N ≥ 1) with their byte ranges.
fn positional_placeholders(template: &str) -> Vec<(usize, usize, usize)> {
    let bytes = template.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'$' {
            let start = i;
            let mut j = i + 1;
            while j < bytes.len() && bytes[j].is_ascii_digit() {
                j += 1;
            }
            if j > i + 1 {
                if let Ok(position) = template[i + 1..j].parse::<usize>() {
                    found.push((start, j, position));
                }
                i = j;
                continue;
            }
        }
        i += 1;
    }
    found
}

/// Expands a command template with its arguments, as OpenCode does:
/// - `$1…$N` take the quote-aware split arguments; the highest position swallows the rest
///   (joined by spaces), a position without an argument becomes empty;
/// - `$ARGUMENTS` takes the raw argument text;
/// - a template with neither gets `"\n\n" + arguments` appended when there are arguments.
pub fn expand_template(template: &str, arguments: &str) -> String {
    let placeholders = positional_placeholders(template);
    let uses_arguments = template.contains("$ARGUMENTS");
    let mut text = template.to_string();
    if !placeholders.is_empty() {
        let args = split_arguments(arguments);
        let last = placeholders.iter().map(|p| p.2).max().unwrap_or(0);
        let mut expanded = String::with_capacity(template.len() + arguments.len());
        let mut cursor = 0;
        for (start, end, position) in placeholders {
            expanded.push_str(&template[cursor..start]);
            let index = position.saturating_sub(1);
            if position >= 1 && index < args.len() {
                if position == last {
                    expanded.push_str(&args[index..].join(" "));
                } else {
                    expanded.push_str(&args[index]);
                }
            }
            cursor = end;
        }
        expanded.push_str(&template[cursor..]);
        text = expanded;
    }
    if uses_arguments {
        text = text.replace("$ARGUMENTS", arguments);
    }
    if placeholders_absent(template) && !uses_arguments && !arguments.trim().is_empty() {
        text = format!("{text}\n\n{arguments}");
    }
    text
}

fn placeholders_absent(template: &str) -> bool {
    positional_placeholders(template).is_empty()
}

/// The objective of a goal started with a slash command: the expanded template, or the raw
/// invocation when the template is missing or expands to nothing.
pub fn command_objective(invocation: &SlashInvocation, template: Option<&str>) -> String {
    let raw = || {
        if invocation.arguments.is_empty() {
            format!("/{}", invocation.name)
        } else {
            format!("/{} {}", invocation.name, invocation.arguments)
        }
    };
    match template {
        Some(template) if !template.trim().is_empty() => {
            let expanded = expand_template(template, &invocation.arguments);
            if expanded.trim().is_empty() {
                raw()
            } else {
                expanded.trim().to_string()
            }
        }
        _ => raw(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn slash_parsing() {
        assert_eq!(
            parse_slash("  /review src/lib.rs\nand tests"),
            Some(SlashInvocation { name: "review".into(), arguments: "src/lib.rs\nand tests".into() })
        );
        assert_eq!(parse_slash("/init"), Some(SlashInvocation { name: "init".into(), arguments: String::new() }));
        for plain in ["review /x", "/", "/ x", "//comment", ""] {
            assert_eq!(parse_slash(plain), None, "{plain}");
        }
    }

    #[test]
    fn quote_aware_split() {
        assert_eq!(split_arguments(r#"a "b c" 'd e' f"#), ["a", "b c", "d e", "f"]);
        assert_eq!(split_arguments("  x\n\ty  "), ["x", "y"]);
        assert_eq!(split_arguments(r#"say "hi there"#), ["say", "hi", "there"], "unpaired quote skipped");
        assert_eq!(split_arguments("see [Image 1] now"), ["see", "[Image 1]", "now"]);
        assert_eq!(split_arguments(r#"""#), Vec::<String>::new());
        assert_eq!(split_arguments(r#"a"b c"d"#), ["a", "b c", "d"]);
    }

    #[test]
    fn arguments_placeholder_takes_raw_text() {
        assert_eq!(expand_template("Review: $ARGUMENTS!", " a  \"b\" "), "Review:  a  \"b\" !");
        assert_eq!(expand_template("$ARGUMENTS / $ARGUMENTS", "x"), "x / x");
    }

    #[test]
    fn positional_highest_swallows_rest() {
        assert_eq!(
            expand_template("Fix $1 in $2", r#"bug "src/a b.rs" quickly please"#),
            "Fix bug in src/a b.rs quickly please"
        );
        assert_eq!(expand_template("$2 then $1", "first second third"), "second third then first");
        assert_eq!(expand_template("A=$1 B=$2 C=$3", "only"), "A=only B= C=");
        assert_eq!(expand_template("cost $10 for $1", "x"), "cost  for x", "a position past the arguments is empty");
    }

    #[test]
    fn positional_and_arguments_together_like_opencode() {
        assert_eq!(expand_template("$1 :: $ARGUMENTS", "a b"), "a b :: a b");
    }

    #[test]
    fn no_placeholder_appends_arguments() {
        assert_eq!(expand_template("Do the thing.", "carefully now"), "Do the thing.\n\ncarefully now");
        assert_eq!(expand_template("Do the thing.", "   "), "Do the thing.");
    }

    #[test]
    fn objective_falls_back_to_invocation() {
        let call = SlashInvocation { name: "ship".into(), arguments: "v2".into() };
        assert_eq!(command_objective(&call, None), "/ship v2");
        assert_eq!(command_objective(&call, Some("  ")), "/ship v2");
        assert_eq!(command_objective(&call, Some("$2")), "/ship v2", "expands to nothing");
        assert_eq!(command_objective(&call, Some("Release $1")), "Release v2");
    }

    #[test]
    fn command_list_is_tolerant() {
        let list = command_list(&json!([{"name": "a", "template": "t"}, {"name": 3}, {"name": "b"}, "x"])).unwrap();
        assert_eq!(
            list,
            [
                CommandInfo { name: "a".into(), template: "t".into() },
                CommandInfo { name: "b".into(), template: String::new() }
            ]
        );
        assert!(command_list(&json!({})).is_none());
    }
}
