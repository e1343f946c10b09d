//! The event follower object: goal-core's follower of OpenCode's event stream
//! (`crates/goal-core/src/io/event_follower.rs`: the reading, the reconnects and their backoff,
//! the delivery to the runtimes) for a Node host. Thin: its options, its callbacks, its lifetime
//! in the JavaScript environment (`env_context.rs`).

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use goal_core::{millis, EventFollowerBuilder, DEFAULT_ANSWER_TIMEOUT, DEFAULT_FIRST_RETRY};

use crate::callbacks::{self, PayloadCallback};
use crate::env_context::EnvContext;
use crate::options::OpenCodeConnection;
use crate::types::stream_status::{EventStreamStatus, StatusCallback};

/// Options of `createEventFollower`: the server (`openCode`, as the runtimes take it;
/// OpenChamber's flat `buildOpenCodeUrl` and `getOpenCodeAuthHeaders` are moved into it by the
/// package entry, `lib/drop-in.js`), what the host hears, and the reconnect settings.
#[napi(object, object_to_js = false)]
pub struct EventFollowerOptions {
    /// How to reach OpenCode (`fetchTimeoutMs` is not used: see `answerTimeoutMs`).
    pub open_code: Option<OpenCodeConnection>,
    /// Called when a connection is accepted and when the stream ends or cannot be opened (with
    /// why, and when the next attempt is). What it returns is ignored; a throw changes nothing.
    #[napi(ts_type = "(status: EventStreamStatus) => unknown")]
    pub on_status: Option<StatusCallback>,
    /// Called with each payload, in the stream's order, as a host that forwards payloads hands
    /// them on: the `{directory, payload}` envelope unwrapped, `directory` `''` for `global`
    /// events; OpenCode's `sync` twins are left out. What it returns is ignored; a throw changes
    /// nothing.
    #[napi(ts_type = "(payload: Record<string, any>, directory: string) => unknown")]
    pub on_payload: Option<PayloadCallback>,
    /// Whether each event is delivered to every runtime of this JavaScript environment that
    /// talks to the same server (default `true`). `false` for a host that forwards the payloads
    /// of `onPayload` to `processPayload` itself: then no event reaches a runtime from the
    /// follower.
    pub deliver: Option<bool>,
    /// The wait before the first reconnect after a failure, ms (default 250); each failure in a
    /// row doubles it, up to 10 s. A connection that stayed up 10 s starts it over.
    pub first_retry_ms: Option<f64>,
    /// How long one attempt waits for the server's answer before it counts as failed, ms
    /// (default 5000): OpenCode accepts, and never answers, a request that reaches it while it is
    /// still starting.
    pub answer_timeout_ms: Option<f64>,
}

/// A follower of OpenCode's event stream (`GET /global/event`): it reads every directory's
/// events, reconnects after a failure, and by default delivers each event to the runtimes of
/// its JavaScript environment that talk to the same server; every connection makes a goal
/// runtime scan its directories for goals whose events were missed. It runs on the addon's
/// threads until `close()` or until its JavaScript environment ends (letting go of the object
/// does not stop it), and never keeps Node alive.
#[napi]
pub struct EventFollower {
    inner: Arc<goal_core::EventFollower>,
    context: Arc<EnvContext>,
}

/// Starts following OpenCode's event stream; returns at once. It belongs to the calling
/// JavaScript environment (the main thread or one Worker): it delivers to that environment's
/// runtimes only, and stops when the environment ends.
#[napi(catch_unwind)]
pub fn create_event_follower(env: Env, options: EventFollowerOptions) -> Result<EventFollower> {
    let context = EnvContext::of(&env)?;
    let endpoint = OpenCodeConnection::guarded_endpoint(options.open_code, &context)
        .map_err(|failure| crate::failure::thrown(&env, failure))?;
    let mut builder = EventFollowerBuilder::new(context.shared(), endpoint)
        .deliver_to_runtimes(options.deliver.unwrap_or(true))
        .first_retry(millis(options.first_retry_ms, DEFAULT_FIRST_RETRY))
        .answer_timeout(millis(options.answer_timeout_ms, DEFAULT_ANSWER_TIMEOUT));
    if let Some(on_status) = options.on_status {
        builder = builder.on_status(move |status| callbacks::queue(&on_status, EventStreamStatus::from(status)));
    }
    if let Some(on_payload) = options.on_payload {
        builder = builder
            .on_payload(move |payload, directory| callbacks::queue(&on_payload, FnArgs::from((payload, directory))));
    }
    let inner = Arc::new(builder.start(context.runtime()));
    context.keep(inner.clone());
    Ok(EventFollower { inner, context })
}

#[napi]
impl EventFollower {
    /// Stops following: the connection is closed and no attempt is made again (a callback already
    /// on its way to JavaScript may still arrive). Idempotent.
    #[napi(catch_unwind)]
    pub fn close(&self) {
        self.context.release(&self.inner);
    }

    /// Whether it still follows (false once closed, or once its JavaScript environment ended).
    #[napi(catch_unwind)]
    pub fn is_running(&self) -> bool {
        self.inner.is_running()
    }
}
