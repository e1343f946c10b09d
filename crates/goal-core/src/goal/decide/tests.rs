//! The decision as tables, in milliseconds: a tick walked against a world held in memory (what
//! OpenCode holds, what the auditor answers, how writes go), every read answered and every effect
//! carried out by the walker the way the gatherer and the executor would, and the walk's end and
//! effects compared with the row. No runtime, no clock, no I/O.

use crate::sched::outcome::TickOutcome;
use serde_json::{json, Map, Value};

use super::change::ApplyWith;
use super::check_rules::{ClaimRound, FirstClaim};
use super::decision::{Decision, Effect, Need, Slot};
use super::dispatch_rules::{DispatchStep, PostAnswer};
use super::observation::Observation;
use super::seen::{First, Held, Live, OwnerAnswer, ReadBack, Seen, Written};
use super::{decide, lineage::OwnerView};
use crate::config::GoalConfig;
use crate::error::HttpError;
use crate::record::cause::CauseCode;
use crate::record::session::{Message, SessionView};
use crate::record::small_model_call::SmallModelReply;
use crate::record::{Goal, GoalStatus};

const NOW: f64 = 1_800_000_000_000.0;

/// What the walked tick finds, and how its effects go.
struct World {
    config: GoalConfig,
    attempt: u32,
    enabled: bool,
    /// The settings file asks for a notification when a goal settles.
    notify: bool,
    /// The session as OpenCode answers it (`Err`: the read fails).
    session: Result<Value, HttpError>,
    owners: OwnerAnswer,
    /// The objective file's text (`None`: the goal's inline objective).
    objective: Option<Option<String>>,
    status: Value,
    children: Vec<Value>,
    /// The transcript, raw (`Err`: the messages route fails).
    messages: Result<Value, HttpError>,
    waiting_events: bool,
    requests_open: bool,
    /// The auditor's answers, in order.
    audits: Vec<Result<Value, String>>,
    /// Every goal write fails.
    writes_fail: bool,
    /// No user action during the tick.
    current: bool,
    /// What OpenCode answers every post of the continuation.
    post: PostAnswer,
    /// A message newer than the tail shows at the read-back (the user typed, another host
    /// posted).
    newer_at_read_back: bool,
}

impl World {
    /// A session with an active goal and one finished exchange, idle, on the default settings.
    fn new(goal: Value) -> World {
        World {
            config: GoalConfig::default(),
            attempt: 0,
            enabled: true,
            notify: true,
            session: Ok(session(goal)),
            owners: OwnerAnswer::Listed(OwnerView { listed: true, oldest: None }),
            objective: None,
            status: json!({}),
            children: Vec::new(),
            messages: Ok(exchange("Done: the parser handles nested lists.")),
            waiting_events: false,
            requests_open: false,
            audits: vec![Ok(json!({"verdict": "continue", "note": "more to do"}))],
            writes_fail: false,
            current: true,
            post: PostAnswer::Sent,
            newer_at_read_back: false,
        }
    }

    fn messages(mut self, messages: Value) -> World {
        self.messages = Ok(messages);
        self
    }

    fn audit(mut self, answer: Value) -> World {
        self.audits = vec![Ok(answer)];
        self
    }
}

/// A session `ses_1` in `/p` carrying `goal`.
fn session(goal: Value) -> Value {
    json!({"id": "ses_1", "directory": "/p", "time": {"created": NOW - 3_600_000.0},
        "metadata": {"openchamber": {"goal": goal}}})
}

/// An active goal named `g` of session `ses_1`, with `fields` over it.
fn goal(fields: Value) -> Value {
    let mut goal = json!({"id": "g", "status": "active", "objective": "Make the parser handle nested lists",
        "sessionId": "ses_1", "createdAt": NOW - 3_600_000.0, "updatedAt": NOW - 3_600_000.0});
    for (key, value) in fields.as_object().expect("fields") {
        goal[key] = value.clone();
    }
    goal
}

/// A user message and the agent's finished reply `text`, a minute ago.
fn exchange(text: &str) -> Value {
    json!([
        {"info": {"id": "msg_0000000a0001AAAAAAAAAAAAAA", "role": "user", "time": {"created": NOW - 120_000.0}},
         "parts": [{"type": "text", "text": "Please make the parser handle nested lists"}]},
        {"info": {"id": "msg_0000000a0002AAAAAAAAAAAAAA", "role": "assistant", "parentID": "msg_0000000a0001AAAAAAAAAAAAAA",
            "time": {"created": NOW - 110_000.0, "completed": NOW - 60_000.0}, "finish": "stop",
            "providerID": "mock", "modelID": "mock-model", "agent": "build",
            "tokens": {"input": 1000, "output": 100}},
         "parts": [{"type": "text", "text": text}]},
    ])
}

/// What a walk did.
#[derive(Default)]
struct Walk {
    decisions: Vec<Decision>,
    end: Option<TickOutcome>,
    /// The goal as stored at the end.
    stored: Option<Goal>,
    trail: Vec<Map<String, Value>>,
    posts: usize,
    /// The bodies of the continuation's posts.
    bodies: Vec<Value>,
    notified: bool,
    /// The notification, when one was made.
    notification: Option<Value>,
}

impl Walk {
    fn cause(&self) -> Option<CauseCode> {
        self.stored.as_ref()?.cause.as_ref().map(|c| c.code)
    }

    fn status(&self) -> Option<GoalStatus> {
        self.stored.as_ref().map(|g| g.status)
    }

    fn did(&self, what: impl Fn(&Decision) -> bool) -> bool {
        self.decisions.iter().any(what)
    }
}

