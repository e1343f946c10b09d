//! Reading the guards a person may have written by hand, leniently where that is safe: a number
//! written as text (`"0.5"`, `"7200000"`) reads as that number, in any field of the table's
//! `stored` group that wants a number (`Stored::read`, `record/fields.rs`) and in a check's
//! `timeoutMs`. Whatever is read this way is obeyed as read, and its stored value is written
//! back unchanged, so no writer's data is lost. What cannot be read even so is kept verbatim,
//! and the tick stops the goal if the field is a guard (`goal/decide/guard_rules.rs`). An
//! over-long criterion is the criteria list's own lenient reading (`record/criteria.rs`). Pure.

use serde_json::{Map, Value};

use super::{parse_checks, AcceptanceCheck, CHECKS_FIELD};

/// The number a string holds when it is a plain decimal (`"0.5"`, `" 7200000 "`): digits, at
/// most one decimal point between digits, surrounding blanks. Nothing else is guessed at (no
/// sign, exponent, unit, `inf` or `NaN`): `"two hours"` stays unreadable.
pub fn number_in_text(raw: &Value) -> Option<Value> {
    let text = raw.as_str()?.trim();
    let (whole, fraction) = text.split_once('.').unwrap_or((text, "0"));
    let digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || !digits(fraction) {
        return None;
    }
    let number: f64 = text.parse().ok()?;
    serde_json::Number::from_f64(number).map(Value::Number)
}

/// A stored `checks` list: read strictly, else with each `timeoutMs` written as text read as
/// its number. `None` when even that fails (the value is then kept verbatim).
pub fn read_stored_checks(value: &Value) -> Option<Vec<AcceptanceCheck>> {
    parse_checks(value).ok().or_else(|| parse_checks(&timeouts_as_numbers(value)?).ok())
}

/// The checks list with every `timeoutMs` held as text replaced by its number; `None` when no
/// timeout is text (nothing to read leniently).
fn timeouts_as_numbers(value: &Value) -> Option<Value> {
    let mut copy = value.as_array()?.clone();
    let mut changed = false;
    for item in copy.iter_mut().filter_map(Value::as_object_mut) {
        if let Some(number) = item.get("timeoutMs").and_then(number_in_text) {
            item.insert("timeoutMs".into(), number);
            changed = true;
        }
    }
    changed.then_some(Value::Array(copy))
}

/// The stored values of the `loose` fields that read only leniently, to be written back in place
/// of their typed reading ([`crate::record::Goal::verbatim`]).
pub(super) fn leniently_read(object: &Map<String, Value>) -> Map<String, Value> {
    let mut verbatim = Map::new();
    if let Some(raw) = object.get(CHECKS_FIELD) {
        if parse_checks(raw).is_err() && read_stored_checks(raw).is_some() {
            verbatim.insert(CHECKS_FIELD.into(), raw.clone());
        }
    }
    verbatim
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_plain_decimals_read_as_numbers() {
        assert_eq!(number_in_text(&json!("0.5")), Some(json!(0.5)));
        assert_eq!(number_in_text(&json!(" 7200000 ")), Some(json!(7200000.0)));
        for bad in [
            json!("two hours"),
            json!("1e3"),
            json!("-1"),
            json!("+2"),
            json!(".5"),
            json!("5."),
            json!("inf"),
            json!("NaN"),
            json!("1.2.3"),
            json!(""),
            json!("5 USD"),
            json!(5),
            json!(null),
            json!(["1"]),
        ] {
            assert_eq!(number_in_text(&bad), None, "{bad}");
        }
    }

    #[test]
    fn a_timeout_written_as_text_is_read_and_the_stored_list_kept() {
        let stored = json!([{"command": "npm test", "timeoutMs": "60000"}, "make"]);
        let checks = read_stored_checks(&stored).unwrap();
        assert_eq!(checks[0].timeout_ms, Some(60000));
        assert_eq!(checks[1].command, "make");
        let object = json!({"checks": stored.clone()});
        assert_eq!(leniently_read(object.as_object().unwrap()).get("checks"), Some(&stored));
        // A strictly readable list needs no verbatim copy; an unreadable one gets no reading.
        let plain = json!({"checks": [{"command": "npm test", "timeoutMs": 60000}]});
        assert!(leniently_read(plain.as_object().unwrap()).is_empty());
        for bad in [json!([{"command": 7}]), json!([{"command": "x", "timeoutMs": "soon"}]), json!("npm test")] {
            assert!(read_stored_checks(&bad).is_none(), "{bad}");
            assert!(leniently_read(json!({"checks": bad}).as_object().unwrap()).is_empty());
        }
    }
}
