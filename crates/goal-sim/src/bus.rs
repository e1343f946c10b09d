//! The event streams: every event the server emits goes to every host whose stream is up, as a
//! host forwards OpenCode's stream into its runtime (`feed`), a `server.heartbeat` every 10 s
//! among them. The world disturbs them: events lost (all of them, or only idles while the rest
//! flow), repeated, or late (and so out of order) for a while; a stream that breaks (the host
//! connects again soon, after OpenChamber's 300 s hang, or never); a restart that breaks them
//! all. A host that connects again receives `server.connected` first, as from OpenCode's stream.

use std::sync::Arc;
use std::time::Duration;

use goal_core::EmbeddedGoalRuntime;
use parking_lot::Mutex;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::rng::Rng;
use crate::server::state::Event;
use crate::server::Server;
use crate::world::{Reconnect, HUNG_RECONNECT_MS};

/// How often OpenCode sends `server.heartbeat` on its event streams.
pub const HEARTBEAT_MS: u64 = 10_000;

/// One host's stream and what disturbs it now (times on the server's clock).
pub struct Link {
    /// The host's runtime.
    pub runtime: EmbeddedGoalRuntime,
    /// The stream is up.
    pub connected: bool,
    /// How the host connects again after a break.
    pub reconnect: Reconnect,
    /// Events are lost until then.
    pub lose_until: f64,
    /// Idle events are lost until then.
    pub lose_idle_until: f64,
    /// Events arrive twice until then.
    pub repeat_until: f64,
    /// Events arrive up to `delay_up_to` ms late until then.
    pub delay_until: f64,
    /// The longest delay.
    pub delay_up_to: u64,
}

/// Every host's link, shared by the bus task and the driver.
pub type Links = Arc<Mutex<Vec<Link>>>;

/// Carries events from `events` to the hosts until the channel closes.
pub async fn carry(server: Arc<Server>, links: Links, mut events: mpsc::UnboundedReceiver<Event>, mut rng: Rng) {
    while let Some(event) = events.recv().await {
        let now = server.now();
        let hosts = links.lock().len();
        for host in 0..hosts {
            let (runtime, copies, delay) = {
                let links = links.lock();
                let link = &links[host];
                if !link.connected || link.lose_until > now || (link.lose_idle_until > now && is_idle(&event)) {
                    continue;
                }
                let copies = if link.repeat_until > now { 2 } else { 1 };
                let delay = if link.delay_until > now { rng.range(0, link.delay_up_to + 1) } else { 0 };
                (link.runtime.clone(), copies, delay)
            };
            if delay == 0 {
                for _ in 0..copies {
                    deliver(&server, host, &runtime, &event);
                }
                continue;
            }
            let (server, links, event) = (server.clone(), links.clone(), event.clone());
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(delay)).await;
                // A stream that broke meanwhile drops what it was still carrying.
                if !links.lock()[host].connected {
                    return;
                }
                for _ in 0..copies {
                    deliver(&server, host, &runtime, &event);
                }
            });
        }
    }
}

fn is_idle(event: &Event) -> bool {
    event.payload["type"] == "session.status" && event.payload["properties"]["status"]["type"] == "idle"
}

/// Emits `server.heartbeat` every [`HEARTBEAT_MS`] while the server is up, as OpenCode does on
/// its event streams (the bus carries it like any event, disturbances included).
pub async fn heartbeats(server: Arc<Server>) {
    loop {
        tokio::time::sleep(Duration::from_millis(HEARTBEAT_MS)).await;
        server.state.lock().emit(json!({"type": "server.heartbeat", "properties": {}}), "");
    }
}

/// Feeds one event to a host's runtime, and records a stop it shows (for invariant (b)).
fn deliver(server: &Server, host: usize, runtime: &EmbeddedGoalRuntime, event: &Event) {
    let payload = &event.payload;
    if payload["type"] == "session.updated" {
        let info = &payload["properties"]["info"];
        let status = info["metadata"]["openchamber"]["goal"]["status"].as_str();
        if status != Some("active") {
            if let Some(session) = info["id"].as_str() {
                let at = server.now();
                server.record.with(|r| r.stop_events.insert((host, session.to_string()), at));
            }
        }
    }
    runtime.feed(payload, &event.directory);
}

/// `host`'s stream breaks; a host that reconnects soon is back after `after_ms`, one whose
/// reconnect hangs after the hang.
pub fn break_stream(links: &Links, server: &Arc<Server>, host: usize, after_ms: u64) {
    let reconnect = {
        let mut links = links.lock();
        links[host].connected = false;
        links[host].reconnect
    };
    match reconnect {
        Reconnect::Soon => reconnect_later(links, server, host, after_ms),
        Reconnect::Hangs => reconnect_later(links, server, host, after_ms.max(HUNG_RECONNECT_MS)),
        Reconnect::Never => {}
    }
}

/// Connects `host` again after `after_ms` (and at once after that, once the server is up).
pub fn reconnect_later(links: &Links, server: &Arc<Server>, host: usize, after_ms: u64) {
    let (links, server) = (links.clone(), server.clone());
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(after_ms)).await;
        // A stream connects only to a server that is up.
        while !server.state.lock().up {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let runtime = {
            let mut links = links.lock();
            if links[host].connected {
                return;
            }
            links[host].connected = true;
            links[host].runtime.clone()
        };
        server.record.note(server.now(), format!("host {host}: stream connected"));
        let connected: Value = json!({"type": "server.connected", "properties": {}});
        runtime.feed(&connected, "");
    });
}
