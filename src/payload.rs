//! Reads only the fields a feature needs from a JS payload (never walks a whole 10 MB object)
//! and hands the reduced event to the intake of the environment's shared context. Which types are read, and how, is the
//! intake contract of `goal_core::intake`; this module only reads fields. Any failure, including
//! a hostile getter that throws, is swallowed: nothing is thrown back at the host.

use napi::bindgen_prelude::JsObjectValue;
use napi::bindgen_prelude::*;
use napi::{sys, Env, ValueType};
use serde_json::{Map, Value};

use goal_core::{message_update_matters, parse_payload, reading_of, PayloadReading, WATCHED_METADATA_KEY};
use goal_core::{KNOWN_GOAL_FIELDS, MAX_CHECKS, OBJECTIVE_REVISION_FIELD, REVISION_LIST_FIELDS};

use crate::env_context::EnvContext;
use crate::js_helpers::JsHelpers;

fn get_unknown<'a>(object: &Object<'a>, key: &str) -> Option<Unknown<'a>> {
    object.get::<Unknown>(key).ok().flatten()
}

fn as_object<'a>(value: Option<Unknown<'a>>) -> Option<Object<'a>> {
    let value = value?;
    if value.get_type().ok()? != ValueType::Object {
        return None;
    }
    Object::from_unknown(value).ok()
}

fn get_string(object: &Object, key: &str) -> Option<String> {
    let value = get_unknown(object, key)?;
    if value.get_type().ok()? != ValueType::String {
        return None;
    }
    String::from_unknown(value).ok()
}

/// Largest JSON text taken from one payload field (a goal is a few hundred bytes).
const MAX_JSON_BYTES: usize = 1 << 20;

/// A JS value as JSON, through the engine's own `JSON.stringify`: one call into the engine
/// instead of several N-API calls per property (a goal has some twenty fields, and each N-API
/// call costs about as much as a JS property read costs a hundred times). A value that cannot
/// be stringified (cyclic, BigInt, a throwing getter or `toJSON`) or gives no JSON text
/// (undefined, a function), or whose text is over `MAX_JSON_BYTES`, is `None`; the exception, if
/// any, is cleared by `forward`. serde_json's nesting limit (128) bounds the parse.
fn to_json(reader: &Reader, value: Option<Unknown>) -> Option<Value> {
    let value = value?;
    let text = match reader.js {
        Some(js) => js.stringify(reader.env, value)?,
        None => stringify_looked_up(reader.env, value)?,
    };
    if text.len() > MAX_JSON_BYTES {
        return None;
    }
    serde_json::from_str(&text).ok()
}

/// `JSON.stringify(value)` looked up on the global object (when the helpers are missing).
fn stringify_looked_up(env: &Env, value: Unknown) -> Option<String> {
    let stringify = env
        .get_global()
        .ok()?
        .get_named_property::<Object>("JSON")
        .ok()?
        .get_named_property::<Function<Unknown, Unknown>>("stringify")
        .ok()?;
    let text = stringify.call(value).ok()?;
    if text.get_type().ok()? != ValueType::String {
        return None;
    }
    String::from_unknown(text).ok()
}

/// What the payload reader works with: the env, and its JavaScript helpers when compiled.
struct Reader<'a> {
    env: &'a Env,
    js: Option<&'a JsHelpers>,
}

/// The goal's known scalar fields (see [`goal_fields`]) through one call of the JavaScript
/// helper; when it throws (a hostile getter) or its text does not parse (a lone surrogate), the
/// fields are read one by one, which skips just the failing field as before. Numbers become
/// floats, as [`goal_fields`] reads them.
fn goal_fields_of(reader: &Reader, goal: Unknown) -> Value {
    let parsed = reader
        .js
        .and_then(|js| js.goal_fields(reader.env, goal))
        .and_then(|text| serde_json::from_str::<Value>(&text).ok());
    match parsed {
        Some(Value::Object(mut fields)) => {
            for value in fields.values_mut() {
                if let Value::Number(number) = value {
                    *value = number.as_f64().and_then(serde_json::Number::from_f64).map_or(Value::Null, Value::Number);
                }
            }
            Value::Object(fields)
        }
        Some(Value::Null) => Value::Null,
        _ => {
            clear_pending_exception(reader.env);
            let mut fields = goal_fields(goal);
            if let Value::Object(fields) = &mut fields {
                revision_lists(reader, goal, fields);
            }
            fields
        }
    }
}

