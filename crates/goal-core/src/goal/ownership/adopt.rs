//! The ownership stage, first in a tick: a goal that belongs to another session (a fork's copy)
//! is adopted as this session's paused copy and the tick ends, before any lease, audit or post;
//! a copy the user resumed becomes this session's own. The rule itself is `lineage` (pure); the
//! list that tells the owner of a goal naming no session is `owner_scan`'s. Adopting a copy
//! whose objective lives in a file also copies the source's objective file to the copy's path,
//! so a later resume of the copy has its objective.

use tracing::{info, warn};

use crate::error::Cancelled;
use crate::goal::ownership::lineage::{
    adopt_paused, mark_owner, owner_without_list, ownership, GoalHolders, OwnerView, Ownership, Unlisted,
};
use crate::io::objectives::{copy_objective, ObjectiveCopy};
use crate::io::opencode::OpenCodeClient;
use crate::io::services::DataDir;
use crate::io::writer::{try_write_goal, GoalGuard, GoalUpdate};
use crate::record::session::SessionView;
use crate::record::{Goal, GoalStatus};
use crate::sched::TickOutcome;

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
            let still_copy = |g: &Goal| matches!(ownership(g, session_id, older.as_deref()), Ownership::Copy { .. });
            Err(adopt(client, session_id, directory, goal, &source, still_copy).await)
        }
    }
}

/// What the ownership stage decided for a goal that names no session on a server that cannot
/// list sessions.
pub enum UnlistedOwner {
    /// The session's own (written with its `sessionId` now), or a copy the user resumed: go on.
    Driven(Box<Goal>),
    /// Neither the goal nor the session says when it was made: the goal waits (the caller says
    /// so in its cause), a resume settles it.
    Undecided,
}

/// [`own_or_adopt`] without an owner list (the server answers 404 to `GET /session`): the
/// session itself decides (`lineage::owner_without_list`). The session's own goal is stamped
/// with its `sessionId` at once, so later ticks need no list; a copy is adopted paused, with no
/// source named (none can be known). `Err` ends the tick.
pub async fn own_or_adopt_unlisted(
    client: &OpenCodeClient,
    holders: &GoalHolders,
    session: &SessionView,
    directory: &str,
    goal: &Goal,
) -> Result<UnlistedOwner, TickOutcome> {
    let session_id = session.id.as_str();
    let unlisted = |g: &Goal| owner_without_list(g, session.created);
    let unmarked = |g: &Goal| ownership(g, session_id, None) == Ownership::Unmarked;
    if !unmarked(goal) {
        // A goal that names no session is either unmarked or resumed by the user (claimed).
        holders.saw(&goal.id, session_id, session.created);
        return claim(client, session_id, directory, goal).await.map(|g| UnlistedOwner::Driven(Box::new(g)));
    }
    match unlisted(goal) {
        Unlisted::Own => {
            holders.saw(&goal.id, session_id, session.created);
            info!(target: "session_goal", session = session_id, "the server cannot list sessions; the session predates the goal: its own");
            claim(client, session_id, directory, goal).await.map(|g| UnlistedOwner::Driven(Box::new(g)))
        }
        Unlisted::Copy => {
            info!(target: "session_goal", session = session_id, "the server cannot list sessions; the session is newer than the goal: a copy");
            let still_copy = |g: &Goal| unmarked(g) && unlisted(g) == Unlisted::Copy;
            Err(adopt(client, session_id, directory, goal, "", still_copy).await)
        }
        Unlisted::Unknown => Ok(UnlistedOwner::Undecided),
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

/// Adopts the copy paused (`source`: the session it came from, `""` when unknown), decided again
/// on the fresh goal by `still_copy`.
async fn adopt(
    client: &OpenCodeClient,
    session_id: &str,
    directory: &str,
    goal: &Goal,
    source: &str,
    still_copy: impl Fn(&Goal) -> bool + Send + Sync,
) -> TickOutcome {
    let now = client.clock().now_ms();
    let result = try_write_goal(client, session_id, directory, &GoalGuard::SameId(goal.id.clone()), |g| {
        // Decided again on the fresh goal: a resume or a pause that landed since wins.
        if g.status != GoalStatus::Active || !still_copy(g) {
            return Err(Cancelled);
        }
        adopt_paused(g, session_id, source, now);
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
