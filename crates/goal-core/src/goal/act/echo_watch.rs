//! Lost-update repair. OpenCode's PATCH has no compare-and-set: a pause, clear or edit that
//! another writer (the UI, another host) lands between our fresh read and our PATCH is
//! overwritten by it. OpenCode emits `session.updated` with the whole metadata after every write,
//! in write order, so the other writer's state shows up in an event before the echo of ours.
//!
//! A tick that reserves a turn watches the session's goal events from just before its write
//! until the echo of that write arrives. A goal state seen in between that is neither what the
//! write read nor what it wrote is another writer's: the tick then posts nothing and writes that
//! state back (the user wins; the reserved turn goes back with it, since the user's goal carries
//! the turn count from before the reservation).
//!
//! The echo is only awaited when this runtime receives `session.updated` events at all (a host
//! that forwards none cannot show a lost update), and for a bounded time.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::Notify;

use crate::record::metadata::{foreign_part, same_json};

/// Events older than this (ms) do not count as "this runtime receives goal events".
const EVENTS_FRESH_MS: u64 = 10 * 60 * 1000;

/// One goal state seen in a `session.updated` event: the goal's `updatedAt`, or `None` when the
/// session has no (valid) goal, with the raw goal value, and the metadata's other keys when the
/// event carried the whole metadata.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    updated_at: Option<f64>,
    goal: Option<Value>,
    foreign: Option<Value>,
}

#[derive(Default)]
struct Watch {
    /// Tells this watch from a later one of the same session (only its own guard removes it).
    id: u64,
    seen: Vec<Seen>,
    notify: Arc<Notify>,
}

/// What the events showed about one write.
#[derive(Debug, Clone, PartialEq)]
pub enum Echo {
    /// The write's echo arrived and nobody wrote in between.
    Clean,
    /// Another writer's goal state landed between our read and our write and was overwritten:
    /// this is the state to write back (`None`: the goal was cleared).
    Overwrote(Option<Value>),
    /// No echo within the bound, or no goal events reach this runtime: nothing known.
    Unknown,
}

/// Watches goal events for writes in flight (one per session at a time: the dispatch claim
/// already keeps one tick per session dispatching).
#[derive(Default)]
pub struct WriteEchoes {
    watches: Mutex<HashMap<String, Watch>>,
    /// When the last goal event arrived (ms since the epoch; 0 = never).
    last_event_ms: AtomicU64,
    next_watch: AtomicU64,
}

/// The goal object of a whole metadata value (`openchamber.goal`), when there is one.
fn whole_goal(metadata: &Value) -> Option<&Value> {
    metadata.get("openchamber")?.get("goal").filter(|goal| goal.is_object())
}

fn updated_at_of(goal: Option<&Value>) -> Option<f64> {
    goal.and_then(|g| g.get("updatedAt")).and_then(Value::as_f64).filter(|n| n.is_finite())
}

/// Whether a seen goal state is `goal`: the same `updatedAt`, and every field the event carries
/// as in `goal` (events may carry only the goal's known fields). `updatedAt` alone is not enough:
/// it has millisecond resolution, and another writer can land in the same one.
fn shows(seen: &Seen, goal: &Value) -> bool {
    let (Some(theirs), Some(fields)) = (seen.goal.as_ref().and_then(Value::as_object), goal.as_object()) else {
        return false;
    };
    seen.updated_at.is_some()
        && seen.updated_at == updated_at_of(Some(goal))
        && theirs.iter().all(|(key, value)| fields.get(key).is_some_and(|mine| same_json(value, mine)))
}

/// Judges the events seen since a watch began, for a write built on `read` (the goal as read)
/// that wrote `ours` (the goal as written). `None` while the echo has not arrived. Pure.
fn judge(seen: &[Seen], read: &Value, ours: &Value) -> Option<Echo> {
    let echo = seen.iter().position(|s| shows(s, ours))?;
    let read_at = updated_at_of(Some(read)).unwrap_or(0.0);
    // Another writer's state: newer than the one we read, or as new but different (an older or
    // repeated event arriving late is not a write we overwrote), or a cleared goal.
    let foreign = seen[..echo].iter().rev().find(|s| match s.updated_at {
        Some(at) => at > read_at || (at == read_at && !shows(s, read)),
        None => true,
    });
    Some(match foreign {
        Some(state) => Echo::Overwrote(state.goal.clone()),
        None => Echo::Clean,
    })
}

