//! One run of one world: a tokio runtime on a paused clock, the simulated server, the event bus,
//! the hosts (real goal runtimes), and a driver that sets the goals and applies the world's
//! disturbances at their instants, checking the liveness promise every half second of simulated
//! time. The other promises are checked as the steps happen (`invariants.rs`). The run ends at
//! the first broken promise, once every goal has settled, or at the world's horizon.

use std::sync::Arc;
use std::time::Duration;

use goal_core::Clock;
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::bus::{self, Link, Links};
use crate::host::{Fleet, SimAuditor};
use crate::liveness::{self, Health};
use crate::record::{Record, Violation};
use crate::rng::Rng;
use crate::server::{objective_of, Server};
use crate::transport::{Faults, RouteFault};
use crate::world::{Disturbance, UserAction, World, DISTURBED_MS, PERSON_MORE, PERSON_STOP};

/// The server's clock at the start of every world (an instant in 2027).
const EPOCH_MS: f64 = 1_800_000_000_000.0;
/// How often the liveness promise is checked (simulated).
const CHECK_EVERY: Duration = Duration::from_millis(500);

/// How one run ended.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The broken promises (empty: every promise held).
    pub violations: Vec<Violation>,
    /// The steps, when traced.
    pub steps: Vec<(u64, String)>,
    /// Goals that ended settled or stopped (not active).
    pub settled: usize,
    /// Simulated time the run took, in ms.
    pub simulated_ms: u64,
    /// Writes of two hosts that crossed (`record.rs`).
    pub crossed_writes: u64,
    /// Goals paused at a person's request.
    pub person_pauses: u64,
    /// Wrap-up turns posted, and steady goals a limit stopped after theirs (promise (h)).
    pub wrap_ups: (u64, u64),
}

/// Runs `world` (every step recorded when `tracing`).
pub fn run_world(world: &World, tracing: bool) -> Outcome {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    // The hosts keep their data directories in memory: this names them, nothing is written.
    let data_dir = std::path::PathBuf::from(format!("/goal-sim/{}", world.seed));
    runtime.block_on(drive(world, tracing, data_dir))
}

/// Something the driver does at an instant.
enum Action {
    SetGoal(usize),
    Disturb(Disturbance),
    /// Cuts turns that would never end, so every goal can settle before the horizon.
    FinalRestart,
}

async fn drive(world: &World, tracing: bool, data_dir: std::path::PathBuf) -> Outcome {
    let record = Arc::new(Record::new(world.goals.len(), EPOCH_MS, tracing));
    let server = Server::new(world, Clock::following_runtime(EPOCH_MS), record.clone());
    let (events, received) = mpsc::unbounded_channel();
    server.state.lock().events = Some(events);
    let faults = Arc::new(Mutex::new(Faults::default()));
    let auditor = SimAuditor::new(world, &server);
    let links: Links = Arc::new(Mutex::new(Vec::new()));
    let fleet = Arc::new(Fleet::new(world, &server, &faults, &auditor, data_dir));
    for (index, spec) in world.hosts.iter().enumerate() {
        let runtime = fleet.start(index);
        links.lock().push(Link {
            runtime,
            connected: true,
            reconnect: spec.reconnect,
            lose_until: 0.0,
            lose_idle_until: 0.0,
            repeat_until: 0.0,
            delay_until: 0.0,
            delay_up_to: 0,
        });
    }
    let mut rng = Rng::new(world.seed ^ 0x05EE_DB05);
    tokio::spawn(bus::carry(server.clone(), links.clone(), received, rng.fork()));
    tokio::spawn(bus::heartbeats(server.clone()));
    let mut actions: Vec<(u64, Action)> =
        world.goals.iter().enumerate().map(|(i, g)| (g.at_ms, Action::SetGoal(i))).collect();
    actions.extend(world.disturbances.iter().map(|d| (d.at_ms, Action::Disturb(d.what.clone()))));
    actions.push((DISTURBED_MS + 60_000, Action::FinalRestart));
    actions.sort_by_key(|(at, _)| *at);
    let start = Instant::now();
    let mut actions = actions.into_iter().peekable();
    loop {
        let elapsed = start.elapsed().as_millis() as u64;
        while actions.peek().is_some_and(|(at, _)| *at <= elapsed) {
            let (_, action) = actions.next().expect("peeked");
            apply(&server, &links, &faults, &fleet, &mut rng, action);
        }
        let now = server.now();
        let health = {
            let faults = faults.lock();
            let (hosts_up, host_up_at) = record.with(|r| (r.hosts_down.len() < world.hosts.len(), r.host_up_at));
            Health { healthy: faults.healthy(now) && hosts_up, healed_at: faults.healed_at(now).max(host_up_at) }
        };
        liveness::observe_idle(&server, now);
        liveness::check_liveness(&server, &world.timing, &health, now);
        if world.timing.is_real() {
            liveness::check_silence(&server, &health, now);
        }
        let all_set = server.goal_sessions.lock().iter().all(Option::is_some);
        if record.failed() || (all_set && active_goals(&server) == 0) || start.elapsed() >= world.horizon {
            break;
        }
        tokio::time::sleep(CHECK_EVERY).await;
    }
    let runtimes: Vec<_> = links.lock().iter().map(|l| l.runtime.clone()).collect();
    for runtime in runtimes {
        runtime.stop().await;
    }
    let set = server.goal_sessions.lock().iter().flatten().count();
    let settled = set - active_goals(&server);
    let simulated_ms = start.elapsed().as_millis() as u64;
    record.with(|r| Outcome {
        violations: r.violations.clone(),
        steps: std::mem::take(&mut r.steps),
        settled,
        simulated_ms,
        crossed_writes: r.crossed_writes,
        person_pauses: r.person_pauses,
        wrap_ups: (r.wrap_ups, r.handoffs),
    })
}

