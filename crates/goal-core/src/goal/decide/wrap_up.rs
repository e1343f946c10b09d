//! The wrap-up turn (docs/verdicts.md, "The wrap-up turn"): a goal near one of its limits spends
//! its last turn on a handoff instead of being cut off mid-plan. Three steps of the tick:
//!
//! - [`plan`], on the turn about to be reserved: the forecast (`budgets/forecast.rs`) says
//!   whether it is a normal turn, the wrap-up, or none (not even a wrap-up fits: the goal stops
//!   now, before crossing the limit, and says why);
//! - [`standing`], before an audit: a wrap-up reserved for this tail and not posted yet (its host
//!   killed in between) is posted as it was decided, not decided again;
//! - [`answered`], after the live state: the wrap-up's reply ends the goal, whatever it was (a
//!   reply, a failure, a cut), with no audit: settled with the limit's own status and cause, the
//!   handoff's start as the note (and so in the notification), the whole of it and the files
//!   the session changed in the trail.
//!
//! A wrap-up is out while the goal's `wrappedUp` names its current reservation and no resume came
//! since; a user's abort of it pauses the goal as any abort does. Pure.

use std::ops::ControlFlow;

use serde_json::{json, Value};

use super::{end, read, Decide, Flow, MARGIN};
use crate::goal::decide::accounting::account;
use crate::goal::decide::budgets::forecast::{ahead, measured, Ahead, Shortfall};
use crate::goal::decide::change::Extras;
use crate::goal::decide::gates::quiet_remaining;
use crate::goal::decide::notify::trail_line;
use crate::goal::decide::plan_rules::{unaudited_reservation, Basis, Reservation, Settlement};
use crate::goal::decide::seen::Live;
use crate::goal::decide::{Guard, Line, Need, Slot};
use crate::record::cause::CauseCode;
use crate::record::reasons::{REASON_BUDGET, REASON_COST_BUDGET, REASON_RESUMED, REASON_TIME_BUDGET, REASON_TURN_CAP};
use crate::record::session::{chronological, Message, Role};
use crate::record::{Goal, GoalStatus, WrappedUp, NOTE_CHAR_LIMIT};
use crate::sched::outcome::TickOutcome;
use crate::text::prompts::WRAP_UP_LEAD;
use crate::text::truncate_chars;
use crate::time::active::active_ms;

/// Characters of a handoff the trail keeps (a reply longer than that is cut there).
pub const HANDOFF_CHAR_LIMIT: usize = 20_000;
/// How a handoff's note begins.
pub const HANDOFF_NOTE_LEAD: &str = "Handoff:";

/// Whether the goal wraps up before its limits: its own `wrapUp`, else the host's default.
pub fn enabled(goal: &Goal, host_default: bool) -> bool {
    goal.wrap_up.get().copied().unwrap_or(host_default)
}

/// The wrap-up out for this goal: its record, while it names the current reservation and no
/// resume came since.
pub fn out(goal: &Goal) -> Option<&WrappedUp> {
    let wrapped = goal.wrapped_up.get()?;
    let current = goal.continuation_id.get() == Some(&wrapped.message_id);
    (current && goal.status_reason != REASON_RESUMED).then_some(wrapped)
}

/// The wrap-up out as the record says, or as the transcript does: the newest reply answers a
/// stored wrap-up prompt, and nothing came after it (no reservation after that reply, no resume,
/// whose fresh allowance leaves `turnsUsed` at 0 until its first turn). Two hosts' writes cross
/// (OpenCode's PATCH has no compare-and-set): the one that lands last may drop the other's
/// reservation, marker and all, never the prompt OpenCode stored.
pub fn out_in(goal: &Goal, messages: &[Message]) -> Option<WrappedUp> {
    if let Some(wrapped) = out(goal) {
        return Some(wrapped.clone());
    }
    if goal.status_reason == REASON_RESUMED || goal.turns_used == 0 {
        return None;
    }
    let ordered = chronological(messages);
    let reply = ordered.iter().rev().find(|m| m.role == Role::Assistant)?;
    if goal.continuation_for.get() == Some(&reply.id) {
        return None;
    }
    let prompt = ordered.iter().find(|m| m.id == reply.parent_id && m.role == Role::User)?;
    let cause = limit_of_prompt(&prompt.text)?;
    Some(WrappedUp { message_id: prompt.id.clone(), cause })
}

