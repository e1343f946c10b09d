//! What happened in one run: the steps (for the trace a failing seed prints), and per goal the
//! facts the invariants judge (`invariants.rs`): the continuations posted after each tail, the
//! check runs and reviews, the goal's writes and who made them, and what each host had learnt.
//! The server, the transport and the event bus write here; nothing here acts.

use std::collections::{BTreeMap, BTreeSet};

use parking_lot::Mutex;
use serde_json::Value;

/// One broken promise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Which invariant: `a` to `h`.
    pub invariant: char,
    /// What happened.
    pub detail: String,
    /// When (ms after the world started).
    pub at_ms: u64,
}

/// One request made while a fault was in effect.
#[derive(Debug, Clone)]
pub struct Request {
    /// The host that made it.
    pub host: usize,
    /// Ms after the start.
    pub at_ms: u64,
    /// The session it is about, if any.
    pub session: Option<String>,
    /// Its `?directory=`.
    pub directory: String,
    /// A session list.
    pub list: bool,
    /// A session list that failed (or was given up on).
    pub failed_list: bool,
    /// Made by a process of the host that was killed since (its rates are its own).
    pub past_life: bool,
}

/// What is known of one goal.
#[derive(Debug, Default, Clone)]
pub struct GoalFacts {
    /// Its session, once set.
    pub session: Option<String>,
    /// Distinct continuation ids the hosts posted after each tail (the newest reply then).
    pub after_tail: BTreeMap<String, BTreeSet<String>>,
    /// Every distinct id a host posted to start a turn (continuations and re-posts).
    pub posted: BTreeSet<String>,
    /// Ids of messages the user (or the first prompt) made.
    pub user_messages: BTreeSet<String>,
    /// What a person typed into the goal's session, and when.
    pub person_typed: Vec<(f64, String)>,
    /// Check runs by message id: how many times posted, and whether one finished.
    pub check_runs: BTreeMap<String, (u32, bool)>,
    /// A check run passed.
    pub check_passed: bool,
    /// Reviewer sessions by title: how many were made, and whether one answered.
    pub reviews: BTreeMap<String, (u32, bool)>,
    /// The reviewer approved the last review.
    pub review_approved: bool,
    /// When the goal was last stopped (paused, cleared, settled), and by which host (`None`:
    /// the user).
    pub stopped: Option<(f64, Option<usize>)>,
    /// When a host last did something for it (a post, a write, a settle).
    pub last_progress: f64,
    /// When it was set.
    pub set_at: f64,
    /// New continuations posted since the goal was set or the user resumed it.
    pub continuations: u64,
    /// Turns that failed before they produced anything since then (given back by design).
    pub failed_turns: u64,
    /// Turn increments lost to crossed writes of two hosts (see `Inner::crossed_writes`).
    pub lost_turns: u64,
    /// When the user last changed it (or it was set): the loop's clock for it starts again.
    pub touched_at: f64,
    /// Wrap-up prompts posted since it was set or the user last resumed it, by message id.
    pub wrap_ups: BTreeSet<String>,
}

/// The run's record.
#[derive(Default)]
pub struct Record {
    inner: Mutex<Inner>,
}

