//! The one module that owns host callback types and how they are called: weak references (a
//! callback never keeps Node alive) and `call_async_catch` (a JS throw is an error value, not a
//! crash). What a callback returns is read on the JS thread by `host_return.rs`, so a sync
//! value, a promise, a throw and a rejection are all handled once (a throw or rejection is an
//! unavailable service, never an unhandled rejection). A callback whose calls must reach
//! JavaScript in the order they were made (an event follower's, [`queue`]) is queued with
//! `call_with_return_value` instead: the same capture of a throw as `call_async_catch`, without a
//! task per call awaiting it. The package entry only adapts OpenChamber's option shapes.

use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use serde_json::Value;

use goal_core::{BoxFuture, Endpoint, RequestTarget};
use goal_core::{Notifier, SmallModel, SmallModelError, SmallModelQuery, SmallModelReply};

use crate::host_return::HostReturn;

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
/// An event follower's `onPayload(payload, directory)`.
pub type PayloadCallback = HostCallback<FnArgs<(Value, String)>>;

/// Queues one call of `callback` without waiting for it: calls reach JavaScript in the order they
/// were queued, whatever thread queued them. A throw is captured (as by `call_async_catch`) and,
/// like whatever the callback returned, dropped; a promise it returned gets a handler
/// ([`HostReturn`]), so a rejection is never unhandled. After the environment has ended the call
/// is refused and nothing happens.
pub fn queue<Args: 'static + JsValuesTupleIntoVec>(callback: &HostCallback<Args>, args: Args) {
    let _ = callback.call_with_return_value(args, ThreadsafeFunctionCallMode::NonBlocking, |_, _| Ok(()));
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

/// How long a notification's promise is waited for (nothing waits on it but its own task, which
/// would otherwise live as long as a promise that never settles).
const NOTIFY_SETTLE_BOUND: std::time::Duration = std::time::Duration::from_secs(30);

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
            let settled = match callback.call_async_catch(event).await {
                Ok(returned) => tokio::time::timeout(NOTIFY_SETTLE_BOUND, returned.settled()).await.ok(),
                Err(_) => Some(Err(Default::default())),
            };
            match settled {
                Some(Ok(_)) => {}
                Some(Err(_)) => tracing::warn!(target: "session_goal", "emitGoalNotification failed"),
                None => {
                    tracing::warn!(target: "session_goal", bound_s = NOTIFY_SETTLE_BOUND.as_secs(), "emitGoalNotification's promise did not settle in time")
                }
            }
        });
    }
}