/// Walks one tick through `world`: reads answered from it, effects carried out on it.
fn walk(mut world: World) -> Walk {
    let mut seen = Seen::new("ses_1", "/p", "me", world.attempt);
    let mut walk = Walk::default();
    let mut stored: Option<Goal> = world.session.as_ref().ok().and_then(SessionView::from_value).and_then(|s| s.goal());
    for _ in 0..200 {
        seen.current = world.current;
        let decision = decide(&seen, &world.config, NOW);
        walk.decisions.push(decision.clone());
        match decision {
            Decision::End(end) => {
                walk.end = Some(end);
                break;
            }
            Decision::Read(need) => seen.absorb(answer(&world, &seen, need, stored.as_ref())),
            Decision::Act(effect) => seen.absorb(act(&mut world, &mut walk, &mut stored, effect)),
        }
    }
    walk.stored = stored;
    walk
}

/// What the walker's world answers to `need`, as the gatherer would.
fn answer(world: &World, seen: &Seen, need: Need, stored: Option<&Goal>) -> Observation {
    match need {
        Need::First => {
            let session = world.session.clone().map(|s| SessionView::from_value(&s).expect("a session"));
            let goal = session.as_ref().ok().and_then(SessionView::goal);
            Observation::First(First { enabled: world.enabled, notify: world.notify, session, goal }, NOW)
        }
        Need::Owners => Observation::Owners(world.owners.clone()),
        Need::Objective => {
            let inline = seen.goal().map(|g| g.objective.clone());
            Observation::Objective(world.objective.clone().unwrap_or(inline))
        }
        Need::Live => Observation::Live(
            match &world.messages {
                Ok(raw) => Ok(Live {
                    status: world.status.clone(),
                    children: world.children.iter().filter_map(SessionView::from_value).collect(),
                    messages: Message::list_from_value(raw).expect("messages"),
                    raw: raw.as_array().cloned().unwrap_or_default(),
                    todos: None,
                    waiting_events: world.waiting_events,
                }),
                Err(error) => Err(vec![(super::wait_rules::Route::Messages, error.clone())]),
            },
            NOW,
        ),
        Need::OpenRequests => Observation::OpenRequests(world.requests_open),
        Need::FreshTail => Observation::FreshTail(Ok(seen.live().expect("live").messages.clone())),
        Need::Evidence { tail, reply } => {
            let (goal, live) = (seen.goal().expect("goal").clone(), seen.live().expect("live").clone());
            let limits = world.config.evidence.limits.clone();
            Observation::Evidence(super::verdict::evidence(&goal, &live.raw, None, None, &tail, &reply, &limits))
        }
        Need::ReadBack => {
            let mut session = SessionView::from_value(world.session.as_ref().expect("session")).expect("a session");
            if let Some(goal) = stored {
                session.metadata.insert("openchamber".into(), json!({"goal": goal.to_value()}));
            }
            let newest = seen.live().and_then(|l| l.messages.last()).map(|m| m.id.clone()).unwrap_or_default();
            let newest = if world.newer_at_read_back { "msg_0000000a0009AAAAAAAAAAAAAA".into() } else { newest };
            Observation::ReadBack(ReadBack { session: Ok(session), newest: Ok(newest) })
        }
        // The goal as stored, still the one reserved; the continuation never stored.
        Need::PostSession => {
            let mut session = SessionView::from_value(world.session.as_ref().expect("session")).expect("a session");
            session.metadata.insert("openchamber".into(), json!({"goal": stored.map(Goal::to_value)}));
            Observation::Dispatched(DispatchStep::Session(Some(Box::new(session))))
        }
        Need::Stored(_) => Observation::Dispatched(DispatchStep::Stored(false)),
        Need::ChangedFiles => Observation::ChangedFiles(Some(vec!["src/parser.rs".into()])),
        other => panic!("no answer for {other:?} in this walker"),
    }
}

/// What carrying `effect` out on the walker's world does, as the executor would.
fn act(world: &mut World, walk: &mut Walk, stored: &mut Option<Goal>, effect: Effect) -> Observation {
    let apply = |write: &super::Write, stored: &mut Option<Goal>| -> Written {
        if world.writes_fail {
            return Written::Failed;
        }
        let Some(goal) = stored.as_mut() else { return Written::Stale };
        let mut fresh = goal.clone();
        let with = ApplyWith { session_id: "ses_1", holder: "me", now: NOW, lease_ms: 120_000.0 };
        match write.change.apply(&mut fresh, &with) {
            Ok(()) => {
                *goal = fresh.clone();
                Written::Goal(Box::new(fresh))
            }
            Err(_) => Written::Stale,
        }
    };
    match effect {
        Effect::Write(write) => Observation::Wrote(write.slot, apply(&write, stored)),
        Effect::Settle { write, trail } => {
            walk.trail.extend(trail.map(|line| line.record));
            Observation::Wrote(write.slot, apply(&write, stored))
        }
        Effect::Announce { notification, .. } => {
            walk.notified = notification.is_some();
            walk.notification = notification;
            Observation::Announced
        }
        Effect::Watched(write) => Observation::Held(
            write.slot,
            match apply(&write, stored) {
                Written::Goal(goal) => Held::Written { goal, contested: false, late: false },
                Written::Stale => Held::Stale,
                Written::Failed => Held::Failed,
            },
        ),
        Effect::Trail(line) => {
            walk.trail.push(line.record);
            Observation::Trailed(line.slot)
        }
        Effect::Audit(_) => {
            let answer = if world.audits.len() > 1 { world.audits.remove(0) } else { world.audits[0].clone() };
            let reply = answer.map(|v| SmallModelReply {
                text: v.to_string(),
                provider_id: "small".into(),
                model_id: "nano".into(),
                tokens: Some(10),
            });
            Observation::Audited(reply, NOW)
        }
        Effect::ClaimDispatch => Observation::DispatchClaimed(true),
        Effect::RememberCarrier => Observation::CarrierRemembered,
        Effect::CopyObjective { .. } => Observation::ObjectiveCopied,
        Effect::InputsSettled(_) => Observation::InputsSettled,
        Effect::Post { body, .. } => {
            walk.posts += 1;
            walk.bodies.push(body);
            Observation::Dispatched(DispatchStep::Posted(world.post))
        }
        Effect::Repost { .. } => {
            walk.posts += 1;
            Observation::Reposted
        }
        Effect::Claim { run, .. } => {
            let first = FirstClaim { holder: "me".into(), part_id: "prt_1".into(), created: NOW };
            Observation::Claimed(run, ClaimRound::Read { first, at: NOW })
        }
        Effect::Pause { before, .. } => Observation::Waited(before),
        Effect::AnnounceContinuation => Observation::ContinuationAnnounced,
        Effect::HearLate => Observation::HeardLate(false),
        other => panic!("no effect {other:?} in this walker"),
    }
}

