//! The hosts: each a real goal runtime built with goal-core's embedding API, on the world's
//! timings, its own context and clock (one host's may be skewed), its requests going through
//! the simulator's transport, and a scripted auditor as its small model. A host may be killed
//! and started again (`Fleet`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use goal_core::{
    BoxFuture, Clock, EmbeddedGoalRuntime, GoalConfig, GoalRuntimeBuilder, MemoryDir, SharedContext, SmallModel,
    SmallModelError, SmallModelQuery, SmallModelReply,
};
use parking_lot::Mutex;
use serde_json::json;

use crate::server::Server;
use crate::transport::{Faults, SimTransport};
use crate::world::{Timing, Verdict, World};

/// The auditor every host asks: the goal named in the prompt (`[sim-goal-N]`) gets the next
/// answer of its script (the last repeats), whichever host asks.
pub struct SimAuditor {
    scripts: Vec<Vec<Verdict>>,
    asked: Mutex<BTreeMap<usize, usize>>,
    /// An audit is the loop acting on its goal (promises (e) and (g)): recorded there.
    server: Arc<Server>,
}

impl SimAuditor {
    /// The auditor of `world`.
    pub fn new(world: &World, server: &Arc<Server>) -> Arc<SimAuditor> {
        Arc::new(SimAuditor {
            scripts: world.goals.iter().map(|g| g.verdicts.clone()).collect(),
            asked: Mutex::default(),
            server: server.clone(),
        })
    }

    fn answer(&self, prompt: &str) -> Result<SmallModelReply, SmallModelError> {
        let goal = prompt
            .split("[sim-goal-")
            .nth(1)
            .and_then(|rest| rest.split(']').next())
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|n| *n < self.scripts.len());
        let Some(goal) = goal else { return Err(SmallModelError { status: Some(404), code: String::new() }) };
        let now = self.server.now();
        self.server.record.with(|r| r.goals[goal].last_progress = now);
        let asked = {
            let mut asked = self.asked.lock();
            let count = asked.entry(goal).or_default();
            *count += 1;
            *count - 1
        };
        let script = &self.scripts[goal];
        let scripted = script.get(asked).or(script.last()).copied().unwrap_or(Verdict::Complete);
        // A model that reads the person's words: their stop is a pause, whatever the script says.
        let asked_to_stop = prompt.contains(&format!("<person_message>\n{}", crate::world::PERSON_STOP));
        let verdict = if asked_to_stop { Verdict::Pause } else { scripted };
        let text = match verdict {
            Verdict::Continue => json!({"verdict": "continue", "note": "more cases to handle"}),
            Verdict::Complete => json!({"verdict": "complete", "note": "every case is handled"}),
            Verdict::Blocked => json!({"verdict": "blocked", "note": "the parser spec is missing"}),
            Verdict::Pause => json!({"verdict": "pause", "note": "the person asked to stop"}),
            Verdict::Unavailable => return Err(SmallModelError { status: Some(500), code: String::new() }),
        };
        Ok(SmallModelReply {
            text: text.to_string(),
            provider_id: "sim".into(),
            model_id: "auditor".into(),
            tokens: Some(100),
        })
    }
}

impl SmallModel for SimAuditor {
    fn generate(&self, request: SmallModelQuery) -> BoxFuture<'_, Result<SmallModelReply, SmallModelError>> {
        Box::pin(async move { self.answer(&request.prompt) })
    }
}

/// The loop's configuration on the world's timings.
pub fn config(timing: &Timing) -> GoalConfig {
    GoalConfig {
        idle_quiet: Duration::from_millis(timing.idle_quiet_ms),
        kickoff_quiet: Duration::from_millis(timing.kickoff_quiet_ms),
        max_auto_turns: timing.max_turns,
        audit_timeout: Duration::from_millis(timing.audit_timeout_ms),
        lease: Duration::from_millis(timing.lease_ms),
        sweep_interval: Duration::from_millis(timing.sweep_ms),
        derive_criteria: false,
        review_timeout: Duration::from_millis(timing.review_timeout_ms),
        ..GoalConfig::default()
    }
}

/// The hosts of one world, and what each keeps across its own restart: its settings and its
/// data directory (in memory). Nothing else survives a kill: a host started again is a new
/// process, with a new context, clock, scheduler and memory; only its identity, which it keeps in
/// its data directory (`io/host_identity.rs`), is the same.
pub struct Fleet {
    world: World,
    server: Arc<Server>,
    faults: Arc<Mutex<Faults>>,
    auditor: Arc<SimAuditor>,
    data_dir: PathBuf,
    memories: Vec<MemoryDir>,
    /// Whether each host's current process lives (a killed one's flag stays false for good).
    alive: Mutex<Vec<Arc<AtomicBool>>>,
}

impl Fleet {
    /// The hosts of `world` (none started yet).
    pub fn new(
        world: &World,
        server: &Arc<Server>,
        faults: &Arc<Mutex<Faults>>,
        auditor: &Arc<SimAuditor>,
        data_dir: PathBuf,
    ) -> Fleet {
        Fleet {
            world: world.clone(),
            server: server.clone(),
            faults: faults.clone(),
            auditor: auditor.clone(),
            data_dir,
            memories: world.hosts.iter().map(|_| MemoryDir::new()).collect(),
            alive: Mutex::new(world.hosts.iter().map(|_| Arc::new(AtomicBool::new(false))).collect()),
        }
    }

    /// Whether host `index`'s process lives.
    pub fn is_alive(&self, index: usize) -> bool {
        self.alive.lock()[index].load(Ordering::SeqCst)
    }

    /// Kills host `index`: nothing it sends from now on reaches the server.
    pub fn kill(&self, index: usize) {
        self.alive.lock()[index].store(false, Ordering::SeqCst);
    }

    /// Starts host `index` as a new process (inside the world's runtime, on its paused clock).
    pub fn start(&self, index: usize) -> EmbeddedGoalRuntime {
        let (world, spec) = (&self.world, &self.world.hosts[index]);
        let alive = Arc::new(AtomicBool::new(true));
        self.alive.lock()[index] = alive.clone();
        // The world's time now (a host started again reads the same wall clock as before).
        let clock = Clock::following_runtime(self.server.now()).skewed(spec.skew_ms as f64);
        let transport = SimTransport {
            server: self.server.clone(),
            faults: self.faults.clone(),
            host: index,
            timing: world.timing,
            sent: Mutex::new(0),
            mutation: world.mutation,
            alive,
        };
        let mut directories: Vec<String> = world.goals.iter().map(|g| g.directory.clone()).collect();
        directories.sort();
        directories.dedup();
        if !spec.names_directories {
            directories.clear();
        }
        // Each host reaches the server by its own name, so each is its own lease holder.
        GoalRuntimeBuilder::new(format!("http://opencode-{index}.sim"))
            .shared_context(SharedContext::new().with_clock(clock))
            .transport(Arc::new(transport))
            .small_model(self.auditor.clone())
            .data_dir(self.data_dir.join(index.to_string()))
            .data_dir_in_memory(self.memories[index].clone())
            .config(GoalConfig {
                silence_watch: world.mutation != Some(crate::mutation::Mutation::NoSilenceWatch),
                wrap_up: world.wrap_up,
                ..config(&world.timing)
            })
            .fetch_timeout(Duration::from_millis(world.timing.fetch_timeout_ms))
            .directories(directories)
            .start(&tokio::runtime::Handle::current())
    }
}
