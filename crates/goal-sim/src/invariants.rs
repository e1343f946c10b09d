//! The promises, checked after every step (`docs/simulator.md` states each one):
//!
//! - (a) never two different continuations after one tail; never a check run or a review twice
//!   for one claim (a run the server cut may run again: it never finished);
//! - (b) nothing posted after a pause, clear or settle was written, once the posting host could
//!   know it (it wrote the stop, read the session after it, or received its event); no stopped
//!   goal written active again by a host that read it stopped; no pause at a person's request
//!   without a person's words;
//! - (c) never past a guard: turns, tokens, cost, time; never `complete` without a passed
//!   check or an approving review where the goal asks for one;
//! - (d) statuses within the five, causes within the closed list, the record's counters never
//!   decrease (an unused turn given back on a stop excepted);
//! - (e) liveness: while the world is healthy every active goal is driven or settles within
//!   quiet window + sweep interval + the backoff cap (and a lease, and the turn's own time),
//!   and within 15 s more once it heals (judged in `liveness.rs`);
//! - (f) request rates within A.8's budgets;
//! - (g) no silence beyond the bound: at a real host's settings, every active goal waiting for
//!   the loop on an idle session is acted on within 60 s, whatever the events did (judged in
//!   `liveness.rs`);
//! - (h) the wrap-up turn: judged in `wrap_up.rs`, called from here and at each goal write.
//!
//! Each check reads the server's state and the record; none of it asks the loop anything.

use serde_json::Value;

use crate::record::{Record, Request};
use crate::server::routes::Parsed;
use crate::server::Server;
use crate::world::Timing;

/// The five statuses OpenChamber's UI shows.
const STATUSES: [&str; 5] = ["active", "paused", "blocked", "budgetLimited", "complete"];
/// Slack on time budgets: the hosts' clocks may be skewed by up to 4 s.
const CLOCK_SLACK_MS: f64 = 5_000.0;

/// A host's post of `parsed` (a prompt or a shell run), sent at `issued`, arrives at the
/// server at `now`, before the server acts on it: (a), (b), (c).
pub fn on_post(server: &Server, timing: &Timing, host: usize, parsed: &Parsed, issued: f64, now: f64) {
    let Some(session) = parsed.session_id() else { return };
    let record = &server.record;
    let Some(goal) = record.with(|r| r.goal_of(session)) else { return };
    let shell = parsed.path.ends_with("/shell");
    if !shell && parsed.body.get("noReply").and_then(Value::as_bool) == Some(true) {
        return;
    }
    let message_id = parsed.body.get("messageID").and_then(Value::as_str).unwrap_or_default().to_string();
    let Some(main_id) = record.with(|r| r.goals[goal].session.clone()) else { return };
    // The reply being generated now (the scripts' lock comes before the store's).
    let running = server.scripts.lock().get(&main_id).and_then(|s| s.running.clone());
    let state = server.state.lock();
    let Some(main) = state.sessions.get(&main_id) else { return };
    let posted_to = state.sessions.get(session);
    let stored = !message_id.is_empty() && posted_to.is_some_and(|s| s.message(&message_id).is_some());
    let goal_record = main.goal().cloned();
    // The tail a continuation follows: the newest reply that is not being generated now
    // (finished, failed, or cut). A reply still running is no tail to continue after.
    let tail = main
        .messages
        .iter()
        .rev()
        .filter(|m| m["info"]["role"] == "assistant")
        .find(|m| running.as_deref() != m["info"]["id"].as_str())
        .map(|m| m["info"]["id"].as_str().unwrap_or_default().to_string())
        .unwrap_or_default();
    let usage = Usage::of(main, goal_record.as_ref());
    drop(state);
    check_stop(record, goal, host, session, issued, now);
    if shell {
        let finished_before = record.with(|r| {
            let run = r.goals[goal].check_runs.entry(message_id.clone()).or_default();
            run.0 += 1;
            run.0 > 1 && run.1
        });
        if finished_before {
            record.violate('a', now, format!("goal {goal}: the check run {message_id} posted again after it finished"));
        }
        return;
    }
    record.with(|r| r.goals[goal].last_progress = now);
    if session == main_id {
        // A wrap-up counts by its id, even posted again over the same id's other text.
        crate::wrap_up::on_post(server, goal, &message_id, &parsed.body, now);
    }
    if session != main_id || stored {
        // A reviewer's prompt, or a stored message posted again: no new continuation.
        return;
    }
    if let Some(goal_record) = &goal_record {
        crate::wrap_up::check_spend(server, goal, goal_record, &usage, now);
    }
    let (distinct, continuations) = record.with(|r| {
        let facts = &mut r.goals[goal];
        let ids = facts.after_tail.entry(tail.clone()).or_default();
        ids.insert(if message_id.is_empty() { format!("(no id) at {now}") } else { message_id.clone() });
        facts.posted.insert(message_id.clone());
        let distinct = ids.len();
        facts.continuations += 1;
        (distinct, facts.continuations)
    });
    if distinct > 1 {
        record.violate('a', now, format!("goal {goal}: a second continuation ({message_id}) after the tail {tail}"));
    }
    check_guards(record, timing, goal, goal_record.as_ref(), &usage, continuations, issued);
}

