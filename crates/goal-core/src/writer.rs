//! Metadata writes: one process-wide queue per session, a fresh read before every write, a
//! merge that keeps every other key, and a compare-and-set on the goal's identity.
//!
//! OpenCode's PATCH replaces the whole metadata object, so a writer that does not read fresh
//! erases other features' data. Goal and assist share this queue, so neither erases the other.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use serde_json::Value;

use crate::model::{merge_namespace_key, Goal, GoalRevision, GoalStatus, SessionView};
use crate::opencode::{HttpError, OpenCodeClient};

type SessionLocks = Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>;

fn locks() -> &'static SessionLocks {
    static LOCKS: OnceLock<SessionLocks> = OnceLock::new();
    LOCKS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Holds the session's write slot; released (and the map entry pruned) on drop.
pub struct WriteSlot {
    session_id: String,
    lock: Arc<tokio::sync::Mutex<()>>,
    _guard: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl Drop for WriteSlot {
    fn drop(&mut self) {
        self._guard.take();
        let mut map = locks().lock();
        // Two strong refs: the map's and ours. Nobody else waits: prune.
        if Arc::strong_count(&self.lock) <= 2 {
            map.remove(&self.session_id);
        }
    }
}

/// Waits for the session's write slot (serialises every metadata write in the process).
pub async fn acquire(session_id: &str) -> WriteSlot {
    let lock = {
        let mut map = locks().lock();
        map.entry(session_id.to_string())
            .or_insert_with(|| Arc::new(tokio::sync::Mutex::new(())))
            .clone()
    };
    let guard = lock.clone().lock_owned().await;
    WriteSlot { session_id: session_id.to_string(), lock, _guard: Some(guard) }
}

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
    fn admits(&self, goal: &Goal) -> bool {
        match self {
            GoalGuard::Exact { revision, status, holder } => {
                goal.revision() == *revision && goal.status == *status && !held_by_other(goal, holder, now_ms())
            }
            GoalGuard::Reserve { revision, holder, turns_used, continuation_for } => {
                goal.revision() == *revision
                    && goal.status == GoalStatus::Active
                    && !held_by_other(goal, holder, now_ms())
                    && goal.turns_used == *turns_used
                    && continuation_for_of(goal) == continuation_for.as_deref()
            }
            GoalGuard::AnyWithStatus(status) => goal.status == *status,
            GoalGuard::Any => true,
            GoalGuard::SameId(id) => goal.id == *id,
        }
    }
}

/// The goal metadata field holding the multi-host lease `{holder, expiresAt}`.
pub const LEASE_FIELD: &str = "lease";

/// The goal metadata field that records which tail a reserved turn answers: a later tick over
/// the same tail reuses the reservation instead of charging a second turn (restart-safe).
pub const CONTINUATION_FOR_FIELD: &str = "continuationFor";

/// The tail the goal's current reservation answers, if any.
pub fn continuation_for_of(goal: &Goal) -> Option<&str> {
    goal.extra.get(CONTINUATION_FOR_FIELD).and_then(Value::as_str)
}

type Claims = Mutex<std::collections::HashSet<String>>;

fn claims() -> &'static Claims {
    static CLAIMS: OnceLock<Claims> = OnceLock::new();
    CLAIMS.get_or_init(|| Mutex::new(std::collections::HashSet::new()))
}

/// A process-wide claim on dispatching one session's continuation, held from the reservation
/// until the dispatch outcome is known, and released on drop (also when the tick is cancelled or
/// panics). Every runtime of a process shares one lease holder id (so a host that replaces its
/// runtime keeps the lease), which means the lease cannot keep two runtimes of one process apart
/// (a host that dropped its runtime without stopping it, then created a new one); this claim does.
pub struct DispatchClaim {
    session_id: String,
}

impl Drop for DispatchClaim {
    fn drop(&mut self) {
        claims().lock().remove(&self.session_id);
    }
}