fn ended(walk: &Walk) -> TickOutcome {
    walk.end.expect("the walk ended")
}

#[test]
fn the_first_reads_end_a_tick_that_has_nothing_to_drive() {
    let mut off = World::new(goal(json!({})));
    off.enabled = false;
    assert_eq!(ended(&walk(off)), TickOutcome::Done, "goals switched off");
    let paused = World::new(goal(json!({"status": "paused"})));
    assert_eq!(ended(&walk(paused)), TickOutcome::Done);
    let mut child = World::new(goal(json!({})));
    child.session =
        Ok(json!({"id": "ses_1", "parentID": "ses_0", "metadata": {"openchamber": {"goal": goal(json!({}))}}}));
    assert_eq!(ended(&walk(child)), TickOutcome::Done, "a subagent carries no goal");
    let mut failing = World::new(goal(json!({})));
    failing.session = Err(HttpError::Status(503));
    assert_eq!(ended(&walk(failing)), TickOutcome::Retry);
}

#[test]
fn a_session_that_is_not_there_is_looked_at_every_30_s_ten_times_then_let_go() {
    let gone = |attempt| {
        let mut world = World::new(goal(json!({})));
        world.session = Err(HttpError::Status(404));
        world.attempt = attempt;
        ended(&walk(world))
    };
    assert_eq!(gone(0), TickOutcome::Retry, "retries first");
    assert_eq!(gone(4), TickOutcome::RetryIn(super::start::GONE_RECHECK));
    assert_eq!(gone(13), TickOutcome::RetryIn(super::start::GONE_RECHECK));
    assert_eq!(gone(14), TickOutcome::Done, "let go after ten looks");
}

#[test]
fn an_audited_turn_is_reserved_then_posted_once() {
    let walk = walk(World::new(goal(json!({}))));
    assert_eq!(ended(&walk), TickOutcome::Continued);
    assert_eq!(walk.posts, 1);
    let stored = walk.stored.as_ref().expect("stored");
    assert_eq!(stored.turns_used, 1, "the turn counted at the reservation");
    assert_eq!(stored.note, "more to do");
    assert_eq!(stored.continuation_for.get().map(String::as_str), Some("msg_0000000a0002AAAAAAAAAAAAAA"));
    assert!(walk.trail.iter().any(|l| l["action"] == "continue" && l["verdict"] == "continue"));
    let order: Vec<&str> = walk
        .decisions
        .iter()
        .filter_map(|d| match d {
            Decision::Act(Effect::Audit(_)) => Some("audit"),
            Decision::Act(Effect::Watched(w)) if w.slot == Slot::Reserved => Some("reserve"),
            Decision::Read(Need::ReadBack) => Some("read back"),
            Decision::Act(Effect::Post { .. }) => Some("post"),
            _ => None,
        })
        .collect();
    assert_eq!(order, ["audit", "reserve", "read back", "post"]);
}

