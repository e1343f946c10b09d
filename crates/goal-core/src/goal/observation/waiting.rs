//! Makes a waiting goal say so: when a tick cannot go on because a request keeps failing, the
//! goal's record gets cause `waitingForOpenCode` (see `wait_rules`), written when the wait starts
//! and when the answer changes, never at every retry. A goal whose owner is not known yet keeps
//! naming no session (the write does not mark it). The reservation of the goal's next turn
//! clears the cause.

use tracing::{debug, warn};

use crate::error::Cancelled;
use crate::goal::context::TickContext;
use crate::goal::observation::wait_rules::waiting_cause;
use crate::io::writer::{try_write_goal_marking, GoalGuard, GoalUpdate, Marking};
use crate::record::{Goal, GoalStatus};

/// Records that `goal` (as the tick read it) waits on `detail` (`GET /session → 503`). Nothing is
/// written when the stored cause already says so, or when the goal changed meanwhile. A write
/// that fails is only logged: the server that fails the read may fail the write too, and the
/// tick's backoff goes on either way.
pub async fn note_waiting(
    ctx: &TickContext,
    session_id: &str,
    directory: &str,
    goal: &Goal,
    detail: &str,
    marking: Marking,
) {
    let now = ctx.now_ms();
    let Some(cause) = waiting_cause(goal.cause.as_ref(), session_id, detail, now) else {
        return;
    };
    let guard = GoalGuard::Exact { revision: goal.revision(), status: GoalStatus::Active, holder: ctx.holder.clone() };
    let result = try_write_goal_marking(&ctx.client, session_id, directory, &guard, marking, |g| {
        // Decided again on the fresh goal: another host may have written the same wait.
        let fresh = waiting_cause(g.cause.as_ref(), session_id, detail, now).ok_or(Cancelled)?;
        g.set_cause(Some(fresh));
        Ok::<(), Cancelled>(())
    })
    .await;
    match result {
        Ok(GoalUpdate::Written { .. }) => {
            debug!(target: "session_goal", session = session_id, cause = cause.code.as_str(), "waiting cause written")
        }
        Ok(_) => {}
        Err(error) => warn!(target: "session_goal", session = session_id, %error, "waiting cause not written"),
    }
}
