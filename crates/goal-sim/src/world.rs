//! A world: everything one run of the simulator is made of, drawn from its seed. Hosts (one or
//! two, the second with a skewed clock), goals with their settings, the turns each prompt gets,
//! the auditor's and the reviewer's answers, and the disturbances at their instants (events
//! lost, repeated, late and out of order; streams that break; server restarts; hosts killed and
//! started again knowing nothing; routes that fail, hang or answer garbage; the user pausing,
//! resuming, editing, clearing, aborting, typing). The server may be an older OpenCode that lists
//! no sessions across directories. Goals wrap up before a limit (the hosts' `wrapUp`, a goal's
//! own), and some spend alike on every turn (steady: promise (h) judges them).
//!
//! A world is plain data, so a failing one can be shrunk (`shrink.rs`): disturbances dropped,
//! turns made ordinary, goals removed, while the failure holds.

use std::time::Duration;

use crate::rng::Rng;

/// The loop's timings in one world (the scale of a real host's, shortened where a real one
/// would only make the run longer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// `idleQuietMs`.
    pub idle_quiet_ms: u64,
    /// `kickoffQuietMs`.
    pub kickoff_quiet_ms: u64,
    /// `sweepIntervalMs`.
    pub sweep_ms: u64,
    /// The fetch timeout of every OpenCode request.
    pub fetch_timeout_ms: u64,
    /// `maxAutoTurns`.
    pub max_turns: u64,
    /// The lease a tick takes.
    pub lease_ms: u64,
    /// The small model's timeout.
    pub audit_timeout_ms: u64,
    /// The reviewer's timeout.
    pub review_timeout_ms: u64,
}

impl Timing {
    /// The settings a real host passes: OpenChamber passes no sweep, no quiet windows and no
    /// fetch timeout, so the core's defaults apply (`GoalConfig::default()`), the turn cap
    /// included. They cost nothing on a paused clock.
    pub fn real() -> Timing {
        let defaults = goal_core::GoalConfig::default();
        let ms = |d: Duration| d.as_millis() as u64;
        Timing {
            idle_quiet_ms: ms(defaults.idle_quiet),
            kickoff_quiet_ms: ms(defaults.kickoff_quiet),
            sweep_ms: ms(defaults.sweep_interval),
            fetch_timeout_ms: ms(goal_core::DEFAULT_FETCH_TIMEOUT),
            max_turns: defaults.max_auto_turns,
            lease_ms: ms(defaults.lease),
            audit_timeout_ms: ms(defaults.audit_timeout),
            review_timeout_ms: ms(defaults.review_timeout),
        }
    }

    /// Whether these are a real host's settings (promise (g) is judged there).
    pub fn is_real(&self) -> bool {
        *self == Timing::real()
    }
}

/// How a host's event stream comes back after it breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reconnect {
    /// It connects again within seconds and forwards events (OpenChamber's stream against a
    /// server that answers at once; it never calls `recover()`).
    Soon,
    /// Its new request hangs for [`HUNG_RECONNECT_MS`] before it connects again: OpenChamber's
    /// reconnect after an OpenCode restart waits on Node's 300 s headers timeout.
    Hangs,
    /// It never connects again.
    Never,
}

/// How long a hanging reconnect waits (Node's headers timeout).
pub const HUNG_RECONNECT_MS: u64 = 300_000;

/// One host of the goal loop (an OpenChamber server, a desktop shell).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostSpec {
    /// How far its clock runs ahead (negative: behind) of the server's.
    pub skew_ms: i64,
    /// How its stream comes back after a break or a restart.
    pub reconnect: Reconnect,
    /// It names the goals' directories in its options (`directories`); a host at a real host's
    /// settings names none, as OpenChamber's server does.
    pub names_directories: bool,
}

/// What a turn of the agent does when a prompt starts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnKind {
    /// Runs for `ms` and finishes with this many tokens and this cost (in millionths of a dollar).
    Finish { ms: u64, tokens: u64, micro_usd: u64 },
    /// Runs for `ms` and fails with a provider error.
    Fail { ms: u64, failure: Failure },
    /// The prompt is stored, and its turn never begins (a kill between the two).
    NeverStart,
    /// Starts and never ends (until a restart cuts it, or an abort).
    NeverEnd,
}

/// A provider failure a turn ends with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// A rate limit (429) with a reset `reset_ms` after the failure.
    RateLimit { reset_ms: u64 },
    /// A server error OpenCode gives up on.
    ServerError,
}

