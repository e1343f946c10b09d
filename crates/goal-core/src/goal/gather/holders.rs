//! Which session first carried each goal id (for goals written before `sessionId` existed): the
//! memory the owner lists (`owners.rs`), the sweep and the recovery scan fill, and the ownership
//! step reads (`goal/decide/lineage.rs` holds the rules).

use std::collections::HashMap;

use parking_lot::Mutex;

use crate::goal::decide::lineage::{OwnerView, MAX_REMEMBERED_GOALS};

/// Which session first carried each goal id: the oldest by creation time, then by id when two
/// were made in the same millisecond (OpenCode's session ids sort newest first, so the larger id
/// is the older session; every host picks the same one). It also records, for each goal id,
/// whether an owner list showed it (see [`GoalHolders::is_listed`]).
#[derive(Debug, Default)]
pub struct GoalHolders {
    oldest: Mutex<HashMap<String, Holder>>,
}

/// The oldest known carrier of one goal id.
#[derive(Debug, Clone)]
struct Holder {
    /// The carrier's `time.created` (`f64::MAX` when unknown: never older than a known one).
    created: f64,
    /// The carrier.
    session: String,
    /// The lowest `start` of a session list that showed this goal (`-inf`: a list of the whole
    /// directory; `+inf`: no list showed it, only a tick's own read).
    listed_from: f64,
}

impl GoalHolders {
    /// Records that `session_id` (created at `created`) carries `goal_id`, as a tick read it.
    pub fn saw(&self, goal_id: &str, session_id: &str, created: f64) {
        record(&mut self.oldest.lock(), goal_id, session_id, created, f64::INFINITY);
    }

    /// Records what one session list starting at `list_start` (`None`: the whole directory)
    /// showed: each `(goal id, session id, created)` it held. Such a list holds every carrier
    /// of a goal when its start is at or before [`owner_list_start`] of the goal's `createdAt`.
    /// The whole list is recorded under one lock: a tick reading between two of its sessions
    /// would see the goal listed with only the carriers recorded so far, and take a copy for
    /// the owner.
    ///
    /// [`owner_list_start`]: crate::goal::decide::lineage::owner_list_start
    pub fn saw_list<'a>(&self, carriers: impl IntoIterator<Item = (&'a str, &'a str, f64)>, list_start: Option<f64>) {
        let listed_from = list_start.unwrap_or(f64::NEG_INFINITY);
        let mut oldest = self.oldest.lock();
        for (goal_id, session_id, created) in carriers {
            record(&mut oldest, goal_id, session_id, created, listed_from);
        }
    }

    /// Whether a session list that holds every carrier of `goal_id` has been read: one that
    /// showed the goal and started at or before `needed_start` (`None`: only a list of the whole
    /// directory will do). Only then is the oldest carrier known, and with it the owner of a goal
    /// that names no session.
    pub fn is_listed(&self, goal_id: &str, needed_start: Option<f64>) -> bool {
        let needed = needed_start.unwrap_or(f64::NEG_INFINITY);
        self.oldest.lock().get(goal_id).is_some_and(|holder| holder.listed_from <= needed)
    }

    /// Whether a list holding every carrier of `goal_id` was read (see [`Self::is_listed`]) and
    /// the oldest carrier known, read at one moment (a [`Self::forget`] in between cannot make a
    /// listed goal look carried by no older session).
    pub fn view(&self, goal_id: &str, needed_start: Option<f64>) -> OwnerView {
        let needed = needed_start.unwrap_or(f64::NEG_INFINITY);
        let oldest = self.oldest.lock();
        let holder = oldest.get(goal_id);
        OwnerView { listed: holder.is_some_and(|h| h.listed_from <= needed), oldest: holder.map(|h| h.session.clone()) }
    }

    /// Forgets `goal_id` (its goal settled): memory stays flat however many goals pass through.
    /// Safe at any time: a goal that names no session and is seen again is listed again.
    pub fn forget(&self, goal_id: &str) {
        self.oldest.lock().remove(goal_id);
    }

    /// The oldest session known to carry `goal_id`, when it is not `session_id`.
    pub fn older_than(&self, goal_id: &str, session_id: &str) -> Option<String> {
        self.oldest.lock().get(goal_id).map(|holder| holder.session.clone()).filter(|holder| holder != session_id)
    }
}

