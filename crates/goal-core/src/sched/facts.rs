//! What events and scans last showed about each session: its goal's revision and status, whether
//! it showed no goal (or is a sub-agent), and which permission or question requests wait for the
//! user. The scheduler task owns this state (it is part of the per-session state it serialises);
//! everyone else sends it sightings and reads the snapshot it publishes, [`SessionFactsView`].

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use parking_lot::RwLock;

use crate::record::{GoalRevision, GoalStatus};

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

/// The owner's side: the only writer of the published facts, and the request ids behind the
/// waiting flag (never shared).
#[derive(Default)]
pub struct SessionFacts {
    pending_input: HashMap<String, HashSet<String>>,
    view: SessionFactsView,
}

impl SessionFacts {
    /// State that publishes into `view`.
    pub fn publishing(view: SessionFactsView) -> Self {
        Self { pending_input: HashMap::new(), view }
    }

    /// What it publishes (read by the owner itself, for the silence watch).
    pub fn view(&self) -> &SessionFactsView {
        &self.view
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
        let mut published = self.view.published.write();
        match goal {
            Some((revision, status)) => match published.goals.get_mut(session) {
                Some(stored) => {
                    let (was, was_status) = std::mem::replace(stored, (revision, status));
                    was != stored.0 || (was_status == GoalStatus::Active && status != GoalStatus::Active)
                }
                None => {
                    published.goals.insert(session.to_string(), (revision, status));
                    false
                }
            },
            None => published.goals.remove(session).is_some(),
        }
    }

    /// Forgets the session (deleted in OpenCode): nothing of it is kept, so a long-running host
    /// holds only the sessions that still exist.
    pub fn forget(&mut self, session: &str) {
        self.pending_input.remove(session);
        let mut published = self.view.published.write();
        published.goals.remove(session);
        published.without_goal.remove(session);
        published.waiting.remove(session);
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
    /// The last seen goal's revision and status, per session with a goal.
    goals: HashMap<String, (GoalRevision, GoalStatus)>,
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
        self.published.read().goals.get(session).is_some_and(|(_, status)| *status == GoalStatus::Active)
    }

    /// Whether a tick should expect an active goal: the last seen goal is active, or nothing
    /// showed the session without one (optimistic: a host that forwards only status events
    /// still gets the short path).
    pub fn expects_active_goal(&self, session: &str) -> bool {
        let published = self.published.read();
        match published.goals.get(session) {
            Some((_, status)) => *status == GoalStatus::Active,
            None => !published.without_goal.contains(session),
        }
    }

    /// Whether the session waits for the user (a permission or question is open).
    pub fn waiting_for_user(&self, session: &str) -> bool {
        self.published.read().waiting.contains(session)
    }

    /// Goals last seen active.
    pub fn active_goals(&self) -> usize {
        self.published.read().goals.values().filter(|(_, status)| *status == GoalStatus::Active).count()
    }