/// What the auditor answers, in order (the last repeats).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// `continue`.
    Continue,
    /// `complete` (with every criterion met).
    Complete,
    /// `blocked`.
    Blocked,
    /// `pause` with no reason to (a model's whim): obeyed only over a person's message.
    Pause,
    /// No answer (the call fails).
    Unavailable,
}

/// How a goal begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Its session already holds the first exchange, answered; the goal is set on it.
    Answered,
    /// The user's first prompt is posted as the goal is set (its turn may strand, like any).
    Posted,
}

/// One goal and its session.
#[derive(Debug, Clone, PartialEq)]
pub struct GoalSpec {
    /// The session's directory (goals may share one).
    pub directory: String,
    /// How it begins.
    pub start: Start,
    /// When it is set (ms after the world starts).
    pub at_ms: u64,
    /// `tokenBudget`.
    pub token_budget: Option<u64>,
    /// `costBudget` in millionths of a dollar.
    pub cost_budget_micro: Option<u64>,
    /// `timeBudgetMs`.
    pub time_budget_ms: Option<u64>,
    /// One acceptance check that fails this many times before it passes (`None`: no check).
    pub check_fails: Option<u32>,
    /// Whether completion needs a reviewer's approval; its answers (approve/reject) in order.
    pub review: Option<Vec<bool>>,
    /// The turn each prompt to the session gets, in order (past the end: an ordinary turn).
    pub turns: Vec<TurnKind>,
    /// The auditor's answers.
    pub verdicts: Vec<Verdict>,
    /// The goal's own `wrapUp` (`None`: the hosts' default decides).
    pub wrap_up: Option<bool>,
    /// Every finished turn of its session spends alike: no turn is larger than the ones before
    /// it, so a wrap-up is forecast right (promise (h)).
    pub steady: Option<Steady>,
}

/// What each turn of a steady goal spends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Steady {
    /// Tokens the context grows by.
    pub tokens: u64,
    /// Cost, in millionths of a dollar.
    pub micro_usd: u64,
}

impl GoalSpec {
    /// The turn a prompt gets past the end of its script (and a shrunk world's ordinary one).
    pub fn ordinary_turn(&self) -> TurnKind {
        match self.steady {
            Some(steady) => TurnKind::Finish { ms: 2_000, tokens: steady.tokens, micro_usd: steady.micro_usd },
            None => TurnKind::Finish { ms: 2_000, tokens: 800, micro_usd: 1_000 },
        }
    }

    /// Whether the goal wraps up before its limits, with `host_default` as the hosts' option.
    pub fn wraps_up(&self, host_default: bool) -> bool {
        self.wrap_up.unwrap_or(host_default)
    }
}

/// Something the world does to the loop at an instant.
#[derive(Debug, Clone, PartialEq)]
pub enum Disturbance {
    /// Events to `host` are lost for `for_ms` (heartbeats too: a stalled forwarder).
    LoseEvents { host: usize, for_ms: u64 },
    /// Idle events to `host` are lost for `for_ms` while the rest, heartbeats included, flow.
    LoseIdle { host: usize, for_ms: u64 },
    /// Events to `host` arrive twice for `for_ms`.
    RepeatEvents { host: usize, for_ms: u64 },
    /// Events to `host` arrive up to `up_to_ms` late (so out of order) for `for_ms`.
    DelayEvents { host: usize, for_ms: u64, up_to_ms: u64 },
    /// `host`'s event stream breaks (it reconnects if its spec says so).
    BreakStream { host: usize },
    /// OpenCode restarts: down for `down_ms` (every request refused, every event lost), running
    /// turns cut; the store is kept.
    Restart { down_ms: u64 },
    /// `host` is killed (nothing more of it reaches the server) and started again `down_ms` later
    /// as a new process: its settings and data directory kept, nothing else.
    RestartHost { host: usize, down_ms: u64 },
    /// A route answers badly for `for_ms`.
    FailRoute { route: Route, answer: BadAnswer, for_ms: u64 },
    /// The user acts on a goal.
    User { goal: usize, action: UserAction },
}

/// A family of OpenCode routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `GET /session` (lists).
    List,
    /// `GET /session/:id`.
    Session,
    /// `GET /session/status`.
    Status,
    /// `GET /session/:id/message`.
    Messages,
    /// `PATCH /session/:id`.
    Patch,
    /// `POST /session/:id/prompt_async`.
    Prompt,
    /// Every route.
    All,
}

