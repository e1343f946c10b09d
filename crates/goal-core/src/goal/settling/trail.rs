//! The audit trail's lines: one per decision of the evidence stages, appended to the session's
//! trail file (`io/trail_file.rs`; on disk `goals/<sessionId>.history.jsonl`, which the API
//! reads back as `history`).

use serde_json::{json, Map, Value};

use crate::goal::context::{spawn_detached, Tick};
use crate::record::{FieldState, Goal, TIME_BUDGET_FIELD};
use crate::time::active::active_ms;

/// A trail line: when, which turn and tail, what the tick did and why, and the time spent.
pub fn line(goal: &Goal, tail: &str, action: &str, reason: &str, now: f64) -> Map<String, Value> {
    let mut record = Map::new();
    record.insert("time".into(), json!(now));
    record.insert("turn".into(), json!(goal.turns_used));
    record.insert("tail".into(), json!(tail));
    record.insert("action".into(), json!(action));
    if !reason.is_empty() {
        record.insert("reason".into(), json!(reason));
    }
    record.insert("activeMs".into(), json!(active_ms(goal, now).floor()));
    // The time budget then, as the goal record names and writes it (a budget that cannot be
    // read is left out).
    if let FieldState::Readable(budget) = goal.field_state(TIME_BUDGET_FIELD) {
        record.insert(TIME_BUDGET_FIELD.into(), budget);
    }
    record
}

impl Tick<'_> {
    /// Appends a line to the trail and waits for it.
    pub async fn append_trail(&self, line: Map<String, Value>) {
        let max = self.ctx.config.evidence.history_max_records;
        self.ctx.services.data_dir.append_trail(self.session_id, &Value::Object(line), max).await;
    }

    /// Appends a line to the trail beside the work that follows (a continuation waits for
    /// nothing it does not need; records of one session are a turn apart).
    pub fn append_trail_detached(&self, line: Map<String, Value>) {
        let (data_dir, session, max) = (
            self.ctx.services.data_dir.clone(),
            self.session_id.to_string(),
            self.ctx.config.evidence.history_max_records,
        );
        spawn_detached(Box::pin(async move { data_dir.append_trail(&session, &Value::Object(line), max).await }));
    }
}
