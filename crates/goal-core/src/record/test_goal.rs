//! Goals for unit tests: a goal record read from a base object with some fields set over it.

use serde_json::{json, Value};

use super::Goal;

/// `base` with each field of `fields` set over it, read as a goal; panics when it is not one.
pub fn goal_over(mut base: Value, fields: Value) -> Goal {
    for (key, value) in fields.as_object().expect("the fields are an object") {
        base[key] = value.clone();
    }
    Goal::from_value(&base).expect("a readable goal")
}

/// The active goal `g` with objective `o`, with `fields` set over it.
pub fn goal(fields: Value) -> Goal {
    goal_over(json!({"id": "g", "status": "active", "objective": "o"}), fields)
}