/// How a failing route answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadAnswer {
    /// 404 Not Found.
    NotFound,
    /// 500 or 503.
    ServerError,
    /// The answer comes this late.
    Slow(u64),
    /// No answer, ever (the request times out).
    Hang,
    /// The request is applied, and its answer never comes.
    ApplyThenHang,
    /// A 200 whose body is not JSON.
    Garbage,
}

/// What a person types to ask for more.
pub const PERSON_MORE: &str = "Also handle empty lists";
/// What a person types to stop the goal (the simulated auditor reads it as a request to pause).
pub const PERSON_STOP: &str = "[sim-stop] stop here, I'll finish it myself";

/// A user's action on a goal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserAction {
    /// Pauses it.
    Pause,
    /// Resumes it (when paused or settled).
    Resume,
    /// Edits its objective.
    Edit,
    /// Clears it.
    Clear,
    /// Aborts the running turn.
    Abort,
    /// Types a message (a turn of the user's own).
    Message,
    /// Types "stop here, I'll finish it myself" (a turn of the user's own, which the auditor
    /// reads as a request to pause).
    AskToStop,
}

/// A disturbance and when it happens.
#[derive(Debug, Clone, PartialEq)]
pub struct Scheduled {
    /// Ms after the world starts.
    pub at_ms: u64,
    /// What happens.
    pub what: Disturbance,
}

/// Everything one run is made of.
#[derive(Debug, Clone, PartialEq)]
pub struct World {
    /// The seed it was drawn from.
    pub seed: u64,
    /// The loop's timings.
    pub timing: Timing,
    /// The hosts.
    pub hosts: Vec<HostSpec>,
    /// The goals.
    pub goals: Vec<GoalSpec>,
    /// The disturbances, by time.
    pub disturbances: Vec<Scheduled>,
    /// How long the world runs at most (simulated).
    pub horizon: Duration,
    /// A defect planted at the seam (`mutation.rs`), for the mutation check.
    pub mutation: Option<crate::mutation::Mutation>,
    /// The server is an older OpenCode: no `GET /experimental/session` (the hosts list each
    /// directory they know instead).
    pub old_server: bool,
    /// The hosts' `wrapUp` (a real host passes none: on).
    pub wrap_up: bool,
}

/// The share of worlds drawn at a real host's settings ([`Timing::real`]), in percent.
pub const REAL_SETTINGS_PERCENT: u64 = 30;

/// When the last disturbance may happen: after it the world stays healthy, so every goal must
/// settle before the horizon.
pub const DISTURBED_MS: u64 = 240_000;

impl World {
    /// The world of `seed`.
    pub fn draw(seed: u64) -> World {
        let mut rng = Rng::new(seed);
        let mut timing_rng = rng.fork();
        let timing =
            if timing_rng.chance(REAL_SETTINGS_PERCENT) { Timing::real() } else { draw_timing(&mut timing_rng) };
        let mut hosts = draw_hosts(&mut rng.fork());
        let goal_count = rng.range(1, 5) as usize;
        let directories = rng.range(1, goal_count as u64 + 1);
        let mut goal_rng = rng.fork();
        let goals = (0..goal_count).map(|_| draw_goal(&mut goal_rng, directories)).collect::<Vec<_>>();
        let mut disturbances = draw_disturbances(&mut rng.fork(), &hosts, goals.len(), timing.is_real());
        // Drawn last, from a generator of their own, so the rest of a seed's world stays as it was.
        let mut restarts = rng.fork();
        let old_server = restarts.chance(OLD_SERVER_PERCENT);
        for host in hosts.iter_mut() {
            // An older server is reached through the directories a host names, or the ones it learns.
            host.names_directories = !timing.is_real() && (old_server || restarts.chance(50));
        }
        disturbances.extend(draw_host_restarts(&mut restarts, hosts.len()));
        disturbances.sort_by_key(|s| s.at_ms);
        // The wrap-up's ingredients, from a generator of their own as well.
        let mut wrap = rng.fork();
        let wrap_up = timing.is_real() || wrap.chance(WRAP_UP_HOST_PERCENT);
        let mut goals = goals;
        for goal in goals.iter_mut() {
            draw_wrap_up(&mut wrap, goal);
        }
        World {
            seed,
            timing,
            hosts,
            goals,
            disturbances,
            horizon: Duration::from_secs(1_800),
            mutation: None,
            old_server,
            wrap_up,
        }
    }

