//! The ownership stage, right after the tick's first reads: whose goal the session carries, and
//! whether another runtime's lease keeps this one off it. A goal that names no session waits
//! for its directory's owner list (`owner_scan`, planned by the pure `list_rules`), reading the
//! live state meanwhile, so the list costs the tick no round trip of its own; the decision is
//! `adopt`'s, over the pure rules of `lineage`. The tick passes here once, between the observe
//! stage's first reads and its live gate.

use std::time::Duration;

use tracing::debug;

use crate::error::HttpError;
use crate::goal::context::{LiveReads, TickContext};
use crate::goal::ownership::adopt::{own_or_adopt, own_or_adopt_unlisted, UnlistedOwner};
use crate::goal::ownership::lineage::OwnerView;
use crate::goal::ownership::owner_scan::ListAnswer;
use crate::goal::settling::wait_rules::{wait_detail, Route};
use crate::goal::settling::waiting::note_waiting;
use crate::io::writer::Marking;
use crate::record::session::SessionView;
use crate::record::Goal;
use crate::sched::TickOutcome;

/// Whose goal it is comes first: a fork's copy carries its source's lease and reservation. The
/// goal to drive (this session's, or a copy the user resumed, now its own), or the end of the
/// tick (a copy adopted paused, the owner unknown, the lists failing, or another runtime's
/// lease). `early_live` is the live state the first reads took, if any; a goal that waits for
/// its owner list fills it when it reads the live state beside the list.
pub async fn decide_owner(
    ctx: &TickContext,
    session: &SessionView,
    directory: &str,
    goal: Goal,
    early_live: &mut Option<LiveReads>,
) -> Result<Goal, TickOutcome> {
    let owners = owner_list_beside_live(ctx, &session.id, directory, &goal, early_live).await;
    let goal = on_owner_lists(ctx, session, directory, goal, owners).await?;
    if let Some(wait) = ctx.lease_wait(&goal) {
        debug!(target: "session_goal", session = %session.id, "another runtime holds the lease; backing off");
        return Err(TickOutcome::BackOff(wait));
    }
    Ok(goal)
}

/// How long a goal waiting for its directory's owner list sleeps when nothing wakes it: the list
/// that is read wakes it long before (`owner_scan`); this only bounds a wake-up lost anyway.
const LIST_WAIT_RECHECK: Duration = Duration::from_secs(300);

/// The decision on what the lists answered: the goal to drive (this session's, or a
/// copy the user resumed, now its own), or the end of the tick (a copy adopted paused, the
/// owner unknown, or the lists failing: then the goal waits, and its cause says on what).
async fn on_owner_lists(
    ctx: &TickContext,
    session: &SessionView,
    directory: &str,
    goal: Goal,
    owners: ListAnswer,
) -> Result<Goal, TickOutcome> {
    let data_dir = &ctx.services.data_dir;
    let waiting = |detail: String, goal: Goal| async move {
        note_waiting(ctx, &session.id, directory, &goal, &detail, Marking::KeepOwner).await;
        Err(TickOutcome::BackOff(LIST_WAIT_RECHECK))
    };
    match owners {
        ListAnswer::Listed(view) => {
            let claimed = own_or_adopt(&ctx.client, &ctx.holders, data_dir, session, directory, &goal, view).await?;
            Ok(claimed.unwrap_or(goal))
        }
        ListAnswer::CannotList => {
            match own_or_adopt_unlisted(&ctx.client, &ctx.holders, session, directory, &goal).await? {
                UnlistedOwner::Driven(goal) => Ok(*goal),
                UnlistedOwner::Undecided => waiting(wait_detail(Route::List, &HttpError::Status(404)), goal).await,
            }
        }
        ListAnswer::Failing { detail, .. } => {
            debug!(target: "session_goal", session = %session.id, "owner list failing; waiting for the directory's next list");
            waiting(detail, goal).await
        }
    }
}

/// For a goal that names no session, waits for the list that tells its owner (started at
/// intake, or here), reading the live state meanwhile when it was not read yet (into
/// `early_live`): the list costs the tick no round trip of its own. Returns what the lists tell
/// of the goal's carriers (for a goal that names its session: listed, with the oldest carrier
/// known).
async fn owner_list_beside_live(
    ctx: &TickContext,
    session_id: &str,
    directory: &str,
    goal: &Goal,
    early_live: &mut Option<LiveReads>,
) -> ListAnswer {
    if !ctx.owner_lists.needs_list(goal) {
        let oldest = ctx.holders.older_than(&goal.id, session_id);
        return ListAnswer::Listed(OwnerView { listed: true, oldest });
    }
    let lists = &ctx.owner_lists;
    // The live state is read beside the list only when the directory can be listed now: a goal
    // that waits on failing lists sends no reads of its own.
    if early_live.is_none() && !lists.backing_off(directory) {
        let (listed, live) =
            tokio::join!(lists.wait_listed(directory, goal, session_id), ctx.read_live(session_id, directory));
        *early_live = Some(live);
        return listed;
    }
    lists.wait_listed(directory, goal, session_id).await
}
