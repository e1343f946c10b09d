//! Gather: the reads a decision asks for ([`Need`]), made and returned as [`Observation`]s (what
//! the tick has [`Seen`] absorbs them). Reads only: OpenCode's routes, the data directory, and the runtime's memory of
//! owners (`owners.rs`, `holders.rs`, `list_gate.rs`) and of what events showed (the scheduler's
//! facts). Reads that belong together are made at once (the session beside the live state, the
//! live state beside an owner list), so a tick spends as few round trips as it can.

mod changed_files;
pub mod holders;
pub mod list_gate;
pub mod owners;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::Value;
use tokio::time::Instant;
use tracing::warn;

use crate::config::GoalConfig;
use crate::error::HttpError;
use crate::evidence::digest;
use crate::evidence::no_progress::ProgressState;
use crate::goal::decide::dispatch_rules::{DispatchStep, ReconcileRead};
use crate::goal::decide::review_rules::{final_reply, parse_answer, reviewer_cost, REVIEWER_MESSAGES};
use crate::goal::decide::seen::{Evidence, First, Live, OwnerAnswer, ReadBack, Seen, Transcript};
use crate::goal::decide::wait_rules::Route;
use crate::goal::decide::{Need, Observation};
use crate::goal::gather::owners::{ListAnswer, Owners};
use crate::io::opencode::OpenCodeClient;
use crate::io::services::Services;
use crate::record::check_id::is_check_message;
use crate::record::session::{chronological, Message, SessionView};
use crate::sched::facts::TickFacts;

/// What the gatherer reads with.
pub struct Reader<'a> {
    /// OpenCode.
    pub client: &'a OpenCodeClient,
    /// The data directory (settings switches, objective files).
    pub services: &'a Services,
    /// The runtime's settings.
    pub config: &'a GoalConfig,
    /// What events showed of each session.
    pub facts: &'a TickFacts,
    /// The owner lists and the carriers they showed.
    pub owners: &'a Arc<Owners>,
}

/// The first read of a session, as a write may build on it: the session, the write epoch taken
/// before the read was sent, and when it was answered.
pub type FirstRead = (SessionView, u64, Instant);

/// Status, children, messages (parsed and raw) and todos, as read at once.
type LiveReads = (
    Result<Value, HttpError>,
    Result<Vec<SessionView>, HttpError>,
    Result<(Vec<Message>, Vec<Value>), HttpError>,
    Option<Value>,
);

