//! The silence watch of a goal runtime (its rules: `sched/silence.rs`). Every
//! [`DOWN_RECHECK`] it sweeps when the rules say so (the stream went down or stays down, or a
//! payload ended a hole), asks the scheduler which remembered-busy sessions with an active goal
//! are due a status read (sooner while the host's payloads have stopped), reads
//! `GET /session/status` once per directory they live in, and tells the scheduler what each read
//! showed: a session OpenCode shows idle is looked at (its idle event was lost). While payloads
//! flow, nothing is read for a goal whose session is idle, or while nothing is remembered busy.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::task::JoinSet;
use tracing::{debug, info, warn, Instrument};

use super::Inner;
use crate::record::session::{live_status, LiveStatus};
use crate::sched::silence::{StreamWatch, DOWN_RECHECK, STREAM_SILENCE};

/// Starts the watch on `runtime`; it holds the runtime weakly and ends with it.
pub(super) fn start(inner: &Arc<Inner>, runtime: &tokio::runtime::Handle) {
    if !inner.ctx.config.silence_watch {
        return;
    }
    let weak = Arc::downgrade(inner);
    runtime.spawn(
        async move {
            let mut watch = StreamWatch::default();
            loop {
                tokio::time::sleep(DOWN_RECHECK).await;
                let Some(inner) = weak.upgrade() else { return };
                if inner.stopped.load(Ordering::SeqCst) {
                    return;
                }
                inner.watch_round(&mut watch).await;
            }
        }
        .in_current_span(),
    );
}

impl Inner {
    /// One round: whether the stream is down (said in the log when that changes), a sweep when
    /// the rules ask for one, then the status reads the scheduler asks for, and their answers.
    async fn watch_round(&self, watch: &mut StreamWatch) {
        let last_payload = self.last_payload_ms.load(Ordering::Relaxed) as f64;
        let hole = self.hole.swap(false, Ordering::Relaxed);
        let round = watch.round(self.ctx.now_ms(), last_payload, hole);
        if round.changed && round.down {
            warn!(
                target: "session_goal",
                silent_for_s = STREAM_SILENCE.as_secs(),
                "no event reached the runtime for a while: the host's event stream looks down; sweeping and re-reading busy sessions from OpenCode"
            );
        } else if round.changed {
            info!(target: "session_goal", "events reach the runtime again");
        }
        if round.sweep {
            watch.swept(self.sweep().await);
        }
        let down = round.down;
        let due = self.scheduler.recheck(down).await;
        let mut reads = JoinSet::new();
        for (directory, sessions) in due {
            let client = self.ctx.client.clone();
            reads.spawn(async move { (client.status_map(&directory).await, sessions) }.in_current_span());
        }
        let arm = self.ctx.config.kickoff_quiet;
        while let Some(joined) = reads.join_next().await {
            let Ok((status, sessions)) = joined else { continue };
            match status {
                Ok(status) => {
                    for session in sessions {
                        let working = live_status(&status, &session) == LiveStatus::Working;
                        self.scheduler.status_read(&session, working, arm);
                    }
                }
                Err(error) => {
                    debug!(target: "session_goal", %error, "the silence watch could not read a directory's status")
                }
            }
        }
    }
}
