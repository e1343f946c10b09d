//! Two small JavaScript functions the payload reader calls instead of many N-API calls: every
//! N-API call costs about as much as a hundred property reads inside the engine, and reading a
//! goal field by field took some eighty of them per `session.updated`. They are compiled once
//! per JavaScript environment (kept by `env_context`) and referenced, so a call is one lookup of
//! the reference and one call into the engine.

use napi::bindgen_prelude::*;
use napi::{sys, Env, ValueType};

use goal_core::{KNOWN_GOAL_FIELDS, MAX_CHECKS, OBJECTIVE_REVISION_FIELD, REVISION_LIST_FIELDS};

/// `[JSON.stringify, goalFields]`. `goalFields(goal)` is the JSON text of the goal's known fields
/// that hold a string, number, boolean or null (each read once; any other type reads as absent,
/// exactly as the goal parser treats it), plus the revision's list fields (`lists`) when they are
/// arrays of at most `maxItems` items (a longer list is unreadable to the goal parser too, so
/// both readings agree), or `null` when the goal is not a plain object; its cost does not depend
/// on the size of anything else the goal carries.
const SCRIPT: &str = r#"(function (keys, lists, maxItems) {
  const stringify = JSON.stringify
  function goalFields(goal) {
    if (goal === null || typeof goal !== 'object' || Array.isArray(goal)) return 'null'
    const fields = {}
    for (let i = 0; i < keys.length; i++) {
      const value = goal[keys[i]]
      const type = typeof value
      if (type === 'string' || type === 'number' || type === 'boolean' || value === null) fields[keys[i]] = value
    }
    for (let i = 0; i < lists.length; i++) {
      const value = goal[lists[i]]
      if (Array.isArray(value) && value.length <= maxItems) fields[lists[i]] = value
    }
    return stringify(fields)
  }
  return [stringify, goalFields]
})"#;

/// References to the two functions, valid on the JavaScript thread of the environment that
/// made them.
pub(crate) struct JsHelpers {
    stringify: sys::napi_ref,
    goal_fields: sys::napi_ref,
}

// SAFETY: the references are only dereferenced by the methods below, which take the `Env` of a
// call: N-API runs those on the environment's own JavaScript thread, and a runtime object (the
// only holder of its environment's helpers) cannot leave its environment. Elsewhere they are
// plain pointer values that are moved or dropped, never used.
unsafe impl Send for JsHelpers {}
// SAFETY: as for `Send`: shared access never dereferences them off the JavaScript thread.
unsafe impl Sync for JsHelpers {}

impl JsHelpers {
    /// Compiles the helpers in `env`; `None` if the engine refuses (the reader then falls back
    /// to reading fields one by one).
    pub fn new(env: &Env) -> Option<Self> {
        let keys: Vec<&str> = KNOWN_GOAL_FIELDS.iter().copied().chain([OBJECTIVE_REVISION_FIELD]).collect();
        let lists = serde_json::to_string(REVISION_LIST_FIELDS).ok()?;
        let source = format!("{SCRIPT}({}, {lists}, {MAX_CHECKS})", serde_json::to_string(&keys).ok()?);
        let pair: Object = env.run_script(source).ok()?;
        let stringify = pair.get_element::<Unknown>(0).ok()?;
        let goal_fields = pair.get_element::<Unknown>(1).ok()?;
        Some(Self { stringify: reference(env, stringify)?, goal_fields: reference(env, goal_fields)? })
    }

    /// `JSON.stringify(value)`, when it gives a string.
    pub fn stringify(&self, env: &Env, value: Unknown) -> Option<String> {
        call_for_string(env, self.stringify, value)
    }

    /// The goal's known scalar fields and revision list fields as JSON text (`null` for a goal
    /// that is not an object).
    pub fn goal_fields(&self, env: &Env, goal: Unknown) -> Option<String> {
        call_for_string(env, self.goal_fields, goal)
    }
}

fn reference(env: &Env, value: Unknown) -> Option<sys::napi_ref> {
    let mut reference = std::ptr::null_mut();
    // SAFETY: a live value of this env, on its JS thread; the reference is never deleted (the
    // environment's teardown frees it).
    let status = unsafe { sys::napi_create_reference(env.raw(), value.raw(), 1, &mut reference) };
    (status == sys::Status::napi_ok).then_some(reference)
}

/// Calls the referenced function with one argument; a throw leaves the exception pending (the
/// caller clears it) and reads as `None`.
fn call_for_string(env: &Env, function: sys::napi_ref, argument: Unknown) -> Option<String> {
    let raw = env.raw();
    let mut callee = std::ptr::null_mut();
    let mut receiver = std::ptr::null_mut();
    let mut result = std::ptr::null_mut();
    // SAFETY: plain N-API calls on the JS thread of the env that owns the reference.
    unsafe {
        if sys::napi_get_reference_value(raw, function, &mut callee) != sys::Status::napi_ok
            || sys::napi_get_undefined(raw, &mut receiver) != sys::Status::napi_ok
            || sys::napi_call_function(raw, receiver, callee, 1, &argument.raw(), &mut result) != sys::Status::napi_ok
        {
            return None;
        }
        let result = Unknown::from_napi_value(raw, result).ok()?;
        if result.get_type().ok()? != ValueType::String {
            return None;
        }
        String::from_unknown(result).ok()
    }
}
