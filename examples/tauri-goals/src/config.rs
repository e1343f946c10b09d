//! The app's settings: from the command line first, else from the environment.

use std::path::PathBuf;
use std::time::Duration;

use base64::Engine;

/// How to start the app (printed with an unusable setting).
pub const USAGE: &str = "usage: tauri-goals [--opencode-url URL] [--directory DIR] [--data-dir DIR] [--help]
  --opencode-url   OpenCode server (env OPENCODE_URL; default http://127.0.0.1:4096)
  --directory      project directory whose goals are shown (env GOALS_DIRECTORY; default: current)
  --data-dir       OpenChamber data directory (env OPENCHAMBER_DATA_DIR; default ~/.config/openchamber)
env OPENCODE_SERVER_PASSWORD / OPENCODE_SERVER_USERNAME: HTTP basic auth of `opencode serve`
env GOALS_IDLE_QUIET_MS / GOALS_KICKOFF_QUIET_MS: the runtime's quiet windows (default 15000 / 3000)
env TAURI_GOALS_TEST_CONTROL=1: test hooks on stdin/stdout (see src/test_control.rs)";

/// Everything `main` needs to start the runtime and the window.
#[derive(Debug, Clone, PartialEq)]
pub struct AppConfig {
    /// OpenCode's base URL, without a trailing slash.
    pub opencode_url: String,
    /// Headers for every OpenCode request (basic auth); never logged.
    pub headers: Vec<(String, String)>,
    /// The directory whose goals the window lists.
    pub directory: String,
    /// The OpenChamber data directory; `None`: goal-core's default.
    pub data_dir: Option<PathBuf>,
    /// Quiet window after a session turns idle; `None`: goal-core's default.
    pub idle_quiet: Option<Duration>,
    /// Delay before a fresh goal starts; `None`: goal-core's default.
    pub kickoff_quiet: Option<Duration>,
    /// Whether the test hooks of `test_control.rs` run.
    pub test_control: bool,
}

impl AppConfig {
    /// Reads the process's environment and `args` (without the program name).
    pub fn from_env_and_args(args: impl Iterator<Item = String>) -> Result<AppConfig, String> {
        Self::parse(args, |name| std::env::var(name).ok().filter(|value| !value.is_empty()))
    }

    /// Parses `args`, falling back to `env` for what they leave unset.
    pub fn parse(
        mut args: impl Iterator<Item = String>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<AppConfig, String> {
        let (mut url, mut directory, mut data_dir) = (env("OPENCODE_URL"), env("GOALS_DIRECTORY"), None);
        while let Some(flag) = args.next() {
            let slot = match flag.as_str() {
                "--opencode-url" => &mut url,
                "--directory" => &mut directory,
                "--data-dir" => &mut data_dir,
                other => return Err(format!("unknown argument {other:?}")),
            };
            *slot = Some(args.next().ok_or_else(|| format!("{flag} needs a value"))?);
        }
        let url = url.unwrap_or_else(|| "http://127.0.0.1:4096".into());
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(format!("the OpenCode URL must start with http:// or https:// (got {url:?})"));
        }
        let directory = match directory {
            Some(directory) => directory,
            None => std::env::current_dir()
                .map_err(|e| format!("no directory given and no current one: {e}"))?
                .display()
                .to_string(),
        };
        let mut headers = Vec::new();
        if let Some(password) = env("OPENCODE_SERVER_PASSWORD") {
            let user = env("OPENCODE_SERVER_USERNAME").unwrap_or_else(|| "opencode".into());
            let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
            headers.push(("authorization".to_string(), format!("Basic {token}")));
        }
        Ok(AppConfig {
            opencode_url: url.trim_end_matches('/').to_string(),
            headers,
            directory,
            data_dir: data_dir.or_else(|| env("OPENCHAMBER_DATA_DIR")).map(PathBuf::from),
            idle_quiet: millis(&env, "GOALS_IDLE_QUIET_MS")?,
            kickoff_quiet: millis(&env, "GOALS_KICKOFF_QUIET_MS")?,
            test_control: env("TAURI_GOALS_TEST_CONTROL").as_deref() == Some("1"),
        })
    }
}

fn millis(env: &impl Fn(&str) -> Option<String>, name: &str) -> Result<Option<Duration>, String> {
    env(name)
        .map(|value| {
            value
                .trim()
                .parse::<u64>()
                .map(Duration::from_millis)
                .map_err(|_| format!("{name} must be a number of milliseconds (got {value:?})"))
        })
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str], env: &[(&str, &str)]) -> Result<AppConfig, String> {
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        AppConfig::parse(args.iter().map(|a| a.to_string()), |name| {
            env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn arguments_win_over_the_environment() {
        let config = parse(
            &["--opencode-url", "http://127.0.0.1:5000/", "--directory", "/p"],
            &[("OPENCODE_URL", "http://other:1"), ("GOALS_DIRECTORY", "/q"), ("GOALS_IDLE_QUIET_MS", "200")],
        )
        .unwrap();
        assert_eq!((config.opencode_url.as_str(), config.directory.as_str()), ("http://127.0.0.1:5000", "/p"));
        assert_eq!(config.idle_quiet, Some(Duration::from_millis(200)));
        assert_eq!((config.kickoff_quiet, config.test_control, config.headers.len()), (None, false, 0));
    }

    #[test]
    fn a_password_becomes_basic_auth_as_for_opencode_serve() {
        let config = parse(&["--directory", "/p"], &[("OPENCODE_SERVER_PASSWORD", "secret")]).unwrap();
        // base64("opencode:secret")
        assert_eq!(config.headers, [("authorization".to_string(), "Basic b3BlbmNvZGU6c2VjcmV0".to_string())]);
    }

    #[test]
    fn unusable_settings_are_refused_with_their_name() {
        assert!(parse(&["--directory"], &[]).unwrap_err().contains("--directory needs a value"));
        assert!(parse(&["--verbose"], &[]).unwrap_err().contains("unknown argument"));
        assert!(parse(&["--opencode-url", "localhost:4096"], &[]).unwrap_err().contains("http://"));
        assert!(parse(&["--directory", "/p"], &[("GOALS_KICKOFF_QUIET_MS", "soon")])
            .unwrap_err()
            .contains("GOALS_KICKOFF_QUIET_MS"));
    }
}
