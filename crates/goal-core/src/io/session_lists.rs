//! The OpenCode client's session lists: one directory's (the owner lists, the fallback census), and
//! every directory's at once (the census, `runtime/census.rs`), with the projects of a server that
//! has no such list. What each route returns on a real server is in docs/opencode.md, "Finding
//! every goal".

use serde_json::Value;

use crate::error::HttpError;
use crate::io::opencode::OpenCodeClient;
use crate::record::session::{ListedSession, OwnerCandidate, SessionView};

impl OpenCodeClient {
    /// `GET /session?directory=&limit=` — sessions of one directory, each with its whole metadata.
    pub async fn list_sessions(&self, directory: &str) -> Result<Vec<SessionView>, HttpError> {
        self.list_with("/session", directory, &[whole_list()], SessionView::from_value).await
    }

    /// `GET /session?directory=&roots=true&limit=` — the top-level sessions of one directory, each
    /// with its goal only (what the scans need; see [`ListedSession`]).
    pub async fn list_session_goals(&self, directory: &str) -> Result<Vec<ListedSession>, HttpError> {
        let query = [("roots", "true".to_string()), whole_list()];
        self.list_with("/session", directory, &query, ListedSession::from_value).await
    }

    /// `GET /experimental/session?roots=true&limit=&cursor=` — one page of the top-level sessions
    /// of every project and directory the server knows, newest update first, each with its goal
    /// only. `cursor` (epoch ms) keeps the sessions updated before it. Sent with no `directory`:
    /// with one, the server lists that directory alone (docs/opencode.md, "Finding every goal").
    pub async fn list_goal_sessions_everywhere(
        &self,
        limit: usize,
        cursor: Option<f64>,
    ) -> Result<Vec<ListedSession>, HttpError> {
        let mut query = vec![("roots", "true".to_string()), ("limit", limit.to_string())];
        if let Some(cursor) = cursor.filter(|c| c.is_finite() && *c > 0.0) {
            query.push(("cursor", format!("{}", cursor.floor() as i64)));
        }
        self.list_with("/experimental/session", "", &query, ListedSession::from_value).await
    }

    /// `GET /project` — the directories of the projects the server knows: each project's worktree
    /// (not the plain directories' shared project, whose worktree is `/`) and its sandboxes.
    pub async fn list_project_directories(&self) -> Result<Vec<String>, HttpError> {
        let projects = self.list_with("/project", "", &[], project_directories).await?;
        Ok(projects.into_iter().flatten().collect())
    }

    /// `GET /session?directory=&roots=true&start=` — the top-level sessions of one directory
    /// updated at or after `start` (epoch ms; every session when `None`) that hold a goal, each
    /// as its session id, goal id and creation time: what an owner list needs (see
    /// `goal::gather::owners`).
    pub async fn list_owner_candidates(
        &self,
        directory: &str,
        start: Option<f64>,
    ) -> Result<Vec<OwnerCandidate>, HttpError> {
        let mut query = vec![("roots", "true".to_string()), whole_list()];
        if let Some(start) = start.filter(|s| s.is_finite() && *s > 0.0) {
            query.push(("start", format!("{}", start.floor() as i64)));
        }
        self.list_with("/session", directory, &query, OwnerCandidate::from_value).await
    }
}

/// The most sessions a whole-directory list asks for. OpenCode answers `GET /session` with its
/// 100 most recently updated sessions unless a `limit` says otherwise (docs/opencode.md), so a
/// list that must hold every session of a directory names a limit beyond any real directory.
pub const SESSION_LIST_LIMIT: usize = 100_000;

/// The `limit` query of a list that must hold every session it names.
fn whole_list() -> (&'static str, String) {
    ("limit", SESSION_LIST_LIMIT.to_string())
}

/// The directories one `GET /project` entry names: its worktree unless it is `/` (the project of
/// every plain directory, which lists none of them), and its sandboxes.
fn project_directories(project: &Value) -> Option<Vec<String>> {
    let worktree = project.get("worktree").and_then(Value::as_str).filter(|w| !w.is_empty() && *w != "/");
    let sandboxes = project.get("sandboxes").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str);
    Some(worktree.into_iter().chain(sandboxes).filter(|d| !d.is_empty()).map(str::to_string).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_project_names_its_worktree_and_sandboxes_and_the_plain_directories_project_names_none() {
        let git = json!({"id": "abc", "worktree": "/p", "sandboxes": ["/p-copy"], "time": {"created": 1}});
        assert_eq!(project_directories(&git), Some(vec!["/p".to_string(), "/p-copy".to_string()]));
        let global = json!({"id": "global", "worktree": "/", "sandboxes": []});
        assert_eq!(project_directories(&global), Some(Vec::new()));
        assert_eq!(project_directories(&json!({"id": "x"})), Some(Vec::new()));
    }
}
