//! A goal's settings at the binding, both ways: as JavaScript passes them, converted in one
//! place ([`TryFrom`]) into the core's checked `GoalSettings`, which create, schedule, send, fork
//! and edit all carry; and the goal record JavaScript gets back ([`GoalRecord`]), whose settings
//! are read from the core's field table. Each setting's rule is also exported on its own
//! (`inputRules`) for a host that checks input first. A new setting is a field of each, in this
//! one file.
//!
//! Two forms, one input type: nested under `goal: {…}` (create / send / fork), or beside the
//! request's own fields (`createSessionGoal`, `stampScheduledGoal`, `editGoal`; [`Beside`]
//! reads both from the one object). A refusal names the field as the request spells it:
//! `goal.costBudget` nested, `costBudget` beside.

use napi::bindgen_prelude::{FromNapiValue, TypeName, ValidateNapiValue};
use napi::{sys, ValueType};
use napi_derive::napi;
use serde_json::{json, Value};

use goal_core::{rule, Goal, GoalError, GoalSettings, HoursPart, SettingChange};

use crate::types::goal_parts::{GoalActiveHours, GoalCause, GoalCheck, GoalCriterion};
use crate::types::stored_fields::StoredFields;
use crate::validate::RuleOutcome;

/// A goal's settings (`goal: true` is the same as `goal: {}`: no limits).
#[napi(object)]
#[derive(Default)]
pub struct GoalSettingsInput {
    /// Token budget: an integer in [1000, 100000000].
    pub token_budget: Option<f64>,
    /// Time budget in ms (active time: paused and waiting time excluded); at least 1000.
    pub time_budget_ms: Option<f64>,
    /// Working hours `{start: "HH:MM", end: "HH:MM", timeZone: "Europe/Berlin"}` (IANA zone;
    /// `end < start` crosses midnight). Outside them no continuation is sent.
    #[napi(ts_type = "{ start: string; end: string; timeZone: string }")]
    pub active_hours: Option<serde_json::Value>,
    /// Acceptance checks `[{command, timeoutMs?}]`, run before the goal may settle `complete`: at
    /// most 8, each command one line of at most 2,000 characters; `timeoutMs` defaults to 10
    /// minutes.
    #[napi(ts_type = "Array<{ command: string; timeoutMs?: number } | string>")]
    pub checks: Option<serde_json::Value>,
    /// Cost budget in US dollars (at least 0.01): the goal settles `budgetLimited` when its
    /// replies' `info.cost` reach it.
    pub cost_budget: Option<f64>,
    /// Acceptance criteria: at most 8 strings of at most 300 characters, each graded against
    /// evidence before the goal may complete.
    pub criteria: Option<Vec<String>>,
    /// A reviewer before the goal may settle `complete`: `true` (on the goal's agent and model)
    /// or `{agent?, model?}` (`model` as `"provider/model"`); `false` turns it off. A read-only
    /// child session of the goal's session (docs/review.md).
    #[napi(ts_type = "boolean | { agent?: string; model?: string }")]
    pub review: Option<serde_json::Value>,
    /// Whether the goal, near its token, cost or time budget or its turn cap, ends with one
    /// wrap-up turn inside it (a handoff: what is done, verified, left, and the next step) before
    /// it settles; absent: the host's default (`wrapUp`, true). docs/verdicts.md.
    pub wrap_up: Option<bool>,
}

/// An edit's removals, beside its `GoalSettingsInput` (a setting and its removal together are
/// refused).
#[napi(object)]
#[derive(Default)]
pub struct GoalSettingsRemoval {
    /// Remove the token budget.
    pub clear_token_budget: Option<bool>,
    /// Remove the time budget.
    pub clear_time_budget: Option<bool>,
    /// Remove the working hours.
    pub clear_active_hours: Option<bool>,
    /// Remove the acceptance checks.
    pub clear_checks: Option<bool>,
    /// Remove the cost budget.
    pub clear_cost_budget: Option<bool>,
    /// Remove the acceptance criteria.
    pub clear_criteria: Option<bool>,
    /// Remove the review setting (no review).
    pub clear_review: Option<bool>,
    /// Remove the wrap-up setting (the host's default applies).
    pub clear_wrap_up: Option<bool>,
}

