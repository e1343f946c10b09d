//! The per-directory plan of owner lists (`goal/gather/owners.rs` runs it): one list in flight per
//! directory, shared by every goal that waits on it; after a failed list, one backoff for the
//! whole directory (`time::backoff`, from [`LIST_RETRY_BASE`]), during which no list starts and
//! waiting goals are registered to be woken by the next list that is read; a 404 (the server
//! cannot list sessions) held for [`CANNOT_LIST_HOLD_MS`], during which goals are decided from
//! their own session. Pure: times are milliseconds of a monotonic clock the caller passes.

use std::collections::HashMap;
use std::time::Duration;

use crate::time::backoff::retry_delay;

/// The wait after a directory's first failed list. Doubling from it reaches the cap
/// (`time::backoff::MAX_RETRY_DELAY`, 10 s) at the third failure: after the first three lists,
/// at most one per directory every 10 s.
pub const LIST_RETRY_BASE: Duration = Duration::from_millis(2_500);
/// How long a 404 on the list is believed (goals are decided from their session meanwhile);
/// then one list asks again, in case the server changed.
pub const CANNOT_LIST_HOLD_MS: f64 = 10.0 * 60_000.0;
/// Sessions remembered as waiting per directory (beyond it, the newest are not registered and
/// fall back to their own backoff).
const MAX_WAITERS: usize = 100_000;

/// What a goal waiting for its owner list does next (see [`plan_list`]).
#[derive(Debug, Clone, PartialEq)]
pub enum ListPlan {
    /// Wait for the list in flight with this number; it covers the goal.
    Join(u64),
    /// Start list number `.0` from `.1` (`-inf`: the whole directory), then wait for it.
    Start(u64, f64),
    /// Wait for the list in flight with this number; it started too late for the goal, which
    /// the next list covers.
    After(u64),
    /// The directory's lists are failing and its backoff runs: no list now (register and wait).
    Backoff,
    /// The server answered 404 to the list: decide from the session itself.
    CannotList,
}

/// How a list ended.
#[derive(Debug, Clone, PartialEq)]
pub enum ListEnd {
    /// Its answer was read.
    Read,
    /// It failed; the request and its answer (`GET /session → 503`).
    Failed(String),
    /// The server answered 404: it cannot list sessions.
    CannotList,
}

/// A directory whose lists are failing.
#[derive(Debug, Clone, PartialEq)]
pub struct Failing {
    /// Failed lists in a row.
    pub failures: u32,
    /// The last failure: the request and its answer.
    pub detail: String,
    /// When the next list may start.
    pub retry_at: f64,
}

/// The owner lists of one directory.
#[derive(Debug, Default)]
pub struct DirectoryLists {
    /// The list in flight: its number and start.
    running: Option<(u64, f64)>,
    /// The lowest start wanted by goals the running list cannot cover.
    queued: Option<f64>,
    /// The number of the last list started.
    started: u64,
    /// Set while the directory's lists fail.
    failing: Option<Failing>,
    /// Until when a 404 on the list holds.
    cannot_list_until: Option<f64>,
    /// Sessions waiting for the next list that is read, with the start each needs.
    waiters: HashMap<String, f64>,
    /// A retry of the list is scheduled.
    retry_armed: bool,
}

/// What ending a list leads to (see [`finish_list`]).
#[derive(Debug, Default, PartialEq)]
pub struct AfterList {
    /// The next list to begin at once (goals queued behind a list that was read).
    pub next: Option<(u64, f64)>,
    /// Sessions to wake: the list was read (or the server cannot list).
    pub woken: Vec<String>,
    /// Schedule a retry of the list after this long (it failed and goals wait for it).
    pub retry_in: Option<Duration>,
}

/// What registering a waiting goal gave (see [`add_waiter`]).
#[derive(Debug, PartialEq)]
pub enum Waiting {
    /// Registered: the next list that is read wakes it. `arm_retry`: no retry was scheduled yet,
    /// schedule one in `retry_in`.
    Registered {
        /// The failure the goal waits on.
        detail: String,
        /// Time to the next list.
        retry_in: Duration,
        /// Whether the caller schedules the retry.
        arm_retry: bool,
    },
    /// The directory is not failing any more (a list was read, or may start now): plan again.
    Stale,
}

impl DirectoryLists {
    /// Whether anything of this directory must be kept (a list in flight, goals waiting).
    pub fn busy(&self) -> bool {
        self.running.is_some() || !self.waiters.is_empty()
    }

    /// The failure the directory's lists are in, if any.
    pub fn failing(&self) -> Option<&Failing> {
        self.failing.as_ref()
    }

    /// Whether the directory's lists are failing and no list may start before `now`'s backoff
    /// ends (a goal needing a list then waits without reading anything).
    pub fn backing_off(&self, now: f64) -> bool {
        self.running.is_none() && self.failing.as_ref().is_some_and(|f| f.retry_at > now)
    }