/// Goals set and still active.
fn active_goals(server: &Server) -> usize {
    let sessions = server.goal_sessions.lock().clone();
    let state = server.state.lock();
    sessions
        .iter()
        .flatten()
        .filter(|id| state.sessions.get(*id).and_then(|s| s.goal()).is_some_and(|g| g["status"] == "active"))
        .count()
}

fn apply(
    server: &Arc<Server>,
    links: &Links,
    faults: &Arc<Mutex<Faults>>,
    fleet: &Arc<Fleet>,
    rng: &mut Rng,
    action: Action,
) {
    let now = server.now();
    match action {
        Action::SetGoal(index) => {
            server.set_goal(index);
        }
        Action::FinalRestart => {
            if !server.state.lock().busy.is_empty() {
                restart(server, links, faults, 1_000);
            }
        }
        Action::Disturb(Disturbance::RestartHost { host, down_ms }) => {
            restart_host(server, links, fleet, host, down_ms);
        }
        Action::Disturb(what) => {
            server.record.note(now, format!("world: {what:?}"));
            disturb(server, links, faults, rng, what, now);
        }
    }
}

fn disturb(
    server: &Arc<Server>,
    links: &Links,
    faults: &Arc<Mutex<Faults>>,
    rng: &mut Rng,
    what: Disturbance,
    now: f64,
) {
    let window = |ms: u64| now + ms as f64;
    match what {
        Disturbance::LoseEvents { host, for_ms } => links.lock()[host].lose_until = window(for_ms),
        Disturbance::LoseIdle { host, for_ms } => links.lock()[host].lose_idle_until = window(for_ms),
        Disturbance::RepeatEvents { host, for_ms } => links.lock()[host].repeat_until = window(for_ms),
        Disturbance::DelayEvents { host, for_ms, up_to_ms } => {
            let mut links = links.lock();
            links[host].delay_until = window(for_ms);
            links[host].delay_up_to = up_to_ms;
        }
        Disturbance::BreakStream { host } => bus::break_stream(links, server, host, rng.range(500, 5_000)),
        Disturbance::Restart { down_ms } => restart(server, links, faults, down_ms),
        Disturbance::FailRoute { route, answer, for_ms } => {
            faults.lock().routes.push(RouteFault { route, answer, until: window(for_ms) });
        }
        Disturbance::User { goal, action } => user_acts(server, goal, action, now),
        // Applied with the fleet (`restart_host`).
        Disturbance::RestartHost { .. } => {}
    }
}

