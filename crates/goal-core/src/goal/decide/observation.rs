//! What a read answered or an effect did, as data: the gatherer (`goal/gather/`) and the executor
//! (`goal/act/`) return one [`Observation`] (a read may return two), and [`Seen::absorb`] folds it
//! into what the tick has seen. A new read or effect is one variant and one arm here; the
//! compiler holds every observation to its place.

use std::collections::HashSet;

use serde_json::Value;

use crate::error::HttpError;
use crate::goal::decide::check_rules::{CheckRun, ClaimRound};
use crate::goal::decide::decision::{ClaimFor, PauseBefore, Slot};
use crate::goal::decide::dispatch_rules::DispatchStep;
use crate::goal::decide::review_rules::{ReviewAnswer, ReviewerTurn};
use crate::goal::decide::seen::{
    CheckSeen, Evidence, First, Held, Live, OwnerAnswer, ReadBack, Seen, Transcript, Written,
};
use crate::goal::decide::wait_rules::Route;
use crate::record::session::Message;
use crate::record::small_model_call::SmallModelReply;

/// One thing a tick learned.
#[derive(Debug, Clone)]
pub enum Observation {
    /// The settings switches and the session, and when they answered.
    First(First, f64),
    /// The live state (`Err`: the routes that failed), and when it answered.
    Live(Result<Live, Vec<(Route, HttpError)>>, f64),
    /// What the owner lists told.
    Owners(OwnerAnswer),
    /// The effective objective (`None`: none could be read).
    Objective(Option<String>),
    /// Whether OpenCode lists an open permission or question of the session or its children.
    OpenRequests(bool),
    /// The transcript read again to confirm a cut turn.
    FreshTail(Result<Vec<Message>, HttpError>),
    /// The evidence of the turns since the last audit.
    Evidence(Evidence),
    /// The session just before the next check (`Err`: a read failed).
    CheckTranscript(Result<Transcript, ()>),
    /// A reviewer of this tail that already answered: its session, answer and cost.
    FinishedReview(Option<(String, ReviewAnswer, f64)>),
    /// Which cited files exist, and when they were looked up.
    CitedFiles(HashSet<String>, f64),
    /// The goal and the tail read back after the reservation.
    ReadBack(ReadBack),
    /// A guarded write in `slot` ended so.
    Wrote(Slot, Written),
    /// A watched write in `slot` ended so.
    Held(Slot, Held),
    /// The trail line of `slot` was written.
    Trailed(Slot),
    /// The small model's answer (`Err`: the failure, as the cause's detail), and when it came.
    Audited(Result<SmallModelReply, String>, f64),
    /// One round of a claim across hosts of a check run or a review.
    Claimed(ClaimFor, ClaimRound),
    /// The check under way ran.
    CheckRan(Result<CheckRun, HttpError>),
    /// A check run was concluded (its trail line written).
    CheckConcluded(CheckRun),
    /// The reviewer session opened (`Err`: why it could not be).
    ReviewerOpened(Result<String, String>),
    /// One turn of the reviewer.
    ReviewerAsked(ReviewerTurn),
    /// What the reviewer cost.
    ReviewerCost(f64),
    /// The files the session changed (`None`: the diff could not be read).
    ChangedFiles(Option<Vec<String>>),
    /// The review's trail line was written; the `lastReview` value it leads to.
    ReviewRecorded(Value),
    /// The stranded message was posted again.
    Reposted,
    /// The source's objective file was copied (an adopted copy).
    ObjectiveCopied,
    /// That this session carries the goal was remembered.
    CarrierRemembered,
    /// The scheduler was told no request is open after all.
    InputsSettled,
    /// This process's dispatch claim of the session: taken, or another runtime holds it.
    DispatchClaimed(bool),
    /// The tick waited.
    Waited(PauseBefore),
    /// A late echo was looked for once more (`true`: it showed a user's change, written back).
    HeardLate(bool),
    /// One step of the continuation's post.
    Dispatched(DispatchStep),
    /// The continuation's going out was announced.
    ContinuationAnnounced,
    /// The terminal write was announced.
    Announced,
}

impl Seen {
    /// Folds in what a read answered or an effect did: every observation has its one place.
    pub fn absorb(&mut self, observation: Observation) {
        match observation {
            Observation::First(first, at) => (self.first, self.first_at) = (Some(first), at),
            Observation::Live(live, at) => (self.live, self.live_at) = (Some(live), at),
            Observation::Owners(answer) => self.owner.answer = Some(answer),
            Observation::Objective(objective) => self.objective = Some(objective),
            Observation::OpenRequests(open) => self.waiting.requests_open = Some(open),
            Observation::FreshTail(tail) => self.fresh_tail = Some(tail),
            Observation::Evidence(evidence) => self.audit.evidence = Some(evidence),
            Observation::CheckTranscript(transcript) => self.checks.current.transcript = Some(transcript),
            Observation::FinishedReview(finished) => self.review.finished = Some(finished),
            Observation::CitedFiles(files, at) => self.review.files = Some((files, at)),
            Observation::ReadBack(read_back) => self.deliver.read_back = Some(read_back),
            Observation::Wrote(slot, written) => _ = self.written.insert(slot, written),
            Observation::Held(slot, held) => _ = self.held.insert(slot, held),
            Observation::Trailed(slot) => _ = self.trailed.insert(slot),
            Observation::Audited(answer, at) => self.audit.answer = Some((answer, at)),
            Observation::Claimed(ClaimFor::Check, round) => self.checks.current.claims.push(round),
            Observation::Claimed(ClaimFor::Review, round) => self.review.claims.push(round),
            Observation::CheckRan(run) => self.checks.current.run = Some(run),
            Observation::CheckConcluded(run) => {
                self.checks.runs.push(run);
                self.checks.current = CheckSeen::default();
            }
            Observation::ReviewerOpened(opened) => self.review.opened = Some(opened),
            Observation::ReviewerAsked(turn) => self.review.turns.push(turn),
            Observation::ReviewerCost(cost) => self.review.cost = Some(cost),
            Observation::ChangedFiles(files) => self.changed_files = Some(files),
            Observation::ReviewRecorded(last) => self.review.recorded = Some(last),
            Observation::Reposted => self.plan.repost_sent = true,
            Observation::ObjectiveCopied => self.owner.objective_copied = true,
            Observation::CarrierRemembered => self.owner.remembered = true,
            Observation::InputsSettled => self.waiting.inputs_settled = true,
            Observation::DispatchClaimed(claimed) => self.plan.dispatch_claim = Some(claimed),
            Observation::Waited(PauseBefore::ReadBack) => self.deliver.waited = true,
            Observation::Waited(PauseBefore::Retry) => self.deliver.dispatch.push(DispatchStep::Waited),
            Observation::HeardLate(repaired) => self.deliver.repaired_late = Some(repaired),
            Observation::Dispatched(step) => self.deliver.dispatch.push(step),
            Observation::ContinuationAnnounced => self.deliver.announced = true,
            Observation::Announced => self.announced = true,
        }
    }
}
