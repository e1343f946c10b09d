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
    /// Any goal with this status (event-path pause).
    AnyWithStatus(GoalStatus),
    /// Whatever is there (host actions that decide themselves).
    Any,
}

impl GoalGuard {
    fn admits(&self, goal: &Goal) -> bool {
        match self {
            GoalGuard::Exact { revision, status, holder } => {
                goal.revision() == *revision && goal.status == *status && !held_by_other(goal, holder, now_ms())
            }
            GoalGuard::AnyWithStatus(status) => goal.status == *status,
            GoalGuard::Any => true,
        }
    }
}

/// The goal metadata field holding the multi-host lease `{holder, expiresAt}`.
pub const LEASE_FIELD: &str = "lease";

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
    Written(Goal),
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
    Ok(GoalWrite::Written(goal))
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn goal_with_lease(lease: serde_json::Value) -> Goal {
        Goal::from_value(&json!({"id": "g", "status": "active", "objective": "o", "lease": lease})).unwrap()
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
