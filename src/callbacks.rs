//! The one module that owns host callback types and how they are called: weak references (a
//! callback never keeps Node alive), `call_async_catch` (a JS throw is an error value, not a
//! crash), and a throw or rejection treated as an unavailable service.

use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, UnknownReturnValue};
use serde_json::Value;

use goal_core::opencode::{BoxFuture, Endpoint, RequestTarget};
use goal_core::services::{Notifier, SmallModel, SmallModelError, SmallModelReply, SmallModelRequest};

type UrlCallback = ThreadsafeFunction<FnArgs<(String, String)>, String, FnArgs<(String, String)>, Status, false, true>;
type HeadersCallback = ThreadsafeFunction<(), Promise<Value>, (), Status, false, true>;
pub(crate) type ModelCallback = ThreadsafeFunction<Value, Promise<Value>, Value, Status, false, true>;
type NotifyCallback = ThreadsafeFunction<Value, UnknownReturnValue, Value, Status, false, true>;

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
      object
        .iter()
        .filter_map(|(name, value)| value.as_str().map(|v| (name.clone(), v.to_string())))
        .collect()
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
        .map_err(|_| "buildOpenCodeUrl failed".to_string())?;
      if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err("buildOpenCodeUrl returned a non-HTTP URL".into());
      }
      let headers = match &self.headers {
        Some(callback) => match callback.call_async_catch(()).await {
          Ok(promise) => promise.await.map(|v| header_pairs(&v)).unwrap_or_default(),
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

/// The host's small-model service (already adapted to return errors as values).
pub struct HostSmallModel {
  callback: ModelCallback,
}

impl HostSmallModel {
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
  fn generate(&self, request: SmallModelRequest) -> BoxFuture<'_, std::result::Result<SmallModelReply, SmallModelError>> {
    Box::pin(async move {
      let promise = self
        .callback
        .call_async_catch(request.to_value())
        .await
        .map_err(|_| SmallModelError::unavailable())?;
      let value = promise.await.map_err(|_| SmallModelError::unavailable())?;
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
        tokens: goal_core::services::usage_total(value.get("usage")),
      })
    })
  }
}

/// The host's `emitGoalNotification`: fire and forget; a throw is logged, never fatal.
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
      if callback.call_async_catch(event).await.is_err() {
        tracing::warn!(target: "session_goal", "emitGoalNotification threw");
      }
    });
  }
}

/// The host's small-model service when it passed one, else the built-in small model.
pub(crate) fn small_model_for(
  host: Option<ModelCallback>,
  client: &goal_core::opencode::OpenCodeClient,
  choice: Option<&crate::SmallModelChoice>,
) -> std::sync::Arc<dyn SmallModel> {
  match host {
    Some(callback) => std::sync::Arc::new(HostSmallModel::new(callback)),
    None => crate::builtin_small_model(client, choice),
  }
}
