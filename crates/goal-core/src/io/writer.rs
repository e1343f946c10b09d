//! Metadata writes: one queue per session (the write slots of the client's context), a fresh
//! read before every write, a merge that keeps every other key, and a compare-and-set on the
//! goal's identity.
//!
//! OpenCode's PATCH replaces the whole metadata object, so a writer that does not read fresh
//! erases other features' data. Goal and assist share this queue, so neither erases the other.

use serde_json::Value;

use crate::error::Cancelled;
use crate::io::opencode::{HttpError, OpenCodeClient};
use crate::record::lease::held_by_other;
use crate::record::session::{merge_namespace_key, SessionView};
use crate::record::{continuation_for_of, Goal, GoalRevision, GoalStatus};

/// What a goal write expects to find (compare-and-set).
#[derive(Debug, Clone)]
pub enum GoalGuard {
    /// Same id, same revision, this status, and no other runtime's live lease.
    Exact {
        /// The revision read at the start of the tick.
        revision: GoalRevision,
        /// The status the write expects.
        status: GoalStatus,
        /// This runtime's lease holder id.
        holder: String,
    },
    /// [`GoalGuard::Exact`], and nobody reserved a turn since the tick read the goal: the same
    /// turn count and the same reserved tail (compare-and-set of the reservation itself).
    Reserve {
        /// The revision read at the start of the tick.
        revision: GoalRevision,
        /// This runtime's lease holder id.
        holder: String,
        /// `turnsUsed` read at the start of the tick.
        turns_used: u64,
        /// `continuationFor` read at the start of the tick.
        continuation_for: Option<String>,
    },
    /// Any goal with this status (event-path pause).
    AnyWithStatus(GoalStatus),
    /// Whatever is there (host actions that decide themselves).
    Any,
    /// The goal with this id, whatever its status (a host action on the goal it showed).
    SameId(String),
}

impl GoalGuard {
    fn admits(&self, goal: &Goal, now_ms: f64) -> bool {
        match self {
            GoalGuard::Exact { revision, status, holder } => {
                goal.revision() == *revision && goal.status == *status && !held_by_other(goal, holder, now_ms)
            }
            GoalGuard::Reserve { revision, holder, turns_used, continuation_for } => {
                goal.revision() == *revision
                    && goal.status == GoalStatus::Active
                    && !held_by_other(goal, holder, now_ms)
                    && goal.turns_used == *turns_used
                    && continuation_for_of(goal) == continuation_for.as_deref()
            }
            GoalGuard::AnyWithStatus(status) => goal.status == *status,
            GoalGuard::Any => true,
            GoalGuard::SameId(id) => goal.id == *id,
        }
    }
}

/// A goal write that landed: the goal it replaced, the goal now stored, and the whole metadata
/// written.
#[derive(Debug)]
pub struct Landed {
    /// The goal as read (fresh, or on the base read).
    pub before: Goal,
    /// The goal now stored.
    pub after: Goal,
    /// The whole metadata written.
    pub metadata: Value,
}

/// A session read a write may build on instead of reading again: taken just before (see
/// [`BaseRead::usable`]), and only when no write of this context to the session came between.
#[derive(Debug, Clone)]
pub struct BaseRead {
    /// The session as read.
    pub session: SessionView,
    /// The context's write epoch for the session, taken before the read was sent.
    pub epoch: u64,
    /// When the read's answer arrived.
    pub answered: tokio::time::Instant,
}

/// How old a base read may be when its write starts. A fresh read already leaves a window of
/// one round trip in which another writer's change is overwritten (OpenCode has no
/// compare-and-set); building on an earlier read widens that window by at most this much, and
/// the echo watch (`echo_watch`) restores what lands in it.
pub const BASE_READ_FRESH: std::time::Duration = std::time::Duration::from_millis(50);

impl BaseRead {
    /// Whether the read is recent enough to write on.
    pub fn usable(&self) -> bool {
        self.answered.elapsed() <= BASE_READ_FRESH
    }
}

