//! `tracing` → the host's logger callbacks (and stderr when `SESSION_GOAL_LOG` is set). The core
//! never puts prompts, model output or credentials into log fields, so lines are safe to forward.

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::{Arc, Mutex, OnceLock};

use crate::callbacks::LoggerCallback;
use napi::bindgen_prelude::*;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::prelude::*;

/// Registered JS loggers, each with the id of the JavaScript environment it belongs to (held
/// only to clone the list). The tracing subscriber is process-wide, so every runtime's lines
/// reach every live environment's loggers; an environment's loggers are dropped when it ends.
#[derive(Default)]
struct Loggers(Mutex<Vec<(u64, Arc<LoggerCallback>)>>);

fn loggers() -> &'static Loggers {
    static LOGGERS: OnceLock<Loggers> = OnceLock::new();
    LOGGERS.get_or_init(Loggers::default)
}

/// Adds a host logger of the environment `env_id`; every runtime's lines reach every registered logger.
pub fn add_js_logger(env_id: u64, callback: LoggerCallback) {
    if let Ok(mut list) = loggers().0.lock() {
        list.push((env_id, Arc::new(callback)));
    }
}

/// Drops the loggers of an environment that ended (they would call into a dead environment).
pub fn remove_js_loggers(env_id: u64) {
    if let Ok(mut list) = loggers().0.lock() {
        list.retain(|(owner, _)| *owner != env_id);
    }
}

struct Line(String);

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?} ");
        } else {
            let _ = write!(self.0, "{}={:?} ", field.name(), value);
        }
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            let _ = write!(self.0, "{value} ");
        } else {
            let _ = write!(self.0, "{}={} ", field.name(), value);
        }
    }
}

struct ForwardLayer {
    stderr: bool,
}

impl<S: Subscriber> Layer<S> for ForwardLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let level = *event.metadata().level();
        // Debug lines are ours only: the HTTP stack's trace would drown them.
        if level > Level::INFO && !(self.stderr && level <= Level::DEBUG && event.metadata().target() == "session_goal")
        {
            return;
        }
        let mut line = Line(String::new());
        event.record(&mut line);
        let text = format!("[{}] {}", event.metadata().target(), line.0.trim_end());
        let level_name = level.as_str().to_ascii_lowercase();
        if self.stderr {
            // Epoch milliseconds first, so lines from several processes can be merged in order.
            let at_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
            // Not eprintln!: it panics when stderr is gone (a closed pipe), and a log line is not worth that.
            let _ = writeln!(std::io::stderr().lock(), "{at_ms} {level_name} {text}");
        }
        if level > Level::INFO {
            return;
        }
        let list = match loggers().0.lock() {
            Ok(list) => list.clone(),
            Err(_) => return,
        };
        for (_, logger) in list {
            let args = FnArgs::from((level_name.clone(), text.clone()));
            // A throwing logger must never crash the host: catch, and drop the line.
            napi::bindgen_prelude::spawn(async move {
                let _ = logger.call_async_catch(args).await;
            });
        }
    }
}

/// Installs the forwarding subscriber once per process.
pub fn init() {
    static INIT: OnceLock<()> = OnceLock::new();
    INIT.get_or_init(|| {
        let stderr = std::env::var_os("SESSION_GOAL_LOG").is_some_and(|v| !v.is_empty());
        let _ = tracing_subscriber::registry().with(ForwardLayer { stderr }).try_init();
    });
}
