//! What a host callback returned, read on the JavaScript thread: a plain value, or what its
//! promise settles to (a rejection keeps its `statusCode` and `code`).
//!
//! A promise is settled through one small JavaScript function per environment, compiled once:
//! it attaches two plain JavaScript handlers that call one native `settle` function with a
//! token, and the token finds the waiting Rust sender. napi-rs's own `PromiseRaw::then` makes a
//! native function per handler and wraps it with a finalizer; V8 keeps wrapped objects through
//! its young collections, so each call's two handlers were promoted and freed only by a full
//! collection. Measured with `node --trace-gc bench/sections/scale.mjs`, 10,000 audits grew the
//! old space by megabytes between full collections, and the boxed handlers waited in native
//! memory for their finalizers. Plain handlers die young.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::c_void;
use std::ptr;
use std::rc::Rc;

use napi::bindgen_prelude::*;
use napi::sys;
use serde_json::Value;
use tokio::sync::oneshot;

/// A throw or rejection, with the fields OpenChamber's services put on their errors
/// (`statusCode` or `status`, and `code`).
#[derive(Debug, Default)]
pub struct HostFailure {
    /// HTTP-like status, when the error carried one.
    pub status: Option<u16>,
    /// Machine code, when the error carried one.
    pub code: String,
}

/// What a callback's promise settled to.
type Settled = std::result::Result<Value, HostFailure>;

/// What a host callback returned: a plain value, or what its promise settles to. Read on the JS
/// thread, so a rejection's `statusCode` survives (napi's own `Promise` keeps only the message),
/// and a rejected promise always has a handler. Dropping it unread is fine.
pub struct HostReturn {
    settled: oneshot::Receiver<Settled>,
    was_promise: bool,
}

impl HostReturn {
    /// The settled value; `Err` for a rejection (or an environment that went away first).
    pub async fn settled(self) -> Settled {
        self.settled.await.unwrap_or_else(|_| Err(HostFailure::default()))
    }

    /// Like [`settled`](Self::settled), for a callback whose contract is to return a promise: a
    /// plain value is a broken service, not an answer.
    pub async fn promised(self) -> Settled {
        if !self.was_promise {
            return Err(HostFailure::default());
        }
        self.settled().await
    }
}

impl FromNapiValue for HostReturn {
    unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> Result<Self> {
        let (sender, receiver) = oneshot::channel();
        let mut is_promise = false;
        // SAFETY: plain N-API call on the JS thread.
        unsafe { sys::napi_is_promise(env, value, &mut is_promise) };
        if !is_promise {
            let _ = sender.send(Ok(json_of(env, value)));
            return Ok(Self { settled: receiver, was_promise: false });
        }
        // SAFETY: on the JS thread of `env`, with a value that is a promise.
        if let Err(sender) = unsafe { watch(env, value, sender) } {
            // SAFETY: as above.
            unsafe { settle_with_native_handlers(env, value, sender)? };
        }
        Ok(Self { settled: receiver, was_promise: true })
    }
}

/// A JS value as JSON; anything JSON cannot hold (undefined, a function, a throwing getter) is null.
fn json_of(env: sys::napi_env, value: sys::napi_value) -> Value {
    // SAFETY: called on the JS thread with the env the value belongs to.
    unsafe { Value::from_napi_value(env, value) }.unwrap_or(Value::Null)
}

fn failure_of(reason: Unknown) -> HostFailure {
    let Ok(ValueType::Object) = reason.get_type() else { return HostFailure::default() };
    let Ok(object) = Object::from_unknown(reason) else { return HostFailure::default() };
    let status = ["statusCode", "status"]
        .iter()
        .filter_map(|key| object.get::<Unknown>(key).ok().flatten())
        .filter_map(|value| f64::from_unknown(value).ok())
        .find(|n| n.is_finite() && *n > 0.0 && *n < 1000.0)
        .map(|n| n as u16);
    let code =
        object.get::<Unknown>("code").ok().flatten().and_then(|v| String::from_unknown(v).ok()).unwrap_or_default();
    HostFailure { status, code }
}

