//! Reads only the fields a feature needs from a JS payload (never walks a whole 10 MB object)
//! and hands the reduced event to the shared intake. Any failure, including a hostile getter
//! that throws, is swallowed: nothing is thrown back at the host.

use napi::bindgen_prelude::*;
use napi::bindgen_prelude::JsObjectValue;
use napi::{sys, Env, ValueType};
use serde_json::{json, Map, Value};

use goal_core::intake::{dispatch, parse_payload, INTERESTING_TYPES};
use goal_core::model::{KNOWN_GOAL_FIELDS, OBJECTIVE_REVISION_FIELD};

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

/// Deepest nesting and most values converted from one JS value: a cyclic or gigantic object
/// from a hostile host is cut off instead of overflowing the stack.
const MAX_DEPTH: u32 = 16;
const MAX_NODES: usize = 50_000;

fn to_json(_env: &Env, value: Option<Unknown>) -> Option<Value> {
  let mut budget = MAX_NODES;
  convert(value?, MAX_DEPTH, &mut budget)
}

fn convert(value: Unknown, depth: u32, budget: &mut usize) -> Option<Value> {
  if *budget == 0 {
    return None;
  }
  *budget -= 1;
  match value.get_type().ok()? {
    ValueType::Null | ValueType::Undefined => Some(Value::Null),
    ValueType::Boolean => bool::from_unknown(value).ok().map(Value::Bool),
    ValueType::Number => f64::from_unknown(value)
      .ok()
      .map(|n| serde_json::Number::from_f64(n).map(Value::Number).unwrap_or(Value::Null)),
    ValueType::String => String::from_unknown(value).ok().map(Value::String),
    ValueType::Object if depth > 0 => {
      let object = Object::from_unknown(value).ok()?;
      if object.is_array().ok()? {
        let length = object.get_array_length().ok()?;
        let mut items = Vec::new();
        for index in 0..length {
          let item = object.get_element::<Unknown>(index).ok()?;
          items.push(convert(item, depth - 1, budget).unwrap_or(Value::Null));
          if *budget == 0 {
            break;
          }
        }
        return Some(Value::Array(items));
      }
      let names = object.get_property_names().ok()?;
      let length = names.get_array_length().ok()?;
      let mut map = Map::new();
      for index in 0..length {
        let Ok(key) = names.get_element::<String>(index) else { continue };
        let Some(item) = get_unknown(&object, &key) else { continue };
        if let Some(converted) = convert(item, depth - 1, budget) {
          map.insert(key, converted);
        }
        if *budget == 0 {
          break;
        }
      }
      Some(Value::Object(map))
    }
    _ => None,
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
      Ok(ValueType::String | ValueType::Number | ValueType::Boolean | ValueType::Null) => convert(value, 0, &mut 1),
      _ => None,
    };
    if let Some(scalar) = scalar {
      fields.insert((*key).to_string(), scalar);
    }
  }
  Value::Object(fields)
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
        .and_then(|ns| get_unknown(&ns, "goal"))
        .map(goal_fields);
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