/// The limit a wrap-up prompt names on its first line (`text/prompts.rs`); `None` for any other text.
fn limit_of_prompt(text: &str) -> Option<CauseCode> {
    let line = text.lines().find(|line| line.starts_with(WRAP_UP_LEAD))?;
    [CauseCode::TokenBudget, CauseCode::CostBudget, CauseCode::TimeBudget, CauseCode::TurnCap]
        .into_iter()
        .find(|code| line.contains(&format!("its {} is about", limit_name(*code))))
}

/// The status and reason a goal settles with at `limit`: today's (the turn cap's is `blocked`).
pub fn settles_as(limit: CauseCode) -> (GoalStatus, &'static str) {
    match limit {
        CauseCode::TurnCap => (GoalStatus::Blocked, REASON_TURN_CAP),
        CauseCode::CostBudget => (GoalStatus::BudgetLimited, REASON_COST_BUDGET),
        CauseCode::TimeBudget => (GoalStatus::BudgetLimited, REASON_TIME_BUDGET),
        _ => (GoalStatus::BudgetLimited, REASON_BUDGET),
    }
}

/// The limit as a person reads it in the prompt and a note.
pub fn limit_name(limit: CauseCode) -> &'static str {
    match limit {
        CauseCode::TurnCap => "turn cap",
        CauseCode::CostBudget => "cost budget",
        CauseCode::TimeBudget => "time budget",
        _ => "token budget",
    }
}

/// The turn about to be reserved: a normal one, the wrap-up (the reservation marked so), or none
/// (the goal settles now). A wrap-up already decided, or a goal that does not wrap up, goes on.
pub(super) fn plan(at: &Decide<'_>, live: &Live, basis: &Basis, reservation: Reservation) -> Flow<Reservation> {
    let goal = at.goal;
    if reservation.wrap_up.is_some() {
        return ControlFlow::Continue(reservation);
    }
    // Decided before, for this tail: posted again as it was.
    if let Some(wrapped) = out(goal).filter(|_| goal.continuation_for.get() == Some(&basis.tail_message_id)) {
        return ControlFlow::Continue(Reservation { wrap_up: Some(wrapped.cause), ..reservation });
    }
    if !enabled(goal, at.config.wrap_up) {
        return ControlFlow::Continue(reservation);
    }
    let spends = measured(goal, &live.messages, at.now);
    match ahead(goal, &basis.accounting, &spends, active_ms(goal, at.now), at.config.max_auto_turns) {
        Ahead::Continue => ControlFlow::Continue(reservation),
        Ahead::WrapUp(limit) => ControlFlow::Continue(Reservation { wrap_up: Some(limit), ..reservation }),
        Ahead::NoRoom(shortfall) => ControlFlow::Break(no_room(at, basis, &shortfall)),
    }
}

/// Not even a wrap-up fits: the goal settles now, with the limit's status and cause, before the
/// turn that would cross it, and its note and trail say why.
fn no_room(at: &Decide<'_>, basis: &Basis, shortfall: &Shortfall) -> crate::goal::decide::Decision {
    let (status, reason) = settles_as(shortfall.code);
    let why = format!("Stopped before the {}: {}.", limit_name(shortfall.code), shortfall.describe());
    let settlement = Settlement {
        note: Some(truncate_chars(&why, NOTE_CHAR_LIMIT)),
        ..Settlement::new(status, reason, shortfall.code, basis.accounting.clone())
    };
    let mut record = trail_line(at.goal, &basis.tail_message_id, status.as_str(), reason, at.now);
    record.insert("noRoomForWrapUp".into(), json!(shortfall.describe()));
    let line = Line { record, detached: false, slot: Slot::Settled };
    at.settle(settlement, Extras::default(), Guard::Tick, Some(line))
}