/// A guarded write of the goal (read fresh, the guard checked, `mutate` applied, the merged
/// metadata written) on a base read taken just before: it saves the fresh read (one round trip)
/// when the base is still [`BaseRead::usable`] and no write of this context to the session has
/// been released since it was sent; otherwise the session is read fresh as usual. `None`: the
/// stored goal did not match the guard, and nothing was written.
pub async fn write_goal_on(
    client: &OpenCodeClient,
    session_id: &str,
    directory: &str,
    guard: &GoalGuard,
    base: Option<&BaseRead>,
    mutate: impl FnOnce(&mut Goal) + Send,
) -> Result<Option<Landed>, HttpError> {
    let mut mutate = Some(mutate);
    let mut apply = |g: &mut Goal| {
        if let Some(mutate) = mutate.take() {
            mutate(g)
        }
        true
    };
    write_goal_dyn(client, session_id, directory, guard, base, Marking::MarkUnowned, &mut apply).await
}

/// The one body of every goal write, compiled once: callers pass their change as a `dyn` closure
/// (one copy of this future instead of one per caller; the addon's size is budgeted), which says
/// whether to write. The write slot held, the session read fresh (or the base taken), the guard
/// checked on the stored goal, the change applied, the goal marked and stamped, the merged
/// metadata written. `None` when the guard did not admit the goal or the change declined.
async fn write_goal_dyn(
    client: &OpenCodeClient,
    session_id: &str,
    directory: &str,
    guard: &GoalGuard,
    base: Option<&BaseRead>,
    marking: Marking,
    mutate: &mut (dyn FnMut(&mut Goal) -> bool + Send),
) -> Result<Option<Landed>, HttpError> {
    let _slot = client.write_slots().acquire(session_id).await;
    let base = base.filter(|b| b.usable() && b.epoch == client.write_slots().epoch(session_id));
    let session = match base {
        Some(base) => base.session.clone(),
        None => client.get_session(session_id, directory).await?,
    };
    let Some(before) = session.goal().filter(|g| guard.admits(g, client.clock().now_ms())) else {
        return Ok(None);
    };
    let mut after = before.clone();
    if !mutate(&mut after) {
        return Ok(None);
    }
    if marking == Marking::MarkUnowned {
        after.mark_if_unowned(session_id);
    }
    WrittenOver::of(&before).stamp(&mut after, client.clock().now_ms());
    let metadata = merge_namespace_key(&session.metadata, "goal", Some(after.to_value()));
    client.put_metadata(session_id, directory, metadata.clone()).await?;
    Ok(Some(Landed { before, after, metadata: Value::Object(metadata) }))
}

/// Replaces (or removes, with `None`) `openchamber.<key>` from a fresh read; `decide` sees the
/// fresh session and may decline by returning `Err(Cancelled)`.
pub async fn write_namespace_key(
    client: &OpenCodeClient,
    session_id: &str,
    directory: &str,
    key: &str,
    decide: impl FnOnce(&SessionView) -> Result<Option<Value>, Cancelled>,
) -> Result<Option<SessionView>, HttpError> {
    let _slot = client.write_slots().acquire(session_id).await;
    let session = client.get_session(session_id, directory).await?;
    let Ok(value) = decide(&session) else {
        return Ok(None);
    };
    let metadata = merge_namespace_key(&session.metadata, key, value);
    client.put_metadata(session_id, directory, metadata.clone()).await?;
    Ok(Some(SessionView { metadata, ..session }))
}

/// Puts back the other writers' keys our write replaced (see `record::metadata::restored_metadata`): reads
/// fresh, and writes only while everything but the goal still stands as we wrote it. Returns
/// whether it wrote.
pub async fn restore_foreign_keys(
    client: &OpenCodeClient,
    session_id: &str,
    directory: &str,
    ours: &Value,
    theirs: &Value,
) -> Result<bool, HttpError> {
    let _slot = client.write_slots().acquire(session_id).await;
    let session = client.get_session(session_id, directory).await?;
    let Some(metadata) = crate::record::metadata::restored_metadata(&session.metadata, ours, theirs) else {
        return Ok(false);
    };
    client.put_metadata(session_id, directory, metadata).await?;
    Ok(true)
}

/// Result of [`try_write_goal`].
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // one value per write; boxing the goals buys nothing
pub enum GoalUpdate<R> {
    /// Written: the goal before and after.
    Written {
        /// The goal as read fresh.
        before: Goal,
        /// The goal now stored.
        after: Goal,
    },
    /// No goal, or it does not match the guard: nothing written.
    Stale,
    /// `mutate` declined (e.g. the status does not allow the action): nothing written.
    Declined(R),
}

