//! Owner lists: the session list the ownership step reads to learn which session first carried
//! a goal that names no session (`sessionId` absent, as OpenChamber's UI writes goals). The rule
//! they serve is in `goal/decide/lineage.rs`; `docs/ownership.md` explains both.
//!
//! - **Small.** A list asks only for top-level sessions (`roots=true`) updated since the goal
//!   began (`start`, see [`owner_list_start`]): every carrier of the goal is among them.
//! - **Early.** A list starts as soon as an unowned goal is seen: at intake for a goal an event
//!   carried ([`Owners::prefetch`]), else at the tick's first read, beside the live reads.
//! - **Shared.** One list per directory at a time serves every goal waiting on it; a goal it
//!   cannot cover (an older `start`) is served by the next one, whose start covers every goal
//!   that waited.
//! - **Waited for.** A tick decides an unowned goal only once a list that showed it has been
//!   read ([`Owners::wait_listed`]); a tick never drives a goal on a guess.
//! - **Backed off.** A failed list starts the directory's one backoff (`list_rules`): no list
//!   until it ends, then one retry for every goal waiting; the goals wait without requests of
//!   their own and are woken when a list is read. A 404 means the server cannot list: the
//!   ownership step then decides from the session itself (`lineage::owner_without_list`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::time::Instant;

use parking_lot::Mutex;
use tokio::sync::watch;
use tracing::warn;

use crate::error::HttpError;
use crate::goal::decide::lineage::{owner_list_start, OwnerView};
use crate::goal::decide::list_rules::{
    add_waiter, finish_list, plan_list, retry_due, AfterList, DirectoryLists, ListEnd, ListPlan, Waiting,
};
use crate::goal::decide::wait_rules::{wait_detail, Route};
use crate::goal::gather::holders::GoalHolders;
use crate::goal::gather::list_gate::ListGate;
use crate::io::opencode::OpenCodeClient;
use crate::record::Goal;

/// The most lists one wait goes through before giving up (the tick then retries later): the one
/// in flight, one that covers the goal, and one more for a goal written while that was read.
const MAX_LISTS_PER_WAIT: usize = 3;

/// What the lists tell a tick about a goal that names no session.
#[derive(Debug, Clone, PartialEq)]
pub enum ListAnswer {
    /// What the lists read tell of the goal's carriers (`listed`: a list holding them all was
    /// read; otherwise the owner is unknown and the tick retries).
    Listed(OwnerView),
    /// The server answers 404 to the list: it cannot list sessions; the ownership step decides
    /// from the session itself.
    CannotList,
    /// The directory's lists fail: the session is registered and woken by the next list that
    /// is read. `detail`: the request and its answer; `retry_in`: time to the next list.
    Failing {
        /// `GET /session → 503`.
        detail: String,
        /// When the next list of the directory starts.
        retry_in: Duration,
    },
}

/// How a list of one directory ended, as the waiting ticks see it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Ended {
    Read,
    Failed,
    CannotList,
}

/// One directory: its list plan and the signal of finished lists.
struct Directory {
    lists: DirectoryLists,
    /// The number of the last list finished, and how it ended.
    finished: watch::Sender<(u64, Ended)>,
}

impl Default for Directory {
    fn default() -> Self {
        Directory { lists: DirectoryLists::default(), finished: watch::Sender::new((0, Ended::Read)) }
    }
}

/// Wakes a session's goal (the scheduler arms it at once): `(session, directory)`.
pub type Waker = Arc<dyn Fn(&str, &str) + Send + Sync>;

/// The owner lists of every directory, with what they need to read and record them: the one
/// owner of `GET /session` for the ownership step (one list in flight and one backoff per
/// directory; see `list_rules`).
pub struct Owners {
    client: OpenCodeClient,
    holders: Arc<GoalHolders>,
    spawner: tokio::runtime::Handle,
    directories: Mutex<HashMap<String, Directory>>,
    /// The origin of the monotonic milliseconds `list_rules` reasons in.
    epoch: Instant,
    /// Wakes goals that waited for a list (set once the scheduler exists).
    waker: OnceLock<Waker>,
    /// The runtime stopped: no list starts any more (a scheduled retry included).
    stopped: AtomicBool,
    /// The one backoff of every session list of a directory (`list_gate.rs`).
    gate: ListGate,
}

/// Directories whose list state is kept (beyond it, idle ones are forgotten).
const MAX_DIRECTORIES: usize = 1000;

