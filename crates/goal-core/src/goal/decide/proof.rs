//! The proof of a `complete`, shared by its two steps, the checks (`acceptance.rs`) and the
//! review (`review.rs`): what both know of the completion under proof, and the lease each round
//! holds while it runs.

use crate::sched::outcome::TickOutcome;
use std::ops::ControlFlow;
use std::time::Duration;

use super::{act, end, Decide, Flow};
use crate::goal::decide::change::Change;
use crate::goal::decide::check_rules::{claim_step, Claim, ClaimRound, ClaimStep};
use crate::goal::decide::decision::Slot;
use crate::goal::decide::grading::CriteriaUpdate;
use crate::goal::decide::plan_rules::{Basis, Settlement};
use crate::goal::decide::seen::Held;
use crate::goal::decide::{ClaimFor, Effect, Guard, Write};
use crate::record::session::Selection;

/// What the checks and the review need to know about the completion under proof.
pub(super) struct Input<'a> {
    /// The turn the auditor judged complete.
    pub basis: &'a Basis,
    /// The `complete` settlement the proof stands before.
    pub settlement: Settlement,
    /// The criteria the audit graded (all met), written with the round's lease.
    pub criteria: Option<CriteriaUpdate>,
    /// The audit's evidence items (`e1…`), for a review.
    pub items: Vec<String>,
}

/// The claim across hosts of `run`, whose message id is `run_id`, round by round (`rounds` so
/// far, each claim standing `hold`, posted on `target`): `Continue` with how it stands.
pub(super) fn claimed(
    at: &Decide<'_>,
    run: ClaimFor,
    run_id: &str,
    rounds: &[ClaimRound],
    hold: Duration,
    target: &Selection,
) -> Flow<Claim> {
    match claim_step(run_id, rounds, &at.seen.holder, hold) {
        ClaimStep::Decided(claim) => ControlFlow::Continue(claim),
        ClaimStep::Post(claim_id) => act(Effect::Claim { claim_id, run, target: target.clone() }),
    }
}

/// The lease of a check round or a review, watched like a reservation: a user's stop that landed
/// between the tick's read and this write is heard in its echo and written back, and the round
/// ends before anything is claimed or run.
pub(super) fn held(at: &Decide<'_>, slot: Slot, hold: Duration, criteria: Option<CriteriaUpdate>) -> Flow {
    match at.seen.held(slot) {
        None => {
            let change = Change::Hold { hold_ms: hold.as_millis() as f64, criteria };
            act(Effect::Watched(Write { change, guard: Guard::Tick, keep_owner: false, slot }))
        }
        Some(Held::Written { .. }) => ControlFlow::Continue(()),
        Some(Held::Repaired | Held::Stale) => end(TickOutcome::Done),
        Some(Held::Failed) => end(at.late_retry()),
    }
}