/// Settings as one request carries them: the values, the removals (edits only) and whether they
/// came nested under `goal` (which names the fields of a refusal).
#[derive(Default)]
pub(crate) struct SettingsRequest {
    /// The values.
    pub values: GoalSettingsInput,
    /// The removals.
    pub removals: GoalSettingsRemoval,
    /// Nested under `goal: {…}`.
    pub nested: bool,
}

impl SettingsRequest {
    /// Settings nested under `goal: {…}`.
    pub fn nested(values: GoalSettingsInput) -> Self {
        Self { values, removals: GoalSettingsRemoval::default(), nested: true }
    }

    /// Settings beside a request's own fields.
    pub fn beside(values: GoalSettingsInput) -> Self {
        Self { values, ..Self::default() }
    }
}

/// The field a refusal names, as the request spells it: `goal.<name>` nested, `<name>` beside.
macro_rules! field {
    ($nested:expr, $name:literal) => {
        if $nested {
            concat!("goal.", $name)
        } else {
            $name
        }
    };
}

impl TryFrom<SettingsRequest> for GoalSettings {
    type Error = GoalError;

    fn try_from(request: SettingsRequest) -> Result<Self, GoalError> {
        let SettingsRequest { values, removals, nested } = request;
        Ok(GoalSettings {
            token_budget: SettingChange::given(
                values.token_budget,
                removals.clear_token_budget,
                (field!(nested, "tokenBudget"), "clearTokenBudget"),
                rule::token_budget,
            )?,
            cost_budget: SettingChange::given(
                values.cost_budget,
                removals.clear_cost_budget,
                (field!(nested, "costBudget"), "clearCostBudget"),
                rule::cost_budget,
            )?,
            time_budget_ms: SettingChange::given(
                values.time_budget_ms,
                removals.clear_time_budget,
                (field!(nested, "timeBudgetMs"), "clearTimeBudget"),
                rule::time_budget_ms,
            )?,
            active_hours: SettingChange::given(
                values.active_hours.filter(|v| !v.is_null()),
                removals.clear_active_hours,
                (field!(nested, "activeHours"), "clearActiveHours"),
                rule::active_hours,
            )?,
            checks: SettingChange::given(
                values.checks.filter(|v| !v.is_null()),
                removals.clear_checks,
                (field!(nested, "checks"), "clearChecks"),
                rule::checks,
            )?,
            criteria: SettingChange::given(
                values.criteria,
                removals.clear_criteria,
                (field!(nested, "criteria"), "clearCriteria"),
                rule::criteria,
            )?,
            review: SettingChange::given(
                values.review.filter(|v| !v.is_null()),
                removals.clear_review,
                (field!(nested, "review"), "clearReview"),
                rule::review,
            )?,
            wrap_up: SettingChange::given(
                values.wrap_up,
                removals.clear_wrap_up,
                (field!(nested, "wrapUp"), "clearWrapUp"),
                Ok::<bool, String>,
            )?,
        })
    }
}

// Each setting's rule for a host that checks user input before it calls the API (the CLI):
// exported under `inputRules` beside the other input rules (`src/validate.rs`), answering a
// `RuleOutcome` whose problem names no field.

/// A time budget written as a duration (`90m`, `2h`, `1h30m`, `45s`, `1d`) in milliseconds,
/// within the core's time-budget bounds.
#[napi(namespace = "inputRules")]
pub fn time_budget(text: String) -> RuleOutcome {
    goal_core::parse_duration(&text).map(|ms| ms as f64).into()
}

/// A token budget: an integer within the goal settings' bounds.
#[napi(namespace = "inputRules")]
pub fn token_budget(value: f64) -> RuleOutcome {
    rule::token_budget(value).map(|budget| budget as f64).into()
}

/// A cost budget in US dollars within the goal settings' bounds.
#[napi(namespace = "inputRules")]
pub fn cost_budget(dollars: f64) -> RuleOutcome {
    rule::cost_budget(dollars).into()
}

/// A list of acceptance criteria, by the goal settings' rule (how many, how long, one line
/// each, no control characters); the value is how many there are.
#[napi(namespace = "inputRules")]
pub fn criteria(texts: Vec<String>) -> RuleOutcome {
    rule::criteria(texts).map(|list| list.len() as f64).into()
}

