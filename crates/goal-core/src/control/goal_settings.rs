//! A goal's settings: the limits and the proof a user asks of one goal (token, cost and time
//! budgets, working hours, acceptance checks and criteria), as one value. Creating, scheduling,
//! sending, forking and editing a goal all carry a [`GoalSettings`]: a new goal applies it to a
//! fresh record, an edit applies it to the stored one, so an edit is a patch of the same type.
//! Each setting's value is checked once, when the host's input becomes a [`SettingChange`]
//! (the binding does it in one `TryFrom`, through the rules of [`rule`]); nothing later checks
//! it again. [`GoalSettings::apply_to`] writes it into the record through the field table
//! (`record/fields.rs`).
//!
//! Adding a setting: a field here (its rule in [`rule`], its write in `apply_to`); every other
//! place it is written (the record's table, a budget's file, its cause, the binding, the CLI)
//! is listed by docs/api.md, "Adding a setting".

use serde_json::Value;

use crate::error::GoalError;
use crate::record::criteria::{assign_criteria, Criterion, CriterionSource};
use crate::record::{AcceptanceCheck, Goal};
use crate::time::hours::ActiveHours;

/// What a goal creation or edit does to one setting.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum SettingChange<T> {
    /// Leave it as it is (a new goal: not set).
    #[default]
    Keep,
    /// Remove it.
    Clear,
    /// Set it to this checked value.
    Set(T),
}

impl<T> SettingChange<T> {
    /// A setting as a request carries it: its value (checked by `rule`) and its clear flag.
    /// Both given is bad input naming `field`; neither leaves the setting.
    pub fn given<V>(
        value: Option<V>,
        clear: Option<bool>,
        (field, clear_field): (&'static str, &str),
        rule: impl FnOnce(V) -> Result<T, String>,
    ) -> Result<Self, GoalError> {
        match (clear == Some(true), value) {
            (true, Some(_)) => Err(GoalError::invalid(field, format!("pass either {field} or {clear_field}"))),
            (true, None) => Ok(SettingChange::Clear),
            (false, Some(value)) => rule(value)
                .map(SettingChange::Set)
                .map_err(|problem| GoalError::invalid(field, format!("{field}: {problem}"))),
            (false, None) => Ok(SettingChange::Keep),
        }
    }

    /// The value being set, if any.
    pub fn set_value(&self) -> Option<&T> {
        match self {
            SettingChange::Set(value) => Some(value),
            _ => None,
        }
    }

    /// Applies the change to a field of the record's `stored` group.
    fn apply_stored<S>(&self, field: &mut crate::record::Stored<S>, encode: impl FnOnce(&T) -> S) {
        match self {
            SettingChange::Keep => {}
            SettingChange::Clear => {
                field.clear();
            }
            SettingChange::Set(value) => field.set(encode(value)),
        }
    }
}

/// A goal's settings, each checked when it was given (see [`rule`]). `Default` changes nothing:
/// a goal without limits.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GoalSettings {
    /// Token budget (`tokenBudget`), within [`rule::token_budget`]'s bounds.
    pub token_budget: SettingChange<u64>,
    /// Cost budget in US dollars (`costBudget`).
    pub cost_budget: SettingChange<f64>,
    /// Time budget in ms of active time (`timeBudgetMs`).
    pub time_budget_ms: SettingChange<u64>,
    /// Working hours (`activeHours`).
    pub active_hours: SettingChange<ActiveHours>,
    /// Acceptance checks run before the goal may settle `complete` (`checks`).
    pub checks: SettingChange<Vec<AcceptanceCheck>>,
    /// The user's acceptance criteria (`criteria`; a text already on the goal keeps its id and
    /// grade).
    pub criteria: SettingChange<Vec<String>>,
    /// A reviewer before `complete` (`review`: `true` or `{agent?, model?}`; `false` is off).
    pub review: SettingChange<crate::record::review::ReviewSetting>,
    /// A wrap-up turn before a limit (`wrapUp`; cleared: the host's default).
    pub wrap_up: SettingChange<bool>,
}

impl GoalSettings {
    /// Whether no setting changes (every one is `Keep`, as in `Default`).
    pub fn is_unchanged(&self) -> bool {
        *self == GoalSettings::default()
    }