/// `watch(promise, token)`, made by calling this with the native `settle`.
const WATCH_SCRIPT: &str = r#"(function (settle) {
  return function watch(promise, token) {
    promise.then(function (value) { settle(token, true, value) }, function (reason) { settle(token, false, reason) })
  }
})"#;

/// One environment's `watch` function and the senders waiting on its promises.
struct Watcher {
    watch: sys::napi_ref,
    next_token: Cell<u64>,
    waiting: RefCell<HashMap<u64, oneshot::Sender<Settled>>>,
    /// The size at which senders whose reader gave up (a caller's deadline passed before the
    /// host's promise settled) are dropped.
    prune_at: Cell<usize>,
}

const FIRST_PRUNE_AT: usize = 64;

thread_local! {
    /// This thread's environments (one, or a few under Electron) and their watchers; `None` for
    /// an environment whose engine refused the script. An environment's entry is removed by its
    /// cleanup hook.
    static WATCHERS: RefCell<Vec<(usize, Option<Rc<Watcher>>)>> = const { RefCell::new(Vec::new()) };
}

fn watcher_of(env: sys::napi_env) -> Option<Rc<Watcher>> {
    let key = env as usize;
    if let Some(known) = WATCHERS.with(|all| all.borrow().iter().find(|(e, _)| *e == key).map(|(_, w)| w.clone())) {
        return known;
    }
    // SAFETY: on the JS thread of `env` (every caller is).
    let made = unsafe { make_watcher(env) }.map(Rc::new);
    WATCHERS.with(|all| all.borrow_mut().push((key, made.clone())));
    // SAFETY: as above; the hook's argument is only compared, never dereferenced.
    unsafe { sys::napi_add_env_cleanup_hook(env, Some(forget_environment), key as *mut c_void) };
    made
}

unsafe extern "C" fn forget_environment(key: *mut c_void) {
    let _ = WATCHERS.try_with(|all| {
        if let Ok(mut all) = all.try_borrow_mut() {
            all.retain(|(e, _)| *e != key as usize);
        }
    });
}

