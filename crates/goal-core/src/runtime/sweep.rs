//! The goal runtime's scans of its known directories: the recovery scan (at start, on every
//! connection, and on `recover()`) and the sweep (every `sweepIntervalMs`, and when the silence
//! watch asks, `watch.rs`), both behind each directory's one list backoff.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tracing::{debug, warn, Instrument};

use super::Inner;
use crate::record::session::ListedSession;
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

impl Inner {
    /// Scans `directories` (those known when the scan was asked for; a directory learned from
    /// an event afterwards is scanned on its own when it is learned) and arms each active goal
    /// found with `arm`: after a (re)connect, whatever events said about busy
    /// (`ArmMode::IfIdleTimer`); for a directory learned on a live stream, only a session the
    /// live events say nothing pending or busy about (`ArmMode::IfNothingPending`).
    pub(super) async fn recover(self: Arc<Self>, directories: Vec<String>, arm: ArmMode) {
        for directory in directories {
            if self.stopped.load(Ordering::SeqCst) {
                return;
            }
            // A directory whose lists fail is listed once its backoff ends (and not beside
            // another list of it).
            let permit = self.ctx.owners.gate().begin(&directory).await;
            if self.stopped.load(Ordering::SeqCst) {
                return;
            }
            let sessions = match self.ctx.client.list_session_goals(&directory).await {
                Ok(sessions) => {
                    permit.read();
                    sessions
                }
                Err(error) => {
                    permit.failed();
                    warn!(target: "session_goal", %error, "recovery scan failed for a directory");
                    continue;
                }
            };
            self.ctx.owners.holders().saw_list(carriers(&sessions), None);
            for session in sessions.iter().filter(|s| !s.is_subagent()) {
                if let Some(goal) = &session.goal {
                    let active = goal.status == GoalStatus::Active;
                    if active {
                        debug!(target: "session_goal", session = %session.id, "recovering active goal");
                    }
                    let dir = if session.directory.is_empty() { directory.clone() } else { session.directory.clone() };
                    self.scheduler.goal_seen(GoalSighting {
                        session: session.id.clone(),
                        directory: dir,
                        seen: Seen::Scan(goal.revision.clone(), goal.status),
                        arm: active.then_some((self.ctx.config.kickoff_quiet, arm)),
                        arm_if_changed: None,
                    });
                }
            }
        }
    }

    /// Lost events must not strand goals: for each known directory, one session list and one
    /// status read. Every active goal on a top-level session is reported to the scheduler with
    /// the status OpenCode shows (the truth about busy, whatever the events said), and one on an
    /// idle session with no timer and no tick is armed (the tick re-checks everything). A
    /// directory whose list fails is listed again only after the directory's one backoff
    /// (`goal/gather/list_gate.rs`), shared with the owner lists and the recovery scan.
    /// Returns whether every directory was listed and read.
    pub(super) async fn sweep(&self) -> bool {
        let directories: Vec<String> = self.directories.lock().iter().cloned().collect();
        let mut complete = true;
        for directory in directories {
            if self.stopped.load(Ordering::SeqCst) {
                return false;
            }
            let Some(permit) = self.ctx.owners.gate().try_begin(&directory) else {
                complete = false;
                continue;
            };
            let (sessions, status) =
                tokio::join!(self.ctx.client.list_session_goals(&directory), self.ctx.client.status_map(&directory));
            let sessions = match sessions {
                Ok(sessions) => {
                    permit.read();
                    sessions
                }
                Err(_) => {
                    complete = false;
                    let wait = permit.failed();
                    warn!(target: "session_goal", retry_in_ms = wait.as_millis() as u64, "sweep could not list a directory; backing off");
                    continue;
                }
            };
            let Ok(status) = status else {
                complete = false;
                warn!(target: "session_goal", "sweep could not read a directory's status");
                continue;
            };
            let active = sessions.iter().any(|s| s.goal.as_ref().is_some_and(|g| g.status == GoalStatus::Active));
            let mut with_active = self.sweeps.with_active_goals.lock();
            if active {
                with_active.insert(directory.clone());
            } else {
                with_active.remove(&directory);
            }
            drop(with_active);
            self.ctx.owners.holders().saw_list(carriers(&sessions), None);
            for session in sessions.iter().filter(|s| !s.is_subagent()) {
                let Some(goal) = &session.goal else { continue };
                if goal.status != GoalStatus::Active {
                    continue;
                }
                let working = crate::record::session::live_status(&status, &session.id)
                    == crate::record::session::LiveStatus::Working;
                let dir = if session.directory.is_empty() { directory.clone() } else { session.directory.clone() };
                let sighting = GoalSighting {
                    session: session.id.clone(),
                    directory: dir,
                    seen: Seen::Scan(goal.revision.clone(), goal.status),
                    arm: None,
                    arm_if_changed: None,
                };
                self.scheduler.swept(sighting, working, self.ctx.config.kickoff_quiet);
            }
        }
        complete
    }
}

/// The goal carriers a whole-directory list showed (top-level sessions with a goal), for
/// `GoalHolders::saw_list`.
fn carriers(sessions: &[ListedSession]) -> impl Iterator<Item = (&str, &str, f64)> {
    sessions
        .iter()
        .filter(|s| !s.is_subagent())
        .filter_map(|s| s.goal.as_ref().map(|goal| (goal.id.as_str(), s.id.as_str(), s.created)))
}