    /// The token budget being set (the goal intro names it).
    pub fn token_budget(&self) -> Option<u64> {
        self.token_budget.set_value().copied()
    }

    /// Writes the changed settings into a goal record, fresh or stored.
    pub fn apply_to(&self, goal: &mut Goal) {
        match self.token_budget {
            SettingChange::Keep => {}
            SettingChange::Clear => goal.token_budget = None,
            SettingChange::Set(budget) => goal.token_budget = Some(budget),
        }
        self.cost_budget.apply_stored(&mut goal.cost_budget, |dollars| *dollars);
        self.time_budget_ms.apply_stored(&mut goal.time_budget_ms, |ms| *ms);
        self.active_hours.apply_stored(&mut goal.active_hours, ActiveHours::to_object);
        match &self.checks {
            SettingChange::Keep => {}
            SettingChange::Clear => goal.set_checks(Vec::new()),
            SettingChange::Set(list) => goal.set_checks(list.clone()),
        }
        match &self.criteria {
            SettingChange::Keep => {}
            SettingChange::Clear => goal.set_criteria(Vec::new()),
            SettingChange::Set(texts) => set_user_criteria(goal, texts),
        }
        self.review.apply_stored(&mut goal.review, Clone::clone);
        self.wrap_up.apply_stored(&mut goal.wrap_up, |on| *on);
    }
}

/// Replaces the criteria by the user's list: a text already on the goal keeps its id and grade,
/// a new one takes the next id (never one used before).
fn set_user_criteria(goal: &mut Goal, texts: &[String]) {
    let issued = goal.criteria_issued.get().copied().unwrap_or(0);
    let (list, issued) = assign_criteria(texts, CriterionSource::User, &goal.criteria, issued);
    let list = list.into_iter().map(|c| Criterion { source: CriterionSource::User, ..c }).collect();
    goal.set_criteria(list);
    if issued > 0 || goal.criteria_issued.is_present() {
        goal.criteria_issued.set(issued);
    }
}

/// Each setting's rule: a host's value, as JavaScript or JSON gives it, to the checked value, or
/// why it is refused (worded without a field name; the caller names the field as its request
/// spells it).
pub mod rule {
    use super::*;

    /// A token budget: an integer within `goal/decide/budgets/tokens.rs`'s bounds.
    pub fn token_budget(budget: f64) -> Result<u64, String> {
        crate::goal::decide::budgets::tokens::check_budget(budget)
    }

    /// A cost budget: a finite number of US dollars within `goal/decide/budgets/cost.rs`'s bounds.
    pub fn cost_budget(dollars: f64) -> Result<f64, String> {
        crate::goal::decide::budgets::cost::check_budget(dollars)
    }

    /// A time budget in ms of active time, within `goal/decide/budgets/time.rs`'s bounds.
    pub fn time_budget_ms(ms: f64) -> Result<u64, String> {
        crate::goal::decide::budgets::time::check_budget(ms)
    }

    /// Working hours `{start: "HH:MM", end: "HH:MM", timeZone}`.
    pub fn active_hours(value: Value) -> Result<ActiveHours, String> {
        ActiveHours::from_value(&value)
    }

    /// Acceptance checks `[{command, timeoutMs?} | command]`.
    pub fn checks(value: Value) -> Result<Vec<AcceptanceCheck>, String> {
        crate::record::parse_checks(&value).map_err(|error| error.to_string())
    }

    /// A review: `true`, `false` or `{agent?, model?}` (`record/review.rs`).
    pub fn review(value: Value) -> Result<crate::record::review::ReviewSetting, String> {
        crate::record::review::ReviewSetting::parse(&value).ok_or_else(|| {
            "must be true, false or {agent?, model?}: agent a name, model \"provider/model\"".to_string()
        })
    }

