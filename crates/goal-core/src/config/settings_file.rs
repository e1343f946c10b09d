//! The switches of OpenChamber's `settings.json`, parsed from its text. Pure: reading the file
//! at fire time is `services::DataDir`'s job.

use serde_json::Value;

/// The switches read from `<dataDir>/settings.json` at fire time. A read error means "on".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SettingsFlags {
    /// `sessionGoalEnabled !== false`.
    pub goal_enabled: bool,
    /// `sessionAssistEnabled !== false`.
    pub assist_enabled: bool,
    /// `sessionRecapEnabled !== false`.
    pub recap_enabled: bool,
    /// `sessionSuggestionEnabled !== false`.
    pub suggestion_enabled: bool,
    /// `notifyOnCompletion !== false`.
    pub notify_on_completion: bool,
}

impl SettingsFlags {
    /// Everything on (missing or unreadable settings).
    pub const DEFAULT: SettingsFlags = SettingsFlags {
        goal_enabled: true,
        assist_enabled: true,
        recap_enabled: true,
        suggestion_enabled: true,
        notify_on_completion: true,
    };

    /// Parses settings text; unparseable text means defaults.
    pub fn parse(text: &str) -> SettingsFlags {
        let Ok(value) = serde_json::from_str::<Value>(text) else {
            return Self::DEFAULT;
        };
        let on = |key: &str| value.get(key) != Some(&Value::Bool(false));
        SettingsFlags {
            goal_enabled: on("sessionGoalEnabled"),
            assist_enabled: on("sessionAssistEnabled"),
            recap_enabled: on("sessionRecapEnabled"),
            suggestion_enabled: on("sessionSuggestionEnabled"),
            notify_on_completion: on("notifyOnCompletion"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_default_on_and_only_false_disables() {
        assert_eq!(SettingsFlags::parse("not json"), SettingsFlags::DEFAULT);
        let flags = SettingsFlags::parse(
            r#"{"sessionGoalEnabled": false, "sessionAssistEnabled": 0, "notifyOnCompletion": "false"}"#,
        );
        assert!(!flags.goal_enabled);
        assert!(flags.assist_enabled);
        assert!(flags.notify_on_completion);
    }
}
