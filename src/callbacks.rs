//! The one module that owns host callback types and how they are called: weak references (a
//! callback never keeps Node alive), `call_async_catch` (a JS throw is an error value, not a
//! crash), and what a callback returns settled on the JS thread, so a sync value, a promise, a
//! throw and a rejection are all handled here (a throw or rejection is an unavailable service,
//! never an unhandled rejection). The package entry only adapts OpenChamber's option shapes.

use std::cell::Cell;
use std::rc::Rc;

use napi::bindgen_prelude::*;
use napi::sys;
use napi::threadsafe_function::ThreadsafeFunction;
use serde_json::Value;
use tokio::sync::oneshot;

use goal_core::{BoxFuture, Endpoint, RequestTarget};
use goal_core::{Notifier, SmallModel, SmallModelError, SmallModelQuery, SmallModelReply};

/// A host callback as the option structs take it: called with `Args`, weakly referenced (it
/// never keeps Node alive), its return value settled by [`HostReturn`].
pub type HostCallback<Args> = ThreadsafeFunction<Args, HostReturn, Args, Status, false, true>;
/// `buildOpenCodeUrl(path, prefix)`.
pub type UrlCallback = HostCallback<FnArgs<(String, String)>>;
/// `getOpenCodeAuthHeaders()`.
pub type HeadersCallback = HostCallback<()>;
/// `generateSmallModelText(request)`.
pub type ModelCallback = HostCallback<Value>;
/// `emitGoalNotification(event)`.
pub type NotifyCallback = HostCallback<Value>;
/// `logger(level, message)`.
pub type LoggerCallback = HostCallback<FnArgs<(String, String)>>;

/// A throw or rejection, with the fields OpenChamber's services put on their errors
/// (`statusCode` or `status`, and `code`).
#[derive(Debug, Default)]
pub struct HostFailure {
    /// HTTP-like status, when the error carried one.
    pub status: Option<u16>,
    /// Machine code, when the error carried one.
    pub code: String,
}

/// What a host callback returned: a plain value, or what its promise settles to. Read on the JS
/// thread, so a rejection's `statusCode` survives (napi's own `Promise` keeps only the message),
/// and a rejected promise always has a handler. Dropping it unread is fine.
pub struct HostReturn {
    settled: oneshot::Receiver<std::result::Result<Value, HostFailure>>,
    was_promise: bool,
}

impl HostReturn {
    /// The settled value; `Err` for a rejection (or a runtime that went away first).
    pub async fn settled(self) -> std::result::Result<Value, HostFailure> {
        self.settled.await.unwrap_or_else(|_| Err(HostFailure::default()))
    }

    /// Like [`settled`](Self::settled), for a callback whose contract is to return a promise: a
    /// plain value is a broken service, not an answer.
    pub async fn promised(self) -> std::result::Result<Value, HostFailure> {
        if !self.was_promise {
            return Err(HostFailure::default());
        }
        self.settled().await
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
        // SAFETY: checked to be a promise above.
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
        Ok(Self { settled: receiver, was_promise: true })
    }
}

/// OpenCode location resolved through the host's `buildOpenCodeUrl` / `getOpenCodeAuthHeaders`.
pub struct HostEndpoint {
    build_url: UrlCallback,
    headers: Option<HeadersCallback>,
}

impl HostEndpoint {
    pub fn new(build_url: UrlCallback, headers: Option<HeadersCallback>) -> Self {
        Self { build_url, headers }
    }
}

fn header_pairs(value: &Value) -> Vec<(String, String)> {
    value
        .as_object()
        .map(|object| {
            object.iter().filter_map(|(name, value)| value.as_str().map(|v| (name.clone(), v.to_string()))).collect()
        })
        .unwrap_or_default()
}

impl Endpoint for HostEndpoint {
    fn resolve<'a>(&'a self, path: &'a str) -> BoxFuture<'a, std::result::Result<RequestTarget, String>> {
        Box::pin(async move {
            let url = self
                .build_url
                .call_async_catch(FnArgs::from((path.to_string(), String::new())))
                .await
                .map_err(|_| "buildOpenCodeUrl failed".to_string())?
                .settled()
                .await
                .map_err(|_| "buildOpenCodeUrl failed".to_string())?;
            let Value::String(url) = url else { return Err("buildOpenCodeUrl returned no URL".into()) };
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err("buildOpenCodeUrl returned a non-HTTP URL".into());
            }
            let headers = match &self.headers {
                Some(callback) => match callback.call_async_catch(()).await {
                    Ok(returned) => returned.settled().await.map(|v| header_pairs(&v)).unwrap_or_default(),
                    Err(_) => Vec::new(),
                },
                None => Vec::new(),
            };
            Ok(RequestTarget { url, headers })
        })
    }

    fn key(&self) -> String {
        // Runtimes built from host callbacks share one OpenChamber server: one group.
        "host:buildOpenCodeUrl".to_string()
    }
}

/// The host's small-model service: resolves to `{text, providerID, modelID}` or
/// `{error: {statusCode?, code?}}`; a throw or rejection is a failure with the error's status,
/// and a value that is not a promise is unavailable.
pub struct HostSmallModel {
    callback: ModelCallback,
}

impl HostSmallModel {
    /// Wraps the host's `generateSmallModelText` callback.
    pub fn new(callback: ModelCallback) -> Self {
        Self { callback }
    }
}

fn status_of(error: &Value) -> Option<u16> {
    ["statusCode", "status"]
        .iter()
        .filter_map(|key| error.get(*key).and_then(Value::as_f64))
        .find(|n| n.is_finite() && *n > 0.0 && *n < 1000.0)
        .map(|n| n as u16)
}

impl SmallModel for HostSmallModel {
    fn generate(
        &self,
        request: SmallModelQuery,
    ) -> BoxFuture<'_, std::result::Result<SmallModelReply, SmallModelError>> {
        Box::pin(async move {
            let returned =
                self.callback.call_async_catch(request.to_value()).await.map_err(|_| SmallModelError::unavailable())?;
            let value = returned
                .promised()
                .await
                .map_err(|failure| SmallModelError { status: failure.status, code: failure.code })?;
            if let Some(error) = value.get("error") {
                return Err(SmallModelError {
                    status: status_of(error),
                    code: error.get("code").and_then(Value::as_str).unwrap_or("").to_string(),
                });
            }
            let text = value.get("text").and_then(Value::as_str).ok_or_else(SmallModelError::unavailable)?;
            let field = |key: &str| value.get(key).and_then(Value::as_str).unwrap_or("").to_string();
            Ok(SmallModelReply {
                text: text.trim().to_string(),
                provider_id: field("providerID"),
                model_id: field("modelID"),
                tokens: goal_core::usage_total(value.get("usage")),
            })
        })
    }
}

/// The host's `emitGoalNotification`: fire and forget; a throw or rejection is logged, never fatal.
pub struct HostNotifier {
    callback: std::sync::Arc<NotifyCallback>,
}

impl HostNotifier {
    pub fn new(callback: NotifyCallback) -> Self {
        Self { callback: std::sync::Arc::new(callback) }
    }
}

impl Notifier for HostNotifier {
    fn notify(&self, event: Value) {
        let callback = self.callback.clone();
        napi::bindgen_prelude::spawn(async move {
            let failed = match callback.call_async_catch(event).await {
                Ok(returned) => returned.settled().await.is_err(),
                Err(_) => true,
            };
            if failed {
                tracing::warn!(target: "session_goal", "emitGoalNotification failed");
            }
        });
    }
}