    /// Whether `session` waits for this directory's next list.
    pub fn is_waiting(&self, session: &str) -> bool {
        self.waiters.contains_key(session)
    }
}

/// Decides what a goal needing a list from `needed` (`-inf`: the whole directory) does.
pub fn plan_list(lists: &mut DirectoryLists, needed: f64, now: f64) -> ListPlan {
    if let Some((number, start)) = lists.running {
        if start <= needed {
            return ListPlan::Join(number);
        }
        lists.queued = Some(lists.queued.map_or(needed, |queued| queued.min(needed)));
        return ListPlan::After(number);
    }
    if lists.cannot_list_until.is_some_and(|until| until > now) {
        return ListPlan::CannotList;
    }
    if lists.failing.as_ref().is_some_and(|f| f.retry_at > now) {
        return ListPlan::Backoff;
    }
    let start = lists.queued.take().map_or(needed, |queued| queued.min(needed));
    ListPlan::Start(begin(lists, start), start)
}

fn begin(lists: &mut DirectoryLists, start: f64) -> u64 {
    lists.started += 1;
    lists.running = Some((lists.started, start));
    lists.started
}

/// Records that list `number` ended as `end` at `now`.
pub fn finish_list(lists: &mut DirectoryLists, number: u64, end: &ListEnd, now: f64) -> AfterList {
    if lists.running.is_some_and(|(running, _)| running == number) {
        lists.running = None;
    }
    let mut after = AfterList::default();
    match end {
        ListEnd::Read | ListEnd::CannotList => {
            lists.failing = None;
            lists.cannot_list_until = (*end == ListEnd::CannotList).then_some(now + CANNOT_LIST_HOLD_MS);
            after.woken = lists.waiters.drain().map(|(session, _)| session).collect();
            if *end == ListEnd::Read && lists.running.is_none() {
                if let Some(start) = lists.queued.take() {
                    after.next = Some((begin(lists, start), start));
                }
            } else if *end == ListEnd::CannotList {
                lists.queued = None;
            }
        }
        ListEnd::Failed(detail) => {
            let failures = lists.failing.as_ref().map_or(0, |f| f.failures).saturating_add(1);
            let wait = retry_delay(LIST_RETRY_BASE, failures);
            lists.failing = Some(Failing { failures, detail: detail.clone(), retry_at: now + wait.as_millis() as f64 });
            // Goals queued behind the failed list wait for the retry, which starts early enough
            // for them.
            if (lists.queued.is_some() || !lists.waiters.is_empty()) && !lists.retry_armed {
                lists.retry_armed = true;
                after.retry_in = Some(wait);
            }
        }
    }
    after
}

/// Registers `session` (needing a list from `needed`) to be woken by the next list that is read,
/// while the directory's lists fail.
pub fn add_waiter(lists: &mut DirectoryLists, session: &str, needed: f64, now: f64) -> Waiting {
    let Some(failing) = lists.failing.as_ref().filter(|f| f.retry_at > now || lists.running.is_some()) else {
        return Waiting::Stale;
    };
    let (detail, retry_in) = (failing.detail.clone(), Duration::from_millis((failing.retry_at - now).max(0.0) as u64));
    if lists.waiters.len() < MAX_WAITERS || lists.waiters.contains_key(session) {
        let entry = lists.waiters.entry(session.to_string()).or_insert(needed);
        *entry = entry.min(needed);
    }
    let arm_retry = !lists.retry_armed && lists.running.is_none();
    lists.retry_armed |= arm_retry;
    Waiting::Registered { detail, retry_in, arm_retry }
}

