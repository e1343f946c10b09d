//! What the runtimes of one JavaScript environment share. Node loads the addon once per
//! process, but the main thread, every `worker_threads` Worker and every Electron context is an
//! environment of its own: a process-wide static would hand one environment's sessions to
//! another's runtimes and keep a terminated Worker's runtimes running. So the shared context
//! (intake, pools, write slots, dispatch claims) is the addon's instance data of the
//! environment, and the environment's cleanup hook stops its runtimes: timers are cancelled,
//! and its OpenCode clients refuse every request from then on (a tick already in flight ends on
//! an error instead of reaching the server again). A request already resolved but not yet on a
//! connection (waiting for a pooled connection or a connect) gives up too, and the hook waits
//! (briefly, bounded) until every request in flight has given up: once the environment has
//! ended, none of its requests is written to a connection any more. Its event followers
//! (`event_follower.rs`) are kept here until they are closed, and stopped with it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

use napi::bindgen_prelude::*;
use tokio::sync::watch;

use goal_core::EventFollower;
use goal_core::SharedContext;
use goal_core::{BoxFuture, Endpoint, RequestTarget};

use crate::js_helpers::JsHelpers;

/// A runtime that belongs to an environment and is stopped when the environment ends.
pub(crate) trait EnvRuntime: Send + Sync {
    /// Stops the runtime without waiting (the environment is going away and cannot wait).
    fn stop_in_background(&self, runtime: &tokio::runtime::Handle);
}

impl EnvRuntime for goal_core::GoalLoop {
    fn stop_in_background(&self, runtime: &tokio::runtime::Handle) {
        let this = self.clone();
        runtime.spawn(async move { this.stop().await });
    }
}

impl EnvRuntime for goal_core::AssistRuntime {
    fn stop_in_background(&self, runtime: &tokio::runtime::Handle) {
        let this = self.clone();
        runtime.spawn(async move { this.stop().await });
    }
}

/// One JavaScript environment's share of the addon.
pub(crate) struct EnvContext {
    /// Tells this environment's loggers apart from the others' in the process-wide list.
    id: u64,
    shared: SharedContext,
    /// Open until the environment is torn down; counts its requests in flight.
    gate: Arc<Gate>,
    /// Held weakly: a runtime the host dropped is not kept alive for the environment's sake.
    runtimes: Mutex<Vec<Weak<dyn EnvRuntime>>>,
    /// Held strongly: a follower runs until it is closed or the environment ends, whether or not
    /// the host still holds its object.
    followers: Mutex<Vec<Arc<EventFollower>>>,
    runtime: tokio::runtime::Handle,
    /// The payload reader's JavaScript helpers, compiled in this environment.
    js: Option<JsHelpers>,
}

impl EnvContext {
    /// The environment's context, created (with its cleanup hook) on first use.
    pub fn of(env: &Env) -> Result<Arc<EnvContext>> {
        if let Some(context) = env.get_instance_data::<Arc<EnvContext>>()? {
            return Ok(context.clone());
        }
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        let context = Arc::new(EnvContext {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            shared: SharedContext::new(),
            gate: Arc::new(Gate { open: watch::Sender::new(true), in_flight: Mutex::new(0), gave_up: Condvar::new() }),
            runtimes: Mutex::new(Vec::new()),
            followers: Mutex::new(Vec::new()),
            runtime: napi::bindgen_prelude::within_runtime_if_available(tokio::runtime::Handle::current),
            js: JsHelpers::new(env),
        });
        env.set_instance_data(context.clone(), (), |_| {})?;
        env.add_env_cleanup_hook(context.clone(), |context| context.close())?;
        Ok(context)
    }

    /// Identifies the environment (for its loggers).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// What this environment's runtimes and clients share.
    pub fn shared(&self) -> &SharedContext {
        &self.shared
    }

    /// The payload reader's helpers (`None` if the engine refused to compile them). Use them only
    /// on this environment's JavaScript thread.
    pub fn js(&self) -> Option<&JsHelpers> {
        self.js.as_ref()
    }

    /// The tokio runtime the environment's runtimes run on (the addon's, shared by the process).
    pub fn runtime(&self) -> &tokio::runtime::Handle {
        &self.runtime
    }

    /// `endpoint`, refusing every request once the environment has ended.
    pub fn guard(&self, endpoint: Arc<dyn Endpoint>) -> Arc<dyn Endpoint> {
        Arc::new(EnvEndpoint { inner: endpoint, gate: self.gate.clone() })
    }