/// (b): a host posts to a stopped goal it knew was stopped when it sent the post (it wrote the
/// stop, read the session after it, or received its event).
fn check_stop(record: &Record, goal: usize, host: usize, session: &str, issued: f64, now: f64) {
    let knew = record.with(|r| {
        let main = r.goals[goal].session.clone().unwrap_or_default();
        let (at, by) = r.goals[goal].stopped?;
        if at >= issued {
            return None;
        }
        let read = r.reads.get(&(host, main.clone())).is_some_and(|t| *t > at && *t < issued);
        let heard = r.stop_events.get(&(host, main)).is_some_and(|t| *t >= at && *t < issued);
        (by == Some(host) || read || heard).then_some(at)
    });
    if let Some(at) = knew {
        let since = now - at;
        record.violate(
            'b',
            now,
            format!(
                "goal {goal}: host {host} posted to {session} {since:.0} ms after the goal was stopped, knowing it"
            ),
        );
    }
}

/// What a goal has spent, read from the transcript.
pub struct Usage {
    /// Tokens: the context's growth since the goal began.
    pub tokens: f64,
    /// US dollars: its replies' costs since then.
    pub cost: f64,
}

impl Usage {
    /// What `goal` (the session's goal record) has spent in `session`.
    pub fn of(session: &crate::server::state::Session, goal: Option<&Value>) -> Usage {
        let created = goal.and_then(|g| g["createdAt"].as_f64()).unwrap_or(0.0);
        let completed =
            |m: &&Value| m["info"]["role"] == "assistant" && m["info"]["time"]["completed"].as_f64().is_some();
        let total = |m: &Value| {
            let t = &m["info"]["tokens"];
            t["input"].as_f64().unwrap_or(0.0)
                + t["output"].as_f64().unwrap_or(0.0)
                + t["cache"]["read"].as_f64().unwrap_or(0.0)
        };
        let done_at = |m: &Value| m["info"]["time"]["completed"].as_f64().unwrap_or(0.0);
        let baseline =
            session.messages.iter().filter(completed).filter(|m| done_at(m) <= created).map(total).fold(0.0, f64::max);
        let since: Vec<&Value> = session.messages.iter().filter(completed).filter(|m| done_at(m) > created).collect();
        let tokens = since.iter().map(|m| (total(m) - baseline).max(0.0)).fold(0.0, f64::max);
        let cost = since.iter().map(|m| m["info"]["cost"].as_f64().unwrap_or(0.0)).sum();
        Usage { tokens, cost }
    }
}

/// (c) at a new continuation: turns, tokens, cost and time (judged when the post was sent: a
/// slow network delivers it later).
fn check_guards(
    record: &Record,
    timing: &Timing,
    goal: usize,
    record_now: Option<&Value>,
    usage: &Usage,
    turns: u64,
    now: f64,
) {
    let Some(g) = record_now else { return };
    let (given_back, lost) = record.with(|r| (r.goals[goal].failed_turns, r.goals[goal].lost_turns));
    if turns > timing.max_turns + given_back + lost {
        record.violate('c', now, format!("goal {goal}: continuation {turns} past the turn cap {} ({given_back} failed turns given back, {lost} lost to crossed writes)", timing.max_turns));
    }
    if g["turnsUsed"].as_u64().is_some_and(|used| used > timing.max_turns) {
        record.violate(
            'c',
            now,
            format!("goal {goal}: a continuation with turnsUsed {} past the cap {}", g["turnsUsed"], timing.max_turns),
        );
    }
    if let Some(budget) = g["tokenBudget"].as_f64() {
        if usage.tokens >= budget {
            record.violate(
                'c',
                now,
                format!("goal {goal}: a continuation with {} tokens used of a budget of {budget}", usage.tokens),
            );
        }
    }
    if let Some(budget) = g["costBudget"].as_f64() {
        if usage.cost >= budget - 1e-9 {
            record.violate(
                'c',
                now,
                format!("goal {goal}: a continuation with ${:.6} spent of a budget of ${budget}", usage.cost),
            );
        }
    }
    if let Some(budget) = g["timeBudgetMs"].as_f64() {
        let active = record.with(|r| r.active_ms(goal, now));
        if active >= budget + CLOCK_SLACK_MS {
            record.violate(
                'c',
                now,
                format!("goal {goal}: a continuation after {active:.0} ms active of a time budget of {budget} ms"),
            );
        }
    }
}