/// The record's contents.
#[derive(Default)]
pub struct Inner {
    /// The world's start, on the server's clock.
    pub origin: f64,
    /// Steps, in order: `(ms after the start, what)`.
    pub steps: Vec<(u64, String)>,
    /// Broken promises (the run stops at the first).
    pub violations: Vec<Violation>,
    /// Per goal.
    pub goals: Vec<GoalFacts>,
    /// The goal of each session (reviewers under their parent's).
    pub session_goal: BTreeMap<String, usize>,
    /// Turns that began, by `(session, user message)`.
    pub began: BTreeSet<(String, String)>,
    /// Requests made while a fault was in effect (A.8's budgets are for goals that wait on a
    /// failing server).
    pub requests: Vec<Request>,
    /// When a turn last began in each session (a goal that moves on is not waiting).
    pub last_turn: BTreeMap<String, f64>,
    /// When each host last read each session (the answer left the server), on the server's clock.
    pub reads: BTreeMap<(usize, String), f64>,
    /// The goal each host last read of each session (what its next write builds on).
    pub goal_reads: BTreeMap<(usize, String), Value>,
    /// Writes of two hosts that crossed: one built on a read the other's write landed after
    /// (OpenCode's PATCH has no compare-and-set), lowering a counter the other had raised.
    pub crossed_writes: u64,
    /// Goals a host paused at a person's request (their stop, quoted).
    pub person_pauses: u64,
    /// Wrap-up turns posted (each id once).
    pub wrap_ups: u64,
    /// Steady goals stopped by a limit after their one wrap-up, its handoff the note (promise (h)).
    pub handoffs: u64,
    /// When each host last received an event showing each session's goal not active.
    pub stop_events: BTreeMap<(usize, String), f64>,
    /// Whether the trace keeps every step (a replay) or none (a fast run).
    pub tracing: bool,
    /// Steps are also printed as they happen, between the loop's own log lines
    /// (`GOAL_SIM_LOG`).
    pub live: bool,
    /// Since when each goal is stopped (paused, settled), for its active time.
    pub paused_at: BTreeMap<usize, f64>,
    /// Time each goal spent stopped before.
    pub paused_ms: BTreeMap<usize, f64>,
    /// Since when each goal's session has been seen idle (at the liveness checks' resolution):
    /// the loop cannot act on a busy session, so its waiting counts from here.
    pub idle_since: BTreeMap<String, f64>,
    /// Hosts killed and not yet started again.
    pub hosts_down: BTreeSet<usize>,
    /// When a host last came up while no other was up (the server's clock): promises (e) and
    /// (g) count from the moment a host and the server are both up.
    pub host_up_at: f64,
}

impl Record {
    /// A record for a world of `goals` goals starting at `origin`.
    pub fn new(goals: usize, origin: f64, tracing: bool) -> Self {
        let live = tracing && std::env::var_os("GOAL_SIM_LOG").is_some();
        Record {
            inner: Mutex::new(Inner {
                origin,
                goals: vec![GoalFacts::default(); goals],
                tracing,
                live,
                ..Inner::default()
            }),
        }
    }

    /// Runs `f` on the contents.
    pub fn with<R>(&self, f: impl FnOnce(&mut Inner) -> R) -> R {
        f(&mut self.inner.lock())
    }

    /// A step of the trace.
    pub fn note(&self, at: f64, what: String) {
        let mut inner = self.inner.lock();
        if inner.tracing {
            let ms = inner.ms(at);
            if inner.live {
                eprintln!("{ms:>8} ms  {what}");
            }
            inner.steps.push((ms, what));
        }
    }

    /// A broken promise.
    pub fn violate(&self, invariant: char, at: f64, detail: String) {
        let mut inner = self.inner.lock();
        let at_ms = inner.ms(at);
        if inner.tracing {
            inner.steps.push((at_ms, format!("VIOLATION ({invariant}): {detail}")));
        }
        inner.violations.push(Violation { invariant, detail, at_ms });
    }

    /// Whether a promise was broken.
    pub fn failed(&self) -> bool {
        !self.inner.lock().violations.is_empty()
    }

    /// Host `host` was killed: nothing it learnt counts any more (a new process knows nothing),
    /// and its request rates start afresh (a new process's backoffs do).
    pub fn host_down(&self, host: usize, at: f64) {
        let mut inner = self.inner.lock();
        inner.hosts_down.insert(host);
        for request in inner.requests.iter_mut().filter(|q| q.host == host) {
            request.past_life = true;
        }
        inner.reads.retain(|(h, _), _| *h != host);
        inner.goal_reads.retain(|(h, _), _| *h != host);
        inner.stop_events.retain(|(h, _), _| *h != host);
        drop(inner);
        self.note(at, format!("host {host}: killed"));
    }

    /// Host `host` was started again (`hosts` in the world).
    pub fn host_up(&self, host: usize, hosts: usize, at: f64) {
        let mut inner = self.inner.lock();
        if inner.hosts_down.len() >= hosts {
            inner.host_up_at = at;
        }
        inner.hosts_down.remove(&host);
        drop(inner);
        self.note(at, format!("host {host}: started again, knowing nothing"));
    }

    /// Goal `index` was set on `session`.
    pub fn goal_set(&self, index: usize, session: &str, at: f64) {
        let mut inner = self.inner.lock();
        inner.goals[index].session = Some(session.to_string());
        inner.goals[index].last_progress = at;
        inner.goals[index].set_at = at;
        inner.goals[index].touched_at = at;
        inner.session_goal.insert(session.to_string(), index);
        drop(inner);
        self.note(at, format!("goal {index} set on {session}"));
    }

