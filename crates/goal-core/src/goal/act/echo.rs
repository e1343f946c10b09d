//! Reactions to a reservation's echo (the watch itself is `echo_watch.rs`): another writer's keys
//! our whole-metadata write replaced are put back; a user's goal change it overwrote is written
//! back, and nothing is sent.

use std::time::Duration;

use serde_json::Value;
use tracing::{debug, info, warn};

use crate::error::Cancelled;
use crate::error::HttpError;
use crate::goal::act::echo_watch::{Echo, WatchGuard};
use crate::io::opencode::OpenCodeClient;
use crate::io::spawn_detached;
use crate::io::writer::{write_goal_on, BaseRead, GoalGuard, Landed};
use crate::record::metadata::foreign_part;
use crate::record::{Goal, GoalStatus};

/// Longest wait for the echo of the reservation before posting (see `echo_watch.rs`).
pub const ECHO_BOUND: Duration = Duration::from_millis(1_000);

/// The echo's bound on a runtime with this quiet window: [`ECHO_BOUND`], or the quiet window when
/// shorter (a host that asks for quick turns gets them), never under 50 ms.
pub fn echo_bound(idle_quiet: Duration) -> Duration {
    ECHO_BOUND.min(idle_quiet.max(Duration::from_millis(50)))
}

/// The watch of a reservation's write, with what it needs to judge the echo.
pub struct ReservationEcho {
    /// The watch, started before the read the write built on.
    pub watch: WatchGuard,
    /// The goal as read, as JSON.
    pub read_value: Value,
    /// The goal as written, as JSON.
    pub written_value: Value,
    /// The whole metadata the write sent.
    pub written_metadata: Value,
    /// The goal as written.
    pub reserved: Goal,
    /// The goal as read.
    pub read_goal: Goal,
}

/// Where a watched write went: what the reactions to its echo need, owned, so that a late echo
/// can be followed after the tick has ended.
#[derive(Clone)]
pub struct EchoTarget {
    client: OpenCodeClient,
    session_id: String,
    directory: String,
}

impl EchoTarget {
    /// The session `session_id` of `directory`, written through `client`.
    pub fn new(client: &OpenCodeClient, session_id: &str, directory: &str) -> Self {
        EchoTarget { client: client.clone(), session_id: session_id.to_string(), directory: directory.to_string() }
    }
}

/// Writes the goal (fresh read, or `base`) under `guard`, remembering the goal the write built on,
/// and returns the watch of its echo (`None`: the goal no longer matched the guard, nothing was
/// written).
pub async fn write_watched(
    target: &EchoTarget,
    watch: WatchGuard,
    guard: &GoalGuard,
    base: Option<&BaseRead>,
    mutate: impl FnOnce(&mut Goal) + Send,
) -> Result<Option<ReservationEcho>, HttpError> {
    let landed = write_goal_on(&target.client, &target.session_id, &target.directory, guard, base, mutate).await?;
    Ok(landed.map(|landed| ReservationEcho::of_write(watch, landed)))
}

/// What the watch of a reservation heard.
pub enum Heard {
    /// The reservation overwrote a user's change, which was written back: nothing is sent.
    Repaired,
    /// The echo came; nothing of the user's was overwritten (other keys may have been put back).
    Settled,
    /// The echo came after another host's reservation of the same turn, which landed between
    /// our read and our write: that host may be posting already (its read-back may have passed
    /// before our write replaced its lease), so the read-back waits for its post to show.
    Contested,
    /// No echo within the bound (or no events reach this runtime).
    NotYet,
}

impl ReservationEcho {
    /// The watch of a goal write that landed.
    pub fn of_write(watch: WatchGuard, landed: Landed) -> Self {
        ReservationEcho {
            watch,
            read_value: landed.before.to_value(),
            written_value: landed.after.to_value(),
            written_metadata: landed.metadata,
            reserved: landed.after,
            read_goal: landed.before,
        }
    }

    /// Waits (at most `bound`) for the echo, puts back other writers' keys it shows were
    /// replaced, and writes back a user's goal change it shows was overwritten.
    pub async fn hear(&self, target: &EchoTarget, bound: Duration) -> Heard {
        let echo = self.watch.echo(&self.read_value, &self.written_value, target.client.clock().now_ms(), bound).await;
        if echo == Echo::Unknown {
            return Heard::NotYet;
        }
        self.restore_lost_foreign_keys(target);
        match echo {
            Echo::Overwrote(theirs) if !is_competing_reservation(theirs.as_ref(), &self.read_goal) => {
                give_back_to_the_user(target, &self.reserved, &self.read_goal, theirs).await;
                Heard::Repaired
            }
            Echo::Overwrote(_) => {
                // Another host's reservation of the same turn is no user intent to restore: it
                // posts the same message id, and the read-back lets only the lease's holder on.
                debug!(target: "session_goal", session = %target.session_id, "another host reserved the same turn; the read-back decides");
                Heard::Contested
            }
            _ => Heard::Settled,
        }
    }

    /// Our whole-metadata write replaced keys another writer had just written (the events show
    /// the state before our echo): they are put back beside the dispatch, which they do not
    /// concern.
    fn restore_lost_foreign_keys(&self, target: &EchoTarget) {
        let written = &self.written_metadata;
        let Some(theirs) = self.watch.lost_foreign(&self.written_value, written) else { return };
        info!(target: "session_goal", session = %target.session_id, "the reservation replaced keys another writer had just written; putting them back");
        let ours = foreign_part(written);
        let EchoTarget { client, session_id: session, directory } = target.clone();
        spawn_detached(Box::pin(async move {
            if let Err(error) =
                crate::io::writer::restore_foreign_keys(&client, &session, &directory, &ours, &theirs).await
            {
                warn!(target: "session_goal", session = %session, %error, "putting back another writer's keys failed");
            }
        }));
    }
}

