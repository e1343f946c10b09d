//! Whole-metadata arithmetic for putting back another writer's keys: the part of a session's
//! metadata that is not the goal, and the metadata that restores it. Pure.

use serde_json::{Map, Value};

/// The metadata without the goal: what other writers own (other keys, other `openchamber.*`).
pub fn foreign_part(metadata: &Value) -> Value {
    let mut foreign = metadata.clone();
    if let Some(namespace) = foreign.get_mut("openchamber").and_then(Value::as_object_mut) {
        namespace.remove("goal");
    }
    foreign
}

/// The metadata to write so that the other writer's keys, overwritten by our write, are back:
/// `current` (read fresh) with everything but the goal set to `theirs` (the other writer's state
/// just before our write), only while everything but the goal still stands exactly as we wrote
/// it (`ours`). Anything written since is someone's newer state and is left alone (`None`),
/// and a restore never mixes two states into one nobody wrote. Pure.
pub fn restored_metadata(current: &Map<String, Value>, ours: &Value, theirs: &Value) -> Option<Map<String, Value>> {
    let current_value = Value::Object(current.clone());
    if !same_json(&foreign_part(&current_value), ours) || same_json(ours, theirs) {
        return None;
    }
    let mut out = theirs.as_object().cloned().unwrap_or_default();
    if let Some(goal) = current.get("openchamber").and_then(|n| n.get("goal")) {
        let namespace = out.entry("openchamber").or_insert_with(|| Value::Object(Map::new()));
        if !namespace.is_object() {
            *namespace = Value::Object(Map::new());
        }
        if let Some(namespace) = namespace.as_object_mut() {
            namespace.insert("goal".into(), goal.clone());
        }
    }
    Some(out)
}

/// JSON equality with numbers compared by value (`1` and `1.0` are the same number).
pub fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_json(a, b)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn restoring_puts_back_their_state_only_while_ours_still_stands() {
        let ours = json!({"ui": {"pinned": true}, "gone": 1, "openchamber": {"assist": {"recap": "old"}}});
        let theirs = json!({"ui": {"pinned": false}, "other": {"token": 7}, "openchamber": {"assist": {"recap": "new"}, "notes": "n"}});
        // Now: our write (with the goal) untouched since: theirs comes back around our goal.
        let current = json!({"ui": {"pinned": true}, "gone": 1, "openchamber": {"goal": {"id": "g"}, "assist": {"recap": "old"}}});
        let out = restored_metadata(current.as_object().unwrap(), &ours, &theirs).expect("something to restore");
        assert_eq!(
            Value::Object(out),
            json!({"ui": {"pinned": false}, "other": {"token": 7}, "openchamber": {"goal": {"id": "g"}, "assist": {"recap": "new"}, "notes": "n"}})
        );
        // Someone wrote since (gone = 2): their newer state is left alone.
        let moved = json!({"ui": {"pinned": true}, "gone": 2, "openchamber": {"goal": {"id": "g"}, "assist": {"recap": "old"}}});
        assert_eq!(restored_metadata(moved.as_object().unwrap(), &ours, &theirs), None);
        // Nothing differs: nothing to write.
        assert_eq!(restored_metadata(json!({"a": 1}).as_object().unwrap(), &json!({"a": 1}), &json!({"a": 1})), None);
    }
}