impl WriteEchoes {
    /// Records a `session.updated` goal state (called by the runtime's intake for every
    /// top-level session event).
    /// `metadata` is the whole metadata when the event carried it (see [`Self::is_watching`]).
    pub fn observe(&self, session_id: &str, goal: Option<&Value>, metadata: Option<&Value>, now_ms: f64) {
        self.last_event_ms.store(now_ms.max(0.0) as u64, Ordering::Relaxed);
        // Inside a watch the event carries the whole metadata, and with it the whole goal: its
        // lease is the one field that tells two hosts' reservations of one turn apart when both
        // were written in the same millisecond (the event's own goal holds only scalar fields).
        let goal = metadata.and_then(whole_goal).or(goal);
        let mut watches = self.watches.lock();
        if let Some(watch) = watches.get_mut(session_id) {
            watch.seen.push(Seen {
                updated_at: updated_at_of(goal),
                goal: goal.cloned(),
                foreign: metadata.map(foreign_part),
            });
            watch.notify.notify_waiters();
        }
    }

    /// Whether a write of the session is being watched (its events' whole metadata is wanted).
    pub fn is_watching(&self, session_id: &str) -> bool {
        self.watches.lock().contains_key(session_id)
    }

    /// Whether goal events reached this runtime recently.
    pub fn events_flow(&self, now_ms: f64) -> bool {
        let last = self.last_event_ms.load(Ordering::Relaxed);
        last > 0 && (now_ms.max(0.0) as u64).saturating_sub(last) < EVENTS_FRESH_MS
    }

    /// Starts watching a session's goal events; call before the read a write will be built on.
    /// The watch ends when the returned guard is dropped (a later watch of the session replaces
    /// it).
    pub fn watch(self: &Arc<Self>, session_id: &str) -> WatchGuard {
        let id = self.next_watch.fetch_add(1, Ordering::Relaxed) + 1;
        self.watches.lock().insert(session_id.to_string(), Watch { id, ..Watch::default() });
        WatchGuard { board: self.clone(), session_id: session_id.to_string(), id }
    }
}

/// An active watch; see [`WriteEchoes::watch`].
pub struct WatchGuard {
    board: Arc<WriteEchoes>,
    session_id: String,
    id: u64,
}

impl WatchGuard {
    /// Waits (at most `bound`) for the echo of a write built on `read` (the goal as read) that
    /// wrote `ours` (the goal as written), and says what the events showed.
    pub async fn echo(&self, read: &Value, ours: &Value, now_ms: f64, bound: Duration) -> Echo {
        if !self.board.events_flow(now_ms) {
            return Echo::Unknown;
        }
        let deadline = tokio::time::Instant::now() + bound;
        loop {
            let notify = {
                let watches = self.board.watches.lock();
                let Some(watch) = self.own(&watches) else { return Echo::Unknown };
                if let Some(echo) = judge(&watch.seen, read, ours) {
                    return echo;
                }
                watch.notify.clone()
            };
            let notified = notify.notified();
            tokio::pin!(notified);
            // Registered before the re-check, so an event between the check and the wait wakes us.
            notified.as_mut().enable();
            {
                let watches = self.board.watches.lock();
                if let Some(echo) = self.own(&watches).and_then(|w| judge(&w.seen, read, ours)) {
                    return echo;
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return Echo::Unknown;
            }
        }
    }

    /// Once the echo of our write (`ours`, the goal as written) has arrived: the other writers'
    /// keys our whole-metadata write replaced (the state just before our echo, when it differs
    /// from what we wrote around the goal, `written`), to put back. `None` when nothing was lost
    /// or the events cannot tell (no echo yet, or an event without the whole metadata).
    pub fn lost_foreign(&self, ours: &Value, written: &Value) -> Option<Value> {
        let watches = self.board.watches.lock();
        lost_foreign(&self.own(&watches)?.seen, ours, &foreign_part(written))
    }

    /// This guard's watch (not a later one of the same session).
    fn own<'a>(&self, watches: &'a HashMap<String, Watch>) -> Option<&'a Watch> {
        watches.get(&self.session_id).filter(|w| w.id == self.id)
    }
}

