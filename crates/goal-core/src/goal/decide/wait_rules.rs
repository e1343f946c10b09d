//! The waiting cause of a goal whose tick needs a request that keeps failing: code
//! `waitingForOpenCode`, `detail` = the request and its answer (`GET /session → 503`), `fix` from
//! the cause table. Written once when the goal starts waiting and again only when the answer
//! changes (not at every retry: a thousand waiting goals must not become a thousand writes per
//! backoff step); the reservation of the next turn clears it. Pure.

use crate::error::HttpError;
use crate::goal::decide::causes::cause_of;
use crate::record::cause::{Cause, CauseCode};

crate::wire::wire_enum! {
    /// A request of the loop, named by its route (ids left out: the detail reads the same for
    /// every session).
    pub enum Route {
        #[doc = "`GET /session` (a directory's session list)."] List = "GET /session",
        #[doc = "`GET /session/status`."] Status = "GET /session/status",
        #[doc = "`GET /session/:id/children`."] Children = "GET /session/:id/children",
        #[doc = "`GET /session/:id/message`."] Messages = "GET /session/:id/message",
    }
}

/// How a failed request answered, short: the HTTP status, `timeout`, `no connection`, or the
/// status with `unreadable body`.
pub fn answer_of(error: &HttpError) -> String {
    match error {
        HttpError::Status(code) => code.to_string(),
        HttpError::Body(code) => format!("{code}, unreadable body"),
        HttpError::Timeout => "timeout".into(),
        HttpError::Network(_) => "no connection".into(),
        HttpError::Resolve(_) => "unresolvable URL".into(),
    }
}

/// The detail of a waiting cause: `GET /session → 503`.
pub fn wait_detail(route: Route, error: &HttpError) -> String {
    format!("{} → {}", route.as_str(), answer_of(error))
}

/// The cause to write for a goal of `session_id` that waits on `detail`, or `None` when the
/// stored cause already says the same (the goal was already waiting on the same answer: no
/// write). `now` is the wait's start.
pub fn waiting_cause(stored: Option<&Cause>, session_id: &str, detail: &str, now: f64) -> Option<Cause> {
    let same = stored.is_some_and(|c| c.code == CauseCode::WaitingForOpenCode && c.detail.as_deref() == Some(detail));
    (!same).then(|| cause_of(CauseCode::WaitingForOpenCode, now, session_id, Some(detail)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_detail_names_the_request_and_its_answer() {
        assert_eq!(wait_detail(Route::List, &HttpError::Status(503)), "GET /session → 503");
        assert_eq!(wait_detail(Route::Messages, &HttpError::Timeout), "GET /session/:id/message → timeout");
        assert_eq!(wait_detail(Route::Status, &HttpError::Body(200)), "GET /session/status → 200, unreadable body");
        assert_eq!(
            wait_detail(Route::Children, &HttpError::Network("reset".into())),
            "GET /session/:id/children → no connection"
        );
    }

    #[test]
    fn written_once_per_answer() {
        let first = waiting_cause(None, "ses_1", "GET /session → 503", 10.0).expect("starts waiting");
        assert_eq!(first.code, CauseCode::WaitingForOpenCode);
        assert_eq!(first.detail.as_deref(), Some("GET /session → 503"));
        let fix = first.fix.clone().unwrap();
        assert!(fix.contains("GET /session → 503"), "{fix}");
        // The same answer again: nothing to write.
        assert_eq!(waiting_cause(Some(&first), "ses_1", "GET /session → 503", 20.0), None);
        // Another answer, or another cause stored: written.
        assert!(waiting_cause(Some(&first), "ses_1", "GET /session → timeout", 20.0).is_some());
        let other = Cause::new(CauseCode::WaitingForUser, 1.0);
        assert!(waiting_cause(Some(&other), "ses_1", "GET /session → 503", 20.0).is_some());
    }
}
