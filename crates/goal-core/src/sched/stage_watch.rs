//! The stage a tick is in and the time it has left: the tick enters each stage with its bound,
//! and the scheduler's watchdog (`sched/watchdog.rs`) reads both.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

/// The stage a tick is in and the time it has left, shared by the tick (which enters stages)
/// and its watchdog (which reads them). Cloning shares it.
#[derive(Debug, Clone)]
pub struct StageWatch {
    state: Arc<Mutex<WatchState>>,
}

#[derive(Debug)]
struct WatchState {
    stage: &'static str,
    deadline: Instant,
}

impl StageWatch {
    /// A tick starting now in `stage`, which may take `bound`.
    pub fn start(stage: &'static str, bound: Duration) -> Self {
        Self { state: Arc::new(Mutex::new(WatchState { stage, deadline: Instant::now() + bound })) }
    }

    /// The tick enters `stage`, which may take `bound`: the tick's deadline moves out by it (time a
    /// stage left unused is kept by the next).
    pub fn enter(&self, stage: &'static str, bound: Duration) {
        let mut state = self.state.lock();
        state.stage = stage;
        state.deadline += bound;
    }

    /// The stage the tick is in.
    pub fn stage(&self) -> &'static str {
        self.state.lock().stage
    }

    /// When the tick's time runs out.
    pub fn deadline(&self) -> Instant {
        self.state.lock().deadline
    }
}