/// Every way a tick settles, with the cause it writes (a table: the world, then the status and
/// cause it ends on).
#[test]
fn every_settle_writes_its_cause() {
    let cases: Vec<(&str, World, GoalStatus, CauseCode)> = vec![
        ("complete", World::new(goal(json!({}))).audit(json!({"verdict": "complete", "note": "done"})), GoalStatus::Complete, CauseCode::Verified),
        (
            "three blocked verdicts",
            World::new(goal(json!({"blockedStreak": 2}))).audit(json!({"verdict": "blocked", "note": "needs a key"})),
            GoalStatus::Blocked,
            CauseCode::AuditorBlocked,
        ),
        ("the auditor down twice", {
            let mut w = World::new(goal(json!({"auditFailStreak": 1})));
            w.audits = vec![Err("status 500".into())];
            w
        }, GoalStatus::Blocked, CauseCode::AuditUnavailable),
        ("token budget", World::new(goal(json!({"tokenBudget": 1000}))), GoalStatus::BudgetLimited, CauseCode::TokenBudget),
        ("turn cap", World::new(goal(json!({"turnsUsed": 20}))), GoalStatus::Blocked, CauseCode::TurnCap),
        ("cost budget", World::new(goal(json!({"costBudget": 0.01, "costUsed": 0.5}))).messages(json!([
            {"info": {"id": "msg_0000000a0001AAAAAAAAAAAAAA", "role": "user", "time": {"created": NOW - 120_000.0}}, "parts": []},
            {"info": {"id": "msg_0000000a0002AAAAAAAAAAAAAA", "role": "assistant", "time": {"created": NOW - 110_000.0, "completed": NOW - 60_000.0},
                "finish": "stop", "providerID": "mock", "modelID": "mock-model", "cost": 0.5}, "parts": []},
        ])), GoalStatus::BudgetLimited, CauseCode::CostBudget),
        ("time budget", World::new(goal(json!({"timeBudgetMs": 1000}))), GoalStatus::BudgetLimited, CauseCode::TimeBudget),
        ("an unreadable guard", World::new(goal(json!({"costBudget": "lots"}))), GoalStatus::Blocked, CauseCode::InvalidGoal),
        ("a turn that failed", World::new(goal(json!({}))).messages(json!([
            {"info": {"id": "msg_0000000a0001AAAAAAAAAAAAAA", "role": "user", "time": {"created": NOW - 120_000.0}}, "parts": []},
            {"info": {"id": "msg_0000000a0002AAAAAAAAAAAAAA", "role": "assistant", "time": {"created": NOW - 110_000.0, "completed": NOW - 60_000.0},
                "error": {"name": "UnknownError", "data": {"message": "boom"}}, "providerID": "mock", "modelID": "mock-model"}, "parts": []},
        ])), GoalStatus::Blocked, CauseCode::TurnFailed),
        ("the provider's key refused", World::new(goal(json!({}))).messages(json!([
            {"info": {"id": "msg_0000000a0001AAAAAAAAAAAAAA", "role": "user", "time": {"created": NOW - 120_000.0}}, "parts": []},
            {"info": {"id": "msg_0000000a0002AAAAAAAAAAAAAA", "role": "assistant", "time": {"created": NOW - 110_000.0, "completed": NOW - 60_000.0},
                "error": {"name": "ProviderAuthError", "data": {"providerID": "mock", "message": "bad key"}}, "providerID": "mock", "modelID": "mock-model"}, "parts": []},
        ])), GoalStatus::Blocked, CauseCode::ProviderAuth),
        ("messages unreadable past the retries", {
            let mut w = World::new(goal(json!({})));
            w.messages = Err(HttpError::Status(500));
            w.attempt = 4;
            w
        }, GoalStatus::Blocked, CauseCode::MessagesUnavailable),
        ("an aborted turn pauses", World::new(goal(json!({}))).messages(json!([
            {"info": {"id": "msg_0000000a0001AAAAAAAAAAAAAA", "role": "user", "time": {"created": NOW - 120_000.0}}, "parts": []},
            {"info": {"id": "msg_0000000a0002AAAAAAAAAAAAAA", "role": "assistant", "time": {"created": NOW - 110_000.0, "completed": NOW - 60_000.0},
                "error": {"name": "MessageAbortedError", "data": {}}, "providerID": "mock", "modelID": "mock-model"}, "parts": []},
        ])), GoalStatus::Paused, CauseCode::UserAborted),
    ];
    for (name, world, status, cause) in cases {
        let walk = walk(world);
        assert_eq!((walk.status(), walk.cause()), (Some(status), Some(cause)), "{name}: {:?}", walk.end);
        assert_eq!(walk.posts, 0, "{name}: nothing posted");
        assert_eq!(ended(&walk), TickOutcome::Settled, "{name}");
        assert_eq!(walk.notified, status != GoalStatus::Paused, "{name}: a settle notifies, a pause does not");
    }
}

/// A settle is announced (the console, the owner memory) whatever the settings file says; only
/// the host's notification follows its switch.
#[test]
fn the_notification_follows_the_settings_switch() {
    let mut quiet = World::new(goal(json!({}))).audit(json!({"verdict": "complete", "note": "done"}));
    quiet.notify = false;
    let walk = walk(quiet);
    assert_eq!((walk.status(), ended(&walk)), (Some(GoalStatus::Complete), TickOutcome::Settled));
    assert!(walk.did(|d| matches!(d, Decision::Act(Effect::Announce { notification: None, .. }))));
    assert!(!walk.notified);
}

/// The gates before any audit: each ends the tick without a write or a post.
#[test]
fn the_gates_end_the_tick_as_the_live_state_says() {
    let busy = World { status: json!({"ses_1": {"type": "busy"}}), ..World::new(goal(json!({}))) };
    assert_eq!(ended(&walk(busy)), TickOutcome::Busy);
    let child = World {
        children: vec![json!({"id": "ses_c", "parentID": "ses_1"})],
        status: json!({"ses_c": {"type": "busy"}}),
        ..World::new(goal(json!({})))
    };
    assert_eq!(ended(&walk(child)), TickOutcome::Rearm);
    let lease = World::new(goal(json!({"lease": {"holder": "other", "expiresAt": NOW + 60_000.0}})));
    assert!(matches!(ended(&walk(lease)), TickOutcome::BackOff(_)), "another host's live lease");
    let fresh = World::new(goal(json!({}))).messages(json!([
        {"info": {"id": "msg_0000000a0001AAAAAAAAAAAAAA", "role": "user", "time": {"created": NOW - 20_000.0}}, "parts": []},
        {"info": {"id": "msg_0000000a0002AAAAAAAAAAAAAA", "role": "assistant", "time": {"created": NOW - 10_000.0, "completed": NOW - 5_000.0},
            "finish": "stop", "providerID": "mock", "modelID": "mock-model"}, "parts": []},
    ]));
    assert!(
        matches!(ended(&walk(fresh)), TickOutcome::BackOff(wait) if wait.as_millis() > 9_000),
        "inside the quiet window"
    );
    let none = World::new(goal(json!({}))).messages(json!([]));
    assert_eq!(ended(&walk(none)), TickOutcome::Done, "no reply yet");
}

