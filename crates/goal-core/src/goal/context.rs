//! What every tick of one runtime shares: the runtime's [`TickContext`]. Seven things, each with
//! its owner: OpenCode, the host's services, the settings, this runtime's lease holder id, what
//! events showed (the scheduler's facts), the owner lists' memory (the gatherer's) and the
//! executor's memory.

use std::sync::Arc;

use crate::config::GoalConfig;
use crate::goal::act::{Executor, Memory};
use crate::goal::gather::owners::Owners;
use crate::goal::gather::Reader;
use crate::io::host_identity::HolderId;
use crate::io::opencode::OpenCodeClient;
use crate::io::services::Services;
use crate::sched::facts::TickFacts;

/// Everything a tick needs.
#[derive(Clone)]
pub struct TickContext {
    /// OpenCode.
    pub client: OpenCodeClient,
    /// Host services.
    pub services: Services,
    /// Tunables.
    pub config: Arc<GoalConfig>,
    /// This runtime's lease holder id (several hosts may watch one OpenCode server), found on
    /// a tick's first use (`io/host_identity.rs`).
    pub holder: Arc<HolderId>,
    /// What events showed of each session (the scheduler publishes it).
    pub facts: Arc<TickFacts>,
    /// The owner lists and the carriers they showed (the gatherer's memory).
    pub owners: Arc<Owners>,
    /// The executor's memory: write watches, own posts, dispatch claims.
    pub memory: Arc<Memory>,
}

impl TickContext {
    /// Now on the host's clock (`time/clock.rs`).
    pub fn now_ms(&self) -> f64 {
        self.client.clock().now_ms()
    }

    /// The gatherer of this context's ticks.
    pub fn reader(&self) -> Reader<'_> {
        Reader {
            client: &self.client,
            services: &self.services,
            config: &self.config,
            facts: &self.facts,
            owners: &self.owners,
        }
    }

    /// The executor of this context's ticks, acting as `holder` (this runtime's holder id).
    pub fn executor<'a>(&'a self, holder: &'a str) -> Executor<'a> {
        Executor { read: self.reader(), holder, memory: &self.memory }
    }
}
