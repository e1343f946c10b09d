//! What the host provides: a small model, a notification sink, settings on disk. The plain
//! data these carry lives in pure modules (`record/small_model_call.rs`,
//! `config/settings_file.rs`), re-exported here.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

pub use crate::config::settings_file::SettingsFlags;
use crate::io::memory_dir::MemoryDir;
use crate::io::opencode::BoxFuture;
pub use crate::record::small_model_call::{usage_total, SmallModelError, SmallModelQuery, SmallModelReply};

/// A small model.
pub trait SmallModel: Send + Sync {
    /// Generates text.
    fn generate(&self, request: SmallModelQuery) -> BoxFuture<'_, Result<SmallModelReply, SmallModelError>>;
}

/// No small model: every audit is unavailable (404, silent).
pub struct NoSmallModel;

impl SmallModel for NoSmallModel {
    fn generate(&self, _request: SmallModelQuery) -> BoxFuture<'_, Result<SmallModelReply, SmallModelError>> {
        Box::pin(async { Err(SmallModelError { status: Some(404), code: String::new() }) })
    }
}

/// Where notifications go.
pub trait Notifier: Send + Sync {
    /// Delivers one settle notification (fire and forget).
    fn notify(&self, event: Value);
}

/// Drops notifications.
pub struct NoNotifier;

impl Notifier for NoNotifier {
    fn notify(&self, _event: Value) {}
}

/// The OpenChamber data directory: explicit, else `OPENCHAMBER_DATA_DIR`, else
/// `~/.config/openchamber`.
pub fn resolve_data_dir(explicit: Option<&str>) -> PathBuf {
    if let Some(dir) = explicit.filter(|d| !d.trim().is_empty()) {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("OPENCHAMBER_DATA_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME")
        .or_else(|| std::env::var_os("USERPROFILE"))
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    home.join(".config").join("openchamber")
}

/// The settings file, the objective files and the audit trails: on disk under a root, or in
/// memory (`io/memory_dir.rs`).
#[derive(Debug, Clone)]
pub struct DataDir {
    root: PathBuf,
    memory: Option<MemoryDir>,
}

impl DataDir {
    /// A data directory on disk.
    pub fn new(root: PathBuf) -> Self {
        Self { root, memory: None }
    }

    /// A data directory in memory (`root` only names it: nothing is read or written there).
    pub fn in_memory(root: PathBuf, memory: MemoryDir) -> Self {
        Self { root, memory: Some(memory) }
    }

    /// Its path.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The in-memory contents, when it is kept in memory.
    pub fn memory(&self) -> Option<&MemoryDir> {
        self.memory.as_ref()
    }

    /// Reads the switches now (never cached: the user may flip them at any time).
    pub async fn flags(&self) -> SettingsFlags {
        let text = match &self.memory {
            Some(memory) => memory.settings(),
            None => {
                let path = self.root.join("settings.json");
                crate::io::file_io::run(move || std::fs::read_to_string(path).ok()).await.flatten()
            }
        };
        text.map_or(SettingsFlags::DEFAULT, |text| SettingsFlags::parse(&text))
    }

    /// Reads an objective file fresh. `None` when invalid id, missing, unreadable or empty.
    pub async fn read_objective(&self, session_id: &str) -> Option<String> {
        match &self.memory {
            Some(memory) => memory.objective(session_id).filter(|text| !text.trim().is_empty()),
            None => crate::io::objectives::read_objective(&self.root, session_id).await,
        }
    }

    /// Appends a record to the session's audit trail, keeping the newest `max_records`.
    pub async fn append_trail(&self, session_id: &str, record: &Value, max_records: usize) {
        match &self.memory {
            Some(memory) => memory.append_trail(session_id, record, max_records),
            None => crate::io::trail_file::append(&self.root, session_id, record, max_records).await,
        }
    }

    /// The session's audit trail, oldest first (`limit` keeps the newest).
    pub async fn trail(&self, session_id: &str, limit: Option<usize>) -> Vec<Value> {
        match &self.memory {
            Some(memory) => memory.trail(session_id, limit),
            None => crate::io::trail_file::read(&self.root, session_id, limit).await,
        }
    }
}

/// The host services one runtime uses.
#[derive(Clone)]
pub struct Services {
    /// The small model that audits turns (the host's service or the built-in one).
    pub small_model: Arc<dyn SmallModel>,
    /// Where goal notifications go (the host's `emitGoalNotification`, or nowhere).
    pub notifier: Arc<dyn Notifier>,
    /// Settings and objective files.
    pub data_dir: DataDir,
}