/// Claims the session's dispatch for this tick; `None` while another tick of the process has it.
pub fn claim_dispatch(session_id: &str) -> Option<DispatchClaim> {
    claims()
        .lock()
        .insert(session_id.to_string())
        .then(|| DispatchClaim { session_id: session_id.to_string() })
}

/// The lease on a goal: who drives it and until when (ms since epoch).
pub fn lease_of(goal: &Goal) -> Option<(String, f64)> {
    let lease = goal.extra.get(LEASE_FIELD)?;
    let holder = lease.get("holder")?.as_str()?.to_string();
    let expires = lease.get("expiresAt")?.as_f64().filter(|n| n.is_finite())?;
    Some((holder, expires))
}

/// The furthest a live lease can reach into the future: a day, the longest `leaseMs` a runtime
/// accepts. A lease further out was not taken by a runtime (corrupt or hostile metadata): it is
/// ignored, so it can neither hold a goal forever nor overflow a timer.
pub const LEASE_HORIZON_MS: f64 = 86_400_000.0;

/// Whether another runtime holds a live lease on the goal.
pub fn held_by_other(goal: &Goal, holder: &str, now: f64) -> bool {
    matches!(lease_of(goal), Some((other, expires)) if other != holder && expires > now && expires <= now + LEASE_HORIZON_MS)
}

/// Takes (or renews) the lease for `holder` until `now + duration_ms`.
pub fn take_lease(goal: &mut Goal, holder: &str, now: f64, duration_ms: f64) {
    goal.extra.insert(
        LEASE_FIELD.to_string(),
        serde_json::json!({ "holder": holder, "expiresAt": now + duration_ms }),
    );
}

/// The lease holder id of this process for one OpenCode server. Stable within the process, so a
/// host that drops its runtime and creates a new one keeps the lease; random across processes,
/// so two hosts (web and desktop) exclude each other.
pub fn holder_id(group: &str) -> String {
    use std::hash::{BuildHasher, Hasher};
    static PROCESS_SEED: OnceLock<u64> = OnceLock::new();
    let seed = *PROCESS_SEED.get_or_init(|| {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0));
        hasher.write_u32(std::process::id());
        hasher.finish()
    });
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    hasher.write_u64(seed);
    hasher.write(group.as_bytes());
    format!("rt-{}-{:012x}", std::process::id(), hasher.finish() & 0xffff_ffff_ffff)
}

/// Result of a guarded goal write.
#[derive(Debug)]
pub enum GoalWrite {
    /// Written: the goal now stored.
    Written(Box<Goal>),
    /// The stored goal no longer matches the guard: nothing written.
    Stale,
}

/// Milliseconds since the epoch.
pub fn now_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as f64)
        .unwrap_or(0.0)
}

/// Reads the session fresh, checks the guard, applies `mutate` and writes the merged metadata.
pub async fn write_goal(
    client: &OpenCodeClient,
    session_id: &str,
    directory: &str,
    guard: &GoalGuard,
    mutate: impl FnOnce(&mut Goal),
) -> Result<GoalWrite, HttpError> {
    let _slot = acquire(session_id).await;
    let session = client.get_session(session_id, directory).await?;
    let Some(mut goal) = session.goal().filter(|g| guard.admits(g)) else {
        return Ok(GoalWrite::Stale);
    };
    mutate(&mut goal);
    goal.updated_at = now_ms().max(goal.updated_at + 1.0);
    let metadata = merge_namespace_key(&session.metadata, "goal", Some(goal.to_value()));
    client.put_metadata(session_id, directory, metadata).await?;
    Ok(GoalWrite::Written(Box::new(goal)))
}