/// How long a continuation already posted on a reservation whose echo had not come is followed
/// for it: the turn it started runs meanwhile, so no tick of the session competes for the watch.
const LATE_ECHO_FOLLOW: Duration = Duration::from_secs(10);

/// The continuation went out before the reservation's echo came (an event stream lagging past the
/// echo's bound). When the echo comes, a user's stop it shows our reservation overwrote is still
/// written back: the continuation was sent, but the pause stands after its turn.
pub fn follow_late_echo(target: EchoTarget, late: ReservationEcho) {
    spawn_detached(Box::pin(async move {
        if matches!(late.hear(&target, LATE_ECHO_FOLLOW).await, Heard::Repaired) {
            info!(target: "session_goal", session = %target.session_id, "a stop overwritten by the reservation was heard after the continuation; written back");
        }
    }));
}

/// Whether the goal state our reservation overwrote was another host's reservation of the same
/// turn rather than a user's change: the same goal, active before and after, with the same
/// user-owned content (objective, budget, creation). Pure.
fn is_competing_reservation(theirs: Option<&Value>, read: &Goal) -> bool {
    let Some(their_goal) = theirs.and_then(Goal::from_value) else {
        return false;
    };
    their_goal.status == GoalStatus::Active
        && read.status == GoalStatus::Active
        && their_goal.revision() == read.revision()
}

/// Our reservation overwrote another writer's goal state (a pause, clear or edit that landed
/// between our fresh read and our write): write theirs back, unless the goal changed again since
/// our write. The reserved turn goes back with it (their goal carries the count from before).
/// Events carry the goal's known fields only, so theirs is laid over the goal as we read it
/// (the state their writer started from too), which keeps any other field it had.
async fn give_back_to_the_user(target: &EchoTarget, reserved: &Goal, read: &Goal, theirs: Option<Value>) {
    let (session_id, directory) = (target.session_id.as_str(), target.directory.as_str());
    info!(target: "session_goal", session = session_id, "another writer changed the goal during the reservation; restoring it, nothing sent");
    let ours = reserved.updated_at;
    let theirs = theirs.map(|their_goal| restored_goal(read, their_goal, reserved));
    let result = crate::io::writer::write_namespace_key(&target.client, session_id, directory, "goal", |fresh| {
        match fresh.goal() {
            Some(current) if current.updated_at == ours => Ok(theirs),
            _ => Err(Cancelled),
        }
    })
    .await;
    if let Err(error) = result {
        warn!(target: "session_goal", session = session_id, %error, "restoring the other writer's goal failed");
    }
}

/// The other writer's goal (known fields, from an event) laid over the goal as we read it, when
/// it is the same goal; a different goal (replaced) is taken as the event shows it. What the
/// turns already spent stays counted: the accounting our write made (tokens, cost, the cursor)
/// is kept over theirs, which was built on an older read. The turn count is theirs: the
/// reserved turn was never posted.
fn restored_goal(read: &Goal, theirs: Value, reserved: &Goal) -> Value {
    let Some(their_fields) = theirs.as_object() else { return theirs };
    if their_fields.get("id").and_then(Value::as_str) != Some(read.id.as_str()) {
        return theirs;
    }
    let mut base = read.to_value();
    if let Some(object) = base.as_object_mut() {
        for (key, value) in their_fields {
            object.insert(key.clone(), value.clone());
        }
    }
    match Goal::from_value(&base) {
        Some(mut restored) if restored.id == reserved.id && reserved.tokens_used >= restored.tokens_used => {
            crate::goal::decide::accounting::Accounting::of(reserved).apply(&mut restored);
            restored.to_value()
        }
        _ => base,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn goal(status: &str, objective: &str, turns: u64) -> Value {
        json!({"id": "goal-1", "objective": objective, "status": status, "turnsUsed": turns, "createdAt": 1000.0, "updatedAt": 2000.0 + turns as f64})
    }

    /// Found by the simulator: the user's pause, written back over our reservation, carried the
    /// counters of the older read it was built on, and the goal's tokens and cost went back.
    #[test]
    fn a_restored_user_change_keeps_the_accounting_and_gives_the_turn_back() {
        let read = Goal::from_value(&goal("active", "Port the parser", 1)).unwrap();
        let mut reserved = read.clone();
        reserved.turns_used = 2;
        reserved.tokens_used = 2_500;
        reserved.last_accounted_message_id = "msg_b".into();
        let theirs = goal("paused", "Port the parser", 1);
        let restored = Goal::from_value(&restored_goal(&read, theirs, &reserved)).unwrap();
        assert_eq!((restored.status, restored.turns_used), (GoalStatus::Paused, 1));
        assert_eq!((restored.tokens_used, restored.last_accounted_message_id.as_str()), (2_500, "msg_b"));
    }

    #[test]
    fn another_hosts_reservation_is_not_a_user_change() {
        let read = Goal::from_value(&goal("active", "Port the parser", 1)).unwrap();
        // Another host reserved the same turn: only counters, lease and timestamps differ.
        assert!(is_competing_reservation(Some(&goal("active", "Port the parser", 2)), &read));
        // The user paused, edited or cleared: theirs is restored.
        assert!(!is_competing_reservation(Some(&goal("paused", "Port the parser", 1)), &read));
        assert!(!is_competing_reservation(Some(&goal("active", "Port the lexer", 1)), &read));
        assert!(!is_competing_reservation(None, &read));
    }
}