/// The goal's list fields that are part of its revision key (see `REVISION_LIST_FIELDS`), each
/// only when it is an array of at most `MAX_CHECKS` items, as the JavaScript helper reads them:
/// without them an event would show a goal with checks as one without, unlike a full read.
fn revision_lists(reader: &Reader, goal: Unknown, fields: &mut Map<String, Value>) {
    let Some(object) = as_object(Some(goal)) else { return };
    for key in REVISION_LIST_FIELDS {
        let list = to_json(reader, get_unknown(&object, key));
        if let Some(list) = list.filter(|l| l.as_array().is_some_and(|items| items.len() <= MAX_CHECKS)) {
            fields.insert((*key).to_string(), list);
        }
    }
}

/// The goal's known fields, each only when it is a string, number, boolean or null (any other
/// type reads as absent, exactly as the goal parser treats it). Reading just these keeps the cost
/// of a goal object independent of its size: a copy cut off by the conversion budget would look
/// like a goal without an id, that is, a cleared goal, and cancel the session's pending wake-up.
fn goal_fields(goal: Unknown) -> Value {
    let Some(object) = as_object(Some(goal)).filter(|o| !o.is_array().unwrap_or(true)) else {
        return Value::Null;
    };
    let mut fields = Map::new();
    // The objective revision is part of the goal's identity (an edit of a file-backed objective
    // changes nothing else), so it is read too.
    for key in KNOWN_GOAL_FIELDS.iter().chain(std::iter::once(&OBJECTIVE_REVISION_FIELD)) {
        let Some(value) = get_unknown(&object, key) else { continue };
        let scalar = match value.get_type() {
            Ok(ValueType::String) => String::from_unknown(value).ok().map(Value::String),
            Ok(ValueType::Number) => f64::from_unknown(value)
                .ok()
                .map(|n| serde_json::Number::from_f64(n).map(Value::Number).unwrap_or(Value::Null)),
            Ok(ValueType::Boolean) => bool::from_unknown(value).ok().map(Value::Bool),
            Ok(ValueType::Null) => Some(Value::Null),
            _ => None,
        };
        if let Some(scalar) = scalar {
            fields.insert((*key).to_string(), scalar);
        }
    }
    Value::Object(fields)
}

/// `watched(session_id)`: whether a runtime watches the session's writes, in which case the
/// whole metadata of its `session.updated` is read too (see `goal_core::repair`).
fn reduce(reader: &Reader, payload: Unknown, watched: impl Fn(&str) -> bool) -> Option<Value> {
    let object = as_object(Some(payload))?;
    let kind = get_string(&object, "type")?;
    let reading = reading_of(&kind)?;
    let properties = as_object(get_unknown(&object, "properties"));
    let reduced_properties = match reading {
        PayloadReading::SessionInfo => {
            let properties = properties?;
            let info = as_object(get_unknown(&properties, "info"))?;
            let mut out = Map::new();
            for key in ["id", "parentID", "directory"] {
                if let Some(text) = get_string(&info, key) {
                    out.insert(key.to_string(), Value::from(text));
                }
            }
            let goal = as_object(get_unknown(&info, "metadata"))
                .and_then(|m| as_object(get_unknown(&m, "openchamber")))
                .and_then(|ns| get_unknown(&ns, "goal"))
                .map(|goal| goal_fields_of(reader, goal));
            if let Some(goal) = goal {
                out.insert("metadata".into(), nest(&["openchamber", "goal"], goal));
            }
            // Only inside a watched write's window (a few events per continuation): the other keys
            // are what a lost-update repair puts back.
            let id = out.get("id").and_then(Value::as_str).map(str::trim).unwrap_or("");
            if !id.is_empty() && watched(id) {
                if let Some(metadata) = to_json(reader, get_unknown(&info, "metadata")).filter(Value::is_object) {
                    out.insert(WATCHED_METADATA_KEY.into(), metadata);
                }
            }
            let mut props = Map::new();
            if let Some(directory) = get_string(&properties, "directory") {
                props.insert("directory".into(), Value::from(directory));
            }
            props.insert("info".into(), Value::Object(out));
            Value::Object(props)
        }
        PayloadReading::MessageInfo => {
            let properties = properties?;
            let info = as_object(get_unknown(&properties, "info"))?;
            let role = get_string(&info, "role");
            let error = as_object(get_unknown(&info, "error"));
            // Streaming updates stop here, before anything else is copied off the message.
            if !message_update_matters(role.as_deref(), error.is_some()) {
                return None;
            }
            let mut props = Map::new();
            for key in ["sessionID", "directory"] {
                if let Some(text) = get_string(&properties, key) {
                    props.insert(key.into(), Value::from(text));
                }
            }
            let mut out = Map::new();
            if let Some(role) = role {
                out.insert("role".into(), Value::from(role));
            }
            for key in ["id", "parentID", "sessionID", "directory"] {
                if let Some(text) = get_string(&info, key) {
                    out.insert(key.into(), Value::from(text));
                }
            }
            if let Some(time) = to_json(reader, get_unknown(&info, "time")) {
                out.insert("time".into(), time);
            }
            if let Some(error) = to_json(reader, error.map(|e| e.to_unknown())) {
                out.insert("error".into(), error);
            }
            props.insert("info".into(), Value::Object(out));
            Value::Object(props)
        }
        PayloadReading::Whole => properties.and_then(|p| to_json(reader, Some(p.to_unknown()))).unwrap_or(Value::Null),
    };
    let mut reduced = Map::new();
    reduced.insert("type".into(), Value::String(kind));
    reduced.insert("properties".into(), reduced_properties);
    Some(Value::Object(reduced))
}

