//! A Tauri 2 desktop shell on `goal-core`, with no Node: it starts a goal runtime against an
//! OpenCode server, has goal-core follow the server's `/global/event` stream into it, and shows the
//! goals of one directory in a plain HTML page (`ui/`) that can pause and resume them.
//!
//! Run: `cargo run --manifest-path examples/tauri-goals/Cargo.toml -- --opencode-url
//! http://127.0.0.1:4096 --directory /path/to/project` (or set `OPENCODE_URL` and
//! `GOALS_DIRECTORY`). `OPENCODE_SERVER_PASSWORD` (and `OPENCODE_SERVER_USERNAME`, default
//! `opencode`) add HTTP basic auth, as for `opencode serve`.

mod config;
mod goals;
mod test_control;

use goal_core::{EmbeddedGoalRuntime, GoalRuntimeBuilder, IntakeEvent, StreamStatus};
use tauri::{AppHandle, Emitter, Manager};

use crate::config::AppConfig;
use crate::goals::AppState;

/// The event the page listens to: reload the list.
const GOALS_CHANGED: &str = "goals-changed";

fn main() {
    if std::env::args().any(|arg| arg == "--help" || arg == "-h") {
        println!("{}", config::USAGE);
        return;
    }
    let config = match AppConfig::from_env_and_args(std::env::args().skip(1)) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("tauri-goals: {message}\n{}", config::USAGE);
            std::process::exit(2);
        }
    };
    // One tokio runtime for Tauri's async commands and for the goal runtime: owned here, so its
    // threads live as long as the app.
    let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
    tauri::async_runtime::set(tokio.handle().clone());
    let runtime = start_runtime(&config, tokio.handle());
    // The setup closure gets a handle: the runtime itself stays here, alive until `main` returns.
    let handle = tokio.handle().clone();

    let app = tauri::Builder::default()
        // The one list of the page's commands; the test hook answers only in test mode.
        .invoke_handler(tauri::generate_handler![
            goals::list_goals,
            goals::pause_goal,
            goals::resume_goal,
            test_control::report_page_text
        ])
        .setup(move |app| {
            let events = follow_events(app.handle().clone(), &runtime, &handle);
            app.manage(AppState::new(runtime, events, config.directory.clone(), config.test_control));
            if config.test_control {
                test_control::spawn(app.handle().clone());
            }
            Ok(())
        })
        .build(tauri::generate_context!())
        .expect("the Tauri app could not be built");
    app.run(|handle, event| {
        if let tauri::RunEvent::Exit = event {
            // Let ticks in flight finish before the process goes.
            tauri::async_runtime::block_on(handle.state::<AppState>().stop());
        }
    });
}

/// The goal runtime for the configured server and directory.
fn start_runtime(config: &AppConfig, tokio: &tokio::runtime::Handle) -> EmbeddedGoalRuntime {
    // The event follower scans the directory on every connection, the first included.
    let mut runtime =
        GoalRuntimeBuilder::new(&config.opencode_url).directories([config.directory.clone()]).recover_on_start(false);
    for (name, value) in &config.headers {
        runtime = runtime.header(name, value);
    }
    if let Some(data_dir) = &config.data_dir {
        runtime = runtime.data_dir(data_dir);
    }
    if let Some(quiet) = config.idle_quiet {
        runtime = runtime.idle_quiet(quiet);
    }
    if let Some(quiet) = config.kickoff_quiet {
        runtime = runtime.kickoff_quiet(quiet);
    }
    runtime.start(tokio)
}

/// Follows OpenCode's event stream into the runtime (goal-core reconnects and recovers), and
/// tells the page to reload when an event may change a row: a session's goal, its live status,
/// its deletion, or a new connection (whatever was missed meanwhile).
fn follow_events(
    app: AppHandle,
    runtime: &EmbeddedGoalRuntime,
    tokio: &tokio::runtime::Handle,
) -> goal_core::EventFollower {
    runtime
        .event_follower()
        .on_event(move |event| {
            let changes_a_row = matches!(
                event,
                IntakeEvent::SessionUpdated { .. }
                    | IntakeEvent::Status { .. }
                    | IntakeEvent::SessionDeleted { .. }
                    | IntakeEvent::Connected
            );
            if changes_a_row {
                let _ = app.emit(GOALS_CHANGED, ());
            }
        })
        .on_status(|status| match status {
            StreamStatus::Connected => eprintln!("tauri-goals: following OpenCode's event stream"),
            StreamStatus::Disconnected { reason, retry_in } => {
                eprintln!("tauri-goals: OpenCode's event stream ended ({reason}); reconnecting in {retry_in:?}")
            }
        })
        .start(tokio)
}
