//! Owner lists: the session list the ownership stage reads to learn which session first carried
//! a goal that names no session (`sessionId` absent, as OpenChamber's UI writes goals). The rule
//! they serve is in `lineage`; `docs/ownership.md` explains both.
//!
//! - **Small.** A list asks only for top-level sessions (`roots=true`) updated since the goal
//!   began (`start`, see [`owner_list_start`]): every carrier of the goal is among them.
//! - **Early.** A list starts as soon as an unowned goal is seen: at intake for a goal an event
//!   carried ([`OwnerLists::prefetch`]), else at the tick's first read, beside the live reads.
//! - **Shared.** One list per directory at a time serves every goal waiting on it; a goal it
//!   cannot cover (an older `start`) is served by the next one, whose start covers every goal
//!   that waited.
//! - **Waited for.** A tick decides an unowned goal only once a list that showed it has been
//!   read ([`OwnerLists::wait_listed`]); a tick never drives a goal on a guess.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::watch;
use tracing::warn;

use crate::goal::ownership::lineage::{owner_list_start, GoalHolders, OwnerView};
use crate::io::opencode::OpenCodeClient;
use crate::record::Goal;

/// The most lists one wait goes through before giving up (the tick then retries later): the one
/// in flight, one that covers the goal, and one more for a goal written while that was read.
const MAX_LISTS_PER_WAIT: usize = 3;

/// What a goal waiting for its owner list does next (see [`plan_list`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ListPlan {
    /// Wait for the list in flight with this number; it covers the goal.
    Join(u64),
    /// Start list number `.0` from `.1` (`-inf`: the whole directory), then wait for it.
    Start(u64, f64),
    /// Wait for the list in flight with this number; it started too late for the goal, which
    /// the next list covers.
    After(u64),
}

/// The owner lists of one directory.
#[derive(Debug)]
pub struct DirectoryLists {
    /// The list in flight: its number and start.
    running: Option<(u64, f64)>,
    /// The lowest start wanted by goals the running list cannot cover.
    queued: Option<f64>,
    /// The number of the last list started.
    started: u64,
    /// The number of the last list finished, and whether it was read.
    finished: watch::Sender<(u64, bool)>,
}

impl Default for DirectoryLists {
    fn default() -> Self {
        DirectoryLists { running: None, queued: None, started: 0, finished: watch::Sender::new((0, true)) }
    }
}

/// Decides what a goal needing a list from `needed` (`-inf`: the whole directory) does. Pure.
pub fn plan_list(lists: &mut DirectoryLists, needed: f64) -> ListPlan {
    match lists.running {
        Some((number, start)) if start <= needed => ListPlan::Join(number),
        Some((number, _)) => {
            lists.queued = Some(lists.queued.map_or(needed, |queued| queued.min(needed)));
            ListPlan::After(number)
        }
        None => {
            let start = lists.queued.take().map_or(needed, |queued| queued.min(needed));
            lists.started += 1;
            lists.running = Some((lists.started, start));
            ListPlan::Start(lists.started, start)
        }
    }
}

/// Records that list `number` ended (`read`: its answer was read). Returns the start of the next
/// list to begin at once when goals are queued behind it. Pure.
pub fn finish_list(lists: &mut DirectoryLists, number: u64, read: bool) -> Option<(u64, f64)> {
    if lists.running.is_some_and(|(running, _)| running == number) {
        lists.running = None;
    }
    lists.finished.send_replace((number, read));
    let start = lists.queued.take()?;
    lists.started += 1;
    lists.running = Some((lists.started, start));
    Some((lists.started, start))
}

/// The owner lists of every directory, with what they need to read and record them.
pub struct OwnerLists {
    client: OpenCodeClient,
    holders: Arc<GoalHolders>,
    spawner: tokio::runtime::Handle,
    directories: Mutex<HashMap<String, DirectoryLists>>,
}

/// Directories whose list state is kept (beyond it, idle ones are forgotten).
const MAX_DIRECTORIES: usize = 1000;

impl OwnerLists {
    /// Owner lists read with `client` into `holders`, their reads spawned on `spawner`.
    pub fn new(client: OpenCodeClient, holders: Arc<GoalHolders>, spawner: tokio::runtime::Handle) -> Arc<Self> {
        Arc::new(OwnerLists { client, holders, spawner, directories: Mutex::default() })
    }

    /// Whether the owner of `goal` is still to be learned from a list: it names no session and
    /// no list that holds all its carriers has been read.
    pub fn needs_list(&self, goal: &Goal) -> bool {
        goal.session_id.is_none() && !self.holders.is_listed(&goal.id, goal_list_start(goal))
    }

