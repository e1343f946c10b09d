//! A deterministic simulator of the goal loop. The real loop (goal-core's scheduler, ticks,
//! rules and record code, started through its embedding API) runs against a simulated OpenCode
//! on tokio's paused clock; only the transport of OpenCode requests is replaced, at the one
//! place every request passes (`goal_core::Transport`). Each seed draws a world (`world.rs`),
//! and the promises (`invariants.rs`) are checked after every step. A failing seed is shrunk
//! (`shrink.rs`) and printed with the command that replays it.
//!
//! `docs/simulator.md` describes the world model and the invariants; a new feature of the loop
//! adds its ingredients to `world.rs` (and what the server does with them) and its promise to
//! `invariants.rs`.
//!
//! | part | file |
//! |---|---|
//! | the seeded generator | `rng.rs` |
//! | a world: hosts, goals, turns, verdicts, disturbances | `world.rs` |
//! | the simulated OpenCode: store, routes, turns and shell | `server/` |
//! | the seam: faults, recording, the checks made at a request | `transport.rs` |
//! | event streams and their disturbances | `bus.rs` |
//! | hosts (real runtimes) and the scripted auditor | `host.rs` |
//! | one run, the driver of disturbances | `run.rs` |
//! | what happened: steps and facts | `record.rs` |
//! | the promises (a)–(d), (f) | `invariants.rs` |
//! | the promises (e) and (g): liveness | `liveness.rs` |
//! | the promise (h): the wrap-up turn | `wrap_up.rs` |
//! | shrinking a failing world | `shrink.rs` |
//! | defects planted at the seam, to show each promise can fail | `mutation.rs` |

pub mod bus;
pub mod host;
pub mod invariants;
pub mod liveness;
pub mod mutation;
pub mod record;
pub mod rng;
pub mod run;
pub mod server;
pub mod shrink;
pub mod transport;
pub mod world;
pub mod wrap_up;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

pub use mutation::Mutation;
pub use record::Violation;
pub use run::{run_world, Outcome};
pub use world::World;

/// The first seed that broke a promise, shrunk.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The seed.
    pub seed: u64,
    /// The first broken promise of the world as drawn.
    pub violation: Violation,
    /// The shrunk world.
    pub shrunk: World,
    /// The shrunk world's steps.
    pub steps: Vec<(u64, String)>,
}

/// What a batch of seeds came to.
#[derive(Debug, Clone)]
pub struct Summary {
    /// Seeds run.
    pub seeds: u64,
    /// Goals that settled, over all worlds.
    pub settled: usize,
    /// Goals set, over all worlds.
    pub goals: usize,
    /// Simulated time over all worlds, in ms.
    pub simulated_ms: u64,
    /// Wall time of the batch.
    pub wall: std::time::Duration,
    /// Writes of two hosts that crossed, over all worlds.
    pub crossed_writes: u64,
    /// Goals paused at a person's request, over all worlds.
    pub person_pauses: u64,
    /// Wrap-up turns posted, over all worlds.
    pub wrap_ups: u64,
    /// Steady goals a limit stopped after their one wrap-up, over all worlds.
    pub handoffs: u64,
    /// The first failure (the lowest failing seed), shrunk.
    pub failure: Option<Failure>,
}

/// Runs seeds `from..from + count` on `jobs` threads, with `mutation` planted (if any). Stops
/// handing out seeds at the first failure, and shrinks the lowest failing seed.
pub fn run_seeds(from: u64, count: u64, jobs: usize, mutation: Option<Mutation>) -> Summary {
    let started = Instant::now();
    let next = AtomicU64::new(from);
    let (settled, goals, simulated) = (AtomicUsize::new(0), AtomicUsize::new(0), AtomicU64::new(0));
    let (crossed, person_pauses) = (AtomicU64::new(0), AtomicU64::new(0));
    let (wrap_ups, handoffs) = (AtomicU64::new(0), AtomicU64::new(0));
    let failing: Mutex<Option<(u64, Violation)>> = Mutex::new(None);
    let ran = AtomicU64::new(0);
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| loop {
                let seed = next.fetch_add(1, Ordering::SeqCst);
                if seed >= from + count || failing.lock().expect("not poisoned").is_some() {
                    return;
                }
                let world = mutation::applied(World::draw(seed), mutation);
                let outcome = run_world(&world, false);
                ran.fetch_add(1, Ordering::SeqCst);
                settled.fetch_add(outcome.settled, Ordering::Relaxed);
                goals.fetch_add(world.goals.len(), Ordering::Relaxed);
                simulated.fetch_add(outcome.simulated_ms, Ordering::Relaxed);
                crossed.fetch_add(outcome.crossed_writes, Ordering::Relaxed);
                person_pauses.fetch_add(outcome.person_pauses, Ordering::Relaxed);
                wrap_ups.fetch_add(outcome.wrap_ups.0, Ordering::Relaxed);
                handoffs.fetch_add(outcome.wrap_ups.1, Ordering::Relaxed);
                if let Some(violation) = outcome.violations.first() {
                    let mut failing = failing.lock().expect("not poisoned");
                    if failing.as_ref().is_none_or(|(s, _)| seed < *s) {
                        *failing = Some((seed, violation.clone()));
                    }
                }
            });
        }
    });
    let failure =
        failing.into_inner().expect("not poisoned").map(|(seed, violation)| shrunk(seed, violation, mutation));
    Summary {
        seeds: ran.load(Ordering::SeqCst),
        settled: settled.into_inner(),
        goals: goals.into_inner(),
        simulated_ms: simulated.into_inner(),
        wall: started.elapsed(),
        crossed_writes: crossed.into_inner(),
        person_pauses: person_pauses.into_inner(),
        wrap_ups: wrap_ups.into_inner(),
        handoffs: handoffs.into_inner(),
        failure,
    }
}

/// The failure of `seed`, shrunk, with the shrunk world's trace.
pub fn shrunk(seed: u64, violation: Violation, mutation: Option<Mutation>) -> Failure {
    let world = mutation::applied(World::draw(seed), mutation);
    let small = shrink::shrink(&world, violation.invariant, 200);
    let steps = run_world(&small, true).steps;
    Failure { seed, violation, shrunk: small, steps }
}