    /// The world as a replay line and a short description.
    pub fn describe(&self) -> String {
        format!(
            "{} host(s), {} goal(s) ({} steady), {} disturbance(s); {}{}{}quiet {} ms, sweep {} ms, fetch timeout {} ms",
            self.hosts.len(),
            self.goals.len(),
            self.goals.iter().filter(|g| g.steady.is_some()).count(),
            self.disturbances.len(),
            if self.old_server { "an older server (no list across directories); " } else { "" },
            if self.wrap_up { "" } else { "hosts with wrapUp off; " },
            if self.timing.is_real() { "a real host's settings: " } else { "" },
            self.timing.idle_quiet_ms,
            self.timing.sweep_ms,
            self.timing.fetch_timeout_ms
        )
    }
}

fn draw_timing(rng: &mut Rng) -> Timing {
    Timing {
        idle_quiet_ms: rng.pick(&[300, 1_000, 3_000, 15_000]),
        kickoff_quiet_ms: rng.pick(&[100, 500, 3_000]),
        sweep_ms: rng.pick(&[10_000, 20_000, 60_000]),
        fetch_timeout_ms: rng.pick(&[2_000, 5_000, 10_000]),
        max_turns: rng.range(2, 9),
        lease_ms: rng.pick(&[20_000, 60_000]),
        audit_timeout_ms: rng.pick(&[5_000, 20_000]),
        review_timeout_ms: rng.pick(&[30_000, 60_000]),
    }
}

fn draw_reconnect(rng: &mut Rng) -> Reconnect {
    match rng.range(0, 100) {
        0..=64 => Reconnect::Soon,
        65..=84 => Reconnect::Hangs,
        _ => Reconnect::Never,
    }
}

fn draw_hosts(rng: &mut Rng) -> Vec<HostSpec> {
    let first = HostSpec { skew_ms: 0, reconnect: draw_reconnect(rng), names_directories: false };
    if rng.chance(30) {
        let skew = rng.range(0, 8_000) as i64 - 4_000;
        vec![first, HostSpec { skew_ms: skew, reconnect: draw_reconnect(rng), names_directories: false }]
    } else {
        vec![first]
    }
}

/// The share of worlds whose server is an older OpenCode, in percent.
pub const OLD_SERVER_PERCENT: u64 = 15;

/// The share of worlds whose hosts are killed and started again, in percent.
pub const HOST_RESTART_PERCENT: u64 = 40;

/// Host kills: in some worlds, one to three, each host down between a moment and two minutes (a
/// crash and a restart by a supervisor, an app quit and opened again, a deploy).
fn draw_host_restarts(rng: &mut Rng, hosts: usize) -> Vec<Scheduled> {
    if !rng.chance(HOST_RESTART_PERCENT) {
        return Vec::new();
    }
    (0..rng.range(1, 4))
        .map(|_| Scheduled {
            at_ms: rng.range(0, DISTURBED_MS),
            what: Disturbance::RestartHost {
                host: rng.range(0, hosts as u64) as usize,
                down_ms: rng.pick(&[200, 2_000, 5_000, 30_000, 120_000]),
            },
        })
        .collect()
}

/// The share of worlds whose hosts wrap up by default (a real host's always do), in percent.
pub const WRAP_UP_HOST_PERCENT: u64 = 85;
/// The share of goals whose turns all spend alike, in percent.
pub const STEADY_PERCENT: u64 = 40;

/// A goal's own `wrapUp` (mostly unset), and whether it is steady: then every finished turn
/// spends one drawn amount, and its budgets leave room for its first, unforecast turns (a posted
/// first prompt's reply carries the session's whole starting context, 1,000 tokens, plus a
/// turn) and a wrap-up after them (`2.25` turns), plus up to six turns more.
fn draw_wrap_up(rng: &mut Rng, goal: &mut GoalSpec) {
    goal.wrap_up = match rng.range(0, 10) {
        0 => Some(false),
        1 => Some(true),
        _ => None,
    };
    if !rng.chance(STEADY_PERCENT) {
        return;
    }
    let steady = Steady { tokens: rng.range(500, 4_000), micro_usd: rng.range(0, 30_000) };
    for turn in goal.turns.iter_mut() {
        if let TurnKind::Finish { tokens, micro_usd, .. } = turn {
            (*tokens, *micro_usd) = (steady.tokens, steady.micro_usd);
        }
    }
    if goal.token_budget.is_some() {
        let first = 1_000 + steady.tokens;
        goal.token_budget = Some(first * 9 / 4 + 1 + rng.range(0, 6 * steady.tokens + 1));
    }
    if goal.cost_budget_micro.is_some() {
        let least = steady.micro_usd * 9 / 4 + 1;
        goal.cost_budget_micro = Some((least + rng.range(0, 6 * steady.micro_usd + 1)).max(10_000));
    }
    goal.steady = Some(steady);
}