#[test]
fn a_request_events_said_is_open_is_read_from_opencode_first() {
    let mut open = World { waiting_events: true, requests_open: true, ..World::new(goal(json!({}))) };
    let noted = walk(open);
    assert_eq!(ended(&noted), TickOutcome::Done);
    assert_eq!(noted.cause(), Some(CauseCode::WaitingForUser));
    open = World { waiting_events: true, requests_open: false, ..World::new(goal(json!({}))) };
    let answered = walk(open);
    assert!(answered.did(|d| matches!(d, Decision::Act(Effect::InputsSettled(_)))));
    assert_eq!(ended(&answered), TickOutcome::Continued, "the answer's event was lost: going on");
}

#[test]
fn a_failing_read_makes_the_goal_wait_and_say_so() {
    let mut world = World::new(goal(json!({})));
    world.messages = Err(HttpError::Status(500));
    let walk = walk(world);
    assert_eq!(ended(&walk), TickOutcome::Retry);
    let cause = walk.stored.as_ref().and_then(|g| g.cause.clone()).expect("a cause");
    assert_eq!(
        (cause.code, cause.detail.as_deref()),
        (CauseCode::WaitingForOpenCode, Some("GET /session/:id/message → 500"))
    );
}

#[test]
fn a_fork_s_copy_is_adopted_paused_and_a_goal_of_unknown_owner_waits() {
    let copy = walk(World::new(goal(json!({"sessionId": "ses_0"}))));
    assert_eq!(ended(&copy), TickOutcome::Done);
    assert_eq!((copy.status(), copy.cause()), (Some(GoalStatus::Paused), Some(CauseCode::Inherited)));
    let mut failing = World::new(goal(json!({"sessionId": null})));
    failing.owners = OwnerAnswer::Failing { detail: "GET /session → 503".into() };
    let waiting = walk(failing);
    assert_eq!(ended(&waiting), TickOutcome::BackOff(super::start::LIST_WAIT_RECHECK));
    assert_eq!(waiting.cause(), Some(CauseCode::WaitingForOpenCode));
    assert!(waiting.stored.as_ref().is_some_and(|g| g.session_id.is_none()), "the goal keeps naming no session");
}

#[test]
fn a_provider_limit_parks_the_goal_and_a_cut_turn_is_continued_visibly() {
    let limited = World::new(goal(json!({}))).messages(json!([
        {"info": {"id": "msg_0000000a0001AAAAAAAAAAAAAA", "role": "user", "time": {"created": NOW - 120_000.0}}, "parts": []},
        {"info": {"id": "msg_0000000a0002AAAAAAAAAAAAAA", "role": "assistant", "time": {"created": NOW - 110_000.0},
            "error": {"name": "APIError", "data": {"message": "slow down", "statusCode": 429, "isRetryable": true,
                "responseHeaders": {"retry-after": "60"}}}, "providerID": "mock", "modelID": "mock-model"}, "parts": []},
    ]));
    let parked = walk(limited);
    assert!(matches!(ended(&parked), TickOutcome::BackOff(_)));
    assert_eq!(parked.cause(), Some(CauseCode::WaitingForProviderLimit));
    assert!(parked.trail.iter().any(|l| l["action"] == "park"));
    let cut = World::new(goal(json!({}))).messages(json!([
        {"info": {"id": "msg_0000000a0001AAAAAAAAAAAAAA", "role": "user", "time": {"created": NOW - 120_000.0}}, "parts": []},
        {"info": {"id": "msg_0000000a0002AAAAAAAAAAAAAA", "role": "assistant", "time": {"created": NOW - 110_000.0},
            "providerID": "mock", "modelID": "mock-model"}, "parts": []},
    ]));
    let continued = walk(cut);
    assert_eq!(ended(&continued), TickOutcome::Continued);
    assert!(!continued.did(|d| matches!(d, Decision::Act(Effect::Audit(_)))), "a cut turn is not audited");
    assert_eq!(continued.stored.as_ref().map(|g| g.note.as_str()), Some(crate::record::reasons::NOTE_TURN_CUT));
    assert!(continued.trail.iter().any(|l| l["action"] == "continue (turn cut)" && l["cut"] == 1));
}

#[test]
fn a_stranded_message_is_posted_again_under_its_ids() {
    let stranded = World::new(goal(json!({}))).messages(json!([
        {"info": {"id": "msg_0000000a0001AAAAAAAAAAAAAA", "role": "user", "time": {"created": NOW - 120_000.0},
            "agent": "build", "model": {"providerID": "mock", "modelID": "mock-model"}},
         "parts": [{"id": "prt_0000000a0001AAAAAAAAAAAAAA", "type": "text", "text": "go on"}]},
    ]));
    let walk = walk(stranded);
    assert_eq!(walk.posts, 1, "one re-post");
    assert!(matches!(ended(&walk), TickOutcome::BackOff(_)));
    assert_eq!(walk.stored.as_ref().and_then(|g| g.reposted.get()).map(|r| r.posts), Some(1));
}

#[test]
fn a_user_action_during_the_tick_ends_it_before_anything_is_posted() {
    let stopped = World { current: false, ..World::new(goal(json!({}))) };
    let walk = walk(stopped);
    assert_eq!(ended(&walk), TickOutcome::Done);
    assert_eq!(walk.posts, 0);
    assert!(!walk.did(|d| matches!(d, Decision::Act(Effect::Audit(_)))));
}

