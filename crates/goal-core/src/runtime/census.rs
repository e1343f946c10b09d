//! The census: every goal on the OpenCode server, whatever its directory. A host started again
//! knows no directory (OpenChamber names none), and an idle session sends no event, so what a
//! restarted runtime must drive is found from OpenCode itself: `GET /experimental/session` lists
//! the top-level sessions of every project and plain directory, newest update first, a page at
//! a time. A server without that route (it answers 404 or 405) is read directory by directory:
//! its projects' worktrees and sandboxes (`GET /project`), the host's `directories`, and those
//! the runtime learned. docs/forks-and-restarts.md says when a census is taken and what it costs.

use std::collections::HashSet;

use tracing::{debug, warn};

use super::Inner;
use crate::error::HttpError;
use crate::record::session::ListedSession;

/// Sessions one page of the census asks for: 10,000 sessions are 10 requests.
pub(super) const CENSUS_PAGE: usize = 1_000;

/// Most pages one census reads (a million sessions): a server that kept answering full pages
/// cannot hold it for ever.
const MAX_PAGES: usize = 1_000;

/// How often the first connection's census looks whether the scan at start is done.
pub(super) const AFTER_START_POLL: std::time::Duration = std::time::Duration::from_millis(250);

/// The list gate's key for the census (`goal/gather/list_gate.rs`): no directory is empty, so
/// the census backs off on its own, by the same rule as a directory's lists.
const EVERYWHERE: &str = "";

/// What a census found.
pub(super) struct Found {
    /// Every top-level session holding a goal (active or not), once each.
    pub carriers: Vec<ListedSession>,
    /// Every place was read: the whole server, or each directory of the fallback.
    pub whole: bool,
    /// The newest `time.updated` the server-wide list showed (OpenCode's clock): a session made
    /// or changed after this census lists at or after it.
    pub newest: Option<f64>,
}

impl Inner {
    /// Takes a census: `patient` waits out the census's backoff (at start), otherwise a census
    /// whose backoff runs, or one already being read, is skipped (`None`). `since`: the sessions
    /// updated at or after it are enough (the server-wide list stops paging there; the fallback
    /// lists each directory whole). A failing census backs off by the one rule and says so in
    /// the log; `None` then too.
    pub(super) async fn take_census(&self, patient: bool, since: Option<f64>) -> Option<Found> {
        let gate = self.ctx.owners.gate();
        let permit = if patient { gate.begin(EVERYWHERE).await } else { gate.try_begin(EVERYWHERE)? };
        if self.stopped.load(std::sync::atomic::Ordering::SeqCst) {
            return None;
        }
        match self.list_everywhere(since).await {
            Ok((carriers, newest)) => {
                permit.read();
                debug!(target: "session_goal", goals = carriers.len(), "census of the server's sessions read");
                Some(Found { carriers, whole: true, newest })
            }
            Err(error) => {
                // A 404 is also what a failing server may answer for every route: the server-wide
                // list backs off either way, and each directory's list has its own backoff.
                let wait = permit.failed();
                if route_missing(&error) {
                    debug!(target: "session_goal", "the server lists no sessions across directories; listing each directory it names");
                    return Some(self.list_each_directory().await);
                }
                warn!(target: "session_goal", %error, retry_in_ms = wait.as_millis() as u64, "could not list the server's sessions to find active goals; backing off");
                None
            }
        }
    }

    /// Every top-level session holding a goal, from the server-wide list, page by page (newest
    /// first: none after a page reaching back before `since`), and the newest update listed.
    async fn list_everywhere(&self, since: Option<f64>) -> Result<(Vec<ListedSession>, Option<f64>), HttpError> {
        let mut carriers = Vec::new();
        let mut seen = HashSet::new();
        let mut cursor = None;
        let mut newest = None;
        for _ in 0..MAX_PAGES {
            let page = self.ctx.client.list_goal_sessions_everywhere(CENSUS_PAGE, cursor).await?;
            newest = newest.or(page.first().map(|s| s.updated));
            let next = next_cursor(&page, CENSUS_PAGE).filter(|next| since.is_none_or(|since| *next > since));
            for session in page {
                // A page after the first repeats the sessions of the last one's oldest instant.
                if session.goal.is_some() && !session.is_subagent() && seen.insert(session.id.clone()) {
                    carriers.push(session);
                }
            }
            match next {
                Some(next) => cursor = Some(next),
                None => return Ok((carriers, newest)),
            }
        }
        warn!(target: "session_goal", pages = MAX_PAGES, "the census stopped at its page limit");
        Ok((carriers, newest))
    }

