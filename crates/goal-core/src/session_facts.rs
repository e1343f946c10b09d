//! What events and scans last showed about each session: its goal's revision and status, whether
//! it showed no goal (or is a sub-agent), and which permission or question requests wait for the
//! user. The scheduler task owns this state (it is part of the per-session state it serialises);
//! everyone else sends it sightings and reads the snapshot it publishes, [`SessionFactsView`].

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use parking_lot::RwLock;

use crate::goal_record::{GoalRevision, GoalStatus};

/// How a session's goal was seen.
#[derive(Debug, Clone)]
pub enum Seen {
    /// A sub-agent session in an event: it never carries a goal.
    Child,
    /// A top-level session in an event, with its goal (`None`: absent or unreadable). A user
    /// change (edit, pause, clear, completion, replacement) invalidates work in flight.
    Event(Option<(GoalRevision, GoalStatus)>),
    /// A goal found by a recovery scan or a sweep: recorded, invalidates nothing.
    Scan(GoalRevision, GoalStatus),
}

/// The state the owner keeps (revisions and request ids), never shared.
#[derive(Default)]
pub struct SessionFacts {
    goals: HashMap<String, (GoalRevision, GoalStatus)>,
    pending_input: HashMap<String, HashSet<String>>,
    view: SessionFactsView,
}

impl SessionFacts {
    /// State that publishes into `view`.
    pub fn publishing(view: SessionFactsView) -> Self {
        Self { goals: HashMap::new(), pending_input: HashMap::new(), view }
    }

    /// Records a sighting; returns whether it is a user change that invalidates work in flight.
    pub fn see(&mut self, session: &str, seen: Seen) -> bool {
        match seen {
            Seen::Child => {
                self.view.set_without_goal(session, true);
                false
            }
            Seen::Event(goal) => {
                self.view.set_without_goal(session, goal.is_none());
                self.record(session, goal)
            }
            Seen::Scan(revision, status) => {
                self.record(session, Some((revision, status)));
                false
            }
        }
    }

    /// Stores the goal state; whether it changed in a way that invalidates a tick.
    fn record(&mut self, session: &str, goal: Option<(GoalRevision, GoalStatus)>) -> bool {
        let active = goal.as_ref().map(|(_, status)| *status == GoalStatus::Active);
        let changed = match goal {
            Some((revision, status)) => match self.goals.get_mut(session) {
                Some(stored) => {
                    let (was, was_status) = std::mem::replace(stored, (revision, status));
                    was != stored.0 || (was_status == GoalStatus::Active && status != GoalStatus::Active)
                }
                None => {
                    self.goals.insert(session.to_string(), (revision, status));
                    false
                }
            },
            None => self.goals.remove(session).is_some(),
        };
        if active != self.view.goal_active(session) {
            self.view.set_goal_active(session, active);
        }
        changed
    }

    /// A permission or question request opened (`pending`) or answered (an empty id answers
    /// them all). Returns whether this answered the session's last open request.
    pub fn user_input(&mut self, session: &str, request_id: &str, pending: bool) -> bool {
        let set = self.pending_input.entry(session.to_string()).or_default();
        if pending {
            set.insert(request_id.to_string());
        } else {
            set.remove(request_id);
            if request_id.is_empty() {
                set.clear();
            }
        }
        let waiting = !set.is_empty();
        if !waiting {
            self.pending_input.remove(session);
        }
        self.view.set_waiting(session, waiting);
        !waiting && !pending
    }
}

#[derive(Default)]
struct Published {
    /// Whether the last seen goal is active, per session with a goal.
    goal_active: HashMap<String, bool>,
    /// Sessions events showed without a goal, or as sub-agents.
    without_goal: HashSet<String>,
    /// Sessions (or sub-agents) waiting for the user.
    waiting: HashSet<String>,
}

/// The snapshot the owner publishes: cheap synchronous reads for ticks and the host. Cloning
/// shares it.
#[derive(Clone, Default)]
pub struct SessionFactsView {
    published: Arc<RwLock<Published>>,
}