/// A wrap-up reserved for the tail `basis` judges and not posted yet: its reservation, to post
/// as decided (no audit, no new forecast).
pub(super) fn standing(at: &Decide<'_>, basis: &Basis) -> Option<Reservation> {
    let wrapped = out(at.goal)?;
    let reserved_for = at.goal.continuation_for.get()?;
    (*reserved_for == basis.tail_message_id)
        .then(|| Reservation { wrap_up: Some(wrapped.cause), ..unaudited_reservation(at.goal, basis) })
}

/// The wrap-up's reply ends the goal. `Continue`: no wrap-up is out, it has no reply yet, or
/// the user aborted it (the plan pauses the goal).
pub(super) fn answered(at: &Decide<'_>, live: &Live) -> Flow {
    let Some(wrapped) = out_in(at.goal, &live.messages) else { return ControlFlow::Continue(()) };
    let ordered = chronological(&live.messages);
    let replies: Vec<&Message> =
        ordered.iter().filter(|m| m.role == Role::Assistant && m.parent_id == wrapped.message_id).copied().collect();
    let last = match replies.last() {
        Some(last) if last.is_aborted() => return ControlFlow::Continue(()),
        Some(last) => *last,
        // Never answered (stored, its turn never began) and a later turn ran instead, a person's:
        // the goal stops at its limit rather than wrap up again.
        None => match passed_over(&ordered, &wrapped.message_id) {
            Some(later) => later,
            None => return ControlFlow::Continue(()),
        },
    };
    if !last.is_completed() && last.error.is_none() {
        // Unfinished on an idle session: cut once it is older than the quiet window.
        if let Some(wait) = quiet_remaining(Some(last), None, at.seen.live_at, at.config.idle_quiet) {
            return end(TickOutcome::BackOff(wait + MARGIN));
        }
    }
    let Some(files) = &at.seen.changed_files else { return read(Need::ChangedFiles) };
    let handoff = handoff_text(&replies);
    let (status, reason) = settles_as(wrapped.cause);
    let note = match replies.is_empty() {
        true => format!("{HANDOFF_NOTE_LEAD} the wrap-up turn never ran: a later turn came first."),
        false => handoff_note(&handoff, last),
    };
    let settlement = Settlement {
        note: Some(note),
        ..Settlement::new(status, reason, wrapped.cause, account(at.goal, &live.messages))
    };
    let mut record = trail_line(at.goal, &last.id, status.as_str(), reason, at.now);
    record.insert("wrapUp".into(), json!(wrapped.cause.as_str()));
    record.insert("handoff".into(), Value::from(truncate_chars(&handoff, HANDOFF_CHAR_LIMIT)));
    record.insert("changedFiles".into(), files.as_ref().map_or(Value::Null, |files| json!(files)));
    let line = Line { record, detached: false, slot: Slot::Settled };
    let extras = Extras { clear_park: true, wrapped_up: Some(wrapped), ..Extras::default() };
    ControlFlow::Break(at.settle(settlement, extras, Guard::Tick, Some(line)))
}

/// The newest reply after the wrap-up prompt `message_id` that answers another prompt: the
/// wrap-up was passed over. `None` while nothing came after it (or it is not in the window).
fn passed_over<'a>(ordered: &[&'a Message], message_id: &str) -> Option<&'a Message> {
    let at = ordered.iter().position(|m| m.id == message_id)?;
    ordered[at + 1..].iter().rev().find(|m| m.role == Role::Assistant && m.parent_id != message_id).copied()
}