/// See [`WatchGuard::lost_foreign`]. Pure.
fn lost_foreign(seen: &[Seen], ours: &Value, written_foreign: &Value) -> Option<Value> {
    let echo = seen.iter().position(|s| shows(s, ours))?;
    // Events arrive in write order: the one just before our echo is the state our write replaced.
    let before = seen[..echo].last()?.foreign.as_ref()?;
    (!same_json(before, written_foreign)).then(|| before.clone())
}

impl Drop for WatchGuard {
    fn drop(&mut self) {
        let mut watches = self.board.watches.lock();
        if watches.get(&self.session_id).is_some_and(|w| w.id == self.id) {
            watches.remove(&self.session_id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn seen(updated_at: f64, status: &str) -> Seen {
        let goal = json!({"id": "g", "status": status, "updatedAt": updated_at});
        Seen { updated_at: Some(updated_at), goal: Some(goal), foreign: None }
    }

    fn goal(updated_at: f64, status: &str) -> Value {
        json!({"id": "g", "status": status, "updatedAt": updated_at, "lease": {"holder": "me"}})
    }

    #[test]
    fn judging_the_events_between_read_and_echo() {
        let (read, ours) = (goal(1.0, "active"), goal(3.0, "active"));
        assert_eq!(judge(&[], &read, &ours), None, "no echo yet");
        assert_eq!(judge(&[seen(3.0, "active")], &read, &ours), Some(Echo::Clean));
        assert_eq!(
            judge(&[seen(1.0, "active"), seen(3.0, "active")], &read, &ours),
            Some(Echo::Clean),
            "a late event of what we read"
        );
        let paused = seen(2.0, "paused");
        assert_eq!(
            judge(&[paused.clone(), seen(3.0, "active")], &read, &ours),
            Some(Echo::Overwrote(paused.goal.clone()))
        );
        let cleared = Seen { updated_at: None, goal: None, foreign: None };
        assert_eq!(judge(&[cleared, seen(3.0, "active")], &read, &ours), Some(Echo::Overwrote(None)));
        assert_eq!(
            judge(&[seen(3.0, "active"), seen(4.0, "paused")], &read, &ours),
            Some(Echo::Clean),
            "a later write is not overwritten"
        );
        assert_eq!(
            judge(&[seen(0.5, "paused"), seen(3.0, "active")], &read, &ours),
            Some(Echo::Clean),
            "an older state arriving late"
        );
    }

    #[test]
    fn a_write_in_the_same_millisecond_is_told_apart_by_content() {
        let (read, ours) = (goal(1.0, "active"), goal(3.0, "active"));
        // Paused in the very millisecond we wrote: not our echo, and overwritten by it.
        let paused_now = seen(3.0, "paused");
        assert_eq!(judge(std::slice::from_ref(&paused_now), &read, &ours), None, "a same-millisecond pause is no echo");
        assert_eq!(
            judge(&[paused_now.clone(), seen(3.0, "active")], &read, &ours),
            Some(Echo::Overwrote(paused_now.goal.clone()))
        );
        // Paused in the millisecond of the state we read.
        let paused_then = seen(1.0, "paused");
        assert_eq!(
            judge(&[paused_then.clone(), seen(3.0, "active")], &read, &ours),
            Some(Echo::Overwrote(paused_then.goal.clone()))
        );
        // Events carry only some fields, and numbers may come back as floats.
        let reduced = Seen {
            updated_at: Some(3.0),
            goal: Some(json!({"id": "g", "status": "active", "updatedAt": 3})),
            foreign: None,
        };
        assert_eq!(judge(&[reduced], &read, &ours), Some(Echo::Clean));
    }

    #[test]
    fn the_keys_our_write_replaced_are_told_from_the_state_before_its_echo() {
        let ours = goal(3.0, "active");
        let written = json!({"ui": {"pinned": true}, "openchamber": {"goal": ours.clone(), "assist": {"recap": "r"}}});
        let with =
            |foreign: Value| Seen { updated_at: Some(2.0), goal: Some(goal(2.0, "active")), foreign: Some(foreign) };
        let written_foreign = foreign_part(&written);
        let echo = Seen { updated_at: Some(3.0), goal: Some(ours.clone()), foreign: Some(foreign_part(&written)) };
        // Another writer added a key just before our write: it is what we replaced.
        let theirs = json!({"ui": {"pinned": true}, "other": {"token": 1}, "openchamber": {"assist": {"recap": "r"}}});
        assert_eq!(lost_foreign(&[with(theirs.clone()), echo.clone()], &ours, &written_foreign), Some(theirs));
        // The state before our write is what we wrote around the goal: nothing lost.
        assert_eq!(lost_foreign(&[with(foreign_part(&written)), echo.clone()], &ours, &written_foreign), None);
        // No event before the echo, no echo yet, or an event without the whole metadata.
        assert_eq!(lost_foreign(std::slice::from_ref(&echo), &ours, &written_foreign), None);
        assert_eq!(lost_foreign(&[with(json!({}))], &ours, &written_foreign), None);
        let bare = Seen { foreign: None, ..with(json!({})) };
        assert_eq!(lost_foreign(&[bare, echo], &ours, &written_foreign), None);
    }

    /// Two hosts reserve one turn from the same read, in the same millisecond: their goals differ
    /// only in the lease, which the event's own goal (scalar fields) leaves out. The whole
    /// metadata a watched event carries tells them apart, so the other host's reservation is not
    /// taken for our echo and a pause laid over it is seen.
    #[tokio::test]
    async fn a_reservation_in_the_same_millisecond_is_told_apart_by_its_lease() {
        let reservation = |holder: &str, status: &str| json!({"id": "g", "status": status, "turnsUsed": 1, "updatedAt": 3.0, "lease": {"holder": holder, "expiresAt": 9.0}});
        let scalars = |goal: &Value| {
            let mut fields = goal.clone();
            fields.as_object_mut().unwrap().remove("lease");
            fields
        };
        let event = |board: &WriteEchoes, goal: Value| {
            let metadata = json!({"openchamber": {"goal": goal.clone()}});
            board.observe("s", Some(&scalars(&goal)), Some(&metadata), 1_000.0);
        };
        let board = Arc::new(WriteEchoes::default());
        let watch = board.watch("s");
        let (read, ours) = (goal(1.0, "active"), reservation("me", "active"));
        event(&board, reservation("other", "active"));
        event(&board, json!({"id": "g", "status": "paused", "updatedAt": 3.0, "turnsUsed": 1}));
        event(&board, ours.clone());
        let echo = watch.echo(&read, &ours, 1_000.0, Duration::from_millis(50)).await;
        assert!(matches!(echo, Echo::Overwrote(Some(ref g)) if g["status"] == "paused"), "{echo:?}");
        // Without the whole metadata the other host's reservation reads as our echo.
        let bare = Arc::new(WriteEchoes::default());
        let watch = bare.watch("s");
        for goal in [reservation("other", "active"), ours.clone()] {
            bare.observe("s", Some(&scalars(&goal)), None, 1_000.0);
        }
        assert_eq!(watch.echo(&read, &ours, 1_000.0, Duration::from_millis(50)).await, Echo::Clean);
    }

    #[tokio::test]
    async fn a_later_watch_is_not_removed_by_an_earlier_guard() {
        let board = Arc::new(WriteEchoes::default());
        let first = board.watch("s");
        let second = board.watch("s");
        drop(first);
        assert!(board.is_watching("s"));
        drop(second);
        assert!(!board.is_watching("s"));
    }

    #[tokio::test]
    async fn the_echo_is_awaited_only_when_events_flow() {
        let board = Arc::new(WriteEchoes::default());
        let watch = board.watch("s");
        let (read, ours) = (goal(1.0, "active"), goal(3.0, "active"));
        assert_eq!(watch.echo(&read, &ours, 1_000.0, Duration::from_millis(50)).await, Echo::Unknown);
        board.observe("other", None, None, 1_000.0);
        let waiting = {
            let board = board.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                board.observe("s", Some(&json!({"id": "g", "status": "paused", "updatedAt": 2.0})), None, 1_000.0);
                board.observe("s", Some(&json!({"id": "g", "status": "active", "updatedAt": 3.0})), None, 1_000.0);
            })
        };
        let echo = watch.echo(&read, &ours, 1_000.0, Duration::from_secs(5)).await;
        waiting.await.unwrap();
        assert!(matches!(echo, Echo::Overwrote(Some(ref g)) if g["status"] == "paused"), "{echo:?}");
        drop(watch);
        assert!(board.watches.lock().is_empty());
    }
}