/// A list of acceptance-check commands, by the goal settings' rule (how many, how long, one
/// line each).
#[napi(namespace = "inputRules")]
pub fn checks(commands: Vec<String>) -> RuleOutcome {
    let list = Value::Array(commands.into_iter().map(|command| json!({ "command": command })).collect());
    rule::checks(list).map(|parsed| parsed.len() as f64).into()
}

/// Working hours `start`–`end` (`HH:MM`) in the IANA zone `time_zone`; a refusal names the part
/// at fault in words (`time zone`, `start time`…), not the API's field.
#[napi(namespace = "inputRules")]
pub fn active_hours(start: String, end: String, time_zone: String) -> RuleOutcome {
    match goal_core::ActiveHours::check(&start, &end, &time_zone) {
        Ok(_) => RuleOutcome::accepted(None),
        Err(problem) => {
            let part = match problem.part {
                HoursPart::Start => "start time",
                HoursPart::End => "end time",
                HoursPart::Window => "start and end time",
                HoursPart::TimeZone => "time zone",
            };
            RuleOutcome::refused(format!("{part} {}", problem.text))
        }
    }
}

/// A request whose goal settings sit beside its own fields in one JavaScript object: both are
/// read from that object (napi objects cannot flatten one struct into another). Declared in
/// TypeScript as the intersection of the two (`ts_args_type` at each use).
pub struct Beside<Request, Settings> {
    /// The request's own fields.
    pub request: Request,
    /// The settings beside them.
    pub settings: Settings,
}

impl<Request: FromNapiValue, Settings: FromNapiValue> FromNapiValue for Beside<Request, Settings> {
    unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
        Ok(Beside { request: Request::from_napi_value(env, value)?, settings: Settings::from_napi_value(env, value)? })
    }
}

impl<Request: TypeName, Settings> TypeName for Beside<Request, Settings> {
    fn type_name() -> &'static str {
        Request::type_name()
    }

    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl<Request: ValidateNapiValue, Settings> ValidateNapiValue for Beside<Request, Settings> {
    unsafe fn validate(env: sys::napi_env, value: sys::napi_value) -> napi::Result<sys::napi_value> {
        Request::validate(env, value)
    }
}

// The reference's fields are read from the goal's stored form (the core's field table defines
// each once). The settings and the derived values are read typed from the core,
// so a stored value this version cannot read shows as absent instead of failing the record.
/// A goal as stored in `metadata.openchamber.goal`.
#[napi(object, object_from_js = false)]
#[derive(Default)]
pub struct GoalRecord {
    /// Goal id (`Date.now().toString(36)` + 6 random base-36 chars for new goals).
    pub id: String,
    /// Inline objective; empty when the text lives in the objective file.
    pub objective: String,
    /// The objective lives in `<dataDir>/goals/<sessionId>.md`.
    pub objective_file: bool,
    /// `active`, `paused`, `blocked`, `budgetLimited` or `complete`.
    pub status: String,
    /// Token budget, if any.
    pub token_budget: Option<f64>,
    /// Tokens charged to the goal.
    pub tokens_used: f64,
    /// Accounting baseline of the current segment.
    pub tokens_baseline: f64,
    /// Tokens of closed segments.
    pub tokens_committed: f64,
    /// Automatic continuations sent.
    pub turns_used: f64,
    /// Consecutive `blocked` verdicts.
    pub blocked_streak: f64,
    /// Consecutive failed audits.
    pub audit_fail_streak: f64,
    /// Latest audit note.
    pub note: String,
    /// Why the goal is in its status.
    pub status_reason: String,
    /// Provider of the latest audit.
    #[napi(js_name = "evaluationProviderID")]
    pub evaluation_provider_id: String,
    /// Model of the latest audit.
    #[napi(js_name = "evaluationModelID")]
    pub evaluation_model_id: String,
    /// Accounting cursor.
    #[napi(js_name = "lastAccountedMessageID")]
    pub last_accounted_message_id: String,
    /// Creation time (ms since the epoch).
    pub created_at: f64,
    /// Last write (ms since the epoch).
    pub updated_at: f64,
    /// Time budget (ms), if any.
    pub time_budget_ms: Option<f64>,
    /// Cost budget in US dollars, if any.
    pub cost_budget: Option<f64>,
    /// US dollars the session's replies cost since the goal began (0 on a model without a price).
    pub cost_used: f64,
    /// Active time so far (ms): since `createdAt`, minus time paused or waiting.
    pub active_ms: f64,
    /// Working hours, if any.
    pub active_hours: Option<GoalActiveHours>,
    /// The session the goal belongs to (`sessionId`), when it names one.
    pub session_id: Option<String>,
    /// When a goal parked on a provider limit goes on by itself (ms since the epoch).
    pub wake_at: Option<f64>,
    /// Acceptance checks run before the goal may settle `complete`, if any.
    pub checks: Option<Vec<GoalCheck>>,
    /// Acceptance criteria the auditor grades one by one against evidence, if any.
    pub criteria: Option<Vec<GoalCriterion>>,
    /// Why the goal stopped or waits; absent while it runs.
    pub cause: Option<GoalCause>,
    /// The review setting, when the goal asks for a reviewer before `complete`.
    #[napi(ts_type = "true | { agent?: string; model?: string }")]
    pub review: Option<serde_json::Value>,
    /// The goal's own wrap-up setting, when it has one (absent: the host's default).
    pub wrap_up: Option<bool>,
    /// The wrap-up turn posted before a limit, while the goal waits for its reply: the
    /// continuation's message id and the limit's cause code.
    pub wrapped_up: Option<GoalWrappedUp>,
}

