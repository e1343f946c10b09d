//! A data directory kept in memory, for an embedder that keeps no files (a test, a sandboxed
//! app) and for the simulator (`crates/goal-sim`): the settings, the audit trails and the
//! objective texts live as long as the runtime. Its operations finish at once, with no blocking
//! thread, so a run on a paused clock happens the same way every time (a file's read on
//! tokio's blocking pool finishes at a moment the paused clock cannot order).

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;

/// The in-memory data directory. Cloning shares it.
#[derive(Debug, Clone, Default)]
pub struct MemoryDir {
    inner: Arc<Mutex<Contents>>,
}

#[derive(Debug, Default)]
struct Contents {
    settings: Option<String>,
    trails: BTreeMap<String, VecDeque<Value>>,
    objectives: BTreeMap<String, String>,
}

impl MemoryDir {
    /// An empty directory (no `settings.json`: the switches' defaults).
    pub fn new() -> Self {
        Self::default()
    }

    /// The text of `settings.json`, when one was written.
    pub fn settings(&self) -> Option<String> {
        self.inner.lock().settings.clone()
    }

    /// Writes `settings.json`.
    pub fn set_settings(&self, text: &str) {
        self.inner.lock().settings = Some(text.to_string());
    }

    /// Appends a trail record of `session`, keeping the newest `max_records`.
    pub fn append_trail(&self, session: &str, record: &Value, max_records: usize) {
        let mut contents = self.inner.lock();
        let trail = contents.trails.entry(session.to_string()).or_default();
        trail.push_back(record.clone());
        while trail.len() > max_records.max(1) {
            trail.pop_front();
        }
    }

    /// The trail of `session`, oldest first (`limit` keeps the newest).
    pub fn trail(&self, session: &str, limit: Option<usize>) -> Vec<Value> {
        let contents = self.inner.lock();
        let Some(trail) = contents.trails.get(session) else { return Vec::new() };
        let skip = limit.map_or(0, |limit| trail.len().saturating_sub(limit));
        trail.iter().skip(skip).cloned().collect()
    }

    /// The objective text of `session`, if one was written.
    pub fn objective(&self, session: &str) -> Option<String> {
        self.inner.lock().objectives.get(session).cloned()
    }

    /// Writes the objective text of `session`.
    pub fn set_objective(&self, session: &str, text: &str) {
        self.inner.lock().objectives.insert(session.to_string(), text.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_trail_keeps_its_newest_records_and_a_limit_reads_the_last_ones() {
        let dir = MemoryDir::new();
        for turn in 0..5 {
            dir.append_trail("ses_a", &json!({"turn": turn}), 3);
        }
        assert_eq!(dir.trail("ses_a", None), vec![json!({"turn": 2}), json!({"turn": 3}), json!({"turn": 4})]);
        assert_eq!(dir.trail("ses_a", Some(1)), vec![json!({"turn": 4})]);
        assert!(dir.trail("ses_b", None).is_empty());
        assert_eq!(dir.settings(), None);
        dir.set_settings("{}");
        dir.set_objective("ses_a", "Ship it");
        assert_eq!((dir.settings().as_deref(), dir.objective("ses_a").as_deref()), (Some("{}"), Some("Ship it")));
    }
}