/// `{"a": {"b": value}}` for the path `["a", "b"]`, moving `value` (serde_json's `json!` macro
/// would deep-copy it through its serializer).
fn nest(path: &[&str], value: Value) -> Value {
    path.iter().rev().fold(value, |inner, key| {
        let mut map = Map::new();
        map.insert((*key).to_string(), inner);
        Value::Object(map)
    })
}

fn clear_pending_exception(env: &Env) {
    let mut pending = false;
    // SAFETY: plain N-API calls on the current env from the JS thread.
    unsafe {
        if sys::napi_is_exception_pending(env.raw(), &mut pending) == sys::Status::napi_ok && pending {
            let mut error = std::ptr::null_mut();
            sys::napi_get_and_clear_last_exception(env.raw(), &mut error);
        }
    }
}

/// The payload types any runtime reads (the intake contract). The package entry builds its
/// prefilter from this list at load, so JS and native code never disagree about what to forward.
#[napi_derive::napi(catch_unwind)]
pub fn intake_payload_types() -> Vec<String> {
    goal_core::intake_payload_types().map(str::to_string).collect()
}

/// Reduces, parses and delivers one payload to every runtime of `group` in `context` (the
/// environment the payload was forwarded in).
pub fn forward(env: &Env, context: &EnvContext, group: &str, payload: Unknown, directory_hint: &str) {
    let intake = context.shared().intake();
    let reader = Reader { env, js: context.js() };
    let reduced = reduce(&reader, payload, |session_id| intake.watches_writes(group, session_id));
    clear_pending_exception(env);
    if let Some(event) = reduced.and_then(|value| parse_payload(&value, directory_hint)) {
        intake.deliver(group, &event);
    }
}

/// The event intake methods of a runtime class, the same for every runtime: `processPayload`
/// (through [`forward`]) and `intakeGroup`. A napi class cannot inherit methods, so each runtime
/// class gets them from here; the class needs an `inner` runtime with `group()` and a `context`
/// ([`EnvContext`]). The methods' documentation is written as `#[doc = "…"]` lines: napi-derive
/// would copy a `///` comment that passes through a macro into index.d.ts with its `r"` prefix.
macro_rules! intake_methods {
    ($class:ident) => {
        #[napi]
        impl $class {
            #[doc = " Forwards one OpenCode payload (`{type, properties}`; unwrap the global event envelope"]
            #[doc = " first). Returns at once; anything unreadable is ignored, never thrown. The payload reaches"]
            #[doc = " every goal and assist runtime of this JavaScript environment that talks to the same OpenCode."]
            #[napi(catch_unwind, ts_args_type = "payload: unknown, directoryHint?: string")]
            pub fn process_payload(&self, env: Env, payload: Unknown, directory_hint: Option<String>) {
                let hint = directory_hint.as_deref().unwrap_or("");
                $crate::payload::forward(&env, &self.context, &self.inner.group(), payload, hint);
            }

            #[doc = " The key of the event intake group this runtime belongs to (runtimes that talk to the same"]
            #[doc = " OpenCode share one). The package entry uses it to hand a payload to each group once."]
            #[napi(catch_unwind)]
            pub fn intake_group(&self) -> String {
                self.inner.group()
            }
        }
    };
}
pub(crate) use intake_methods;