/// The wrap-up turn's prompt: the objective, where the goal stands against `limit` (as the
/// reservation wrote it), and what to hand off.
pub fn prompt(objective: &str, reserved: &Goal, limit: CauseCode, max_turns: u64, now: f64) -> String {
    let standing = match limit {
        CauseCode::TokenBudget => format!(
            "Tokens used: {} of the budget of {}.",
            reserved.tokens_used,
            reserved.token_budget.unwrap_or_default()
        ),
        CauseCode::CostBudget => format!(
            "Cost so far: ${:.2} of the budget of ${:.2}.",
            crate::goal::decide::accounting::cost_used(reserved),
            reserved.cost_budget.get().copied().unwrap_or_default()
        ),
        CauseCode::TimeBudget => format!(
            "Active time so far: {} min of the budget of {} min.",
            (active_ms(reserved, now) / 60_000.0).floor(),
            reserved.time_budget_ms.get().copied().unwrap_or_default() / 60_000
        ),
        _ => format!("Auto-continuations used: {} of {max_turns}.", reserved.turns_used),
    };
    crate::text::prompts::wrap_up_prompt(objective, limit_name(limit), &standing)
}

/// The handoff: the text of the wrap-up's replies, in order.
fn handoff_text(replies: &[&Message]) -> String {
    replies.iter().map(|m| m.text.trim()).filter(|t| !t.is_empty()).collect::<Vec<_>>().join("\n\n")
}

