//! Reads only the fields a feature needs from a JS payload (never walks a whole 10 MB object)
//! and hands the reduced event to the shared intake. Which types are read, and how, is the
//! intake contract of `goal_core::intake`; this module only reads fields. Any failure, including
//! a hostile getter that throws, is swallowed: nothing is thrown back at the host.

use napi::bindgen_prelude::JsObjectValue;
use napi::bindgen_prelude::*;
use napi::{sys, Env, ValueType};
use serde_json::{Map, Value};

use goal_core::{message_update_matters, parse_payload, reading_of, PayloadReading, WATCHED_METADATA_KEY};
use goal_core::{KNOWN_GOAL_FIELDS, OBJECTIVE_REVISION_FIELD};

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
fn to_json(env: &Env, value: Option<Unknown>) -> Option<Value> {
    let value = value?;
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
    let text = String::from_unknown(text).ok()?;
    if text.len() > MAX_JSON_BYTES {
        return None;
    }
    serde_json::from_str(&text).ok()
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
fn reduce(env: &Env, payload: Unknown, watched: impl Fn(&str) -> bool) -> Option<Value> {
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
                .map(goal_fields);
            if let Some(goal) = goal {
                out.insert("metadata".into(), nest(&["openchamber", "goal"], goal));
            }
            // Only inside a watched write's window (a few events per continuation): the other keys
            // are what a lost-update repair puts back.
            let id = out.get("id").and_then(Value::as_str).map(str::trim).unwrap_or("");
            if !id.is_empty() && watched(id) {
                if let Some(metadata) = to_json(env, get_unknown(&info, "metadata")).filter(Value::is_object) {
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
            if let Some(time) = to_json(env, get_unknown(&info, "time")) {
                out.insert("time".into(), time);
            }
            if let Some(error) = to_json(env, error.map(|e| e.to_unknown())) {
                out.insert("error".into(), error);
            }
            props.insert("info".into(), Value::Object(out));
            Value::Object(props)
        }
        PayloadReading::Whole => properties.and_then(|p| to_json(env, Some(p.to_unknown()))).unwrap_or(Value::Null),
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

/// Reduces, parses and delivers one payload to every runtime of `group`.
pub fn forward(env: &Env, group: &str, payload: Unknown, directory_hint: &str) {
    let intake = crate::shared_context().intake();
    let reduced = reduce(env, payload, |session_id| intake.watches_writes(group, session_id));
    clear_pending_exception(env);
    if let Some(event) = reduced.and_then(|value| parse_payload(&value, directory_hint)) {
        intake.deliver(group, &event);
    }
}