#[test]
fn a_post_that_fails_is_retried_under_its_id_then_settles_blocked() {
    let failed = walk(World { post: PostAnswer::Unclear, ..World::new(goal(json!({}))) });
    assert!(matches!(ended(&failed), TickOutcome::RetryIn(_)), "the same id again later");
    let retries = failed.decisions.iter().filter(|d| matches!(d, Decision::Act(Effect::Pause { .. })));
    assert_eq!((failed.posts, retries.count()), (3, 2), "three posts, a pause before each retry");
    let exhausted = World { post: PostAnswer::Refused, attempt: 4, ..World::new(goal(json!({}))) };
    let settled = walk(exhausted);
    assert_eq!((settled.status(), settled.cause()), (Some(GoalStatus::Blocked), Some(CauseCode::DispatchFailed)));
    assert_eq!(settled.stored.as_ref().map(|g| g.turns_used), Some(0), "a refused turn goes back");
}

#[test]
fn a_write_that_fails_never_reports_the_goal_settled() {
    let failing = World { writes_fail: true, ..World::new(goal(json!({}))).audit(json!({"verdict": "complete"})) };
    assert!(matches!(ended(&walk(failing)), TickOutcome::RetryIn(_)));
}

/// The agent's first reply, then a person's message `words`, then the agent's answer to it.
fn person_said(words: &str) -> Value {
    let mut messages = exchange("Half of it is done.");
    let list = messages.as_array_mut().expect("a list");
    list.push(
        json!({"info": {"id": "msg_0000000a0003AAAAAAAAAAAAAA", "role": "user", "time": {"created": NOW - 100_000.0}},
        "parts": [{"type": "text", "text": words}]}),
    );
    list.push(json!({"info": {"id": "msg_0000000a0004AAAAAAAAAAAAAA", "role": "assistant", "parentID": "msg_0000000a0003AAAAAAAAAAAAAA",
        "time": {"created": NOW - 90_000.0, "completed": NOW - 60_000.0}, "finish": "stop",
        "providerID": "mock", "modelID": "mock-model", "agent": "build", "tokens": {"input": 1200, "output": 50}},
        "parts": [{"type": "text", "text": "Understood."}]}));
    messages
}

/// A `pause` verdict is obeyed only over a person's message: the goal settles paused quoting
/// them, the host is told once, and nothing is posted; without one it counts as `continue`.
#[test]
fn a_person_s_stop_pauses_the_goal_and_a_groundless_pause_goes_on() {
    let words = "stop here, I'll finish it myself — the rest of the refactor is mine, thanks for the help so far, really appreciated it all";
    let pause = json!({"verdict": "pause", "note": "the person asked to stop"});
    let stopped = walk(World::new(goal(json!({}))).messages(person_said(words)).audit(pause.clone()));
    assert_eq!(ended(&stopped), TickOutcome::Settled);
    assert_eq!((stopped.status(), stopped.cause()), (Some(GoalStatus::Paused), Some(CauseCode::UserAskedToPause)));
    let stored = stopped.stored.as_ref().expect("stored");
    let detail = stored.cause.as_ref().and_then(|c| c.detail.clone()).expect("a detail");
    assert_eq!(detail, words.chars().take(120).collect::<String>(), "the detail quotes the first 120 characters");
    assert_eq!(stored.status_reason, crate::record::reasons::REASON_ASKED_TO_PAUSE);
    assert!(stored.note.contains("stop here, I'll finish it myself"), "{}", stored.note);
    assert_eq!((stopped.posts, stopped.notified), (0, true), "one notification, no continuation");
    let audited = stopped.decisions.iter().find_map(|d| match d {
        Decision::Act(Effect::Audit(query)) => Some(query.prompt.clone()),
        _ => None,
    });
    assert!(audited.expect("an audit").contains(&format!("<person_message>\n{words}\n</person_message>")));
    assert!(stopped.trail.iter().any(|l| l["verdict"] == "pause" && l["action"] == "paused"));

    let groundless = walk(World::new(goal(json!({}))).audit(pause));
    assert_eq!(ended(&groundless), TickOutcome::Continued, "no person's message: the pause is not obeyed");
    assert_eq!((groundless.status(), groundless.posts), (Some(GoalStatus::Active), 1));
    let action = crate::record::reasons::ACTION_PAUSE_UNFOUNDED;
    assert!(groundless.trail.iter().any(|l| l["verdict"] == "pause" && l["action"] == action), "the trail says why");

    let more = walk(World::new(goal(json!({}))).messages(person_said("also handle empty input")));
    assert_eq!(
        (ended(&more), more.posts),
        (TickOutcome::Continued, 1),
        "a person's message that asks for more goes on"
    );
}

/// A message newer than the reserved tail at the read-back (typed while the tick ran, or a turn a
/// restart cut before its events came): nothing is posted, and the goal is looked at again after
/// one quiet window, since that message's events may never come.
#[test]
fn a_newer_message_at_the_read_back_posts_nothing_and_looks_again() {
    let walk = walk(World { newer_at_read_back: true, ..World::new(goal(json!({}))) });
    assert_eq!((ended(&walk), walk.posts), (TickOutcome::Rearm, 0));
}