    /// A turn began for the user message `message` of `session` at `at`.
    pub fn turn_began(&self, session: &str, message: &str, at: f64) {
        let mut inner = self.inner.lock();
        inner.began.insert((session.to_string(), message.to_string()));
        inner.last_turn.insert(session.to_string(), at);
    }

    /// Whether a turn began for that message.
    pub fn turn_began_for(&self, session: &str, message: &str) -> bool {
        self.inner.lock().began.contains(&(session.to_string(), message.to_string()))
    }

    /// A turn's reply ended.
    pub fn turn_ended(&self, session: &str, reply: &str, at: f64) {
        self.note(at, format!("{session}: turn ended ({reply})"));
    }

    /// A reviewer answered for goal `goal`.
    pub fn review_answered(&self, goal: usize, approve: bool) {
        let mut inner = self.inner.lock();
        let facts = &mut inner.goals[goal];
        facts.review_approved = approve;
        if let Some(last) = facts.reviews.values_mut().last() {
            last.1 = true;
        }
    }

    /// A reviewer session (`session`) titled `title` was made for goal `goal`.
    pub fn reviewer_created(&self, goal: usize, session: &str, title: &str, at: f64) {
        let mut inner = self.inner.lock();
        inner.session_goal.insert(session.to_string(), goal);
        let entry = inner.goals[goal].reviews.entry(title.to_string()).or_default();
        entry.0 += 1;
        let (count, answered) = *entry;
        inner.goals[goal].last_progress = at;
        drop(inner);
        if count > 1 && answered {
            self.violate(
                'a',
                at,
                format!("goal {goal}: a second reviewer for the review {title:?}, which had answered"),
            );
        }
        self.note(at, format!("goal {goal}: reviewer session {title:?}"));
    }

    /// A check run of goal `goal` finished.
    pub fn check_ran(&self, goal: usize, message_id: &str, passed: bool, at: f64) {
        let mut inner = self.inner.lock();
        let facts = &mut inner.goals[goal];
        facts.check_runs.entry(message_id.to_string()).or_default().1 = true;
        facts.check_passed = passed;
        drop(inner);
        self.note(at, format!("goal {goal}: check {message_id} {}", if passed { "passed" } else { "failed" }));
    }

    /// A prompt was stored (a host's post).
    pub fn prompt_stored(&self, host: usize, session: &str, message: &str, no_reply: bool, starts: bool, at: f64) {
        let what = if no_reply {
            "claim"
        } else if starts {
            "turn"
        } else {
            "stored, no turn"
        };
        self.note(at, format!("host {host}: prompt {message} to {session} ({what})"));
    }

    /// The user (or the first prompt) made a message.
    pub fn user_message(&self, session: &str, message: &str) {
        let mut inner = self.inner.lock();
        if let Some(goal) = inner.session_goal.get(session).copied() {
            inner.goals[goal].user_messages.insert(message.to_string());
        }
    }

    /// A person typed `words` into `session`.
    pub fn person_typed(&self, session: &str, words: &str, at: f64) {
        let mut inner = self.inner.lock();
        if let Some(goal) = inner.session_goal.get(session).copied() {
            inner.goals[goal].person_typed.push((at, words.to_string()));
        }
    }

    /// A goal write landed (`host: None`: the user's).
    pub fn goal_written(
        &self,
        host: Option<usize>,
        session: &str,
        before: Option<&Value>,
        after: Option<&Value>,
        at: f64,
    ) {
        crate::invariants::on_goal_write(self, host, session, before, after, at);
    }
}

impl Inner {
    /// Ms after the start.
    pub fn ms(&self, at: f64) -> u64 {
        (at - self.origin).max(0.0) as u64
    }

    /// How long goal `goal` has been active by `now` (the server's clock): since it was set (its
    /// record's `createdAt` is a second earlier), less the time it was stopped.
    pub fn active_ms(&self, goal: usize, now: f64) -> f64 {
        let stopped = self.paused_ms.get(&goal).copied().unwrap_or(0.0)
            + self.paused_at.get(&goal).map_or(0.0, |since| now - since);
        now - (self.goals[goal].set_at - 1_000.0) - stopped
    }

    /// The goal of a session.
    pub fn goal_of(&self, session: &str) -> Option<usize> {
        self.session_goal.get(session).copied()
    }
}
