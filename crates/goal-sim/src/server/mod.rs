//! The simulated OpenCode: its store (`state.rs`), its routes (`routes.rs`), the agent's turns
//! and the shell (`turns.rs`). It answers the requests the simulator's transport hands it
//! (`transport.rs`) and emits events, which the event bus (`bus.rs`) carries to the hosts. Its behaviour is the real server's as `docs/opencode.md` records it: a PATCH replaces
//! the whole metadata, a repeated `messageID` adds parts (and starts the turn of a stored,
//! unanswered message), a restart cuts running turns and says nothing.

pub mod routes;
pub mod state;
pub mod turns;

use std::collections::BTreeMap;
use std::sync::Arc;

use goal_core::Clock;
use parking_lot::Mutex;
use serde_json::{json, Value};

use crate::record::Record;
use crate::server::state::{Session, State};
use crate::world::{GoalSpec, Start, TurnKind, World};

/// The objective of goal `index`: its marker lets the simulated auditor know which goal a
/// prompt is about.
pub fn objective_of(index: usize, edits: u32) -> String {
    format!("Reach milestone {} of the parser work [sim-goal-{index}]", edits + 1)
}

/// What the server knows of each goal's session: its scripts and how far they went.
#[derive(Debug, Default)]
pub struct Script {
    /// The goal's index in the world.
    pub goal: usize,
    /// Prompts that started (or were to start) a turn so far.
    pub prompts: usize,
    /// Check runs so far.
    pub check_runs: u32,
    /// Reviewer replies so far.
    pub reviews: usize,
    /// Bumped by a restart or an abort: a turn of an older generation stops where it is.
    pub generation: u64,
    /// Prompts waiting for the running turn to end: `(user message id, turn kind)`.
    pub queued: Vec<(String, TurnKind)>,
    /// The running turn's reply.
    pub running: Option<String>,
    /// The context the session's replies carry (tokens grow turn by turn).
    pub context_tokens: u64,
}

/// The simulated OpenCode server.
pub struct Server {
    /// The store.
    pub state: Mutex<State>,
    /// The server's clock.
    pub clock: Clock,
    /// Per session (child sessions included, under their parent's goal).
    pub scripts: Mutex<BTreeMap<String, Script>>,
    /// The goals' specs.
    pub goals: Vec<GoalSpec>,
    /// The session of each goal, once set.
    pub goal_sessions: Mutex<Vec<Option<String>>>,
    /// What happened, for the invariants and the trace.
    pub record: Arc<Record>,
    /// An older OpenCode: no `GET /experimental/session`.
    pub old_server: bool,
    /// The hosts' `wrapUp` (promise (h) knows which goals wrap up).
    pub wrap_up: bool,
}

impl Server {
    /// An empty server for `world`, up.
    pub fn new(world: &World, clock: Clock, record: Arc<Record>) -> Arc<Server> {
        Arc::new(Server {
            state: Mutex::new(State { up: true, ..State::default() }),
            clock,
            scripts: Mutex::new(BTreeMap::new()),
            goals: world.goals.clone(),
            goal_sessions: Mutex::new(vec![None; world.goals.len()]),
            record,
            old_server: world.old_server,
            wrap_up: world.wrap_up,
        })
    }

    /// Now on the server's clock.
    pub fn now(&self) -> f64 {
        self.clock.now_ms()
    }

    /// The goal a session belongs to (a reviewer's to its parent's).
    pub fn goal_of(&self, session_id: &str) -> Option<usize> {
        self.scripts.lock().get(session_id).map(|s| s.goal)
    }

    /// Sets goal `index`: its session (with the first exchange, or the first prompt posted)
    /// and the goal record in its metadata. Returns the session id.
    pub fn set_goal(self: &Arc<Self>, index: usize) -> String {
        let spec = self.goals[index].clone();
        let now = self.now();
        let mut state = self.state.lock();
        let id = state.descending("ses");
        state.sessions.insert(
            id.clone(),
            Session {
                id: id.clone(),
                directory: spec.directory.clone(),
                parent: None,
                title: format!("goal {index}"),
                created: now - 5_000.0,
                updated: now,
                metadata: Default::default(),
                messages: Vec::new(),
            },
        );
        let mut script = Script { goal: index, context_tokens: 1_000, ..Script::default() };
        if spec.start == Start::Answered {
            let first = [json!({"type": "text", "text": "Please make the parser handle nested lists"})];
            let user = state.add_user_message(&id, None, &first, &Value::Null, now - 4_000.0);
            let reply = state.begin_reply(&id, &user, now - 3_900.0);
            turns::finish_reply(
                &mut state,
                &id,
                &reply,
                "Started: the parser skeleton is in place.",
                1_000,
                0.0,
                now - 3_000.0,
            );
        }
        let goal = goal_record(index, &spec, now);
        let session = state.sessions.get_mut(&id).expect("just made");
        session.metadata.insert("openchamber".into(), json!({"goal": goal}));
        session.updated = now;
        let info = state.sessions[&id].to_value();
        state.emit(json!({"type": "session.created", "properties": {"info": info}}), &spec.directory);
        state.emit_session(&id);
        drop(state);
        self.scripts.lock().insert(id.clone(), std::mem::take(&mut script));
        self.goal_sessions.lock()[index] = Some(id.clone());
        self.record.goal_set(index, &id, now);
        if spec.start == Start::Posted {
            let parts = [json!({"type": "text", "text": "Please make the parser handle nested lists"})];
            let body =
                json!({"parts": parts, "model": {"providerID": "sim", "modelID": "sim-model"}, "agent": "build"});
            let message = self.state.lock().add_user_message(&id, None, &parts, &body, now);
            self.record.user_message(&id, &message);
            self.prompted(&id, &message);
        }
        id
    }
}

/// A fresh active goal as a host writes it.
fn goal_record(index: usize, spec: &GoalSpec, now: f64) -> Value {
    let mut goal = json!({
        "id": format!("goal-{index}"),
        "objective": objective_of(index, 0),
        "objectiveFile": false,
        "status": "active",
        "tokenBudget": spec.token_budget,
        "tokensUsed": 0,
        "turnsUsed": 0,
        "blockedStreak": 0,
        "auditFailStreak": 0,
        "note": "",
        "statusReason": "",
        "lastAccountedMessageID": "",
        "createdAt": now - 1_000.0,
        "updatedAt": now - 1_000.0,
    });
    if let Some(micro) = spec.cost_budget_micro {
        goal["costBudget"] = json!(micro as f64 / 1_000_000.0);
    }
    if let Some(ms) = spec.time_budget_ms {
        goal["timeBudgetMs"] = json!(ms);
    }
    if spec.check_fails.is_some() {
        goal["checks"] = json!([{"command": "npm test", "timeoutMs": 60_000}]);
    }
    if spec.review.is_some() {
        goal["review"] = json!(true);
    }
    if let Some(wrap_up) = spec.wrap_up {
        goal["wrapUp"] = json!(wrap_up);
    }
    goal
}

/// Whether a turn kind is one a prompt of this session gets next.
pub fn next_turn(spec: &GoalSpec, prompt: usize) -> TurnKind {
    spec.turns.get(prompt).copied().unwrap_or_else(|| spec.ordinary_turn())
}
