//! The message ids this runtime posted lately, per session. OpenCode emits `message.updated` for
//! every user message, the loop's own continuation and re-posts included. Taken for the user's
//! activity, our own message would cancel the look-again timer armed after the post (the timer
//! that finds a turn which never started), and the goal would wait for an idle event that a
//! stranded message never brings. So the intake asks here first, and our own posts are no user
//! activity.

use std::collections::{HashMap, VecDeque};

use parking_lot::Mutex;

/// Ids kept per session: a continuation and its re-posts are one id, so a few cover every post
/// whose event can still be in flight.
const KEPT_PER_SESSION: usize = 4;

/// Recent own message ids, per session.
#[derive(Default)]
pub struct OwnPosts {
    ids: Mutex<HashMap<String, VecDeque<String>>>,
}

impl OwnPosts {
    /// Notes that this runtime posts `message_id` to `session` (before the post goes out, so
    /// its event can never arrive first).
    pub fn record(&self, session: &str, message_id: &str) {
        let mut ids = self.ids.lock();
        let kept = ids.entry(session.to_string()).or_default();
        if kept.iter().any(|id| id == message_id) {
            return;
        }
        if kept.len() == KEPT_PER_SESSION {
            kept.pop_front();
        }
        kept.push_back(message_id.to_string());
    }

    /// Whether `message_id` is one this runtime posted to `session` lately.
    pub fn is_own(&self, session: &str, message_id: &str) -> bool {
        !message_id.is_empty()
            && self.ids.lock().get(session).is_some_and(|kept| kept.iter().any(|id| id == message_id))
    }

    /// Drops what is kept for a deleted session.
    pub fn forget(&self, session: &str) {
        self.ids.lock().remove(session);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_ids_are_known_per_session_and_bounded() {
        let posts = OwnPosts::default();
        posts.record("s", "msg_1");
        posts.record("s", "msg_1");
        assert!(posts.is_own("s", "msg_1"));
        assert!(!posts.is_own("t", "msg_1"), "another session's message is not ours");
        assert!(!posts.is_own("s", ""), "a message without an id is never taken for ours");
        for n in 2..=5 {
            posts.record("s", &format!("msg_{n}"));
        }
        assert!(!posts.is_own("s", "msg_1"), "the oldest id leaves once more are kept");
        assert!(posts.is_own("s", "msg_5"));
        posts.forget("s");
        assert!(!posts.is_own("s", "msg_5"));
    }
}