/// A goal write landed: (c) for a `complete`, (d) for every host's write, and what it tells
/// (b) and (e).
pub fn on_goal_write(
    record: &Record,
    host: Option<usize>,
    session: &str,
    before: Option<&Value>,
    after: Option<&Value>,
    at: f64,
) {
    let Some(goal) = record.with(|r| r.goal_of(session)) else { return };
    let status = |g: Option<&Value>| g.and_then(|g| g["status"].as_str()).unwrap_or("none").to_string();
    let (was, is) = (status(before), status(after));
    record.with(|r| {
        let facts = &mut r.goals[goal];
        if is != "active" && (was == "active" || facts.stopped.is_none()) {
            facts.stopped = Some((at, host));
        } else if is == "active" {
            facts.stopped = None;
        }
        // The UI's resume gives a fresh allowance of turns (Part B, "Pause ⇄ abort coupling").
        if host.is_none() && was != "active" && is == "active" {
            facts.continuations = 0;
            facts.failed_turns = 0;
            facts.lost_turns = 0;
            // And a new stretch, with a wrap-up of its own (promise (h)).
            facts.wrap_ups.clear();
        }
        if host.is_some() {
            facts.last_progress = at;
        } else {
            facts.touched_at = at;
        }
        // Active time stops while the goal is stopped or parked on a provider's limit.
        let counts = |g: Option<&Value>| {
            g.is_some_and(|g| {
                g["status"] == "active" && g["statusReason"] != goal_core::reasons::REASON_WAITING_FOR_PROVIDER
            })
        };
        if counts(before) && !counts(after) {
            r.paused_at.entry(goal).or_insert(at);
        } else if !counts(before) && counts(after) {
            if let Some(since) = r.paused_at.remove(&goal) {
                *r.paused_ms.entry(goal).or_default() += at - since;
            }
        }
    });
    let who = host.map_or("the user".to_string(), |h| format!("host {h}"));
    if was != is {
        let reason = after.and_then(|g| g["statusReason"].as_str()).unwrap_or_default().to_string();
        record.note(at, format!("goal {goal}: {was} → {is} by {who} ({reason})"));
    } else if let (Some(before), Some(after)) = (before.and_then(Value::as_object), after.and_then(Value::as_object)) {
        // What the writer changed: against the goal it last read (a host), else the stored one.
        let read = host.and_then(|h| record.with(|r| r.goal_reads.get(&(h, session.to_string())).cloned()));
        let base =
            read.as_ref().and_then(Value::as_object).filter(|r| r.get("id") == after.get("id")).unwrap_or(before);
        let changed: Vec<String> = after
            .iter()
            .filter(|(k, v)| base.get(*k) != Some(*v) && *k != "updatedAt")
            .map(|(k, v)| format!("{k}={}", short(&without_holder(k, v))))
            .collect();
        let crossed = if base != before { " (over a write it had not read)" } else { "" };
        record.note(at, format!("goal {goal}: written by {who}{crossed}: {}", changed.join(", ")));
    }
    let Some(host) = host else { return };
    let Some(after) = after else { return };
    check_written(record, goal, host, session, before, after, at);
}