/// Whether a write marks a goal that names no session as the written session's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marking {
    /// Every ordinary write: the session that writes the goal owns it.
    MarkUnowned,
    /// A write on a goal whose owner is not known yet (a tick waiting for its owner list): the
    /// goal keeps naming no session.
    KeepOwner,
}

/// A guarded write of the goal (see [`write_goal_on`]) in which `mutate` sees the fresh goal and may
/// decline, in which case nothing is written (host actions decide from the stored status, not
/// from a stale copy); `marking` says whether an unowned goal gets marked.
pub async fn try_write_goal<R: Send>(
    client: &OpenCodeClient,
    session_id: &str,
    directory: &str,
    guard: &GoalGuard,
    marking: Marking,
    mutate: impl FnOnce(&mut Goal) -> Result<(), R> + Send,
) -> Result<GoalUpdate<R>, HttpError> {
    let mut mutate = Some(mutate);
    let mut declined: Option<R> = None;
    let mut decide = |g: &mut Goal| match mutate.take().map(|m| m(g)) {
        Some(Err(reason)) => {
            declined = Some(reason);
            false
        }
        _ => true,
    };
    let update = write_goal_dyn(client, session_id, directory, guard, None, marking, &mut decide).await?;
    Ok(match (update, declined) {
        (_, Some(reason)) => GoalUpdate::Declined(reason),
        (Some(Landed { before, after, .. }), None) => GoalUpdate::Written { before, after },
        (None, None) => GoalUpdate::Stale,
    })
}

/// What a write needs to know of the goal it replaces to stamp the new one.
struct WrittenOver {
    updated_at: f64,
    waiting: bool,
}

impl WrittenOver {
    fn of(goal: &Goal) -> Self {
        Self { updated_at: goal.updated_at, waiting: goal.inactive_since.is_present() }
    }

    /// `updatedAt` becomes the write's time (always after the goal it replaces). A waiting
    /// period this write opened starts at that same instant: a resume that keeps this
    /// `updatedAt` (a client that does not stamp its writes) then cannot pass for a resume
    /// written later than the wait began (`resumed_at` in `goal/decide/planning.rs`). Not when
    /// the stamp is ahead of this clock (the last write came from a clock ahead of ours): the
    /// wait would start in our future and count nothing.
    fn stamp(&self, goal: &mut Goal, now_ms: f64) {
        goal.updated_at = now_ms.max(self.updated_at + 1.0);
        if !self.waiting && goal.updated_at == now_ms && goal.inactive_since.is_present() {
            goal.inactive_since.set(now_ms);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_wait_opened_by_the_write_starts_at_its_stamp() {
        let paused_at = |before: serde_json::Value, since: f64| {
            let before = Goal::from_value(&before).unwrap();
            let mut after = before.clone();
            after.inactive_since.set(since);
            WrittenOver::of(&before).stamp(&mut after, 5_001.0);
            (after.updated_at, after.inactive_since.get().copied())
        };
        let opened = json!({"id": "g", "status": "active", "objective": "o", "updatedAt": 4_000.0});
        assert_eq!(paused_at(opened, 5_000.0), (5_001.0, Some(5_001.0)), "the clock moved between mark and stamp");
        let open =
            json!({"id": "g", "status": "active", "objective": "o", "updatedAt": 4_000.0, "inactiveSince": 3_000.0});
        assert_eq!(paused_at(open, 3_000.0), (5_001.0, Some(3_000.0)), "an open wait keeps its start");
        let ahead = json!({"id": "g", "status": "active", "objective": "o", "updatedAt": 9_000.0});
        assert_eq!(paused_at(ahead, 5_000.0), (9_001.0, Some(5_000.0)), "a stamp ahead of this clock");
    }

    #[test]
    fn the_reservation_guard_compares_the_reservation() {
        let goal = Goal::from_value(
            &json!({"id": "g", "status": "active", "objective": "o", "turnsUsed": 2, "continuationFor": "m1"}),
        )
        .unwrap();
        let guard = |turns_used, continuation_for: Option<&str>| GoalGuard::Reserve {
            revision: goal.revision(),
            holder: "me".into(),
            turns_used,
            continuation_for: continuation_for.map(str::to_string),
        };
        assert!(guard(2, Some("m1")).admits(&goal, 0.0));
        assert!(!guard(1, Some("m1")).admits(&goal, 0.0), "someone reserved since");
        assert!(!guard(2, None).admits(&goal, 0.0), "someone reserved this tail since");
    }
}