/// The note a person reads first: `Handoff:` and the handoff's start on one line (markdown
/// marks and breaks dropped), within the note's limit; a turn that left no text says how it
/// ended.
pub fn handoff_note(handoff: &str, last: &Message) -> String {
    let flat = handoff
        .lines()
        .map(|line| line.trim().trim_start_matches(['#', '*', '-', '>', ' ']).trim())
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let text = if flat.is_empty() {
        match &last.error {
            Some(error) if !error.is_empty() => format!("the wrap-up turn ended with {error} and no handoff."),
            _ => "the wrap-up turn left no handoff.".to_string(),
        }
    } else {
        flat
    };
    truncate_chars(&format!("{HANDOFF_NOTE_LEAD} {text}"), NOTE_CHAR_LIMIT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::test_goal::goal;

    fn reply(text: &str, error: Option<&str>) -> Message {
        let mut info = json!({"id": "msg_r", "role": "assistant", "parentID": "msg_w", "time": {"created": 1.0, "completed": 2.0}});
        if let Some(name) = error {
            info["error"] = json!({"name": name});
        }
        Message::from_value(&json!({"info": info, "parts": [{"type": "text", "text": text}]}), 0).expect("a message")
    }

    #[test]
    fn a_wrap_up_is_out_while_it_names_the_current_reservation_and_no_resume_came() {
        let marked = json!({"continuationId": "msg_w", "wrappedUp": {"messageId": "msg_w", "cause": "tokenBudget"}});
        let g = goal(marked.clone());
        assert_eq!(out(&g).map(|w| w.cause), Some(CauseCode::TokenBudget));
        let mut resumed = marked.clone();
        resumed["statusReason"] = json!(REASON_RESUMED);
        assert!(out(&goal(resumed)).is_none(), "a resume starts a new stretch");
        let mut moved = marked;
        moved["continuationId"] = json!("msg_next");
        assert!(out(&goal(moved)).is_none(), "a later turn's reservation is not the wrap-up");
        assert!(out(&goal(json!({"wrappedUp": {"messageId": "msg_w", "cause": "nonsense"}}))).is_none());
    }

    #[test]
    fn the_transcript_tells_a_wrap_up_whose_marker_a_crossed_write_dropped() {
        let prompt = crate::text::prompts::wrap_up_prompt("Ship it", limit_name(CauseCode::CostBudget), "Cost so far.");
        let stored = Message::from_value(
            &json!({"info": {"id": "msg_w", "role": "user", "time": {"created": 1.0}}, "parts": [{"type": "text", "text": prompt}]}),
            0,
        )
        .expect("a message");
        let answered = vec![stored.clone(), reply("the handoff", None)];
        // The reservation and its marker lost to another host's write; the turn it counted too.
        let crossed = goal(json!({"turnsUsed": 1, "continuationFor": "msg_before"}));
        let found = out_in(&crossed, &answered).expect("told by the stored prompt");
        assert_eq!((found.message_id.as_str(), found.cause), ("msg_w", CauseCode::CostBudget));
        let resumed = goal(json!({"turnsUsed": 1, "statusReason": REASON_RESUMED}));
        assert!(out_in(&resumed, &answered).is_none(), "a resume goes on from the handoff");
        assert!(out_in(&goal(json!({"turnsUsed": 0})), &answered).is_none(), "a resume's fresh allowance");
        let reserved_after = goal(json!({"turnsUsed": 2, "continuationFor": "msg_r", "continuationId": "msg_next"}));
        assert!(out_in(&reserved_after, &answered).is_none(), "a turn reserved after the handoff");
        assert!(out_in(&crossed, std::slice::from_ref(&stored)).is_none(), "no reply yet");
        for code in [CauseCode::TokenBudget, CauseCode::TimeBudget, CauseCode::TurnCap] {
            let text = crate::text::prompts::wrap_up_prompt("x", limit_name(code), "");
            assert_eq!(limit_of_prompt(&text), Some(code));
        }
        assert_eq!(limit_of_prompt("Keep working toward the session goal"), None);
    }

    #[test]
    fn a_wrap_up_a_later_turn_ran_past_is_passed_over() {
        let message = |id: &str, role: &str, parent: &str, created: f64| {
            let info = json!({"id": id, "role": role, "parentID": parent, "time": {"created": created, "completed": created + 1.0}});
            Message::from_value(&json!({"info": info, "parts": []}), 0).expect("a message")
        };
        let before = [message("msg_u", "user", "", 1.0), message("msg_a", "assistant", "msg_u", 2.0)];
        let wrap_up = message("msg_w", "user", "", 3.0);
        let person = [message("msg_p", "user", "", 4.0), message("msg_b", "assistant", "msg_p", 5.0)];
        let all: Vec<Message> = before.iter().chain([&wrap_up]).chain(person.iter()).cloned().collect();
        let ordered = chronological(&all);
        assert_eq!(passed_over(&ordered, "msg_w").map(|m| m.id.as_str()), Some("msg_b"));
        let waiting: Vec<Message> = before.iter().chain([&wrap_up]).cloned().collect();
        assert!(passed_over(&chronological(&waiting), "msg_w").is_none(), "stranded, nothing after it: posted again");
        assert!(passed_over(&ordered, "msg_gone").is_none());
    }

    #[test]
    fn the_goal_s_own_setting_wins_over_the_host_s() {
        assert!(enabled(&goal(json!({})), true));
        assert!(!enabled(&goal(json!({})), false));
        assert!(!enabled(&goal(json!({"wrapUp": false})), true));
        assert!(enabled(&goal(json!({"wrapUp": true})), false));
    }

    #[test]
    fn each_limit_settles_as_today() {
        assert_eq!(settles_as(CauseCode::TokenBudget), (GoalStatus::BudgetLimited, REASON_BUDGET));
        assert_eq!(settles_as(CauseCode::CostBudget), (GoalStatus::BudgetLimited, REASON_COST_BUDGET));
        assert_eq!(settles_as(CauseCode::TimeBudget), (GoalStatus::BudgetLimited, REASON_TIME_BUDGET));
        assert_eq!(settles_as(CauseCode::TurnCap), (GoalStatus::Blocked, REASON_TURN_CAP));
    }

    #[test]
    fn the_note_is_the_handoff_s_start_on_one_line_within_the_limit() {
        let text = "## Done\n- The parser handles nested lists (src/parser.rs).\n\n## Remaining\n* Empty lists.";
        let note = handoff_note(text, &reply(text, None));
        assert_eq!(note, "Handoff: Done The parser handles nested lists (src/parser.rs). Remaining Empty lists.");
        let long = "word ".repeat(200);
        assert_eq!(handoff_note(&long, &reply(&long, None)).chars().count(), NOTE_CHAR_LIMIT);
        assert_eq!(
            handoff_note("", &reply("", Some("APIError"))),
            "Handoff: the wrap-up turn ended with APIError and no handoff."
        );
        assert_eq!(handoff_note("  \n", &reply("", None)), "Handoff: the wrap-up turn left no handoff.");
    }
}