impl Owners {
    /// Owner lists read with `client` into `holders`, their reads spawned on `spawner`.
    pub fn new(client: OpenCodeClient, holders: Arc<GoalHolders>, spawner: tokio::runtime::Handle) -> Arc<Self> {
        Arc::new(Owners {
            client,
            holders,
            spawner,
            directories: Mutex::default(),
            epoch: Instant::now(),
            waker: OnceLock::new(),
            stopped: AtomicBool::new(false),
            gate: ListGate::default(),
        })
    }

    /// Which session first carried each goal id, as the lists (and the ticks) showed it.
    pub fn holders(&self) -> &GoalHolders {
        &self.holders
    }

    /// The directories' list gate, shared with the sweep and the recovery scan.
    pub fn gate(&self) -> &ListGate {
        &self.gate
    }

    /// The runtime stopped: lists scheduled or queued are not read any more.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
    }

    /// Sets what wakes a goal that waited for a failing list once a list is read.
    pub fn set_waker(&self, waker: Waker) {
        let _ = self.waker.set(waker);
    }

    /// The owner list start for `goal`, judged against the host's clock now (see
    /// [`owner_list_start`]).
    fn goal_list_start(&self, goal: &Goal) -> Option<f64> {
        owner_list_start(goal.created_at, self.client.clock().now_ms())
    }

    fn now(&self) -> f64 {
        self.epoch.elapsed().as_secs_f64() * 1000.0
    }

    /// Whether the owner of `goal` is still to be learned from a list: it names no session and
    /// no list that holds all its carriers has been read.
    pub fn needs_list(&self, goal: &Goal) -> bool {
        goal.session_id.is_none() && !self.holders.is_listed(&goal.id, self.goal_list_start(goal))
    }

    /// Starts the list `goal` needs, if none covering it is in flight and the directory's lists
    /// are not backing off, and returns at once (an event showed the goal: the list is read
    /// before the goal's tick needs it).
    pub fn prefetch(self: &Arc<Self>, directory: &str, goal: &Goal) {
        if directory.is_empty() || !self.needs_list(goal) {
            return;
        }
        let needed = self.goal_list_start(goal).unwrap_or(f64::NEG_INFINITY);
        let now = self.now();
        let plan = plan_list(&mut self.directory(directory).lists, needed, now);
        if let ListPlan::Start(number, start) = plan {
            self.spawn_list(directory, number, start);
        }
    }

    /// What the lists tell about `goal`'s carriers, once a list that holds them all has been
    /// read (waiting for it). While the directory's lists fail, `session` is registered to be
    /// woken by the next list read and the answer says so: the tick must not drive the goal.
    pub async fn wait_listed(self: &Arc<Self>, directory: &str, goal: &Goal, session: &str) -> ListAnswer {
        let needed = self.goal_list_start(goal).unwrap_or(f64::NEG_INFINITY);
        let view = || self.holders.view(&goal.id, self.goal_list_start(goal));
        for _ in 0..MAX_LISTS_PER_WAIT {
            let seen = view();
            if seen.listed {
                return ListAnswer::Listed(seen);
            }
            let now = self.now();
            let (plan, mut finished) = {
                let mut entry = self.directory(directory);
                (plan_list(&mut entry.lists, needed, now), entry.finished.subscribe())
            };
            let number = match plan {
                ListPlan::Start(number, start) => {
                    self.spawn_list(directory, number, start);
                    number
                }
                ListPlan::Join(number) | ListPlan::After(number) => number,
                ListPlan::CannotList => return ListAnswer::CannotList,
                ListPlan::Backoff => match self.register(directory, session, needed) {
                    Some(answer) => return answer,
                    None => continue,
                },
            };
            let Ok(state) = finished.wait_for(|(done, _)| *done >= number).await.map(|s| *s) else {
                return ListAnswer::Listed(view());
            };
            match state {
                (done, Ended::CannotList) if done == number => return ListAnswer::CannotList,
                // The list that was to cover the goal could not be read.
                (done, Ended::Failed) if done == number && matches!(plan, ListPlan::Start(..) | ListPlan::Join(_)) => {
                    if let Some(answer) = self.register(directory, session, needed) {
                        return answer;
                    }
                }
                _ => {}
            }
        }
        ListAnswer::Listed(view())
    }

    /// Whether the directory's lists are in their backoff (no list may start now).
    pub fn backing_off(&self, directory: &str) -> bool {
        let now = self.now();
        self.directories.lock().get(directory).is_some_and(|entry| entry.lists.backing_off(now))
    }

    /// When the directory's next list starts, for a session waiting on it (for `explain`).
    pub fn next_list_in(&self, directory: &str, session: &str) -> Option<Duration> {
        let directories = self.directories.lock();
        let lists = &directories.get(directory)?.lists;
        let failing = lists.failing().filter(|_| lists.is_waiting(session))?;
        Some(Duration::from_millis((failing.retry_at - self.now()).max(0.0) as u64))
    }

    /// Registers `session` as waiting for the directory's next list; `None` when the directory
    /// is not failing any more (plan again).
    fn register(self: &Arc<Self>, directory: &str, session: &str, needed: f64) -> Option<ListAnswer> {
        let now = self.now();
        let waiting = add_waiter(&mut self.directory(directory).lists, session, needed, now);
        match waiting {
            Waiting::Registered { detail, retry_in, arm_retry } => {
                if arm_retry {
                    self.spawn_retry(directory, retry_in);
                }
                Some(ListAnswer::Failing { detail, retry_in })
            }
            Waiting::Stale => None,
        }
    }

    fn directory(&self, directory: &str) -> parking_lot::MappedMutexGuard<'_, Directory> {
        let mut directories = self.directories.lock();
        if directories.len() >= MAX_DIRECTORIES && !directories.contains_key(directory) {
            directories.retain(|_, entry| entry.lists.busy());
        }
        parking_lot::MutexGuard::map(directories, |d| d.entry(directory.to_string()).or_default())
    }

    /// The directory's one backoff: after `delay`, the retry list starts (when goals still wait).
    fn spawn_retry(self: &Arc<Self>, directory: &str, delay: Duration) {
        let (me, directory) = (self.clone(), directory.to_string());
        self.spawner.spawn(async move {
            tokio::time::sleep(delay).await;
            let due = retry_due(&mut me.directory(&directory).lists);
            if let Some((number, start)) = due {
                me.run_lists(directory, number, start).await;
            }
        });
    }

    fn spawn_list(self: &Arc<Self>, directory: &str, number: u64, start: f64) {
        let (me, directory) = (self.clone(), directory.to_string());
        self.spawner.spawn(async move { me.run_lists(directory, number, start).await });
    }

    /// Reads list `number`, then any list queued behind it; wakes the goals a read list (or a
    /// 404) releases, and schedules the retry of a failed one.
    async fn run_lists(self: Arc<Self>, directory: String, number: u64, start: f64) {
        let (mut number, mut start) = (number, start);
        loop {
            let end = if self.stopped.load(Ordering::SeqCst) {
                ListEnd::Failed("stopped".into())
            } else {
                self.read_list(&directory, start).await
            };
            let ended = match &end {
                ListEnd::Read => Ended::Read,
                ListEnd::Failed(_) => Ended::Failed,
                ListEnd::CannotList => Ended::CannotList,
            };
            let now = self.now();
            let AfterList { next, woken, retry_in } = {
                let mut entry = self.directory(&directory);
                let after = finish_list(&mut entry.lists, number, &end, now);
                entry.finished.send_replace((number, ended));
                after
            };
            if let Some(waker) = self.waker.get() {
                for session in &woken {
                    waker(session, &directory);
                }
            }
            if let Some(delay) = retry_in.filter(|_| !self.stopped.load(Ordering::SeqCst)) {
                self.spawn_retry(&directory, delay);
            }
            match next {
                Some(following) => (number, start) = following,
                None => return,
            }
        }
    }

    /// Reads one list and records every goal it shows.
    async fn read_list(&self, directory: &str, start: f64) -> ListEnd {
        let start = start.is_finite().then_some(start);
        // A list another reader saw fail (or is reading) holds this one back.
        let permit = self.gate.begin(directory).await;
        let answer = self.client.list_owner_candidates(directory, start).await;
        // A 404 (a server that cannot list) backs off like any failure: every reader of the
        // directory gets the same answer, and asking again soon changes nothing.
        match &answer {
            Ok(_) => permit.read(),
            Err(_) => {
                permit.failed();
            }
        }
        match answer {
            Ok(candidates) => {
                let carriers = candidates.iter().map(|c| (c.goal_id.as_str(), c.session_id.as_str(), c.created));
                self.holders.saw_list(carriers, start);
                ListEnd::Read
            }
            Err(HttpError::Status(404)) => {
                warn!(target: "session_goal", "the server cannot list sessions (404); owners are decided from each session");
                ListEnd::CannotList
            }
            Err(error) => {
                warn!(target: "session_goal", %error, "session list unreadable; goal owners unknown");
                ListEnd::Failed(wait_detail(Route::List, &error))
            }
        }
    }
}