fn draw_goal(rng: &mut Rng, directories: u64) -> GoalSpec {
    let turns = (0..rng.range(0, 8)).map(|_| draw_turn(rng)).collect();
    let complete_after = rng.range(0, 6) as usize;
    let mut verdicts = vec![Verdict::Continue; complete_after];
    for verdict in verdicts.iter_mut() {
        if rng.chance(10) {
            *verdict = match rng.range(0, 3) {
                0 => Verdict::Blocked,
                1 => Verdict::Unavailable,
                _ => Verdict::Pause,
            };
        }
    }
    verdicts.push(Verdict::Complete);
    GoalSpec {
        directory: format!("/sim/project-{}", rng.range(0, directories)),
        start: if rng.chance(70) { Start::Answered } else { Start::Posted },
        at_ms: rng.range(0, 20_000),
        token_budget: rng.chance(20).then(|| rng.range(2_000, 20_000)),
        cost_budget_micro: rng.chance(15).then(|| rng.range(20_000, 200_000)),
        time_budget_ms: rng.chance(15).then(|| rng.range(30_000, 400_000)),
        check_fails: rng.chance(25).then(|| rng.range(0, 3) as u32),
        review: rng.chance(20).then(|| (0..rng.range(1, 3)).map(|_| rng.chance(70)).collect()),
        turns,
        verdicts,
        wrap_up: None,
        steady: None,
    }
}

fn draw_turn(rng: &mut Rng) -> TurnKind {
    match rng.range(0, 100) {
        0..=64 => TurnKind::Finish {
            ms: rng.range(200, 60_000),
            tokens: rng.range(500, 4_000),
            micro_usd: rng.range(0, 30_000),
        },
        65..=74 => TurnKind::Fail {
            ms: rng.range(100, 5_000),
            failure: if rng.chance(60) {
                Failure::RateLimit { reset_ms: rng.range(1_000, 90_000) }
            } else {
                Failure::ServerError
            },
        },
        75..=86 => TurnKind::NeverStart,
        _ => TurnKind::NeverEnd,
    }
}

fn draw_disturbances(rng: &mut Rng, hosts: &[HostSpec], goals: usize, real: bool) -> Vec<Scheduled> {
    let count = rng.range(0, 12);
    let mut out: Vec<Scheduled> = (0..count)
        .map(|_| Scheduled { at_ms: rng.range(0, DISTURBED_MS), what: draw_disturbance(rng, hosts.len(), goals, real) })
        .collect();
    out.sort_by_key(|s| s.at_ms);
    out
}

/// The shortest loss of every event in a world at a real host's settings: a heartbeat period, so
/// a loss always swallows a heartbeat too (a stream that stalls or drops does), which is how a
/// runtime can tell. A shorter loss between two heartbeats is found by the sweep (promise (e)).
const REAL_LOSS_MIN_MS: u64 = crate::bus::HEARTBEAT_MS;

