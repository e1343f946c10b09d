//! `tracing` → the host's logger callbacks (and stderr when `SESSION_GOAL_LOG` is set). The core
//! never puts prompts, model output or credentials into log fields, so lines are safe to forward.

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::callbacks::LoggerCallback;
use napi::bindgen_prelude::*;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::prelude::*;
use tracing_subscriber::registry::LookupSpan;

/// One registered JS logger: the environment it belongs to and the runtime whose lines it gets.
struct Registered {
    env_id: u64,
    runtime_id: u64,
    logger: Arc<LoggerCallback>,
}

/// Registered JS loggers (held only to pick the receivers of a line). The tracing subscriber is
/// process-wide, so a line finds its runtime through the span it was logged in (see
/// [`runtime_span`]); an environment's loggers are dropped when it ends.
#[derive(Default)]
struct Loggers(Mutex<Vec<Registered>>);

fn loggers() -> &'static Loggers {
    static LOGGERS: OnceLock<Loggers> = OnceLock::new();
    LOGGERS.get_or_init(Loggers::default)
}

/// The span field that carries a runtime's log identity.
const RUNTIME_FIELD: &str = "log_runtime";

/// Gives a new runtime of the environment `env_id` its log identity: registers its logger (if
/// any) and returns the span to start the runtime in. Lines logged inside that span (the core
/// runs every task of the runtime in it) reach this logger only; a runtime without a logger is
/// silent.
pub fn runtime_span(env_id: u64, logger: Option<LoggerCallback>) -> tracing::Span {
    static NEXT_RUNTIME: AtomicU64 = AtomicU64::new(1);
    let runtime_id = NEXT_RUNTIME.fetch_add(1, Ordering::Relaxed);
    if let (Some(logger), Ok(mut list)) = (logger, loggers().0.lock()) {
        list.push(Registered { env_id, runtime_id, logger: Arc::new(logger) });
    }
    // Level ERROR: the span must exist whatever level a line is logged at.
    tracing::error_span!(target: "session_goal", "runtime", log_runtime = runtime_id)
}

/// Drops the loggers of an environment that ended (they would call into a dead environment).
pub fn remove_js_loggers(env_id: u64) {
    if let Ok(mut list) = loggers().0.lock() {
        list.retain(|registered| registered.env_id != env_id);
    }
}

/// The loggers a line goes to. A line of a runtime goes to that runtime's logger only. A line
/// logged outside any runtime's span (rare: a control-object call, or the HTTP stack) cannot be
/// traced to an environment from a worker thread, so it goes to the first logger of each
/// environment: once per environment, never to every runtime's console logger.
fn receivers(runtime_id: Option<u64>) -> Vec<Arc<LoggerCallback>> {
    let Ok(list) = loggers().0.lock() else { return Vec::new() };
    match runtime_id {
        Some(id) => list.iter().filter(|r| r.runtime_id == id).map(|r| r.logger.clone()).collect(),
        None => {
            let mut seen = Vec::new();
            let mut picked = Vec::new();
            for registered in list.iter() {
                if !seen.contains(&registered.env_id) {
                    seen.push(registered.env_id);
                    picked.push(registered.logger.clone());
                }
            }
            picked
        }
    }
}

/// A span's runtime identity, kept in the span's extensions.
struct RuntimeId(u64);

/// Reads the runtime identity off a span's fields.
#[derive(Default)]
struct RuntimeField(Option<u64>);

impl Visit for RuntimeField {
    fn record_u64(&mut self, field: &Field, value: u64) {
        if field.name() == RUNTIME_FIELD {
            self.0 = Some(value);
        }
    }
    fn record_debug(&mut self, _field: &Field, _value: &dyn std::fmt::Debug) {}
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

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for ForwardLayer {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut field = RuntimeField::default();
        attrs.record(&mut field);
        if let (Some(runtime_id), Some(span)) = (field.0, ctx.span(id)) {
            span.extensions_mut().insert(RuntimeId(runtime_id));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
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
        // The innermost runtime span the line was logged in names its runtime.
        let runtime_id = ctx
            .event_scope(event)
            .and_then(|scope| scope.into_iter().find_map(|span| span.extensions().get::<RuntimeId>().map(|r| r.0)));
        for logger in receivers(runtime_id) {
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