/// Two turns of the goal: its first prompt and a continuation, whose replies left the context at
/// 10,000 and then 14,000 tokens (a turn forecast at 4,000 and a quarter: 5,000), and `more` after.
fn two_turns(more: Value) -> Value {
    let mut list = json!([
        {"info": {"id": "msg_0000000a0001AAAAAAAAAAAAAA", "role": "user", "time": {"created": NOW - 300_000.0}}, "parts": []},
        {"info": {"id": "msg_0000000a0002AAAAAAAAAAAAAA", "role": "assistant", "parentID": "msg_0000000a0001AAAAAAAAAAAAAA",
            "time": {"created": NOW - 299_000.0, "completed": NOW - 290_000.0}, "finish": "stop",
            "providerID": "mock", "modelID": "mock-model", "agent": "build", "tokens": {"input": 10_000, "output": 0}},
         "parts": [{"type": "text", "text": "Started: the skeleton is in place."}]},
        {"info": {"id": "msg_0000000a0003AAAAAAAAAAAAAA", "role": "user", "time": {"created": NOW - 200_000.0}}, "parts": []},
        {"info": {"id": "msg_0000000a0004AAAAAAAAAAAAAA", "role": "assistant", "parentID": "msg_0000000a0003AAAAAAAAAAAAAA",
            "time": {"created": NOW - 199_000.0, "completed": NOW - 60_000.0}, "finish": "stop",
            "providerID": "mock", "modelID": "mock-model", "agent": "build", "tokens": {"input": 14_000, "output": 0}},
         "parts": [{"type": "text", "text": "Nesting half done."}]},
    ]);
    list.as_array_mut().expect("a list").extend(more.as_array().cloned().unwrap_or_default());
    list
}

/// The text of a walk's first post.
fn posted_text(walk: &Walk) -> String {
    walk.bodies.first().map(|b| b["parts"][0]["text"].as_str().unwrap_or_default().to_string()).unwrap_or_default()
}

/// Near a limit, the turn after which a wrap-up would not fit is the wrap-up (its reservation
/// says so); with room for a turn and a wrap-up, a normal turn; with no room for even one turn,
/// the goal stops before it; a goal that does not wrap up goes on as it always did.
#[test]
fn the_wrap_up_replaces_the_turn_that_would_leave_no_room_for_it() {
    let near = |budget: u64, fields: Value| {
        let mut fields = fields;
        fields["tokenBudget"] = json!(budget);
        fields["turnsUsed"] = json!(2);
        walk(World::new(goal(fields)).messages(two_turns(json!([]))))
    };
    let wrap = near(20_000, json!({}));
    assert_eq!((ended(&wrap), wrap.posts), (TickOutcome::Continued, 1));
    assert!(posted_text(&wrap).starts_with("Wrap up the session goal"), "{}", posted_text(&wrap));
    assert!(posted_text(&wrap).contains("Tokens used: 14000 of the budget of 20000."));
    let stored = wrap.stored.as_ref().expect("stored");
    let marker = stored.wrapped_up.get().expect("the wrap-up is recorded with its reservation");
    assert_eq!((marker.cause, Some(&marker.message_id)), (CauseCode::TokenBudget, stored.continuation_id.get()));
    assert_eq!(stored.turns_used, 3, "a wrap-up counts toward the turns");

    let room = near(30_000, json!({}));
    assert!(posted_text(&room).starts_with("Keep working toward the session goal"));
    assert!(room.stored.as_ref().expect("stored").wrapped_up.get().is_none());

    let none = near(18_000, json!({}));
    assert_eq!((ended(&none), none.posts), (TickOutcome::Settled, 0));
    assert_eq!((none.status(), none.cause()), (Some(GoalStatus::BudgetLimited), Some(CauseCode::TokenBudget)));
    let note = &none.stored.as_ref().expect("stored").note;
    assert_eq!(note, "Stopped before the token budget: 4,000 tokens left, and a turn takes about 5,000.");
    assert!(none.trail.iter().any(|l| l.contains_key("noRoomForWrapUp")));

    let off = near(20_000, json!({"wrapUp": false}));
    assert!(posted_text(&off).starts_with("Keep working toward the session goal"), "the goal's own setting wins");
    let mut host_off = World::new(goal(json!({"tokenBudget": 20_000, "turnsUsed": 2}))).messages(two_turns(json!([])));
    host_off.config.wrap_up = false;
    assert!(posted_text(&walk(host_off)).starts_with("Keep working"), "the host's default");
}

/// The last turn the cap allows is the wrap-up; its reply settles the goal as the cap does today.
#[test]
fn the_last_turn_the_cap_allows_is_the_wrap_up() {
    let last = walk(World::new(goal(json!({"turnsUsed": 19}))));
    assert!(posted_text(&last).contains("Auto-continuations used: 20 of 20."), "{}", posted_text(&last));
    assert_eq!(last.stored.as_ref().and_then(|g| g.wrapped_up.get()).map(|w| w.cause), Some(CauseCode::TurnCap));
}

/// The goal of `two_turns` with a wrap-up out for its last reply (`msg_…04`), and the transcript
/// after it: the wrap-up message and `reply`.
fn after_wrap_up(cause: &str, reply: Value) -> World {
    let tail = "msg_0000000a0004AAAAAAAAAAAAAA";
    let derived = crate::record::continuation_id::continuation_message_id_for("g", tail, Some(NOW - 199_000.0));
    let marker = derived.expect("an id in OpenCode's form");
    let marker = marker.as_str();
    let fields = json!({"tokenBudget": 20_000, "turnsUsed": 3, "continuationFor": "msg_0000000a0004AAAAAAAAAAAAAA",
        "continuationId": marker, "wrappedUp": {"messageId": marker, "cause": cause}});
    let mut more =
        vec![json!({"info": {"id": marker, "role": "user", "time": {"created": NOW - 50_000.0}}, "parts": []})];
    if !reply.is_null() {
        more.push(reply);
    }
    World::new(goal(fields)).messages(two_turns(Value::from(more)))
}