fn draw_disturbance(rng: &mut Rng, hosts: usize, goals: usize, real: bool) -> Disturbance {
    let host = rng.range(0, hosts as u64) as usize;
    let shortest_loss = if real { REAL_LOSS_MIN_MS } else { 1_000 };
    match rng.range(0, 100) {
        0..=9 => Disturbance::LoseEvents { host, for_ms: rng.range(shortest_loss, 120_000) },
        10..=14 => Disturbance::LoseIdle { host, for_ms: rng.range(1_000, 120_000) },
        15..=22 => Disturbance::RepeatEvents { host, for_ms: rng.range(1_000, 60_000) },
        23..=30 => Disturbance::DelayEvents { host, for_ms: rng.range(1_000, 60_000), up_to_ms: rng.range(50, 5_000) },
        31..=38 => Disturbance::BreakStream { host },
        39..=48 => Disturbance::Restart { down_ms: rng.range(200, 20_000) },
        49..=63 => Disturbance::FailRoute {
            route: rng.pick(&[
                Route::List,
                Route::Session,
                Route::Status,
                Route::Messages,
                Route::Patch,
                Route::Prompt,
                Route::All,
            ]),
            answer: match rng.range(0, 6) {
                0 => BadAnswer::NotFound,
                1 => BadAnswer::ServerError,
                2 => BadAnswer::Slow(rng.range(100, 15_000)),
                3 => BadAnswer::Hang,
                4 => BadAnswer::ApplyThenHang,
                _ => BadAnswer::Garbage,
            },
            for_ms: rng.range(500, 60_000),
        },
        _ => Disturbance::User {
            goal: rng.range(0, goals as u64) as usize,
            action: rng.pick(&[
                UserAction::Pause,
                UserAction::Resume,
                UserAction::Edit,
                UserAction::Clear,
                UserAction::Abort,
                UserAction::Message,
                UserAction::AskToStop,
            ]),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_draws_one_world_and_seeds_differ() {
        assert_eq!(World::draw(42), World::draw(42));
        let worlds: Vec<World> = (0..50).map(World::draw).collect();
        assert!(worlds.windows(2).any(|w| w[0] != w[1]));
        assert!(worlds.iter().any(|w| w.hosts.len() == 2));
        assert!(worlds.iter().all(|w| w.disturbances.windows(2).all(|d| d[0].at_ms <= d[1].at_ms)));
    }

    #[test]
    fn hosts_are_restarted_in_many_worlds_and_a_real_host_names_no_directory() {
        let worlds: Vec<World> = (1..=2_000).map(World::draw).collect();
        let restarted = |w: &&World| w.disturbances.iter().any(|d| matches!(d.what, Disturbance::RestartHost { .. }));
        let with_restarts = worlds.iter().filter(restarted).count();
        assert!((600..=1_000).contains(&with_restarts), "{with_restarts} of 2,000 worlds restart a host");
        let real_with_restarts = worlds.iter().filter(|w| w.timing.is_real()).filter(restarted).count();
        assert!(real_with_restarts >= 150, "{real_with_restarts} at a real host's settings");
        assert!(worlds.iter().filter(|w| w.timing.is_real()).all(|w| w.hosts.iter().all(|h| !h.names_directories)));
        assert!(worlds.iter().any(|w| w.old_server) && worlds.iter().any(|w| !w.old_server));
    }

    #[test]
    fn steady_goals_spend_alike_and_leave_room_for_their_first_turns_and_a_wrap_up() {
        let worlds: Vec<World> = (1..=2_000).map(World::draw).collect();
        let goals: Vec<&GoalSpec> = worlds.iter().flat_map(|w| w.goals.iter()).collect();
        let steady: Vec<&&GoalSpec> = goals.iter().filter(|g| g.steady.is_some()).collect();
        assert!(steady.len() * 100 >= goals.len() * 30, "{} of {} goals steady", steady.len(), goals.len());
        for goal in steady {
            let Steady { tokens, micro_usd } = goal.steady.expect("steady");
            let ordinary = goal.ordinary_turn();
            let finished = goal.turns.iter().chain(std::iter::once(&ordinary)).filter_map(|t| match t {
                TurnKind::Finish { tokens, micro_usd, .. } => Some((*tokens, *micro_usd)),
                _ => None,
            });
            assert!(finished.into_iter().all(|spent| spent == (tokens, micro_usd)));
            if let Some(budget) = goal.token_budget {
                assert!(budget * 4 > (1_000 + tokens) * 9, "{budget} for turns of {tokens}");
            }
        }
        assert!(worlds.iter().any(|w| !w.wrap_up) && worlds.iter().filter(|w| w.timing.is_real()).all(|w| w.wrap_up));
        assert!(goals.iter().any(|g| g.wrap_up == Some(false)) && goals.iter().any(|g| g.wrap_up == Some(true)));
    }

    #[test]
    fn at_least_a_quarter_of_the_worlds_run_at_a_real_host_s_settings() {
        let real = (1..=2_000).filter(|seed| World::draw(*seed).timing.is_real()).count();
        assert!(real >= 500, "{real} of 2,000 worlds at a real host's settings");
        let real = Timing::real();
        assert_eq!((real.idle_quiet_ms, real.kickoff_quiet_ms, real.sweep_ms), (15_000, 3_000, 300_000));
    }
}
