//! A Tauri 2 desktop shell on `goal-core`, with no Node: it starts a goal runtime against an
//! OpenCode server, forwards the server's `/global/event` stream to it from Rust, and shows the
//! goals of one directory in a plain HTML page (`ui/`) that can pause and resume them.
//!
//! Run: `cargo run --manifest-path examples/tauri-goals/Cargo.toml -- --opencode-url
//! http://127.0.0.1:4096 --directory /path/to/project` (or set `OPENCODE_URL` and
//! `GOALS_DIRECTORY`). `OPENCODE_SERVER_PASSWORD` (and `OPENCODE_SERVER_USERNAME`, default
//! `opencode`) add HTTP basic auth, as for `opencode serve`.

mod config;
mod events;
mod goals;
mod test_control;

use std::sync::Arc;

use goal_core::GoalRuntimeBuilder;
use tauri::Manager;

use crate::config::AppConfig;
use crate::goals::AppState;

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

    let mut runtime = GoalRuntimeBuilder::new(&config.opencode_url).directories([config.directory.clone()]);
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
    let runtime = runtime.start(tokio.handle());
    let state = Arc::new(AppState::new(runtime.clone(), config.directory.clone()));

    let builder = tauri::Builder::default().manage(state.clone());
    // The test hooks (click a button, read the page back) exist only when asked for.
    let builder = if config.test_control {
        builder.invoke_handler(tauri::generate_handler![
            goals::list_goals,
            goals::pause_goal,
            goals::resume_goal,
            test_control::report_page_text
        ])
    } else {
        builder.invoke_handler(tauri::generate_handler![goals::list_goals, goals::pause_goal, goals::resume_goal])
    };
    let app = builder
        .setup(move |app| {
            events::spawn_forwarder(app.handle().clone(), config.opencode_url.clone(), config.headers.clone(), runtime);
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
            let state = handle.state::<Arc<AppState>>().inner().clone();
            tauri::async_runtime::block_on(state.stop());
        }
    });
}