/// Replaces (or removes, with `None`) `openchamber.<key>` from a fresh read; `decide` sees the
/// fresh session and may cancel by returning `Err(())`.
pub async fn write_namespace_key(
    client: &OpenCodeClient,
    session_id: &str,
    directory: &str,
    key: &str,
    decide: impl FnOnce(&SessionView) -> Result<Option<Value>, ()>,
) -> Result<Option<SessionView>, HttpError> {
    let _slot = acquire(session_id).await;
    let session = client.get_session(session_id, directory).await?;
    let Ok(value) = decide(&session) else {
        return Ok(None);
    };
    let metadata = merge_namespace_key(&session.metadata, key, value);
    client.put_metadata(session_id, directory, metadata.clone()).await?;
    Ok(Some(SessionView { metadata, ..session }))
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

/// Like [`write_goal`], but `mutate` sees the fresh goal and may decline, in which case nothing
/// is written. Host actions use it to decide from the stored status, not from a stale copy.
pub async fn try_write_goal<R>(
    client: &OpenCodeClient,
    session_id: &str,
    directory: &str,
    guard: &GoalGuard,
    mutate: impl FnOnce(&mut Goal) -> Result<(), R>,
) -> Result<GoalUpdate<R>, HttpError> {
    let _slot = acquire(session_id).await;
    let session = client.get_session(session_id, directory).await?;
    let Some(before) = session.goal().filter(|g| guard.admits(g)) else {
        return Ok(GoalUpdate::Stale);
    };
    let mut after = before.clone();
    if let Err(reason) = mutate(&mut after) {
        return Ok(GoalUpdate::Declined(reason));
    }
    after.updated_at = now_ms().max(before.updated_at + 1.0);
    let metadata = merge_namespace_key(&session.metadata, "goal", Some(after.to_value()));
    client.put_metadata(session_id, directory, metadata).await?;
    Ok(GoalUpdate::Written { before, after })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn goal_with_lease(lease: serde_json::Value) -> Goal {
        Goal::from_value(&json!({"id": "g", "status": "active", "objective": "o", "lease": lease})).unwrap()
    }

    #[test]
    fn one_dispatch_claim_per_session() {
        let first = claim_dispatch("ses_claim_test").expect("free");
        assert!(claim_dispatch("ses_claim_test").is_none());
        assert!(claim_dispatch("ses_other_claim_test").is_some());
        drop(first);
        assert!(claim_dispatch("ses_claim_test").is_some());
    }

    #[test]
    fn the_reservation_guard_compares_the_reservation() {
        let goal = Goal::from_value(&json!({"id": "g", "status": "active", "objective": "o", "turnsUsed": 2, "continuationFor": "m1"})).unwrap();
        let guard = |turns_used, continuation_for: Option<&str>| GoalGuard::Reserve {
            revision: goal.revision(),
            holder: "me".into(),
            turns_used,
            continuation_for: continuation_for.map(str::to_string),
        };
        assert!(guard(2, Some("m1")).admits(&goal));
        assert!(!guard(1, Some("m1")).admits(&goal), "someone reserved since");
        assert!(!guard(2, None).admits(&goal), "someone reserved this tail since");
    }

    #[test]
    fn leases_beyond_the_horizon_are_not_credible() {
        let now = 1_000_000.0;
        assert!(held_by_other(&goal_with_lease(json!({"holder": "other", "expiresAt": now + 60_000.0})), "me", now));
        assert!(!held_by_other(&goal_with_lease(json!({"holder": "me", "expiresAt": now + 60_000.0})), "me", now));
        assert!(!held_by_other(&goal_with_lease(json!({"holder": "other", "expiresAt": now - 1.0})), "me", now));
        assert!(!held_by_other(&goal_with_lease(json!({"holder": "other", "expiresAt": 1e308})), "me", now));
        assert!(!held_by_other(&goal_with_lease(json!({"holder": "other", "expiresAt": now + 2.0 * LEASE_HORIZON_MS})), "me", now));
        assert!(!held_by_other(&goal_with_lease(json!({"holder": 5, "expiresAt": "never"})), "me", now));
        assert!(!held_by_other(&goal_with_lease(json!("x")), "me", now));
    }
}