/// The wrap-up turn a goal posted before a limit.
#[napi(object, object_from_js = false)]
#[derive(Debug, Clone, Default)]
pub struct GoalWrappedUp {
    /// The wrap-up continuation's message id.
    pub message_id: String,
    /// The limit it hands off before (the cause code the goal settles with after its reply).
    pub cause: String,
}

impl From<&Goal> for GoalRecord {
    fn from(goal: &Goal) -> Self {
        // The stored form is well typed by construction; a mismatch could only come from a change in
        // the core, and then the fields that did read are still shown rather than failing the call.
        let stored = goal.to_value();
        let fields = StoredFields::of(&stored).ok();
        let number_or_unset = |key: &str| fields.as_ref().and_then(|f| f.number(key).ok().flatten());
        let text = |key: &str| fields.as_ref().and_then(|f| f.text(key).ok().flatten()).unwrap_or_default();
        let number = |key: &str| number_or_unset(key).unwrap_or_default();
        GoalRecord {
            id: text("id"),
            objective: text("objective"),
            objective_file: fields.as_ref().and_then(|f| f.flag("objectiveFile").ok().flatten()).unwrap_or_default(),
            status: text("status"),
            token_budget: number_or_unset("tokenBudget"),
            tokens_used: number("tokensUsed"),
            tokens_baseline: number("tokensBaseline"),
            tokens_committed: number("tokensCommitted"),
            turns_used: number("turnsUsed"),
            blocked_streak: number("blockedStreak"),
            audit_fail_streak: number("auditFailStreak"),
            note: text("note"),
            status_reason: text("statusReason"),
            evaluation_provider_id: text("evaluationProviderID"),
            evaluation_model_id: text("evaluationModelID"),
            last_accounted_message_id: text("lastAccountedMessageID"),
            created_at: number("createdAt"),
            updated_at: number("updatedAt"),
            time_budget_ms: goal.time_budget_ms.get().map(|ms| *ms as f64),
            cost_budget: goal.cost_budget.get().copied(),
            cost_used: goal_core::cost_used(goal),
            active_ms: goal_core::active_ms(goal, goal_core::now_ms()).floor(),
            active_hours: goal.active_hours.get().map(GoalActiveHours::from),
            checks: (!goal.checks.is_empty()).then(|| goal.checks.iter().map(GoalCheck::from).collect()),
            criteria: (!goal.criteria.is_empty()).then(|| goal.criteria.iter().map(GoalCriterion::from).collect()),
            cause: goal.cause.as_ref().map(GoalCause::from),
            session_id: goal.session_id.clone(),
            wake_at: goal_core::provider_wake_at(goal),
            review: goal
                .review_wanted()
                .map(|_| goal.review.get().map_or(serde_json::Value::Bool(true), |r| r.to_value())),
            wrap_up: goal.wrap_up.get().copied(),
            wrapped_up: goal
                .wrapped_up
                .get()
                .map(|w| GoalWrappedUp { message_id: w.message_id.clone(), cause: w.cause.as_str().to_string() }),
        }
    }
}