impl Reader<'_> {
    /// The settings switches and the session, read at once, and the live state beside them for
    /// a goal events showed active (a retry reads the session alone: when the session is what
    /// fails, one request, not five; so does a tick in a directory whose lists are failing).
    /// Returns the session read as a base a write may build on: the session, the write epoch
    /// taken before it was sent, and when it was answered.
    pub async fn first(&self, seen: &Seen) -> (Vec<Observation>, Option<FirstRead>) {
        let (session_id, directory) = (seen.session_id.clone(), seen.directory.clone());
        let epoch = self.client.write_slots().epoch(&session_id);
        let early = seen.attempt == 0 && self.facts.known_active(&session_id) && !self.owners.backing_off(&directory);
        let read_session = async {
            let session = self.client.get_session(&session_id, &directory).await;
            (session, Instant::now())
        };
        let (flags, ((session, answered), live)) = tokio::join!(self.services.data_dir.flags(), async {
            if early {
                let (session, live) = tokio::join!(read_session, self.read_live(&session_id, &directory));
                (session, Some(live))
            } else {
                (read_session.await, None)
            }
        });
        let now = self.client.clock().now_ms();
        let mut seen_now: Vec<Observation> = live.map(|live| self.live(seen, live, now)).into_iter().collect();
        if let Err(error) = &session {
            warn!(target: "session_goal", session = %session_id, %error, attempt = seen.attempt, "session unreadable");
        }
        let goal = session.as_ref().ok().and_then(SessionView::goal);
        let base = session.as_ref().ok().map(|s| (s.clone(), epoch, answered));
        let first = First { enabled: flags.goal_enabled, notify: flags.notify_on_completion, session, goal };
        seen_now.push(Observation::First(first, now));
        (seen_now, base)
    }

    /// Answers `need`: what it showed (two observations when a read went beside another).
    pub async fn read(&self, seen: &Seen, need: Need) -> Vec<Observation> {
        let (id, dir) = (seen.session_id.as_str(), seen.directory.as_str());
        let one = match need {
            Need::First => return self.first(seen).await.0,
            Need::Owners => return self.owners(seen).await,
            Need::Objective => Observation::Objective(self.objective(seen).await),
            Need::Live => {
                let live = self.read_live(id, dir).await;
                self.live(seen, live, self.client.clock().now_ms())
            }
            Need::OpenRequests => Observation::OpenRequests(self.requests_open(seen).await),
            Need::FreshTail => Observation::FreshTail(self.client.messages(id, dir, self.config.message_limit).await),
            Need::Evidence { tail, reply } => Observation::Evidence(self.evidence(seen, &tail, &reply).await),
            Need::CheckTranscript => Observation::CheckTranscript(self.transcript(id, dir).await),
            Need::FinishedReview { title } => Observation::FinishedReview(self.finished_review(id, dir, &title).await),
            Need::CitedFiles(files) => {
                let existing = self.existing_files(dir, &files).await;
                Observation::CitedFiles(existing, self.client.clock().now_ms())
            }
            Need::ReadBack => Observation::ReadBack(self.read_back(id, dir).await),
            Need::PostSession => Observation::Dispatched(DispatchStep::Session(
                self.client.get_session(id, dir).await.ok().map(Box::new),
            )),
            Need::Stored(message_id) => {
                let messages = self.client.messages(id, dir, self.config.message_limit).await;
                let stored = messages.is_ok_and(|messages| messages.iter().any(|m| m.id == message_id));
                Observation::Dispatched(DispatchStep::Stored(stored))
            }
            Need::Reconcile => {
                Observation::Dispatched(DispatchStep::Reconciled(Box::new(self.reconcile(id, dir).await)))
            }
            Need::ReviewerCost(session) => {
                let messages = self.client.messages(&session, dir, REVIEWER_MESSAGES).await;
                Observation::ReviewerCost(messages.map(|messages| reviewer_cost(&messages)).unwrap_or(0.0))
            }
            Need::ChangedFiles => Observation::ChangedFiles(self.changed_files(seen).await),
        };
        vec![one]
    }

    /// Status, children, messages and todos at once. The todo list is evidence for the audit:
    /// read beside the live state, so an audited turn spends no extra round trip on it.
    async fn read_live(&self, session_id: &str, directory: &str) -> LiveReads {
        let client = self.client;
        tokio::join!(
            client.status_map(directory),
            client.children(session_id, directory),
            client.messages_with_raw(session_id, directory, self.config.message_limit),
            client.session_evidence(session_id, directory, "/todo", None),
        )
    }

    /// The live state as read at `now`.
    fn live(&self, seen: &Seen, reads: LiveReads, now: f64) -> Observation {
        let live = match reads {
            (Ok(status), Ok(children), Ok((messages, raw)), todos) => {
                let waiting = |id: &str| self.facts.waiting_for_user(id);
                let waiting_events = waiting(&seen.session_id) || children.iter().any(|c| waiting(&c.id));
                Ok(Live { status, children, messages, raw, todos, waiting_events })
            }
            (status, children, messages, _) => {
                let failed: Vec<(Route, HttpError)> = [
                    (Route::Status, status.err()),
                    (Route::Children, children.err()),
                    (Route::Messages, messages.err()),
                ]
                .into_iter()
                .filter_map(|(route, error)| Some((route, error?)))
                .collect();
                let which = failed.iter().map(|(route, _)| route.as_str()).collect::<Vec<_>>().join(", ");
                warn!(target: "session_goal", session = %seen.session_id, failed = %which, attempt = seen.attempt, "live state unreadable");
                Err(failed)
            }
        };
        Observation::Live(live, now)
    }

    /// What the owner lists tell of the goal's carriers: for a goal that names no session, the
    /// list that tells its owner is waited for (started at intake, or here), the live state read
    /// meanwhile when it was not read yet, so the list costs the tick no round trip of its own.
    async fn owners(&self, seen: &Seen) -> Vec<Observation> {
        let Some(goal) = seen.goal().cloned() else { return Vec::new() };
        let mut observations = Vec::new();
        let (session_id, directory) = (seen.session_id.clone(), seen.directory.clone());
        let answer = if !self.owners.needs_list(&goal) {
            let oldest = self.owners.holders().older_than(&goal.id, &session_id);
            ListAnswer::Listed(crate::goal::decide::lineage::OwnerView { listed: true, oldest })
        } else if seen.live.is_none() && !self.owners.backing_off(&directory) {
            let (listed, live) = tokio::join!(
                self.owners.wait_listed(&directory, &goal, &session_id),
                self.read_live(&session_id, &directory)
            );
            observations.push(self.live(seen, live, self.client.clock().now_ms()));
            listed
        } else {
            self.owners.wait_listed(&directory, &goal, &session_id).await
        };
        observations.push(Observation::Owners(match answer {
            ListAnswer::Listed(view) => OwnerAnswer::Listed(view),
            ListAnswer::CannotList => OwnerAnswer::CannotList,
            ListAnswer::Failing { detail, .. } => OwnerAnswer::Failing { detail },
        }));
        observations
    }

    /// The objective the tick works toward: the objective file's text for a file-backed goal (the
    /// inline objective when the file is unreadable); `None` when there is none.
    async fn objective(&self, seen: &Seen) -> Option<String> {
        let goal = seen.goal()?;
        if goal.objective_file {
            if let Some(text) = self.services.data_dir.read_objective(&seen.session_id).await {
                return Some(text);
            }
            if goal.objective.is_empty() {
                warn!(target: "session_goal", session = %seen.session_id, "objective unavailable; retrying");
                return None;
            }
            warn!(target: "session_goal", session = %seen.session_id, "objective file unreadable; using inline objective");
        }
        Some(goal.objective.clone())
    }

    /// Whether OpenCode lists an open permission or question of the session or one of its
    /// children. A list that cannot be read keeps what the events said.
    async fn requests_open(&self, seen: &Seen) -> bool {
        let children = seen.live().map(|l| l.children.as_slice()).unwrap_or_default();
        let (permissions, questions) = tokio::join!(
            self.client.call("GET", "/permission", &seen.directory, None),
            self.client.call("GET", "/question", &seen.directory, None),
        );
        let (Ok(permissions), Ok(questions)) = (permissions, questions) else { return true };
        let session_id = seen.session_id.as_str();
        let ours = |request: &Value| {
            let owner = request.get("sessionID").and_then(Value::as_str);
            owner == Some(session_id) || children.iter().any(|c| owner == Some(c.id.as_str()))
        };
        [permissions, questions].iter().any(|list| list.as_array().is_some_and(|items| items.iter().any(ours)))
    }

    /// The evidence of the turns since the previous audit (from the transcript without the
    /// runtime's own check runs, the todo list the tick holds, and the diff route only when a
    /// turn recorded no summary), and the no-progress breaker advanced.
    async fn evidence(&self, seen: &Seen, tail: &str, reply: &str) -> Evidence {
        let goal = seen.goal().expect("an audit has a goal");
        let live = seen.live().expect("an audit follows the live state");
        let without_checks: Option<Vec<Value>> = live
            .raw
            .iter()
            .any(is_check_message)
            .then(|| live.raw.iter().filter(|m| !is_check_message(m)).cloned().collect());
        let messages = without_checks.as_deref().unwrap_or(&live.raw);
        let cursor = ProgressState::of_goal(goal).cursor_for(tail, goal.created_at);
        let diff = self.diff(seen, messages, &digest::window(messages, &cursor, tail)).await;
        let limits = &self.config.evidence.limits;
        crate::goal::decide::verdict::evidence(goal, messages, diff.as_ref(), live.todos.as_ref(), tail, reply, limits)
    }

    /// The session diff of the turns in `window`: the summaries their user messages recorded,
    /// else the newest turn's `/diff`, else the session's.
    async fn diff(&self, seen: &Seen, messages: &[Value], window: &[&Value]) -> Option<Value> {
        let (client, session_id, directory) = (self.client, seen.session_id.as_str(), seen.directory.as_str());
        match digest::turn_diffs(messages, window) {
            Ok(diffs) => Some(diffs),
            Err(missing) => match missing.first() {
                Some(message_id) => {
                    match client.session_evidence(session_id, directory, "/diff", Some(message_id)).await {
                        Some(diff) => Some(diff),
                        None => client.session_evidence(session_id, directory, "/diff", None).await,
                    }
                }
                None => client.session_evidence(session_id, directory, "/diff", None).await,
            },
        }
    }

    /// The session just before a check: its status, transcript and goal, read at once.
    async fn transcript(&self, session_id: &str, directory: &str) -> Result<Transcript, ()> {
        let client = self.client;
        let (status, messages, session) = tokio::join!(
            client.status_map(directory),
            client.messages_with_raw(session_id, directory, self.config.message_limit),
            client.get_session(session_id, directory),
        );
        let (Ok(status), Ok((messages, raw)), Ok(session)) = (status, messages, session) else { return Err(()) };
        let busy =
            status.get(session_id).and_then(|s| s.get("type")).and_then(Value::as_str).is_some_and(|t| t != "idle");
        let newest = chronological(&messages).last().map(|m| m.id.clone()).unwrap_or_default();
        Ok(Transcript { busy, raw, newest, goal: session.goal() })
    }

    /// A reviewer session of this tail (named by `title`) that already gave a readable answer:
    /// its id, the answer and its cost.
    async fn finished_review(
        &self,
        session_id: &str,
        directory: &str,
        title: &str,
    ) -> Option<(String, crate::goal::decide::review_rules::ReviewAnswer, f64)> {
        let children = self.client.children(session_id, directory).await.ok()?;
        let child = children.into_iter().find(|c| c.title == title)?;
        let messages = self.client.messages(&child.id, directory, REVIEWER_MESSAGES).await.ok()?;
        let answer = final_reply(&messages, &HashSet::new()).and_then(|m| parse_answer(&m.text))?;
        Some((child.id, answer, reviewer_cost(&messages)))
    }

    /// Which of `files` exist in the project, each looked up in its directory's listing (one
    /// listing per directory; a directory that cannot be listed holds nothing).
    async fn existing_files(&self, directory: &str, files: &[String]) -> HashSet<String> {
        let mut listings: HashMap<String, Vec<(String, bool)>> = HashMap::new();
        let mut found = HashSet::new();
        for path in files {
            let (dir, name) = path.rsplit_once('/').unwrap_or((".", path.as_str()));
            if !listings.contains_key(dir) {
                let listing = self.client.list_directory(directory, dir).await.unwrap_or_default();
                listings.insert(dir.to_string(), listing);
            }
            if listings[dir].iter().any(|(entry, is_dir)| entry == name && !is_dir) {
                found.insert(path.clone());
            }
        }
        found
    }

    /// The status, the transcript and the session at once, to reconcile a post without an id.
    async fn reconcile(&self, session_id: &str, directory: &str) -> ReconcileRead {
        let (status, messages, session) = tokio::join!(
            self.client.status_map(directory),
            self.client.messages(session_id, directory, self.config.message_limit),
            self.client.get_session(session_id, directory)
        );
        ReconcileRead { status: status.ok(), messages: messages.ok(), session: session.ok() }
    }

    /// The goal and the tail read back after the reservation: only a fresh read shows a user who
    /// typed, paused, edited or cleared right after it landed.
    async fn read_back(&self, session_id: &str, directory: &str) -> ReadBack {
        let (session, messages) = tokio::join!(
            self.client.get_session(session_id, directory),
            self.client.messages(session_id, directory, self.config.message_limit)
        );
        if let Err(error) = &session {
            warn!(target: "session_goal", session = session_id, %error, "goal re-check failed");
        }
        let newest = messages.map(|m| chronological(&m).last().map(|m| m.id.clone()).unwrap_or_default());
        if let Err(error) = &newest {
            warn!(target: "session_goal", session = session_id, %error, "tail re-check failed");
        }
        ReadBack { session, newest }
    }
}
