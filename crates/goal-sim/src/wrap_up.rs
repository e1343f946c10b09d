//! Promise (h), the wrap-up turn (`docs/simulator.md`): a goal that wraps up gets at most one
//! wrap-up turn per stretch (from its start, or from the user's resume, to its stop), and none
//! when it does not wrap up. A steady goal (every turn spends alike, none larger than the ones
//! before it) that wraps up and whose session no person typed into never spends past its token
//! or cost budget, and a limit stops it only after exactly one wrap-up, its handoff then the note,
//! or before one where the turns left no room for it (then less than a forecast turn was left:
//! the largest turn it can have measured, plus a quarter). The time budget is left out: an
//! outage stretches a turn's wall time past its predecessors' by design.

use serde_json::Value;

use crate::invariants::Usage;
use crate::server::Server;
use crate::world::{GoalSpec, Start};

/// How a wrap-up prompt begins (`crates/goal-core/src/text/prompts.rs`).
pub const WRAP_UP_LEAD: &str = "Wrap up the session goal";
/// The limits a wrap-up comes before (the time budget is not judged here).
const LIMITS: [&str; 3] = ["tokenBudget", "costBudget", "turnCap"];
/// The margin a forecast adds to the largest turn (`budgets/forecast.rs`), as a factor.
const MARGIN: f64 = 1.25;
/// The context a session starts with in this world: a posted first prompt's reply carries it.
const STARTING_CONTEXT: f64 = 1_000.0;

/// Whether a post's body is a wrap-up prompt.
pub fn is_wrap_up(body: &Value) -> bool {
    body.get("parts")
        .and_then(Value::as_array)
        .is_some_and(|parts| parts.iter().any(|p| p["text"].as_str().is_some_and(|t| t.starts_with(WRAP_UP_LEAD))))
}

/// A host posted the new turn `message_id` to goal `goal`'s session: at most one wrap-up per
/// stretch, and none for a goal that does not wrap up.
pub fn on_post(server: &Server, goal: usize, message_id: &str, body: &Value, now: f64) {
    if !is_wrap_up(body) {
        return;
    }
    let record = &server.record;
    if !server.goals[goal].wraps_up(server.wrap_up) {
        record.violate('h', now, format!("goal {goal}: a wrap-up ({message_id}) posted with wrapUp off"));
    }
    let count = record.with(|r| {
        let ids = &mut r.goals[goal].wrap_ups;
        if ids.insert(message_id.to_string()) {
            r.wrap_ups += 1;
        }
        r.goals[goal].wrap_ups.len()
    });
    record.note(now, format!("goal {goal}: wrap-up {message_id} posted"));
    if count > 1 {
        record.violate('h', now, format!("goal {goal}: a second wrap-up ({message_id}) in one stretch"));
    }
}

/// Whether goal `goal` is judged by the steady part of (h): steady, wrapping up, and no
/// person's own turn spent from its budget.
fn judged(server: &Server, goal: usize) -> Option<&GoalSpec> {
    let spec = &server.goals[goal];
    let typed = server.record.with(|r| !r.goals[goal].person_typed.is_empty());
    (spec.steady.is_some() && spec.wraps_up(server.wrap_up) && !typed).then_some(spec)
}

/// Before a host's new turn of goal `goal` starts, and when a host stops it: a steady goal has
/// spent no more than its budgets (`goal_record`: its record as stored, `usage`: the transcript's
/// count).
pub fn check_spend(server: &Server, goal: usize, goal_record: &Value, usage: &Usage, now: f64) {
    if judged(server, goal).is_none() {
        return;
    }
    if let Some(budget) = goal_record["tokenBudget"].as_f64().filter(|b| usage.tokens > *b) {
        server.record.violate('h', now, format!("goal {goal}: {} tokens spent of a budget of {budget}", usage.tokens));
    }
    if let Some(budget) = goal_record["costBudget"].as_f64().filter(|b| usage.cost > b + 1e-9) {
        server.record.violate('h', now, format!("goal {goal}: ${:.6} spent of a budget of ${budget}", usage.cost));
    }
}

/// A host's write of session `session`'s goal landed: judged when it stopped the goal.
pub fn on_host_write(
    server: &Server,
    session: &str,
    before: Option<&Value>,
    after: Option<&Value>,
    usage: &Usage,
    at: f64,
) {
    let Some(goal) = server.record.with(|r| r.goal_of(session)) else { return };
    let Some(after) = after.filter(|a| a["status"] != "active") else { return };
    if before.is_some_and(|b| b["status"] == "active" && b["id"] == after["id"]) {
        on_stop(server, goal, after, usage, at);
    }
}

/// A host stopped goal `goal` (`after`: the record it wrote): stopped by a limit, a steady goal
/// had exactly one wrap-up in this stretch and its handoff is the note, or it had none and was
/// stopped where no turn fit.
fn on_stop(server: &Server, goal: usize, after: &Value, usage: &Usage, at: f64) {
    let Some(spec) = judged(server, goal) else { return };
    check_spend(server, goal, after, usage, at);
    let code = after["cause"]["code"].as_str().unwrap_or_default();
    if !LIMITS.contains(&code) {
        return;
    }
    let note = after["note"].as_str().unwrap_or_default();
    let wrap_ups = server.record.with(|r| r.goals[goal].wrap_ups.len());
    let problem = match wrap_ups {
        1 if !note.starts_with("Handoff:") => {
            Some(format!("stopped by {code} after its wrap-up with the note {note:?}"))
        }
        1 => {
            server.record.with(|r| r.handoffs += 1);
            None
        }
        0 if !note.starts_with("Stopped before the") => Some(format!("stopped by {code} with no wrap-up ({note:?})")),
        0 => room_was_left(spec, after, usage, code),
        _ => None,
    };
    if let Some(problem) = problem {
        server.record.violate('h', at, format!("goal {goal}: {problem}"));
    }
}

/// A stop for lack of room where a forecast turn did fit: what was left against the largest
/// turn the goal can have measured (a posted first prompt's carries the starting context).
fn room_was_left(spec: &GoalSpec, after: &Value, usage: &Usage, code: &str) -> Option<String> {
    let steady = spec.steady?;
    let (left, largest) = match code {
        "tokenBudget" => {
            let first = if spec.start == Start::Posted { STARTING_CONTEXT } else { 0.0 };
            (after["tokenBudget"].as_f64()? - usage.tokens, first + steady.tokens as f64)
        }
        "costBudget" => (after["costBudget"].as_f64()? - usage.cost, steady.micro_usd as f64 / 1e6),
        _ => return Some("stopped by the turn cap with no wrap-up".into()),
    };
    (left >= MARGIN * largest + 1e-9)
        .then(|| format!("stopped before {code} for lack of room with {left} left, a turn taking at most {largest}"))
}