/// Records one carrier into the map of oldest carriers.
fn record(oldest: &mut HashMap<String, Holder>, goal_id: &str, session_id: &str, created: f64, listed_from: f64) {
    if goal_id.is_empty() || session_id.is_empty() {
        return;
    }
    if oldest.len() >= MAX_REMEMBERED_GOALS && !oldest.contains_key(goal_id) {
        // Bounded: forget an arbitrary half rather than grow without end (a forgotten goal
        // is listed again when next seen unowned).
        let keep: Vec<String> = oldest.keys().take(MAX_REMEMBERED_GOALS / 2).cloned().collect();
        oldest.retain(|key, _| keep.contains(key));
    }
    let created = if created.is_finite() && created > 0.0 { created } else { f64::MAX };
    let candidate = Holder { created, session: session_id.to_string(), listed_from };
    match oldest.get_mut(goal_id) {
        Some(known) => {
            known.listed_from = known.listed_from.min(listed_from);
            if is_older(&(candidate.created, &candidate.session), &(known.created, &known.session)) {
                known.created = candidate.created;
                known.session = candidate.session;
            }
        }
        None => {
            oldest.insert(goal_id.to_string(), candidate);
        }
    }
}

fn is_older(a: &(f64, &String), b: &(f64, &String)) -> bool {
    a.0 < b.0 || (a.0 == b.0 && a.1 > b.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_holder_wins_and_ties_are_stable() {
        let holders = GoalHolders::default();
        holders.saw("g1", "ses_fork", 200.0);
        holders.saw("g1", "ses_parent", 100.0);
        holders.saw("g1", "ses_fork2", 300.0);
        assert_eq!(holders.older_than("g1", "ses_fork").as_deref(), Some("ses_parent"));
        assert_eq!(holders.older_than("g1", "ses_parent"), None);
        // Two forks in the same millisecond, parent unknown: the same one wins on every host.
        let (one, two) = (GoalHolders::default(), GoalHolders::default());
        one.saw("g2", "ses_x", 5.0);
        one.saw("g2", "ses_y", 5.0);
        two.saw("g2", "ses_y", 5.0);
        two.saw("g2", "ses_x", 5.0);
        assert_eq!(one.older_than("g2", "ses_y"), two.older_than("g2", "ses_y"));
        // Session ids sort newest first: of two made in one millisecond, the larger is older.
        assert_eq!(one.older_than("g2", "ses_x").as_deref(), Some("ses_y"));
        assert_eq!(one.older_than("g2", "ses_y"), None);
        // No creation time: never older than a known one.
        holders.saw("g1", "ses_unknown", 0.0);
        assert_eq!(holders.older_than("g1", "ses_unknown").as_deref(), Some("ses_parent"));
        holders.saw("", "ses_a", 1.0);
        assert_eq!(holders.older_than("", "ses_b"), None);
        // A tick's own read does not make a goal listed; a list showing it does, when it
        // started early enough for the goal.
        assert!(!holders.is_listed("g1", Some(0.0)));
        holders.saw_list([("g1", "ses_fork3", 400.0)], Some(50.0));
        assert!(holders.is_listed("g1", Some(50.0)) && holders.is_listed("g1", Some(60.0)));
        assert!(!holders.is_listed("g1", Some(40.0)), "a list from later may miss an older carrier");
        assert!(!holders.is_listed("g1", None), "no createdAt: only a whole-directory list will do");
        assert_eq!(holders.older_than("g1", "ses_fork3").as_deref(), Some("ses_parent"));
        holders.saw_list([("g3", "ses_z", 10.0)], None);
        assert!(holders.is_listed("g3", None) && holders.is_listed("g3", Some(1.0)));
        // A later tick's read keeps what a list showed.
        holders.saw("g3", "ses_z", 10.0);
        assert!(holders.is_listed("g3", None));
        assert_eq!(holders.view("g3", None), OwnerView { listed: true, oldest: Some("ses_z".into()) });
        // A settled goal is forgotten: seen again, it needs a list again.
        holders.forget("g3");
        assert_eq!(holders.view("g3", None), OwnerView::default());
    }
}
