//! Shrinking a failing world to the fewest parts that still break the same promise: drop
//! disturbances (halves first, then one at a time), make turns ordinary, drop goals and the
//! second host, while the run still fails with the same invariant. The shrunk world's trace is
//! what a failing seed prints.

use crate::run::run_world;
use crate::world::{Disturbance, World};

/// Runs `world` and says whether it breaks invariant `invariant`.
fn breaks(world: &World, invariant: char) -> bool {
    run_world(world, false).violations.first().is_some_and(|v| v.invariant == invariant)
}

/// The smallest world found that still breaks `invariant` (at most `budget` runs).
pub fn shrink(world: &World, invariant: char, budget: usize) -> World {
    let mut best = world.clone();
    let mut runs = 0;
    let mut attempt = |candidate: World, best: &mut World| {
        if runs >= budget {
            return false;
        }
        runs += 1;
        if breaks(&candidate, invariant) {
            *best = candidate;
            true
        } else {
            false
        }
    };
    // Disturbances: chunks, halving, then single ones.
    let mut chunk = best.disturbances.len().max(1).div_ceil(2);
    while chunk >= 1 && !best.disturbances.is_empty() {
        let mut start = 0;
        while start < best.disturbances.len() {
            let mut candidate = best.clone();
            let end = (start + chunk).min(candidate.disturbances.len());
            candidate.disturbances.drain(start..end);
            if !attempt(candidate, &mut best) {
                start += chunk;
            }
        }
        if chunk == 1 {
            break;
        }
        chunk = chunk.div_ceil(2);
    }
    // Goals: each one removed (user actions on it go, later indices move down).
    let mut index = 0;
    while best.goals.len() > 1 && index < best.goals.len() {
        if !attempt(without_goal(&best, index), &mut best) {
            index += 1;
        }
    }
    // Turns made ordinary, the verdicts shortened, the second host dropped.
    for goal in 0..best.goals.len() {
        for turn in 0..best.goals[goal].turns.len() {
            let mut candidate = best.clone();
            candidate.goals[goal].turns[turn] = candidate.goals[goal].ordinary_turn();
            if candidate != best {
                attempt(candidate, &mut best);
            }
        }
    }
    if best.hosts.len() > 1 {
        let mut candidate = best.clone();
        candidate.hosts.truncate(1);
        candidate.disturbances.retain(|d| !names_host(&d.what, 1));
        attempt(candidate, &mut best);
    }
    best
}

fn names_host(what: &Disturbance, host: usize) -> bool {
    matches!(what,
        Disturbance::LoseEvents { host: h, .. }
        | Disturbance::LoseIdle { host: h, .. }
        | Disturbance::RepeatEvents { host: h, .. }
        | Disturbance::DelayEvents { host: h, .. }
        | Disturbance::BreakStream { host: h }
        | Disturbance::RestartHost { host: h, .. } if *h == host)
}

fn without_goal(world: &World, index: usize) -> World {
    let mut candidate = world.clone();
    candidate.goals.remove(index);
    candidate.disturbances.retain_mut(|d| match &mut d.what {
        Disturbance::User { goal, .. } if *goal == index => false,
        Disturbance::User { goal, .. } => {
            if *goal > index {
                *goal -= 1;
            }
            true
        }
        _ => true,
    });
    candidate
}
