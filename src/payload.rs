//! Reads only the fields a feature needs from a JS payload (never walks a whole 10 MB object)
//! and hands the reduced event to the shared intake. Any failure, including a hostile getter
//! that throws, is swallowed: nothing is thrown back at the host.

use napi::bindgen_prelude::*;
use napi::{sys, Env, ValueType};
use serde_json::{json, Map, Value};

use goal_core::intake::{dispatch, parse_payload, INTERESTING_TYPES};

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

fn to_json(env: &Env, value: Option<Unknown>) -> Option<Value> {
  let value = value?;
  env.from_js_value::<Value, _>(value).ok()
}

fn reduce(env: &Env, payload: Unknown) -> Option<Value> {
  let object = as_object(Some(payload))?;
  let kind = get_string(&object, "type")?;
  if !INTERESTING_TYPES.contains(&kind.as_str()) {
    return None;
  }
  let properties = as_object(get_unknown(&object, "properties"));
  let reduced_properties = match kind.as_str() {
    "session.updated" => {
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
        .and_then(|ns| to_json(env, get_unknown(&ns, "goal")));
      if let Some(goal) = goal {
        out.insert("metadata".into(), json!({ "openchamber": { "goal": goal } }));
      }
      let mut props = Map::new();
      if let Some(directory) = get_string(&properties, "directory") {
        props.insert("directory".into(), Value::from(directory));
      }
      props.insert("info".into(), Value::Object(out));
      Value::Object(props)
    }
    "message.updated" => {
      let properties = properties?;
      let mut props = Map::new();
      for key in ["sessionID", "directory"] {
        if let Some(text) = get_string(&properties, key) {
          props.insert(key.into(), Value::from(text));
        }
      }
      let info = as_object(get_unknown(&properties, "info"))?;
      let mut out = Map::new();
      for key in ["id", "role", "sessionID", "directory"] {
        if let Some(text) = get_string(&info, key) {
          out.insert(key.into(), Value::from(text));
        }
      }
      for key in ["time", "error"] {
        if let Some(value) = to_json(env, get_unknown(&info, key)) {
          out.insert(key.into(), value);
        }
      }
      props.insert("info".into(), Value::Object(out));
      Value::Object(props)
    }
    // Small payloads: take them whole.
    _ => properties.and_then(|p| to_json(env, Some(p.to_unknown()))).unwrap_or(Value::Null),
  };
  Some(json!({ "type": kind, "properties": reduced_properties }))
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

/// Reduces, parses and dispatches one payload to every runtime of `group`.
pub fn forward(env: &Env, group: &str, payload: Unknown, directory_hint: &str) {
  let reduced = reduce(env, payload);
  clear_pending_exception(env);
  if let Some(event) = reduced.and_then(|value| parse_payload(&value, directory_hint)) {
    dispatch(group, &event);
  }
}