    /// Whether recording this goal from an event would change nothing: the same revision and
    /// status are published, and the session is not marked goal-less. Only meaningful when no
    /// other sighting of the session is still on its way to the owner.
    pub fn would_not_change(&self, session: &str, revision: &GoalRevision, status: GoalStatus) -> bool {
        let published = self.published.read();
        published.goals.get(session).is_some_and(|(was, was_status)| was == revision && *was_status == status)
            && !published.without_goal.contains(session)
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

/// What a tick may ask of the scheduler's facts: whether events showed a session's goal active
/// (read at once beside the session) or the session waiting on the user, and (once the scheduler
/// exists) telling it that OpenCode lists no open request after all.
pub struct TickFacts {
    view: SessionFactsView,
    settler: std::sync::OnceLock<Settler>,
}

/// What tells the scheduler a session's requests are all answered.
type Settler = Box<dyn Fn(&str) + Send + Sync>;

impl TickFacts {
    /// Facts read from `view`.
    pub fn new(view: SessionFactsView) -> Self {
        TickFacts { view, settler: std::sync::OnceLock::new() }
    }

    /// Whether a tick should expect an active goal (optimistic for unknown sessions).
    pub fn known_active(&self, session: &str) -> bool {
        self.view.expects_active_goal(session)
    }

    /// Whether events showed the session waiting on the user.
    pub fn waiting_for_user(&self, session: &str) -> bool {
        self.view.waiting_for_user(session)
    }

    /// Sets what clears the scheduler's memory of a session's open requests (held weakly there).
    pub fn set_settler(&self, settler: impl Fn(&str) + Send + Sync + 'static) {
        let _ = self.settler.set(Box::new(settler));
    }

    /// OpenCode lists no open request of `session`: what events said is cleared.
    pub fn inputs_settled(&self, session: &str) {
        if let Some(settle) = self.settler.get() {
            settle(session);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Goal;
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
        let (revision, status) = goal("o", "active");
        assert!(view.would_not_change("s", &revision, status));
        assert!(!view.would_not_change("s", &goal("edited", "active").0, status));
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

    /// Holds every tick open and records its generation.
    struct HeldTick {
        generations: parking_lot::Mutex<Vec<crate::sched::Generation>>,
        release: tokio::sync::Notify,
    }

    struct HeldJob(Arc<HeldTick>);

    impl crate::sched::Job for HeldJob {
        fn run(&self, start: crate::sched::TickStart) -> crate::sched::TickFuture {
            let held = self.0.clone();
            Box::pin(async move {
                held.generations.lock().push(start.generation);
                held.release.notified().await;
                crate::sched::TickOutcome::Done
            })
        }
        fn quiet(&self) -> std::time::Duration {
            std::time::Duration::from_millis(100)
        }
        fn max_attempts(&self) -> u32 {
            4
        }
    }

    #[tokio::test(start_paused = true)]
    async fn repeated_sightings_skip_the_task_and_an_edit_still_invalidates() {
        use crate::sched::{ArmMode, GoalSighting, Scheduler};
        use std::time::Duration;
        let held = Arc::new(HeldTick {
            generations: parking_lot::Mutex::new(Vec::new()),
            release: tokio::sync::Notify::new(),
        });
        let scheduler = Scheduler::start(Arc::new(HeldJob(held.clone())), &tokio::runtime::Handle::current());
        let sighting = |objective: &str| GoalSighting {
            session: "s".into(),
            directory: "/d".into(),
            seen: Seen::Event(Some(goal(objective, "active"))),
            arm: None,
            arm_if_changed: None,
        };
        let settle = || async {
            for _ in 0..20 {
                tokio::task::yield_now().await;
            }
        };
        scheduler.goal_seen(sighting("o"));
        scheduler.arm("s", "/d", Duration::from_millis(10), ArmMode::Replace);
        tokio::time::sleep(Duration::from_millis(20)).await;
        settle().await;
        let generation = held.generations.lock()[0].clone();
        for _ in 0..3 {
            scheduler.goal_seen(sighting("o"));
            settle().await;
        }
        assert!(generation.is_current(), "a repeated goal is no user change");
        scheduler.goal_seen(sighting("o"));
        scheduler.goal_seen(sighting("edited"));
        settle().await;
        assert!(!generation.is_current(), "the edit invalidated the running tick");
        assert!(scheduler.facts().would_not_change("s", &goal("edited", "active").0, GoalStatus::Active));
        held.release.notify_one();
        scheduler.stop().await;
    }

    #[test]
    fn a_forgotten_session_leaves_nothing() {
        let view = SessionFactsView::default();
        let mut facts = SessionFacts::publishing(view.clone());
        let goal =
            crate::record::Goal::from_value(&serde_json::json!({"id": "g", "objective": "o", "status": "active"}))
                .unwrap();
        facts.see("s", Seen::Event(Some((goal.revision(), GoalStatus::Active))));
        facts.see("c", Seen::Child);
        facts.user_input("s", "perm_1", true);
        assert_eq!(view.active_goals(), 1);
        assert!(view.waiting_for_user("s"));
        facts.forget("s");
        facts.forget("c");
        assert_eq!(view.active_goals(), 0);
        assert!(!view.waiting_for_user("s"));
        let published = view.published.read();
        assert!(published.goals.is_empty() && published.without_goal.is_empty() && published.waiting.is_empty());
        assert!(facts.pending_input.is_empty());
    }
}