    /// The fallback of a server with no server-wide list: each directory its projects name, the
    /// host named, or the runtime learned, listed whole (a directory whose list backs off or fails
    /// is left for the next census).
    async fn list_each_directory(&self) -> Found {
        let projects = self.ctx.client.list_project_directories().await;
        // Unread projects: whatever else is listed, the census is not whole.
        let mut found = Found { carriers: Vec::new(), whole: projects.is_ok(), newest: None };
        let mut directories = projects.unwrap_or_else(|error| {
            debug!(target: "session_goal", %error, "the server's projects could not be listed");
            Vec::new()
        });
        directories.extend(self.known_directories());
        let mut listed = HashSet::new();
        for directory in directories {
            if !listed.insert(directory.clone()) {
                continue;
            }
            let Some(permit) = self.ctx.owners.gate().try_begin(&directory) else {
                found.whole = false;
                continue;
            };
            match self.ctx.client.list_session_goals(&directory).await {
                Ok(sessions) => {
                    permit.read();
                    for mut session in sessions.into_iter().filter(|s| s.goal.is_some() && !s.is_subagent()) {
                        if session.directory.is_empty() {
                            session.directory = directory.clone();
                        }
                        found.carriers.push(session);
                    }
                }
                Err(error) => {
                    let wait = permit.failed();
                    warn!(target: "session_goal", %error, retry_in_ms = wait.as_millis() as u64, "could not list a directory to find active goals; backing off");
                    found.whole = false;
                }
            }
        }
        found
    }
}

/// The server has no such route (an older OpenCode): 404 or 405.
fn route_missing(error: &HttpError) -> bool {
    matches!(error, HttpError::Status(404 | 405))
}

/// The cursor of the page after `page` (`None`: it was the last). Sessions are listed newest
/// update first and a cursor keeps those updated strictly before it, so the next page starts
/// one millisecond after this page's oldest update: sessions updated in that same millisecond
/// are read again (and dropped as repeats) rather than skipped. A page updated in one
/// millisecond throughout cannot move that way, so it moves past it.
fn next_cursor(page: &[ListedSession], limit: usize) -> Option<f64> {
    if page.len() < limit {
        return None;
    }
    let oldest = page.last()?.updated;
    let newest = page.first()?.updated;
    if oldest <= 0.0 {
        // No update time to page by: the rest cannot be reached.
        return None;
    }
    Some(if newest > oldest { oldest + 1.0 } else { oldest })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn listed(updated: f64) -> ListedSession {
        ListedSession::from_value(
            &json!({"id": format!("ses_{updated}"), "time": {"created": 1.0, "updated": updated}}),
        )
        .expect("an object")
    }

    #[test]
    fn the_next_page_starts_at_the_oldest_instant_of_this_one_so_ties_are_read_again() {
        let page: Vec<ListedSession> = [50.0, 40.0, 30.0].map(listed).into();
        assert_eq!(next_cursor(&page, 3), Some(31.0), "the sessions updated at 30 are listed again");
        assert_eq!(next_cursor(&page, 4), None, "a short page is the last");
        assert_eq!(next_cursor(&[], 3), None);
    }

    #[test]
    fn a_page_of_one_instant_moves_past_it_and_a_page_without_times_ends_the_walk() {
        let same: Vec<ListedSession> = [30.0, 30.0].map(listed).into();
        assert_eq!(next_cursor(&same, 2), Some(30.0));
        let untimed: Vec<ListedSession> = [0.0, 0.0].map(listed).into();
        assert_eq!(next_cursor(&untimed, 2), None);
    }

    #[test]
    fn only_a_missing_route_falls_back_to_directories() {
        assert!(route_missing(&HttpError::Status(404)) && route_missing(&HttpError::Status(405)));
        for other in [HttpError::Status(500), HttpError::Status(400), HttpError::Timeout, HttpError::Body(200)] {
            assert!(!route_missing(&other), "{other}");
        }
    }
}
