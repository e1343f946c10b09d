//! A stored JSON object's fields read by hand, one reader per kind of field, where a derived
//! deserializer would compile a visitor per type (the addon's size is budgeted): the history's
//! records (`answers.rs`) and a goal's stored form (`goal_settings.rs`).

use serde_json::{Map, Value};

/// A stored object that does not have the expected shape: not an object, or a field of another
/// type than its own.
#[derive(Debug)]
pub struct Misshapen;

/// An object's fields. A field absent or `null` is unset; one of another type is [`Misshapen`].
pub(crate) struct StoredFields<'a>(&'a Map<String, Value>);

impl<'a> StoredFields<'a> {
    /// The fields of `stored`, which must be an object.
    pub(crate) fn of(stored: &'a Value) -> Result<Self, Misshapen> {
        stored.as_object().map(StoredFields).ok_or(Misshapen)
    }

    fn read<T>(&self, key: &str, read: impl Fn(&Value) -> Option<T>) -> Result<Option<T>, Misshapen> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => read(value).map(Some).ok_or(Misshapen),
        }
    }

    /// A string field.
    pub(crate) fn text(&self, key: &str) -> Result<Option<String>, Misshapen> {
        self.read(key, |value| value.as_str().map(str::to_string))
    }

    /// A number field.
    pub(crate) fn number(&self, key: &str) -> Result<Option<f64>, Misshapen> {
        self.read(key, Value::as_f64)
    }

    /// A boolean field.
    pub(crate) fn flag(&self, key: &str) -> Result<Option<bool>, Misshapen> {
        self.read(key, Value::as_bool)
    }

    /// A field holding a list of strings.
    pub(crate) fn texts(&self, key: &str) -> Result<Option<Vec<String>>, Misshapen> {
        self.read(key, |value| value.as_array()?.iter().map(|item| item.as_str().map(str::to_string)).collect())
    }
}
