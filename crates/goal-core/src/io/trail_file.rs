//! The audit trail's file: `<dataDir>/goals/<sessionId>.history.jsonl` (the API's `history`),
//! one JSON record per verdict (or breaker/budget decision; the lines are
//! `goal/decide/notify.rs`'s, appended by `goal/act/mod.rs`), beside the objective file.
//! Bounded: past the record limit the oldest records are dropped. The session id is validated before any file access.

use std::path::{Path, PathBuf};

use serde_json::Value;
use tracing::warn;

use crate::io::file_io;
use crate::io::objectives::is_valid_session_id;

/// Bytes a trail may grow to before it is compacted (whatever the record limit).
const MAX_TRAIL_BYTES: u64 = 1024 * 1024;

fn trail_path(root: &Path, session_id: &str) -> Option<PathBuf> {
    is_valid_session_id(session_id).then(|| root.join("goals").join(format!("{session_id}.history.jsonl")))
}

/// Appends one record and drops the oldest beyond `max_records` (best effort: a trail that
/// cannot be written is logged, never fatal to the loop).
pub async fn append(root: &Path, session_id: &str, record: &Value, max_records: usize) {
    let Some(path) = trail_path(root, session_id) else { return };
    let Ok(line) = serde_json::to_string(record) else { return };
    // The whole append is one file job (directory, open, write, size), not one per call.
    let written = file_io::run(move || append_line(&path, &line, max_records.max(1))).await;
    if let Some(Err(error)) = written {
        warn!(target: "session_goal", session = session_id, kind = ?error.kind(), "audit trail write failed");
    }
}

fn append_line(path: &Path, line: &str, max_records: usize) -> std::io::Result<()> {
    use std::io::Write;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    // One write call per record, so concurrent appends never interleave within a line.
    file.write_all(format!("{line}\n").as_bytes())?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    drop(file);
    // Counting lines on every append would read the whole file; check the record limit only once
    // the file could plausibly hold more (records are at least ~100 bytes).
    if size > MAX_TRAIL_BYTES || size / 100 >= max_records as u64 {
        compact(path, max_records)?;
    }
    Ok(())
}

/// Past `max_records`, keeps the newest three quarters of them (and at most half the byte cap), atomically.
fn compact(path: &Path, max_records: usize) -> std::io::Result<()> {
    let text = std::fs::read_to_string(path)?;
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let total_bytes: usize = lines.iter().map(|l| l.len() + 1).sum();
    if lines.len() <= max_records && (total_bytes as u64) <= MAX_TRAIL_BYTES {
        return Ok(());
    }
    // Keep three quarters, so the next appends do not each rewrite the file.
    let keep = (max_records * 3 / 4).max(1);
    let mut kept: Vec<&str> = lines[lines.len().saturating_sub(keep)..].to_vec();
    let mut bytes: usize = kept.iter().map(|l| l.len() + 1).sum();
    while bytes as u64 > MAX_TRAIL_BYTES / 2 && kept.len() > 1 {
        bytes -= kept[0].len() + 1;
        kept.remove(0);
    }
    let temp = path.with_extension(format!("jsonl.{}.tmp", std::process::id()));
    let mut body = kept.join("\n");
    body.push('\n');
    std::fs::write(&temp, body)?;
    if let Err(error) = std::fs::rename(&temp, path) {
        let _ = std::fs::remove_file(&temp);
        return Err(error);
    }
    Ok(())
}

/// Reads a goal's trail, oldest first; `limit` keeps the newest. Malformed lines are skipped;
/// an invalid id or a missing file reads as empty.
pub async fn read(root: &Path, session_id: &str, limit: Option<usize>) -> Vec<Value> {
    let Some(path) = trail_path(root, session_id) else { return Vec::new() };
    let Some(Ok(text)) = file_io::run(move || std::fs::read_to_string(path)).await else { return Vec::new() };
    let records: Vec<Value> =
        text.lines().filter_map(|line| serde_json::from_str::<Value>(line).ok()).filter(Value::is_object).collect();
    match limit {
        Some(n) if n < records.len() => records[records.len() - n..].to_vec(),
        _ => records,
    }
}

/// Deletes a goal's trail (best effort), e.g. when its goal is cleared.
pub async fn delete(root: &Path, session_id: &str) -> bool {
    match trail_path(root, session_id) {
        Some(path) => file_io::run(move || std::fs::remove_file(path).is_ok()).await.unwrap_or(false),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn temp_root(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("goal-history-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[tokio::test]
    async fn appends_reads_and_drops_the_oldest() {
        let root = temp_root("bounded");
        for turn in 0..30 {
            append(&root, "ses_trail", &json!({"turn": turn, "verdict": "continue", "note": "x".repeat(120)}), 10)
                .await;
        }
        let records = read(&root, "ses_trail", None).await;
        assert!(records.len() <= 10, "bounded: {}", records.len());
        assert_eq!(records.last().unwrap()["turn"], json!(29), "the newest kept");
        assert!(records.first().unwrap()["turn"].as_u64().unwrap() >= 17, "the oldest dropped");
        assert_eq!(read(&root, "ses_trail", Some(2)).await.len(), 2);
        // Garbage lines are skipped, not fatal.
        let path = trail_path(&root, "ses_trail").unwrap();
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("not json\n[1]\n");
        std::fs::write(&path, text).unwrap();
        assert_eq!(read(&root, "ses_trail", None).await.last().unwrap()["turn"], json!(29));
        assert!(delete(&root, "ses_trail").await);
        assert!(read(&root, "ses_trail", None).await.is_empty());
        let _ = std::fs::remove_dir_all(&root);
    }

    #[tokio::test]
    async fn invalid_ids_never_touch_the_file_system() {
        let root = temp_root("invalid");
        append(&root, "../../etc/passwd", &json!({"turn": 1}), 10).await;
        assert!(!root.exists());
        assert!(read(&root, "../x", None).await.is_empty());
    }
}
