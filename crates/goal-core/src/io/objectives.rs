//! The objective store: `<dataDir>/goals/<sessionId>.md`. Metadata never carries a path; the
//! session id is validated before any file access, so metadata cannot become a file-read vector.

use std::path::{Path, PathBuf};

use crate::io::file_io;
use crate::record::GOAL_OBJECTIVE_CHAR_LIMIT;
use crate::text::truncate_chars;

pub use crate::error::ObjectiveError;

/// `^[A-Za-z0-9_-]{4,128}$`.
pub fn is_valid_session_id(session_id: &str) -> bool {
    (4..=128).contains(&session_id.len())
        && session_id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Trims and clamps objective text to 5000 characters.
pub fn normalize_objective(content: &str) -> String {
    truncate_chars(content.trim(), GOAL_OBJECTIVE_CHAR_LIMIT).trim_end().to_string()
}

fn objective_path(root: &Path, session_id: &str) -> Option<PathBuf> {
    is_valid_session_id(session_id).then(|| root.join("goals").join(format!("{session_id}.md")))
}

/// Writes an objective atomically (temp file + rename: a reader never sees half a file).
pub async fn write_objective(root: &Path, session_id: &str, content: &str) -> Result<String, ObjectiveError> {
    let path = objective_path(root, session_id).ok_or(ObjectiveError::InvalidSessionId)?;
    let text = normalize_objective(content);
    if text.is_empty() {
        return Err(ObjectiveError::Empty);
    }
    let unique = format!(
        ".{session_id}.{}.{}.tmp",
        std::process::id(),
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0)
    );
    let body = text.clone();
    let written = file_io::run(move || replace_file(&path, &unique, body.as_bytes())).await;
    match written {
        Some(Ok(())) => Ok(text),
        Some(Err(error)) => Err(ObjectiveError::Io(format!("{:?}", error.kind()))),
        None => Err(ObjectiveError::Io("Other".to_string())),
    }
}

/// Writes `path` through a temp file named `temp_name` beside it, renamed over it.
fn replace_file(path: &Path, temp_name: &str, body: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    std::fs::create_dir_all(&dir)?;
    let temp = dir.join(temp_name);
    let moved = std::fs::write(&temp, body).and_then(|()| std::fs::rename(&temp, path));
    if moved.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    moved
}

/// Reads an objective. `None` for an invalid id, a missing or unreadable file, or empty text.
pub async fn read_objective(root: &Path, session_id: &str) -> Option<String> {
    let path = objective_path(root, session_id)?;
    let text = file_io::run(move || std::fs::read_to_string(path)).await?.ok()?;
    let text = normalize_objective(&text);
    (!text.is_empty()).then_some(text)
}

/// What [`copy_objective`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectiveCopy {
    /// The source's objective now lives at the copy's path too.
    Copied,
    /// The copy already had an objective file; it was left as it is.
    AlreadyThere,
    /// The source has no readable objective file: nothing was copied.
    SourceMissing,
    /// The copy's file could not be written.
    WriteFailed,
}

/// Copies the objective file of session `from` to session `to`'s path (a fork's copied goal
/// reads its objective from a file named after its own session). An objective already at the
/// copy's path is kept: it was written for that session.
pub async fn copy_objective(root: &Path, from: &str, to: &str) -> ObjectiveCopy {
    if read_objective(root, to).await.is_some() {
        return ObjectiveCopy::AlreadyThere;
    }
    let Some(text) = read_objective(root, from).await else { return ObjectiveCopy::SourceMissing };
    match write_objective(root, to, &text).await {
        Ok(_) => ObjectiveCopy::Copied,
        Err(_) => ObjectiveCopy::WriteFailed,
    }
}

/// Deletes an objective, best effort. Returns whether a file was removed.
pub async fn delete_objective(root: &Path, session_id: &str) -> bool {
    match objective_path(root, session_id) {
        Some(path) => file_io::run(move || std::fs::remove_file(path).is_ok()).await.unwrap_or(false),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_id_shape() {
        assert!(is_valid_session_id("ses_abc-123"));
        for bad in ["abc", "../../etc/passwd", "a b c d", "ses/abc", "ses.abc", &"x".repeat(129), "sés_abcd"] {
            assert!(!is_valid_session_id(bad), "{bad}");
        }
    }

    #[tokio::test]
    async fn round_trip_clamp_and_refusals() {
        let root = std::env::temp_dir().join(format!("objectives-test-{}", std::process::id()));
        let long = format!("  {}  ", "é".repeat(6000));
        let written = write_objective(&root, "ses_test1", &long).await.unwrap();
        assert_eq!(written.chars().count(), 5000);
        assert_eq!(read_objective(&root, "ses_test1").await.unwrap(), written);
        assert_eq!(write_objective(&root, "../evil", "x").await, Err(ObjectiveError::InvalidSessionId));
        assert_eq!(write_objective(&root, "ses_test2", "   ").await, Err(ObjectiveError::Empty));
        assert!(read_objective(&root, "ses_test2").await.is_none());
        assert!(delete_objective(&root, "ses_test1").await);
        assert!(read_objective(&root, "ses_test1").await.is_none());
        let leftovers: Vec<_> = std::fs::read_dir(root.join("goals")).unwrap().collect();
        assert!(leftovers.is_empty(), "no temp files left");
        let _ = std::fs::remove_dir_all(root);
    }

    #[tokio::test]
    async fn a_copy_gets_the_source_objective_unless_it_has_its_own() {
        let root = std::env::temp_dir().join(format!("objectives-copy-test-{}", std::process::id()));
        write_objective(&root, "ses_source", "Ship the parser").await.unwrap();
        assert_eq!(copy_objective(&root, "ses_source", "ses_copy1").await, ObjectiveCopy::Copied);
        assert_eq!(read_objective(&root, "ses_copy1").await.as_deref(), Some("Ship the parser"));
        write_objective(&root, "ses_copy2", "its own").await.unwrap();
        assert_eq!(copy_objective(&root, "ses_source", "ses_copy2").await, ObjectiveCopy::AlreadyThere);
        assert_eq!(read_objective(&root, "ses_copy2").await.as_deref(), Some("its own"));
        assert_eq!(copy_objective(&root, "ses_gone", "ses_copy3").await, ObjectiveCopy::SourceMissing);
        assert!(read_objective(&root, "ses_copy3").await.is_none());
        assert_eq!(copy_objective(&root, "ses_source", "../x").await, ObjectiveCopy::WriteFailed);
        let _ = std::fs::remove_dir_all(root);
    }
}