    /// Registers a runtime to stop when the environment ends.
    pub fn adopt(&self, runtime: Weak<dyn EnvRuntime>) {
        if let Ok(mut runtimes) = self.runtimes.lock() {
            runtimes.retain(|r| r.strong_count() > 0);
            runtimes.push(runtime);
        }
    }

    /// Keeps an event follower running until [`release`](Self::release) or the environment's end.
    pub fn keep(&self, follower: Arc<EventFollower>) {
        if let Ok(mut followers) = self.followers.lock() {
            followers.retain(|f| f.is_running());
            followers.push(follower);
        }
    }

    /// Stops an event follower and lets go of it. Idempotent.
    pub fn release(&self, follower: &Arc<EventFollower>) {
        follower.stop();
        if let Ok(mut followers) = self.followers.lock() {
            followers.retain(|f| !Arc::ptr_eq(f, follower));
        }
    }

    /// The environment ended: no request leaves its clients any more, its runtimes and event
    /// followers stop and its loggers are dropped.
    fn close(&self) {
        self.gate.close();
        let runtimes = self.runtimes.lock().map(|mut r| std::mem::take(&mut *r)).unwrap_or_default();
        for runtime in runtimes.iter().filter_map(Weak::upgrade) {
            runtime.stop_in_background(&self.runtime);
        }
        let followers = self.followers.lock().map(|mut f| std::mem::take(&mut *f)).unwrap_or_default();
        for follower in followers {
            follower.stop();
        }
        crate::logging::remove_js_loggers(self.id);
    }
}

/// The longest the environment's end waits for its requests in flight to give up. Each needs
/// only its task polled once on a tokio thread; the bound keeps a request future nobody polls
/// from holding the environment's teardown.
const CLOSE_WAIT: Duration = Duration::from_millis(500);

const ENDED: &str = "the JavaScript environment of this runtime has ended";

/// Whether the environment is open, and how many of its requests are in flight.
struct Gate {
    open: watch::Sender<bool>,
    in_flight: Mutex<usize>,
    gave_up: Condvar,
}

impl Gate {
    fn is_open(&self) -> bool {
        *self.open.borrow()
    }

    /// Closes, then waits (at most `CLOSE_WAIT`) until no request is in flight: each one given up
    /// was dropped before hyper wrote it, or had been written already.
    fn close(&self) {
        self.open.send_replace(false);
        let deadline = Instant::now() + CLOSE_WAIT;
        let Ok(mut in_flight) = self.in_flight.lock() else { return };
        while *in_flight > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            in_flight = match self.gave_up.wait_timeout(in_flight, left) {
                Ok((guard, _)) => guard,
                Err(_) => return,
            };
        }
    }
}

/// One request in flight; dropped with the request.
struct InFlight(Arc<Gate>);

impl InFlight {
    fn new(gate: Arc<Gate>) -> Self {
        if let Ok(mut n) = gate.in_flight.lock() {
            *n += 1;
        }
        Self(gate)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Ok(mut n) = self.0.in_flight.lock() {
            *n -= 1;
            if *n == 0 {
                self.0.gave_up.notify_all();
            }
        }
    }
}

/// What [`EnvEndpoint::closing`] returns: the request counts as in flight until this is dropped
/// (not merely resolved), which the request does after dropping its own future.
struct Closing {
    wait: BoxFuture<'static, ()>,
    _in_flight: InFlight,
}

impl std::future::Future for Closing {
    type Output = ();

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        self.wait.as_mut().poll(cx)
    }
}

/// An endpoint that answers only while its environment lives.
struct EnvEndpoint {
    inner: Arc<dyn Endpoint>,
    gate: Arc<Gate>,
}

impl Endpoint for EnvEndpoint {
    fn resolve<'a>(&'a self, path: &'a str) -> BoxFuture<'a, std::result::Result<RequestTarget, String>> {
        if !self.gate.is_open() {
            return Box::pin(async { Err(ENDED.to_string()) });
        }
        self.inner.resolve(path)
    }

    fn key(&self) -> String {
        self.inner.key()
    }

    fn closing(&self) -> BoxFuture<'static, ()> {
        let mut open = self.gate.open.subscribe();
        let wait = Box::pin(async move {
            // An error would mean the environment's context is gone: ended too.
            let _ = open.wait_for(|open| !*open).await;
        });
        Box::pin(Closing { wait, _in_flight: InFlight::new(self.gate.clone()) })
    }
}
