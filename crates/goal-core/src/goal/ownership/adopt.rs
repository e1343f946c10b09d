//! The ownership stage, first in a tick: a goal that belongs to another session (a fork's copy)
//! is adopted as this session's paused copy and the tick ends, before any lease, audit or post;
//! a copy the user resumed becomes this session's own. The rule itself is `lineage` (pure); the
//! list that tells the owner of a goal naming no session is `owner_scan`'s. Adopting a copy
//! whose objective lives in a file also copies the source's objective file to the copy's path,
//! so a later resume of the copy has its objective.

use tracing::{info, warn};

use crate::error::Cancelled;
use crate::goal::ownership::lineage::{adopt_paused, mark_owner, ownership, GoalHolders, OwnerView, Ownership};
use crate::io::objectives::{copy_objective, ObjectiveCopy};
use crate::io::opencode::OpenCodeClient;
use crate::io::services::DataDir;
use crate::io::writer::{try_write_goal, GoalGuard, GoalUpdate};
use crate::record::session::SessionView;
use crate::record::{Goal, GoalStatus};
use crate::sched::TickOutcome;
use crate::time::clock::now_ms;

/// Decides whose goal `session` carries. `owners`: what the owner lists told of the goal's
/// carriers (see `goal::ownership::owner_scan`); for a goal that names no session and no list holding all
/// its carriers, the owner is unknown and the tick retries later rather than drive a copy. `Ok(None)`: this session's, go
/// on; `Ok(Some(goal))`: a copy the user resumed, now written as this session's own, go on with
/// it; `Err`: the tick ends (the copy was adopted paused, the owner is unknown, or the write
/// failed).
pub async fn own_or_adopt(
    client: &OpenCodeClient,
    holders: &GoalHolders,
    data_dir: &DataDir,
    session: &SessionView,
    directory: &str,
    goal: &Goal,
    owners: OwnerView,
) -> Result<Option<Goal>, TickOutcome> {
    let session_id = session.id.as_str();
    let OwnerView { listed, oldest } = owners;
    let older = oldest.filter(|holder| holder != session_id);
    match ownership(goal, session_id, older.as_deref()) {
        Ownership::Own => {
            holders.saw(&goal.id, session_id, session.created);
            Ok(None)
        }
        Ownership::Unmarked if !listed => {
            warn!(target: "session_goal", session = session_id, "goal names no session and its owner is unknown; not driven yet");
            Err(TickOutcome::Retry)
        }
        Ownership::Unmarked => {
            holders.saw(&goal.id, session_id, session.created);
            Ok(None)
        }
        Ownership::Claimed => {
            holders.saw(&goal.id, session_id, session.created);
            claim(client, session_id, directory, goal).await.map(Some)
        }
        Ownership::Copy { source } => {
            copy_objective_file(data_dir, goal, &source, session_id).await;
            Err(adopt(client, session_id, directory, goal, &source, older).await)
        }
    }
}

async fn claim(client: &OpenCodeClient, session_id: &str, directory: &str, goal: &Goal) -> Result<Goal, TickOutcome> {
    let result = try_write_goal(client, session_id, directory, &GoalGuard::SameId(goal.id.clone()), |g| {
        if g.status != GoalStatus::Active {
            return Err(Cancelled);
        }
        mark_owner(g, session_id);
        Ok(())
    })
    .await;
    match result {
        Ok(GoalUpdate::Written { after, .. }) => {
            info!(target: "session_goal", session = session_id, "resumed copy is now this session's goal");
            Ok(after)
        }
        Ok(_) => Err(TickOutcome::Done),
        Err(error) => {
            warn!(target: "session_goal", session = session_id, %error, "claiming a resumed copy failed");
            Err(TickOutcome::Retry)
        }
    }
}

/// The first half of an adoption: a copy whose objective lives in a file gets the source's file
/// at its own path. When the source's file is gone the copy is still adopted paused; `explain`
/// then reports its objective file missing.
async fn copy_objective_file(data_dir: &DataDir, goal: &Goal, source: &str, session_id: &str) {
    if !goal.objective_file {
        return;
    }
    match copy_objective(data_dir.root(), source, session_id).await {
        ObjectiveCopy::Copied => {
            info!(target: "session_goal", session = session_id, "copied goal's objective file copied")
        }
        ObjectiveCopy::AlreadyThere => {}
        ObjectiveCopy::SourceMissing | ObjectiveCopy::WriteFailed => {
            warn!(target: "session_goal", session = session_id, "copied goal's objective file could not be copied")
        }
    }
}

async fn adopt(
    client: &OpenCodeClient,
    session_id: &str,
    directory: &str,
    goal: &Goal,
    source: &str,
    older: Option<String>,
) -> TickOutcome {
    let result = try_write_goal(client, session_id, directory, &GoalGuard::SameId(goal.id.clone()), |g| {
        // Decided again on the fresh goal: a resume or a pause that landed since wins.
        let still_copy = matches!(ownership(g, session_id, older.as_deref()), Ownership::Copy { .. });
        if g.status != GoalStatus::Active || !still_copy {
            return Err(Cancelled);
        }
        adopt_paused(g, session_id, source, now_ms());
        Ok(())
    })
    .await;
    match result {
        Ok(GoalUpdate::Written { .. }) => {
            info!(target: "session_goal", session = session_id, "goal copied from another session adopted paused");
            TickOutcome::Done
        }
        Ok(_) => TickOutcome::Done,
        Err(error) => {
            warn!(target: "session_goal", session = session_id, %error, "adopting a copied goal failed");
            TickOutcome::Retry
        }
    }
}