/// Host `host` is killed (its requests stop reaching the server, its stream ends, its runtime is
/// stopped in the background as a dead process's work just ends) and started again `down_ms`
/// later as a new process: a new runtime on the same settings and data directory, whose stream
/// connects once the server is up. A host already down stays down until its own restart.
fn restart_host(server: &Arc<Server>, links: &Links, fleet: &Arc<Fleet>, host: usize, down_ms: u64) {
    if !fleet.is_alive(host) {
        return;
    }
    fleet.kill(host);
    let killed = {
        let mut links = links.lock();
        links[host].connected = false;
        links[host].runtime.clone()
    };
    server.record.host_down(host, server.now());
    tokio::spawn(async move { killed.stop().await });
    let (server, links, fleet) = (server.clone(), links.clone(), fleet.clone());
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(down_ms)).await;
        let runtime = fleet.start(host);
        links.lock()[host].runtime = runtime.clone();
        let hosts = links.lock().len();
        server.record.host_up(host, hosts, server.now());
        while !server.state.lock().up {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        links.lock()[host].connected = true;
        runtime.feed(&serde_json::json!({"type": "server.connected", "properties": {}}), "");
    });
}

/// The server goes down for `down_ms`: running turns cut, every stream broken, nothing answered.
fn restart(server: &Arc<Server>, links: &Links, faults: &Arc<Mutex<Faults>>, down_ms: u64) {
    let now = server.now();
    server.cut_turns();
    server.state.lock().up = false;
    faults.lock().down_until = now + down_ms as f64;
    let hosts = links.lock().len();
    for host in 0..hosts {
        bus::break_stream(links, server, host, down_ms + 300);
    }
    let (server, faults) = (server.clone(), faults.clone());
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(down_ms)).await;
        // A second restart meanwhile keeps it down until its own end.
        if faults.lock().down_until > server.now() {
            return;
        }
        server.state.lock().up = true;
        server.record.note(server.now(), "world: the server is up again".into());
    });
}

/// The user acts on goal `index` as another client of the server would (OpenChamber's UI).
fn user_acts(server: &Arc<Server>, index: usize, action: UserAction, now: f64) {
    let Some(session) = server.goal_sessions.lock()[index].clone() else { return };
    if action == UserAction::Abort {
        server.abort(&session);
        return;
    }
    if matches!(action, UserAction::Message | UserAction::AskToStop) {
        let words = if action == UserAction::AskToStop { PERSON_STOP } else { PERSON_MORE };
        let parts = [serde_json::json!({"type": "text", "text": words})];
        let body = serde_json::json!({"parts": parts, "agent": "build", "model": {"providerID": "sim", "modelID": "sim-model"}});
        let message = server.state.lock().add_user_message(&session, None, &parts, &body, now);
        server.record.user_message(&session, &message);
        server.record.person_typed(&session, words, now);
        server.prompted(&session, &message);
        return;
    }
    let mut state = server.state.lock();
    let Some(stored) = state.sessions.get_mut(&session) else { return };
    let before = stored.goal().cloned();
    let Some(goal) = stored.goal_mut() else { return };
    match action {
        UserAction::Pause if goal["status"] == "active" => {
            goal["status"] = "paused".into();
            goal["statusReason"] = "paused by user".into();
        }
        UserAction::Resume if goal["status"] != "active" => {
            goal["status"] = "active".into();
            goal["statusReason"] = "resumed".into();
            goal["cause"] = serde_json::Value::Null;
            goal["turnsUsed"] = 0.into();
            goal["blockedStreak"] = 0.into();
        }
        UserAction::Edit => {
            // A new wording each time (the goal's marker kept).
            goal["objective"] = objective_of(index, (now as u64 % 997) as u32).into();
        }
        UserAction::Clear => {
            if let Some(namespace) = stored.metadata.get_mut("openchamber").and_then(|n| n.as_object_mut()) {
                namespace.remove("goal");
            }
        }
        _ => return,
    }
    if let Some(goal) = stored.goal_mut() {
        goal["updatedAt"] = now.into();
    }
    stored.updated = now;
    let after = stored.goal().cloned();
    state.emit_session(&session);
    drop(state);
    server.record.goal_written(None, &session, before.as_ref(), after.as_ref(), now);
}
