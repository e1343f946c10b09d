//! The multi-host lease on a goal (`lease: {holder, expiresAt}` in the goal record): who drives
//! the goal and until when, and a host's holder id. Pure.

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

/// The lease holder id of a host, from its identity's seed (`io/host_identity.rs`: kept in the
/// data directory, so a host started again is the same holder), for one OpenCode server: two
/// runtimes of one host on two servers are two holders.
pub fn holder_id(group: &str, seed: u64) -> String {
    use std::hash::Hasher;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    hasher.write_u64(seed);
    hasher.write(group.as_bytes());
    format!("rt-{:012x}", hasher.finish() & 0xffff_ffff_ffff)
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

    #[test]
    fn a_holder_id_follows_the_seed_and_the_server() {
        assert_eq!(holder_id("http://a", 7), holder_id("http://a", 7), "a host started again is the same holder");
        assert_ne!(holder_id("http://a", 7), holder_id("http://a", 8));
        assert_ne!(holder_id("http://a", 7), holder_id("http://b", 7));
        assert!(holder_id("http://a", 7).starts_with("rt-"));
    }
}