/// (b): a goal is paused at a person's request only over words a person typed into its session,
/// quoted in the cause (never on the auditor's whim).
fn check_asked_to_pause(record: &Record, goal: usize, host: usize, before: Option<&Value>, after: &Value, at: f64) {
    let asked = |g: &Value| g["cause"]["code"] == "userAskedToPause";
    if !asked(after) || before.is_some_and(|b| asked(b) && b["id"] == after["id"]) {
        return;
    }
    let detail = after["cause"]["detail"].as_str().unwrap_or_default().to_string();
    let typed = record.with(|r| {
        r.goals[goal].person_typed.iter().any(|(when, words)| *when <= at && goal_core::quote_person(words) == detail)
    });
    if typed {
        record.with(|r| r.person_pauses += 1);
    } else {
        record.violate(
            'b',
            at,
            format!(
                "goal {goal}: host {host} paused it at a person's request quoting {detail:?}, which no person typed"
            ),
        );
    }
}

/// (b): a host never makes a stopped goal active again over a read that showed it stopped (only
/// a person resumes a goal): a write built on a stale view of the stop would undo it.
fn check_no_restart(
    record: &Record,
    goal: usize,
    host: usize,
    session: &str,
    before: Option<&Value>,
    after: &Value,
    at: f64,
) {
    if after["status"] != "active" || before.is_none_or(|b| b["id"] != after["id"] || b["status"] == "active") {
        return;
    }
    let read = record.with(|r| r.goal_reads.get(&(host, session.to_string())).cloned());
    let Some(read) = read.filter(|r| r["id"] == after["id"] && r["status"] != "active") else { return };
    let was = read["status"].as_str().unwrap_or_default().to_string();
    record.violate('b', at, format!("goal {goal}: host {host} wrote it active over its read of it {was}"));
}

/// A value cut short for the trace.
fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.len() > 60 {
        format!("{}…", &text[..text.char_indices().nth(57).map_or(text.len(), |(i, _)| i)])
    } else {
        text
    }
}

/// (c) and (d) on a host's write.
fn check_written(
    record: &Record,
    goal: usize,
    host: usize,
    session: &str,
    before: Option<&Value>,
    after: &Value,
    at: f64,
) {
    let status = after["status"].as_str().unwrap_or_default();
    if !STATUSES.contains(&status) {
        record.violate('d', at, format!("goal {goal}: host {host} wrote the status {status:?}"));
    }
    if let Some(code) = after.get("cause").filter(|c| !c.is_null()).map(|c| c["code"].as_str().unwrap_or("(none)")) {
        if goal_core::CauseCode::parse(code).is_none() {
            record.violate('d', at, format!("goal {goal}: host {host} wrote the cause {code:?}"));
        }
    }
    check_asked_to_pause(record, goal, host, before, after, at);
    check_no_restart(record, goal, host, session, before, after, at);
    if let Some(before) = before.filter(|b| b["id"] == after["id"]) {
        // A host never lowers a counter of the goal it read. A write built on a read that
        // another host's write landed after (a crossed write: the PATCH has no compare-and-set)
        // can lower what that host raised; those are counted, not judged.
        let read = record.with(|r| r.goal_reads.get(&(host, session.to_string())).cloned());
        let base = read.as_ref().filter(|r| r["id"] == after["id"]).unwrap_or(before);
        let lowered = |base: &Value, counter: &str| {
            after[counter].as_f64().unwrap_or(0.0) < base[counter].as_f64().unwrap_or(0.0)
        };
        for counter in ["tokensUsed", "costUsed"] {
            if lowered(base, counter) {
                let (was, is) = (base[counter].as_f64().unwrap_or(0.0), after[counter].as_f64().unwrap_or(0.0));
                record.violate(
                    'd',
                    at,
                    format!("goal {goal}: host {host} lowered {counter} from {was} (as it read it) to {is}"),
                );
            } else if lowered(before, counter) {
                record.with(|r| r.crossed_writes += 1);
                record.note(at, format!("goal {goal}: host {host}'s write crossed another host's ({counter} lowered)"));
            }
        }
        let (was, is) = (base["turnsUsed"].as_f64().unwrap_or(0.0), after["turnsUsed"].as_f64().unwrap_or(0.0));
        // Turns go back by design: a reservation never posted (the user stopped or changed the
        // goal before the post), and a turn the provider failed before it produced anything
        // (the goal parks).
        let parked = after["statusReason"] == goal_core::reasons::REASON_WAITING_FOR_PROVIDER;
        let reserved = base["continuationId"].as_str().unwrap_or_default().to_string();
        let unused = !reserved.is_empty() && record.with(|r| !r.goals[goal].posted.contains(&reserved));
        let given_back = (status != "active" || parked || unused) && was - is == 1.0;
        if is < was && !given_back {
            record.violate(
                'd',
                at,
                format!("goal {goal}: host {host} lowered turnsUsed from {was} (as it read it) to {is}"),
            );
        }
        let stored = before["turnsUsed"].as_f64().unwrap_or(0.0);
        if is < stored && base != before {
            // A crossed write lost another host's turn: that goal may run that many turns more.
            record.with(|r| {
                r.crossed_writes += 1;
                r.goals[goal].lost_turns += (stored - is) as u64;
            });
            record.note(
                at,
                format!("goal {goal}: host {host}'s write crossed another host's (turnsUsed {stored} → {is})"),
            );
        }
    }
    if status == "complete" && before.is_some_and(|b| b["status"] != "complete") {
        let (checks, review) =
            (after.get("checks").is_some_and(|c| c.as_array().is_some_and(|a| !a.is_empty())), after["review"] == true);
        let (passed, approved) = record.with(|r| (r.goals[goal].check_passed, r.goals[goal].review_approved));
        if checks && !passed {
            record.violate('c', at, format!("goal {goal}: host {host} completed it without a passed check"));
        }
        if review && !approved {
            record.violate('c', at, format!("goal {goal}: host {host} completed it without an approving review"));
        }
    }
}