/// The scheduled retry is due: the list to start, from the lowest start any waiting goal needs
/// (`None`: a list is already in flight, or nobody waits any more).
pub fn retry_due(lists: &mut DirectoryLists) -> Option<(u64, f64)> {
    lists.retry_armed = false;
    if lists.running.is_some() {
        return None;
    }
    let needed = lists.waiters.values().copied().chain(lists.queued.take()).reduce(f64::min)?;
    Some((begin(lists, needed), needed))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: f64 = 1_000.0;

    #[test]
    fn one_list_at_a_time_serves_every_goal_waiting() {
        let mut lists = DirectoryLists::default();
        // The first goal starts a list; a goal it covers joins it.
        assert_eq!(plan_list(&mut lists, 100.0, NOW), ListPlan::Start(1, 100.0));
        assert_eq!(plan_list(&mut lists, 200.0, NOW), ListPlan::Join(1));
        // Goals it cannot cover wait behind it; the next list covers the oldest of them.
        assert_eq!(plan_list(&mut lists, 50.0, NOW), ListPlan::After(1));
        assert_eq!(plan_list(&mut lists, 70.0, NOW), ListPlan::After(1));
        assert_eq!(finish_list(&mut lists, 1, &ListEnd::Read, NOW).next, Some((2, 50.0)));
        assert_eq!(plan_list(&mut lists, 70.0, NOW), ListPlan::Join(2));
        assert_eq!(finish_list(&mut lists, 2, &ListEnd::Read, NOW), AfterList::default());
        // Nothing in flight: a whole-directory list for a goal without `createdAt`.
        assert_eq!(plan_list(&mut lists, f64::NEG_INFINITY, NOW), ListPlan::Start(3, f64::NEG_INFINITY));
        assert_eq!(plan_list(&mut lists, 10.0, NOW), ListPlan::Join(3));
        // A stale finish (not the running list) leaves the running one alone.
        finish_list(&mut lists, 2, &ListEnd::Read, NOW);
        assert_eq!(plan_list(&mut lists, 10.0, NOW), ListPlan::Join(3));
    }

    #[test]
    fn a_failing_list_backs_off_for_the_whole_directory_and_wakes_its_waiters_once_read() {
        let mut lists = DirectoryLists::default();
        let failed = ListEnd::Failed("GET /session → 503".into());
        assert_eq!(plan_list(&mut lists, 100.0, NOW), ListPlan::Start(1, 100.0));
        // Nobody waits yet: no retry is scheduled by the failure itself.
        assert_eq!(finish_list(&mut lists, 1, &failed, NOW).retry_in, None);
        // During the backoff no list starts; goals register, the first schedules the retry.
        assert_eq!(plan_list(&mut lists, 100.0, NOW + 1.0), ListPlan::Backoff);
        let first = add_waiter(&mut lists, "ses_a", 100.0, NOW + 1.0);
        assert_eq!(
            first,
            Waiting::Registered {
                detail: "GET /session → 503".into(),
                retry_in: Duration::from_millis(2_499),
                arm_retry: true
            }
        );
        let second = add_waiter(&mut lists, "ses_b", 40.0, NOW + 2.0);
        assert!(matches!(second, Waiting::Registered { arm_retry: false, .. }), "{second:?}");
        assert!(lists.is_waiting("ses_a") && lists.busy());
        // The retry lists from the lowest start any waiter needs; goals arriving meanwhile join.
        assert_eq!(retry_due(&mut lists), Some((2, 40.0)));
        assert_eq!(plan_list(&mut lists, 100.0, NOW + 2_500.0), ListPlan::Join(2));
        // It fails again: the wait doubles, and the waiters stay (a retry is scheduled for them).
        let after = finish_list(&mut lists, 2, &failed, NOW + 2_600.0);
        assert_eq!(after.retry_in, Some(Duration::from_millis(5_000)));
        assert!(after.woken.is_empty());
        assert_eq!(lists.failing().unwrap().failures, 2);
        assert_eq!(retry_due(&mut lists), Some((3, 40.0)));
        // Third failure: the cap (10 s); from here on at most one list per 10 s.
        assert_eq!(finish_list(&mut lists, 3, &failed, NOW + 8_000.0).retry_in, Some(Duration::from_secs(10)));
        assert_eq!(retry_due(&mut lists), Some((4, 40.0)));
        // Read at last: every waiter is woken, and the directory is healthy again.
        let mut woken = finish_list(&mut lists, 4, &ListEnd::Read, NOW + 18_000.0).woken;
        woken.sort();
        assert_eq!(woken, ["ses_a", "ses_b"]);
        assert!(lists.failing().is_none() && !lists.busy());
        assert_eq!(add_waiter(&mut lists, "ses_c", 1.0, NOW + 18_001.0), Waiting::Stale);
        assert_eq!(retry_due(&mut lists), None, "nobody waits");
    }

    #[test]
    fn a_404_is_believed_for_a_while_and_wakes_the_waiters() {
        let mut lists = DirectoryLists::default();
        assert_eq!(plan_list(&mut lists, 1.0, NOW), ListPlan::Start(1, 1.0));
        finish_list(&mut lists, 1, &ListEnd::Failed("GET /session → 503".into()), NOW);
        add_waiter(&mut lists, "ses_a", 1.0, NOW);
        assert_eq!(retry_due(&mut lists), Some((2, 1.0)));
        let after = finish_list(&mut lists, 2, &ListEnd::CannotList, NOW + 2_500.0);
        assert_eq!(after.woken, ["ses_a"]);
        assert_eq!(plan_list(&mut lists, 1.0, NOW + 3_000.0), ListPlan::CannotList);
        // Once the hold ends, one list asks again.
        assert_eq!(plan_list(&mut lists, 1.0, NOW + 2_500.0 + CANNOT_LIST_HOLD_MS), ListPlan::Start(3, 1.0));
    }
}
