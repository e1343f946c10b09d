//! How a failed operation reaches JavaScript: a synchronous function throws, an asynchronous one
//! rejects its promise, with an `Error` whose own properties are the failure's parts — `code`
//! (the closed list of docs/errors.md), `field`, `status` (OpenCode's answer), `partialAction`,
//! `sessionId`, `directory` — and whose `cause` is the underlying failure. lib/errors.js re-wraps
//! it as the one public class, `SessionGoalError`. A JavaScript object can only be made on the
//! JavaScript thread, so an asynchronous operation's error is made where its promise settles.
//! Every asynchronous operation runs in its own task: a panic is a `local` failure, never a crash.

use std::future::Future;

use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;

use goal_core::{ErrorKind, GoalError, WarningCode};

/// Every error `code` the native module can throw, from the core's `ErrorKind::ALL` (internal:
/// a test ties it to lib/errors.js and docs/errors.md, so a new kind cannot reach JavaScript as
/// an unknown code).
#[napi(catch_unwind)]
pub fn error_codes() -> Vec<String> {
    ErrorKind::ALL.iter().map(|kind| kind.as_str().to_string()).collect()
}

/// Every warning `code` the native module can report, from the core's `WarningCode::ALL`
/// (internal, for the same test).
#[napi(catch_unwind)]
pub fn warning_codes() -> Vec<String> {
    WarningCode::ALL.iter().map(|code| code.as_str().to_string()).collect()
}

/// The error to throw, or to reject a promise with, for `failure`: an `Error` object made in
/// `env`, held by reference so napi throws that very object, properties and all.
pub(crate) fn thrown(env: &Env, failure: GoalError) -> Error {
    match error_object(env, &failure) {
        Ok(object) => Error::from(object.to_unknown()),
        // Only an environment that is shutting down cannot make the object; the message survives.
        Err(_) => Error::new(Status::GenericFailure, failure.message),
    }
}

fn error_object<'env>(env: &'env Env, failure: &GoalError) -> Result<Object<'env>> {
    let mut error = env.create_error(Error::from_reason(failure.message.as_str()))?;
    error.set("code", failure.kind.as_str())?;
    if let Some(field) = failure.field {
        error.set("field", field)?;
    }
    if let Some(status) = failure.opencode_status {
        error.set("status", u32::from(status))?;
    }
    if let Some(partial) = failure.partial {
        error.set("partialAction", partial.as_str())?;
    }
    if !failure.session_id.is_empty() {
        error.set("sessionId", failure.session_id.as_str())?;
    }
    if !failure.directory.is_empty() {
        error.set("directory", failure.directory.as_str())?;
    }
    if let Some(source) = std::error::Error::source(failure) {
        let mut cause = env.create_error(Error::from_reason(source.to_string()))?;
        // napi gives every error it makes a placeholder code; OpenCode's failure has none.
        cause.delete_named_property("code")?;
        error.set("cause", cause)?;
    }
    Ok(error)
}

/// Runs an asynchronous operation in its own task; its promise resolves to the value, or rejects
/// with the [`thrown`] error of its failure (a panic in the task is a `local` failure).
pub(crate) fn settle<'env, T, F>(env: &'env Env, work: F) -> Result<PromiseRaw<'env, T>>
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = std::result::Result<T, GoalError>> + Send + 'static,
{
    // Only this boxing is compiled per operation: the task and the promise machinery behind it
    // are compiled once for every operation (the addon's size is budgeted).
    let work: Work = Box::pin(async move { work.await.map(|value| Box::new(value) as Box<dyn ToJs>) });
    let promise = settle_erased(env, work)?;
    Ok(PromiseRaw::new(env.raw(), promise.raw()))
}

/// Runs `work` as napi runs an `async fn` that cannot fail: its promise resolves to the value.
/// Like [`settle`], the promise machinery is compiled once for every such operation. napi types
/// the `T` of a `PromiseRaw` as it would a parameter (`()` as `undefined`, `Option<T>` as
/// `T | undefined | null`), so a function resolving those spells its type out with
/// `ts_return_type`, keeping index.d.ts as an `async fn` had it.
pub(crate) fn resolve<'env, T, F>(env: &'env Env, work: F) -> Result<PromiseRaw<'env, T>>
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = T> + Send + 'static,
{
    let work: Resolving = Box::pin(async move { Ok(Erased(Box::new(work.await))) });
    let promise = env.spawn_future(work)?;
    Ok(PromiseRaw::new(env.raw(), promise.raw()))
}

type Resolving = std::pin::Pin<Box<dyn Future<Output = Result<Erased>> + Send>>;

/// An operation whose value's type is erased; it becomes a JavaScript value where the promise
/// settles.
type Work = std::pin::Pin<Box<dyn Future<Output = std::result::Result<Box<dyn ToJs>, GoalError>> + Send>>;

/// A value on its way to JavaScript, whatever its type.
trait ToJs: Send {
    fn to_js(self: Box<Self>, env: sys::napi_env) -> Result<sys::napi_value>;
}

impl<T: ToNapiValue + Send> ToJs for T {
    fn to_js(self: Box<Self>, env: sys::napi_env) -> Result<sys::napi_value> {
        // SAFETY: called by napi on the JavaScript thread of `env`, as `to_napi_value` expects.
        unsafe { T::to_napi_value(env, *self) }
    }
}

struct Erased(Box<dyn ToJs>);

impl ToNapiValue for Erased {
    unsafe fn to_napi_value(env: sys::napi_env, value: Self) -> Result<sys::napi_value> {
        value.0.to_js(env)
    }
}

fn settle_erased(env: &Env, work: Work) -> Result<PromiseRaw<'_, Erased>> {
    let outcome = async move {
        Ok(tokio::spawn(work).await.unwrap_or_else(|_| {
            tracing::error!(target: "session_goal", "goal operation panicked");
            Err(GoalError::new(ErrorKind::Local, "internal error"))
        }))
    };
    env.spawn_future_with_callback(outcome, |env, outcome| outcome.map(Erased).map_err(|failure| thrown(env, failure)))
}
