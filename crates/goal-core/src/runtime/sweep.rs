//! The goal runtime's looks at every goal on the server, both one walk over a census
//! (`census.rs`): the recovery scan (at start, on every connection, and on `recover()`) arms each
//! active goal it found; the sweep (every `sweepIntervalMs`, and when the silence watch asks,
//! `watch.rs`) first reads each directory's status and reports what OpenCode shows.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use tracing::{debug, warn, Instrument};

use super::census::Found;
use super::Inner;
use crate::record::session::{live_status, ListedGoal, ListedSession, LiveStatus};
use crate::record::GoalStatus;
use crate::sched::facts::Seen;
use crate::sched::{ArmMode, GoalSighting};

/// Starts the periodic sweep on `runtime` (none when `sweepIntervalMs` is zero); it holds the
/// runtime weakly and ends with it.
pub(super) fn start(inner: &Arc<Inner>, runtime: &tokio::runtime::Handle) {
    let interval = inner.ctx.config.sweep_interval;
    if interval.is_zero() {
        return;
    }
    let weak = Arc::downgrade(inner);
    runtime.spawn(
        async move {
            loop {
                let next = tokio::time::Instant::now() + interval;
                match weak.upgrade() {
                    Some(inner) => *inner.sweeps.next.lock() = Some(next),
                    None => return,
                }
                tokio::time::sleep_until(next).await;
                let Some(inner) = weak.upgrade() else { return };
                if inner.stopped.load(Ordering::SeqCst) {
                    return;
                }
                inner.sweep().await;
            }
        }
        .in_current_span(),
    );
}

/// What a walk does with each active goal it found.
#[derive(Debug, Clone, Copy)]
enum Look {
    /// Arms a look at it, in this mode (the recovery scan).
    Arm(ArmMode),
    /// Reads its directory's status and reports what OpenCode shows (the sweep).
    Status,
}

/// Censuses read in part (a directory whose list failed) the scan at start tries again.
const PARTIAL_TRIES: usize = 30;

impl Inner {
    /// The recovery scan: a census (`patient`: waiting out its backoff; `since`: of the sessions
    /// updated since then only), every goal it found reported to the scheduler and each active
    /// one armed with `arm` (after a connection, whatever events said about busy: the tick
    /// re-checks everything). Returns `None` when no census was read, else what it read: the
    /// newest update it listed (`census::Found::newest`), and whether every place was read.
    pub(super) async fn recover(&self, arm: ArmMode, patient: bool, since: Option<f64>) -> Option<(Option<f64>, bool)> {
        let found = self.take_census(patient, since).await?;
        let read = (found.newest, found.whole);
        self.walk(found, Look::Arm(arm)).await;
        Some(read)
    }

    /// The scan at start: censuses until one is read whole (a host may start before its
    /// OpenCode answers, or while its lists fail; each try waits out the census's backoff), or
    /// the runtime stops. A census read in part is tried again [`PARTIAL_TRIES`] times at most
    /// (five minutes at the backoff's longest wait, when the periodic sweep takes over).
    pub(super) fn recover_at_start(self: &Arc<Self>) {
        let me = self.clone();
        self.scanning_at_start.store(true, Ordering::SeqCst);
        self.runtime.spawn(
            async move {
                // Each try waits out the census's backoff first: no spin.
                let mut partial = 0;
                while !me.stopped.load(Ordering::SeqCst) {
                    if let Some((newest, whole)) = me.recover(ArmMode::IfIdleTimer, true, None).await {
                        *me.start_newest.lock() = newest;
                        partial += 1;
                        if whole || partial >= PARTIAL_TRIES {
                            break;
                        }
                    }
                }
                me.scanning_at_start.store(false, Ordering::SeqCst);
            }
            .instrument(self.log_span.clone()),
        );
    }

    /// Lost events must not strand goals: a census, then for each directory holding an active
    /// goal one status read. Every active goal is reported to the scheduler with the status
    /// OpenCode shows (the truth about busy, whatever the events said), and one on an idle
    /// session with no timer and no tick is armed (the tick re-checks everything). A census or
    /// directory that fails backs off by the one rule (`goal/gather/list_gate.rs`). Returns
    /// whether every place was listed and read.
    pub(super) async fn sweep(&self) -> bool {
        let Some(found) = self.take_census(false, None).await else { return false };
        self.walk(found, Look::Status).await
    }

    /// Walks what a census found: the goal carriers recorded whole for the owner lists, each
    /// goal's status reported, the directories holding active goals kept, and each active goal
    /// looked at as `look` says. Returns whether every place was read.
    async fn walk(&self, found: Found, look: Look) -> bool {
        let Found { carriers, mut whole, .. } = found;
        self.ctx.owners.holders().saw_list(
            carriers.iter().filter_map(|s| s.goal.as_ref().map(|g| (g.id.as_str(), s.id.as_str(), s.created))),
            None,
        );
        let mut active: BTreeMap<&str, Vec<(&ListedSession, &ListedGoal)>> = BTreeMap::new();
        for session in carriers.iter().filter(|s| !s.directory.is_empty()) {
            let Some(goal) = &session.goal else { continue };
            if goal.status == GoalStatus::Active {
                active.entry(session.directory.as_str()).or_default().push((session, goal));
            } else {
                // Not to be driven, but known: `isGoalActive` reads what the scheduler saw.
                self.scheduler.goal_seen(sighting(session, goal, None));
            }
        }
        self.keep_directories(active.keys().copied(), whole);
        let arm = self.ctx.config.kickoff_quiet;
        for (directory, sessions) in active {
            if self.stopped.load(Ordering::SeqCst) {
                return false;
            }
            match look {
                Look::Arm(mode) => {
                    for (session, goal) in sessions {
                        debug!(target: "session_goal", session = %session.id, "recovering active goal");
                        self.scheduler.goal_seen(sighting(session, goal, Some((arm, mode))));
                    }
                }
                Look::Status => match self.ctx.client.status_map(directory).await {
                    Ok(status) => {
                        for (session, goal) in sessions {
                            let working = live_status(&status, &session.id) == LiveStatus::Working;
                            self.scheduler.swept(sighting(session, goal, None), working, arm);
                        }
                    }
                    Err(error) => {
                        whole = false;
                        warn!(target: "session_goal", %error, "sweep could not read a directory's status");
                    }
                },
            }
        }
        whole
    }

    /// Keeps the directories a census found active goals in among the known ones (never
    /// forgotten for newer ones while they hold one); a whole census also forgets that the
    /// others held one.
    fn keep_directories<'a>(&self, with_active: impl Iterator<Item = &'a str>, whole: bool) {
        let with_active: Vec<&str> = with_active.collect();
        {
            let mut kept = self.sweeps.with_active_goals.lock();
            if whole {
                kept.clear();
            }
            kept.extend(with_active.iter().map(|d| d.to_string()));
        }
        for directory in with_active {
            self.remember_directory(directory);
        }
    }
}

/// What the census showed of one session's goal, with what to arm.
fn sighting(session: &ListedSession, goal: &ListedGoal, arm: Option<(std::time::Duration, ArmMode)>) -> GoalSighting {
    GoalSighting {
        session: session.id.clone(),
        directory: session.directory.clone(),
        seen: Seen::Scan(goal.revision.clone(), goal.status),
        arm,
        arm_if_changed: None,
    }
}
