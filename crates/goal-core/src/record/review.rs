//! The goal's review setting (`review`) and the record of its last review (`lastReview`).
//!
//! `review: true` or `review: {agent?, model?}` asks for a reviewer before the goal settles
//! `complete` (see `goal/decide/review.rs`); `false` or no field asks for none. A stored value that
//! cannot be read still asks for a review, on the goal's own agent and model: a guard that cannot
//! be read never lets a goal complete unreviewed. Pure: no I/O.

use serde_json::{json, Map, Value};

use crate::text::truncate_chars;

/// Characters of an agent name or a model string in the setting.
pub const REVIEW_NAME_CHAR_LIMIT: usize = 120;

/// What a goal's `review` field asks for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ReviewSetting {
    /// No review (`false`).
    #[default]
    Off,
    /// A review before `complete`, with an optional agent and model (`true` is both absent).
    On(ReviewTarget),
}

/// Who reviews: the agent and the model of the reviewer's prompt (`None`: the goal's own).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReviewTarget {
    /// The OpenCode agent the reviewer's prompt names.
    pub agent: Option<String>,
    /// `provider/model`: the model the reviewer runs on.
    pub model: Option<String>,
}

impl ReviewTarget {
    /// The model as `(providerID, modelID)`, when it is set and well formed.
    pub fn model_ids(&self) -> Option<(String, String)> {
        let (provider, model) = self.model.as_deref()?.split_once('/')?;
        (!provider.is_empty() && !model.is_empty()).then(|| (provider.to_string(), model.to_string()))
    }
}

impl ReviewSetting {
    /// Reads the wire value: `true`, `false`, or an object with optional string `agent` and
    /// `model` (`provider/model`). Anything else is `None` (unreadable).
    pub fn parse(value: &Value) -> Option<ReviewSetting> {
        match value {
            Value::Bool(false) => Some(ReviewSetting::Off),
            Value::Bool(true) => Some(ReviewSetting::On(ReviewTarget::default())),
            Value::Object(object) => {
                if object.keys().any(|k| k != "agent" && k != "model") {
                    return None;
                }
                let name = |key: &str| -> Result<Option<String>, ()> {
                    match object.get(key) {
                        None | Some(Value::Null) => Ok(None),
                        Some(Value::String(s))
                            if !s.trim().is_empty() && s.chars().count() <= REVIEW_NAME_CHAR_LIMIT =>
                        {
                            Ok(Some(s.trim().to_string()))
                        }
                        Some(_) => Err(()),
                    }
                };
                let target = ReviewTarget { agent: name("agent").ok()?, model: name("model").ok()? };
                if target.model.is_some() && target.model_ids().is_none() {
                    return None;
                }
                Some(ReviewSetting::On(target))
            }
            _ => None,
        }
    }

    /// The wire value (`true` when on with neither agent nor model).
    pub fn to_value(&self) -> Value {
        match self {
            ReviewSetting::Off => Value::Bool(false),
            ReviewSetting::On(ReviewTarget { agent: None, model: None }) => Value::Bool(true),
            ReviewSetting::On(target) => {
                let mut object = Map::new();
                if let Some(agent) = &target.agent {
                    object.insert("agent".into(), json!(agent));
                }
                if let Some(model) = &target.model {
                    object.insert("model".into(), json!(model));
                }
                Value::Object(object)
            }
        }
    }
}

/// The last review of a goal, as `lastReview` stores it (shown by `explain`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LastReview {
    /// The reviewer's child session.
    pub session_id: String,
    /// `approved`, `rejected` or `unavailable`.
    pub verdict: String,
    /// The reviewer's findings (each one line, bounded).
    pub findings: Vec<String>,
    /// The files it cited, each with whether it exists.
    pub cited: Vec<(String, bool)>,
    /// The tail it reviewed.
    pub tail: String,
    /// US dollars its session cost.
    pub cost: f64,
    /// When it ended (ms since the epoch).
    pub at: f64,
}

/// Characters kept of one finding.
pub const FINDING_CHAR_LIMIT: usize = 300;
/// Findings kept.
pub const MAX_FINDINGS: usize = 8;
/// Cited files kept.
pub const MAX_CITED: usize = 24;

impl LastReview {
    /// The stored object.
    pub fn to_value(&self) -> Value {
        json!({
            "sessionId": self.session_id,
            "verdict": self.verdict,
            "findings": self.findings,
            "cited": self.cited.iter().map(|(path, exists)| json!({"path": path, "exists": exists})).collect::<Vec<_>>(),
            "tail": self.tail,
            "cost": self.cost,
            "at": self.at,
        })
    }

    /// Reads a stored object (bounded); `None` when it is not one.
    pub fn from_value(value: &Value) -> Option<LastReview> {
        let object = value.as_object()?;
        let text = |key: &str| object.get(key).and_then(Value::as_str).unwrap_or("").to_string();
        let findings = object
            .get("findings")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(Value::as_str)
                    .take(MAX_FINDINGS)
                    .map(|f| truncate_chars(f, FINDING_CHAR_LIMIT))
                    .collect()
            })
            .unwrap_or_default();
        let cited = object
            .get("cited")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(|c| {
                        Some((c.get("path")?.as_str()?.to_string(), c.get("exists").and_then(Value::as_bool)?))
                    })
                    .take(MAX_CITED)
                    .collect()
            })
            .unwrap_or_default();
        let number = |key: &str| object.get(key).and_then(Value::as_f64).filter(|n| n.is_finite()).unwrap_or(0.0);
        Some(LastReview {
            session_id: text("sessionId"),
            verdict: text("verdict"),
            findings,
            cited,
            tail: text("tail"),
            cost: number("cost"),
            at: number("at"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_reads_true_false_and_an_object_and_refuses_the_rest() {
        assert_eq!(ReviewSetting::parse(&json!(false)), Some(ReviewSetting::Off));
        assert_eq!(ReviewSetting::parse(&json!(true)), Some(ReviewSetting::On(ReviewTarget::default())));
        let full = ReviewSetting::parse(&json!({"agent": "plan", "model": "mock/big"})).unwrap();
        let ReviewSetting::On(target) = &full else { panic!("on") };
        assert_eq!(target.model_ids(), Some(("mock".into(), "big".into())));
        assert_eq!(ReviewSetting::parse(&full.to_value()), Some(full.clone()));
        assert_eq!(ReviewSetting::parse(&json!(true)).unwrap().to_value(), json!(true));
        for bad in [json!("yes"), json!(1), json!({"model": "no-slash"}), json!({"agent": 5}), json!({"modle": "a/b"})]
        {
            assert_eq!(ReviewSetting::parse(&bad), None, "{bad}");
        }
    }

    #[test]
    fn the_last_review_round_trips() {
        let review = LastReview {
            session_id: "ses_1".into(),
            verdict: "rejected".into(),
            findings: vec!["no test".into()],
            cited: vec![("src/a.rs".into(), true), ("src/gone.rs".into(), false)],
            tail: "msg_1".into(),
            cost: 0.25,
            at: 5.0,
        };
        assert_eq!(LastReview::from_value(&review.to_value()), Some(review));
        assert_eq!(LastReview::from_value(&json!("x")), None);
    }
}
