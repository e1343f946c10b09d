//! The multi-host lease on a goal (`lease: {holder, expiresAt}` in the goal record): who drives
//! the goal and until when, and this process's holder id. Pure apart from the holder id's seed.

use std::sync::OnceLock;

use crate::record::{Goal, Lease};

/// The lease on a goal: who drives it and until when (ms since epoch).
pub fn lease_of(goal: &Goal) -> Option<(String, f64)> {
    goal.lease.get().map(|lease| (lease.holder.clone(), lease.expires_at))
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
    goal.lease.set(Lease { holder: holder.to_string(), expires_at: now + duration_ms });
}

/// The lease holder id of this process for one OpenCode server. Stable within the process, so a
/// host that drops its runtime and creates a new one keeps the lease; random across processes,
/// so two hosts (web and desktop) exclude each other.
pub fn holder_id(group: &str) -> String {
    use std::hash::{BuildHasher, Hasher};
    // A static on purpose: the seed is the identity of this process towards other hosts (web
    // and desktop sharing one OpenCode server), not state a context owns. Two contexts in one
    // process are one host and must present the same holder, or they would back off from each
    // other's leases instead of being kept apart by their dispatch claims.
    static PROCESS_SEED: OnceLock<u64> = OnceLock::new();
    let seed = *PROCESS_SEED.get_or_init(|| {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u128(
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0),
        );
        hasher.write_u32(std::process::id());
        hasher.finish()
    });
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    hasher.write_u64(seed);
    hasher.write(group.as_bytes());
    format!("rt-{}-{:012x}", std::process::id(), hasher.finish() & 0xffff_ffff_ffff)
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
        assert!(!held_by_other(
            &goal_with_lease(json!({"holder": "other", "expiresAt": now + 2.0 * LEASE_HORIZON_MS})),
            "me",
            now
        ));
        assert!(!held_by_other(&goal_with_lease(json!({"holder": 5, "expiresAt": "never"})), "me", now));
        assert!(!held_by_other(&goal_with_lease(json!("x")), "me", now));
    }
}