fn wrap_up_reply(text: &str, info: Value) -> Value {
    let wrap_up = crate::record::continuation_id::continuation_message_id_for(
        "g",
        "msg_0000000a0004AAAAAAAAAAAAAA",
        Some(NOW - 199_000.0),
    );
    let mut reply = json!({"info": {"id": "msg_0000000a0006AAAAAAAAAAAAAA", "role": "assistant", "parentID": wrap_up,
        "time": {"created": NOW - 49_000.0, "completed": NOW - 20_000.0}, "finish": "stop",
        "providerID": "mock", "modelID": "mock-model", "tokens": {"input": 18_500, "output": 0}},
        "parts": [{"type": "text", "text": text}]});
    for (key, value) in info.as_object().expect("fields") {
        reply["info"][key] = value.clone();
    }
    reply
}

/// The wrap-up's reply settles the goal at once, with no audit: the limit's status and cause,
/// the handoff's start as the note and in the notification, the whole of it and the changed
/// files in the trail.
#[test]
fn the_wrap_up_s_reply_settles_the_goal_with_its_handoff() {
    let handoff = "## Done\nNested lists parse (src/parser.rs, `npm test` passes).\n## Remaining\nEmpty lists.";
    let settled = walk(after_wrap_up("tokenBudget", wrap_up_reply(handoff, json!({}))));
    assert_eq!((ended(&settled), settled.posts), (TickOutcome::Settled, 0));
    assert!(!settled.did(|d| matches!(d, Decision::Act(Effect::Audit(_)))), "no audit after a wrap-up");
    assert_eq!((settled.status(), settled.cause()), (Some(GoalStatus::BudgetLimited), Some(CauseCode::TokenBudget)));
    let note = settled.stored.as_ref().expect("stored").note.clone();
    assert_eq!(note, "Handoff: Done Nested lists parse (src/parser.rs, `npm test` passes). Remaining Empty lists.");
    let line = settled.trail.iter().find(|l| l.contains_key("handoff")).expect("the handoff in the trail");
    assert_eq!((line["handoff"].as_str(), &line["changedFiles"]), (Some(handoff), &json!(["src/parser.rs"])));
    let body = settled.notification.as_ref().expect("notified")["body"].as_str().unwrap_or_default().to_string();
    assert!(body.contains("Handoff: Done Nested lists parse"), "{body}");

    let capped = walk_wrap_up("turnCap");
    assert_eq!((capped.status(), capped.cause()), (Some(GoalStatus::Blocked), Some(CauseCode::TurnCap)));
    let failed =
        walk(after_wrap_up("costBudget", wrap_up_reply("", json!({"error": {"name": "APIError", "data": {}}}))));
    assert_eq!((failed.status(), failed.cause()), (Some(GoalStatus::BudgetLimited), Some(CauseCode::CostBudget)));
    assert_eq!(
        failed.stored.as_ref().expect("stored").note,
        "Handoff: the wrap-up turn ended with APIError and no handoff."
    );
}

fn walk_wrap_up(cause: &str) -> Walk {
    walk(after_wrap_up(cause, wrap_up_reply("Done: all of it.", json!({}))))
}

/// Never where it does not belong: a user's abort of the wrap-up pauses the goal; a wrap-up
/// reserved and not posted (its host killed in between) is posted as it was decided, not audited
/// or decided again; a resume ends the stretch the wrap-up belonged to.
#[test]
fn a_wrap_up_is_paused_by_an_abort_posted_as_decided_and_ended_by_a_resume() {
    let aborted = wrap_up_reply("", json!({"error": {"name": "MessageAbortedError", "data": {}}}));
    let paused = walk(after_wrap_up("tokenBudget", aborted));
    assert_eq!((paused.status(), paused.cause()), (Some(GoalStatus::Paused), Some(CauseCode::UserAborted)));

    // Reserved for `msg_…04`, never posted: the transcript ends at that reply.
    let mut unposted = after_wrap_up("timeBudget", Value::Null);
    unposted.messages = Ok(two_turns(json!([])));
    let walk_unposted = walk(unposted);
    assert!(!walk_unposted.did(|d| matches!(d, Decision::Act(Effect::Audit(_)))), "decided before: no audit");
    assert_eq!(walk_unposted.posts, 1);
    assert!(posted_text(&walk_unposted).starts_with("Wrap up the session goal"));
    let reserved = walk_unposted.stored.as_ref().and_then(|g| g.continuation_id.get().cloned());
    assert_eq!(walk_unposted.bodies[0]["messageID"].as_str().map(str::to_string), reserved, "the same message id");
    assert_eq!(walk_unposted.stored.as_ref().expect("stored").turns_used, 3, "counted once, at its reservation");

    let mut resumed = after_wrap_up("tokenBudget", wrap_up_reply("Done: all of it.", json!({})));
    if let Ok(session) = resumed.session.as_mut() {
        session["metadata"]["openchamber"]["goal"]["statusReason"] = json!("resumed");
        session["metadata"]["openchamber"]["goal"]["tokenBudget"] = json!(1_000_000);
    }
    let after_resume = walk(resumed);
    assert!(after_resume.did(|d| matches!(d, Decision::Act(Effect::Audit(_)))), "a resume goes on with an audit");
    assert!(posted_text(&after_resume).starts_with("Keep working"));
    assert!(after_resume.stored.as_ref().expect("stored").wrapped_up.get().is_none(), "its next turn ends the marker");
}