impl SessionFactsView {
    /// Whether the last seen goal of the session is active.
    pub fn is_goal_active(&self, session: &str) -> bool {
        self.published.read().goal_active.get(session).copied().unwrap_or(false)
    }

    /// Whether a tick should expect an active goal: the last seen goal is active, or nothing
    /// showed the session without one (optimistic: a host that forwards only status events
    /// still gets the short path).
    pub fn expects_active_goal(&self, session: &str) -> bool {
        let published = self.published.read();
        match published.goal_active.get(session) {
            Some(active) => *active,
            None => !published.without_goal.contains(session),
        }
    }

    /// Whether the session waits for the user (a permission or question is open).
    pub fn waiting_for_user(&self, session: &str) -> bool {
        self.published.read().waiting.contains(session)
    }

    /// Goals last seen active.
    pub fn active_goals(&self) -> usize {
        self.published.read().goal_active.values().filter(|active| **active).count()
    }

    fn goal_active(&self, session: &str) -> Option<bool> {
        self.published.read().goal_active.get(session).copied()
    }

    fn set_goal_active(&self, session: &str, active: Option<bool>) {
        let mut published = self.published.write();
        match active {
            Some(active) => {
                published.goal_active.insert(session.to_string(), active);
            }
            None => {
                published.goal_active.remove(session);
            }
        }
    }

    fn set_without_goal(&self, session: &str, without: bool) {
        if without == self.published.read().without_goal.contains(session) {
            return;
        }
        let mut published = self.published.write();
        if without {
            published.without_goal.insert(session.to_string());
        } else {
            published.without_goal.remove(session);
        }
    }

    fn set_waiting(&self, session: &str, waiting: bool) {
        let mut published = self.published.write();
        if waiting {
            published.waiting.insert(session.to_string());
        } else {
            published.waiting.remove(session);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::goal_record::Goal;
    use serde_json::json;

    fn goal(objective: &str, status: &str) -> (GoalRevision, GoalStatus) {
        let goal = Goal::from_value(&json!({"id": "g", "status": status, "objective": objective})).unwrap();
        (goal.revision(), goal.status)
    }

    #[test]
    fn user_changes_invalidate_and_scans_never_do() {
        let view = SessionFactsView::default();
        let mut facts = SessionFacts::publishing(view.clone());
        assert!(view.expects_active_goal("s"), "unknown sessions are read on the short path");
        assert!(!facts.see("s", Seen::Event(Some(goal("o", "active")))), "a first sighting changes nothing");
        assert!(view.is_goal_active("s") && view.expects_active_goal("s"));
        assert!(!facts.see("s", Seen::Event(Some(goal("o", "active")))), "the same goal again");
        assert!(facts.see("s", Seen::Event(Some(goal("edited", "active")))), "an edit");
        assert!(facts.see("s", Seen::Event(Some(goal("edited", "paused")))), "a pause");
        assert!(!view.is_goal_active("s") && !view.expects_active_goal("s"));
        assert!(!facts.see("s", Seen::Scan(goal("scanned", "active").0, GoalStatus::Active)), "a scan records only");
        assert!(view.is_goal_active("s"));
        assert_eq!(view.active_goals(), 1);
        assert!(facts.see("s", Seen::Event(None)), "a clear");
        assert!(!view.expects_active_goal("s"), "shown without a goal: read the session first");
        assert!(!facts.see("child", Seen::Child));
        assert!(!view.expects_active_goal("child"));
        assert_eq!(view.active_goals(), 0);
    }

    #[test]
    fn waiting_ends_with_the_last_answer() {
        let view = SessionFactsView::default();
        let mut facts = SessionFacts::publishing(view.clone());
        assert!(!facts.user_input("s", "q1", true));
        assert!(!facts.user_input("s", "q2", true));
        assert!(view.waiting_for_user("s"));
        assert!(!facts.user_input("s", "q1", false), "one request still open");
        assert!(view.waiting_for_user("s"));
        assert!(facts.user_input("s", "q2", false), "the last answer");
        assert!(!view.waiting_for_user("s"));
        facts.user_input("s", "q3", true);
        assert!(facts.user_input("s", "", false), "an empty id answers every request");
        assert!(!view.waiting_for_user("s"));
    }
}
