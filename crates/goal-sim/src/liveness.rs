//! Promises (e) and (g), the loop's liveness (`docs/simulator.md`): while the world is healthy,
//! every active goal on an idle session whose newest message waits for the loop is driven or
//! settled within the world's bound (e), and, at a real host's settings, within 60 s whatever
//! the events did (g). Each check reads the server's state and the record.

use std::time::Duration;

use serde_json::Value;

use crate::server::Server;
use crate::world::Timing;

/// What the liveness check knows of the world now.
pub struct Health {
    /// The world is healthy now (the server up, no route failing).
    pub healthy: bool,
    /// When it last healed (the server's clock).
    pub healed_at: f64,
}

/// (e): every active goal on an idle session whose newest message waits for the loop is driven
/// or settled within the bound.
pub fn check_liveness(server: &Server, timing: &Timing, health: &Health, now: f64) {
    if !health.healthy {
        return;
    }
    let bound = liveness_bound(timing).as_millis() as f64;
    if let Some(detail) = silent_goal(server, health, now, bound) {
        server.record.violate('e', now, detail);
    }
}

/// Notes, for each goal's session, since when it has been idle (cleared while it is busy); run
/// before the liveness checks of each round.
pub fn observe_idle(server: &Server, now: f64) {
    let sessions: Vec<String> = server.record.with(|r| r.goals.iter().filter_map(|g| g.session.clone()).collect());
    let busy: Vec<bool> = {
        let state = server.state.lock();
        sessions.iter().map(|s| state.busy.contains_key(s)).collect()
    };
    server.record.with(|r| {
        for (session, busy) in sessions.into_iter().zip(busy) {
            if busy {
                r.idle_since.remove(&session);
            } else {
                r.idle_since.entry(session).or_insert(now);
            }
        }
    });
}

/// The bound of (g), in ms: at a real host's settings, whatever the events did.
pub const SILENCE_BOUND_MS: f64 = 60_000.0;

/// (g) No silence beyond the bound: at a real host's settings (the worlds drawn with
/// `Timing::real`), every active goal on an idle session whose newest message waits for the loop
/// is acted on (audited, continued, settled, or a waiting cause written) within 60 s of its
/// waiting began or of the server answering again, whichever is later: whatever the events did
/// (lost, late, a stream broken, hung or never back, a restart mid-turn).
pub fn check_silence(server: &Server, health: &Health, now: f64) {
    if !health.healthy {
        return;
    }
    if let Some(detail) = silent_goal(server, health, now, SILENCE_BOUND_MS) {
        server.record.violate('g', now, detail);
    }
}

/// The first active goal on an idle session left waiting for the loop longer than `bound` ms
/// since it began to wait, the loop last acted on it, the user last changed it, or the world
/// healed, whichever is latest.
fn silent_goal(server: &Server, health: &Health, now: f64, bound: f64) -> Option<String> {
    let record = &server.record;
    let goals = record.with(|r| {
        r.goals
            .iter()
            .map(|g| {
                let idle = g.session.as_ref().and_then(|s| r.idle_since.get(s)).copied().unwrap_or(0.0);
                (g.session.clone(), g.last_progress.max(g.touched_at).max(idle))
            })
            .collect::<Vec<_>>()
    });
    let state = server.state.lock();
    for (index, (session, progress)) in goals.into_iter().enumerate() {
        let Some(session) = session.and_then(|id| state.sessions.get(&id)) else { continue };
        let Some(goal) = session.goal().filter(|g| g["status"] == "active") else { continue };
        if state.busy.contains_key(&session.id) {
            continue;
        }
        let Some(waiting_since) = waits_for_loop(session, goal) else { continue };
        let since = waiting_since.max(progress).max(health.healed_at);
        if now - since > bound {
            return Some(format!(
                "goal {index} on {}: active, idle and waiting for the loop for {:.0} ms (bound {bound:.0} ms); note {:?}, cause {}",
                session.id,
                now - since,
                goal["statusReason"].as_str().unwrap_or_default(),
                goal["cause"]
            ));
        }
    }
    None
}

/// The longest a healthy world may leave an active goal undriven: two quiet windows (the
/// watch after a post, then the strand's own), the sweep, the backoff cap, a lease another host
/// may hold, and the time a tick's stages take (an audit, a check, a review).
pub fn liveness_bound(timing: &Timing) -> Duration {
    Duration::from_millis(
        2 * timing.idle_quiet_ms
            + timing.kickoff_quiet_ms
            + timing.sweep_ms
            + 10_000
            + 15_000
            + timing.lease_ms
            + timing.fetch_timeout_ms * 4,
    ) + Duration::from_millis(timing.audit_timeout_ms + 2 * timing.review_timeout_ms)
}

/// When the session's newest message began to wait for the loop: a finished, failed or cut
/// reply, or a user message nothing answers. `None`: it waits for nothing the loop does (a
/// provider's reset stated in the goal's cause still to come).
fn waits_for_loop(session: &crate::server::state::Session, goal: &Value) -> Option<f64> {
    let until = goal["cause"]["until"].as_f64().unwrap_or(0.0);
    let newest = session.messages.last()?;
    let info = &newest["info"];
    let at = info["time"]["completed"].as_f64().or(info["time"]["created"].as_f64()).unwrap_or(0.0);
    Some(at.max(until))
}