    /// Starts the list `goal` needs, if none covering it is in flight, and returns at once (an
    /// event showed the goal: the list is read before the goal's tick needs it).
    pub fn prefetch(self: &Arc<Self>, directory: &str, goal: &Goal) {
        if directory.is_empty() || !self.needs_list(goal) {
            return;
        }
        let needed = goal_list_start(goal).unwrap_or(f64::NEG_INFINITY);
        let plan = plan_list(&mut self.directory(directory), needed);
        if let ListPlan::Start(number, start) = plan {
            self.spawn_list(directory, number, start);
        }
    }

    /// What the lists tell about `goal`'s carriers, once a list that holds them all has been
    /// read (waiting for it). `listed` is `false` when the lists could not be read: the owner
    /// stays unknown and the tick must not drive the goal.
    pub async fn wait_listed(self: &Arc<Self>, directory: &str, goal: &Goal) -> OwnerView {
        let needed = goal_list_start(goal).unwrap_or(f64::NEG_INFINITY);
        let view = || self.holders.view(&goal.id, goal_list_start(goal));
        for _ in 0..MAX_LISTS_PER_WAIT {
            let seen = view();
            if seen.listed {
                return seen;
            }
            let (plan, mut finished) = {
                let mut lists = self.directory(directory);
                (plan_list(&mut lists, needed), lists.finished.subscribe())
            };
            let number = match plan {
                ListPlan::Start(number, start) => {
                    self.spawn_list(directory, number, start);
                    number
                }
                ListPlan::Join(number) | ListPlan::After(number) => number,
            };
            let Ok(state) = finished.wait_for(|(done, _)| *done >= number).await.map(|s| *s) else {
                return view();
            };
            if state == (number, false) && matches!(plan, ListPlan::Start(..) | ListPlan::Join(_)) {
                // The list that was to cover the goal could not be read.
                return view();
            }
        }
        view()
    }

    fn directory(&self, directory: &str) -> parking_lot::MappedMutexGuard<'_, DirectoryLists> {
        let mut directories = self.directories.lock();
        if directories.len() >= MAX_DIRECTORIES && !directories.contains_key(directory) {
            directories.retain(|_, lists| lists.running.is_some());
        }
        parking_lot::MutexGuard::map(directories, |d| d.entry(directory.to_string()).or_default())
    }

    fn spawn_list(self: &Arc<Self>, directory: &str, number: u64, start: f64) {
        let (me, directory) = (self.clone(), directory.to_string());
        self.spawner.spawn(async move {
            let (mut number, mut start) = (number, start);
            loop {
                let read = me.read_list(&directory, start).await;
                match finish_list(&mut me.directory(&directory), number, read) {
                    Some(next) => (number, start) = next,
                    None => return,
                }
            }
        });
    }

    /// Reads one list and records every goal it shows. `true` when it was read.
    async fn read_list(&self, directory: &str, start: f64) -> bool {
        let start = start.is_finite().then_some(start);
        match self.client.list_owner_candidates(directory, start).await {
            Ok(sessions) => {
                for session in sessions.iter().filter(|s| !s.is_subagent()) {
                    if let Some(goal) = &session.goal {
                        self.holders.saw_in_list(&goal.id, &session.id, session.created, start);
                    }
                }
                true
            }
            Err(error) => {
                warn!(target: "session_goal", %error, "session list unreadable; goal owners unknown");
                false
            }
        }
    }
}

/// The owner list start for `goal`, judged against the clock now (see [`owner_list_start`]).
fn goal_list_start(goal: &Goal) -> Option<f64> {
    owner_list_start(goal.created_at, crate::time::clock::now_ms())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_list_at_a_time_serves_every_goal_waiting() {
        let mut lists = DirectoryLists::default();
        // The first goal starts a list; a goal it covers joins it.
        assert_eq!(plan_list(&mut lists, 100.0), ListPlan::Start(1, 100.0));
        assert_eq!(plan_list(&mut lists, 200.0), ListPlan::Join(1));
        // Goals it cannot cover wait behind it; the next list covers the oldest of them.
        assert_eq!(plan_list(&mut lists, 50.0), ListPlan::After(1));
        assert_eq!(plan_list(&mut lists, 70.0), ListPlan::After(1));
        assert_eq!(finish_list(&mut lists, 1, true), Some((2, 50.0)));
        assert_eq!(*lists.finished.borrow(), (1, true));
        assert_eq!(plan_list(&mut lists, 70.0), ListPlan::Join(2));
        assert_eq!(finish_list(&mut lists, 2, false), None);
        assert_eq!(*lists.finished.borrow(), (2, false));
        // Nothing in flight: a whole-directory list for a goal without `createdAt`.
        assert_eq!(plan_list(&mut lists, f64::NEG_INFINITY), ListPlan::Start(3, f64::NEG_INFINITY));
        assert_eq!(plan_list(&mut lists, 10.0), ListPlan::Join(3));
        // A stale finish (not the running list) leaves the running one alone.
        assert_eq!(finish_list(&mut lists, 2, true), None);
        assert_eq!(plan_list(&mut lists, 10.0), ListPlan::Join(3));
    }
}