    /// Acceptance criteria: one-line texts, how many and how long `record/criteria.rs` allows.
    pub fn criteria(texts: Vec<String>) -> Result<Vec<String>, String> {
        crate::record::criteria::parse_user_criteria(&Value::from(texts)).map_err(|error| error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use serde_json::json;

    fn goal() -> Goal {
        Goal::from_value(&json!({"id": "g", "status": "active", "objective": "o"})).unwrap()
    }

    #[test]
    fn a_change_is_keep_clear_set_or_one_named_refusal() {
        let budget = |value: Option<f64>, clear: Option<bool>| {
            SettingChange::given(value, clear, ("tokenBudget", "clearTokenBudget"), rule::token_budget)
        };
        assert_eq!(budget(None, None), Ok(SettingChange::Keep));
        assert_eq!(budget(None, Some(false)), Ok(SettingChange::Keep));
        assert_eq!(budget(None, Some(true)), Ok(SettingChange::Clear));
        assert_eq!(budget(Some(5000.0), None), Ok(SettingChange::Set(5000)));
        let both = budget(Some(5000.0), Some(true)).unwrap_err();
        assert_eq!((both.kind, both.field), (ErrorKind::InvalidInput, Some("tokenBudget")));
        assert_eq!(both.message, "pass either tokenBudget or clearTokenBudget");
        let bad = budget(Some(5.0), None).unwrap_err();
        assert_eq!(bad.field, Some("tokenBudget"));
        assert_eq!(bad.message, "tokenBudget: must be an integer between 1000 and 100000000");
    }

    #[test]
    fn settings_write_through_the_field_table_and_clear_as_a_whole() {
        let hours = rule::active_hours(json!({"start": "09:00", "end": "17:00", "timeZone": "UTC"})).unwrap();
        let settings = GoalSettings {
            token_budget: SettingChange::Set(5000),
            cost_budget: SettingChange::Set(2.5),
            time_budget_ms: SettingChange::Set(60_000),
            active_hours: SettingChange::Set(hours),
            checks: SettingChange::Set(rule::checks(json!(["npm test"])).unwrap()),
            criteria: SettingChange::Set(vec!["tests pass".into()]),
            review: SettingChange::Set(rule::review(json!({"model": "p/m"})).unwrap()),
            wrap_up: SettingChange::Set(false),
        };
        let mut goal = goal();
        settings.apply_to(&mut goal);
        let stored = goal.to_value();
        assert_eq!(stored["tokenBudget"], json!(5000));
        assert_eq!(stored["costBudget"], json!(2.5));
        assert_eq!(stored["timeBudgetMs"], json!(60_000));
        assert_eq!(stored["activeHours"]["timeZone"], json!("UTC"));
        assert_eq!(stored["checks"][0]["command"], json!("npm test"));
        assert_eq!(stored["criteria"][0]["id"], json!("c1"));
        assert_eq!(stored["criteriaIssued"], json!(1));
        assert_eq!(stored["review"], json!({"model": "p/m"}));
        assert_eq!(stored["wrapUp"], json!(false));
        assert!(rule::review(json!("yes")).is_err() && rule::review(json!({"model": "no-slash"})).is_err());
        assert!(!settings.is_unchanged() && GoalSettings::default().is_unchanged());

        // Setting the same criterion again keeps its id; a new one takes the next.
        let again = GoalSettings {
            criteria: SettingChange::Set(vec!["tests pass".into(), "docs".into()]),
            ..Default::default()
        };
        again.apply_to(&mut goal);
        let ids: Vec<_> = goal.criteria.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["c1", "c2"]);

        let clear_all = GoalSettings {
            token_budget: SettingChange::Clear,
            cost_budget: SettingChange::Clear,
            time_budget_ms: SettingChange::Clear,
            active_hours: SettingChange::Clear,
            checks: SettingChange::Clear,
            criteria: SettingChange::Clear,
            review: SettingChange::Clear,
            wrap_up: SettingChange::Clear,
        };
        clear_all.apply_to(&mut goal);
        let stored = goal.to_value();
        for key in ["costBudget", "timeBudgetMs", "activeHours", "checks", "criteria", "review", "wrapUp"] {
            assert!(stored.get(key).is_none(), "{key} cleared");
        }
        assert_eq!(stored["tokenBudget"], json!(null));
    }

    #[test]
    fn a_fresh_goal_without_settings_has_no_criteria_counter() {
        let mut goal = goal();
        GoalSettings::default().apply_to(&mut goal);
        assert!(goal.to_value().get("criteriaIssued").is_none());
    }
}