/// Compiles the script and calls it with a fresh native `settle`; `None` if any step fails.
unsafe fn make_watcher(env: sys::napi_env) -> Option<Watcher> {
    const NAME: &[u8] = b"settle";
    let ok = sys::Status::napi_ok;
    let (mut source, mut factory, mut settle_fn, mut receiver, mut watch_fn, mut reference) =
        (ptr::null_mut(), ptr::null_mut(), ptr::null_mut(), ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
    // SAFETY: plain N-API calls on the JS thread of `env`; a failure leaves nothing to free.
    unsafe {
        let made =
            sys::napi_create_string_utf8(env, WATCH_SCRIPT.as_ptr().cast(), WATCH_SCRIPT.len() as isize, &mut source)
                == ok
                && sys::napi_run_script(env, source, &mut factory) == ok
                && sys::napi_create_function(
                    env,
                    NAME.as_ptr().cast(),
                    NAME.len() as isize,
                    Some(settle),
                    ptr::null_mut(),
                    &mut settle_fn,
                ) == ok
                && sys::napi_get_undefined(env, &mut receiver) == ok
                && sys::napi_call_function(env, receiver, factory, 1, &settle_fn, &mut watch_fn) == ok
                && sys::napi_create_reference(env, watch_fn, 1, &mut reference) == ok;
        if !made {
            clear_pending_exception(env);
            return None;
        }
    }
    Some(Watcher {
        watch: reference,
        next_token: Cell::new(1),
        waiting: RefCell::new(HashMap::new()),
        prune_at: Cell::new(FIRST_PRUNE_AT),
    })
}

/// Settles `sender` through the environment's watcher. `Err(sender)` when the environment has
/// none (its engine refused the script); the caller then uses native handlers.
unsafe fn watch(
    env: sys::napi_env,
    promise: sys::napi_value,
    sender: oneshot::Sender<Settled>,
) -> std::result::Result<(), oneshot::Sender<Settled>> {
    let Some(watcher) = watcher_of(env) else { return Err(sender) };
    let token = watcher.next_token.get();
    watcher.next_token.set(token + 1);
    if let Ok(mut waiting) = watcher.waiting.try_borrow_mut() {
        if waiting.len() >= watcher.prune_at.get() {
            waiting.retain(|_, waiter| !waiter.is_closed());
            watcher.prune_at.set((waiting.len() * 2).max(FIRST_PRUNE_AT));
        }
        waiting.insert(token, sender);
    }
    let ok = sys::Status::napi_ok;
    let (mut watch_fn, mut receiver, mut token_value, mut ignored) =
        (ptr::null_mut(), ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
    // SAFETY: plain N-API calls on the JS thread of the env that owns the reference.
    let called = unsafe {
        sys::napi_get_reference_value(env, watcher.watch, &mut watch_fn) == ok
            && sys::napi_get_undefined(env, &mut receiver) == ok
            && sys::napi_create_double(env, token as f64, &mut token_value) == ok
            && sys::napi_call_function(env, receiver, watch_fn, 2, [promise, token_value].as_ptr(), &mut ignored) == ok
    };
    if !called {
        // A `then` that throws: the sender is dropped and the call reads as unavailable.
        // SAFETY: as above.
        unsafe { clear_pending_exception(env) };
        if let Ok(mut waiting) = watcher.waiting.try_borrow_mut() {
            waiting.remove(&token);
        }
    }
    Ok(())
}

/// The native end of `watch`: `settle(token, fulfilled, valueOrReason)`.
unsafe extern "C" fn settle(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let mut argc = 3usize;
    let mut argv = [ptr::null_mut(); 3];
    let (mut token, mut fulfilled) = (0f64, false);
    // SAFETY: N-API calls on the JS thread that called this function, with its callback info.
    let read = unsafe {
        sys::napi_get_cb_info(env, info, &mut argc, argv.as_mut_ptr(), ptr::null_mut(), ptr::null_mut())
            == sys::Status::napi_ok
            && argc >= 3
            && sys::napi_get_value_double(env, argv[0], &mut token) == sys::Status::napi_ok
            && sys::napi_get_value_bool(env, argv[1], &mut fulfilled) == sys::Status::napi_ok
    };
    let sender = read
        .then(|| watcher_of(env))
        .flatten()
        .and_then(|watcher| watcher.waiting.try_borrow_mut().ok().and_then(|mut w| w.remove(&(token as u64))));
    if let Some(sender) = sender {
        let settled = if fulfilled {
            Ok(json_of(env, argv[2]))
        } else {
            // SAFETY: a live value of this env, on its JS thread.
            Err(unsafe { Unknown::from_napi_value(env, argv[2]) }.map(failure_of).unwrap_or_default())
        };
        let _ = sender.send(settled);
    }
    // A throwing getter met while reading the value must not reject the handler's promise (no
    // one handles that rejection).
    // SAFETY: as above.
    unsafe { clear_pending_exception(env) };
    ptr::null_mut()
}

unsafe fn clear_pending_exception(env: sys::napi_env) {
    let mut pending = false;
    let mut exception = ptr::null_mut();
    // SAFETY: plain N-API calls on the JS thread of `env`.
    unsafe {
        if sys::napi_is_exception_pending(env, &mut pending) == sys::Status::napi_ok && pending {
            sys::napi_get_and_clear_last_exception(env, &mut exception);
        }
    }
}

/// napi-rs's handlers, for an environment that refused the script: `then` for the value,
/// `catch` for a rejection (so a rejected promise always has a handler).
unsafe fn settle_with_native_handlers(
    env: sys::napi_env,
    value: sys::napi_value,
    sender: oneshot::Sender<Settled>,
) -> Result<()> {
    // SAFETY: the caller checked that the value is a promise.
    let promise = unsafe { PromiseRaw::<Unknown>::from_napi_value(env, value)? };
    let on_resolve = Rc::new(Cell::new(Some(sender)));
    let on_reject = on_resolve.clone();
    promise
        .then(move |ctx| {
            if let Some(sender) = on_resolve.take() {
                let _ = sender.send(Ok(json_of(ctx.env.raw(), ctx.value.raw())));
            }
            Ok(())
        })?
        .catch(move |ctx: CallbackContext<Unknown>| {
            if let Some(sender) = on_reject.take() {
                let _ = sender.send(Err(failure_of(ctx.value)));
            }
            Ok(())
        })?;
    Ok(())
}