/// A lease as the trace shows it: its holder id names the process (`record/lease.rs`), so it is
/// left out, and a seed's trace is the same on every run.
fn without_holder(key: &str, value: &Value) -> Value {
    let mut value = value.clone();
    if key == "lease" {
        if let Some(holder) = value.get_mut("holder").filter(|h| h.is_string()) {
            *holder = Value::from("…");
        }
    }
    value
}

/// (f): while a fault is in effect, the requests of the last window stay within A.8's budgets
/// (item 2): a waiting goal's session (no turn began in the window) at most 40 requests in 8 s;
/// a failing directory's lists, after the first three, at most one every 10 s; per host.
pub fn check_rates(record: &Record, now: f64) {
    let found = record.with(|r| {
        let now_ms = r.ms(now);
        let last = r.requests.last()?.clone();
        let host = last.host;
        let in_window = |window: u64, keep: &dyn Fn(&Request) -> bool| {
            r.requests
                .iter()
                .rev()
                .take_while(|q| q.at_ms + window >= now_ms)
                .filter(|q| q.host == host && !q.past_life && keep(q))
                .count()
        };
        // A goal whose turns go on (its reviewer's included) is not waiting on the failure: its
        // requests are its work.
        let goal = last.session.as_ref().and_then(|s| r.goal_of(s));
        let moving = r.last_turn.iter().any(|(session, at)| {
            let ours = Some(session) == last.session.as_ref() || (goal.is_some() && r.goal_of(session) == goal);
            ours && r.ms(*at) + 8_000 >= now_ms
        });
        // Nor is a goal the user just acted on (a resume starts its backoff afresh).
        let touched = goal.is_some_and(|g| r.ms(r.goals[g].touched_at) + 8_000 >= now_ms);
        let moving = moving || touched;
        if let Some(session) = last.session.as_ref().filter(|_| !moving && !last.list) {
            let count = in_window(8_000, &|q| q.session.as_ref() == Some(session) && !q.list);
            if count > 40 {
                return Some(format!("host {host}: {count} requests for {session} in 8 s"));
            }
        }
        if last.failed_list {
            // A.8: after the first three lists of a failing directory, at most one every 10 s
            // (the failing run: lists less than a minute apart).
            // The run: the failed lists since the last one that was read.
            let lists: Vec<&Request> = r
                .requests
                .iter()
                .filter(|q| q.host == host && !q.past_life && q.list && q.directory == last.directory)
                .collect();
            let since_read = lists.iter().rposition(|q| !q.failed_list).map_or(0, |at| at + 1);
            let failed: Vec<u64> = lists[since_read..].iter().map(|q| q.at_ms).collect();
            let run_start = failed.windows(2).rposition(|pair| pair[1] - pair[0] > 60_000).map_or(0, |at| at + 1);
            let run = &failed[run_start..];
            if run.len() > 3 && run[run.len() - 1] - run[run.len() - 2] < 9_500 {
                let gap = run[run.len() - 1] - run[run.len() - 2];
                return Some(format!(
                    "host {host}: session list {} of {} only {gap} ms after the one before",
                    run.len(),
                    last.directory
                ));
            }
        }
        None
    });
    if let Some(detail) = found {
        record.violate('f', now, detail);
    }
}
