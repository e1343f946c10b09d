//! The wrap-up's forecast, pure: from the goal's own measured turns, whether the next normal turn
//! still leaves room for a wrap-up turn inside every limit (docs/cost-budget.md, "The wrap-up
//! turn"). A turn is forecast to spend as much as the largest of the goal's last
//! [`TURNS_MEASURED`] measured turns, plus [`MARGIN_PERCENT`]: tokens as the growth of the
//! count the budget reads (`goal/decide/accounting.rs` counts a snapshot of the context, so a
//! turn spends what the context grew by), US dollars as the sum of its replies' costs, and time
//! as the wall time from one turn's prompt to the next (its reply, the quiet window, the audit,
//! any check run). Where one normal turn and a wrap-up after it would not both fit, the next turn
//! is the wrap-up; where not even one turn fits, the goal stops before it (`NoRoom`). The turn
//! cap's last allowed turn is the wrap-up. A goal with no measured turn yet forecasts nothing
//! but the turn cap.

use crate::goal::decide::accounting::Accounting;
use crate::record::cause::CauseCode;
use crate::record::check_id::is_check_message_id;
use crate::record::session::{chronological, Message, Role};
use crate::record::Goal;

/// Turns a forecast looks back on (the newest ones in the messages read).
pub const TURNS_MEASURED: usize = 3;
/// The margin on the largest measured turn, in percent.
pub const MARGIN_PERCENT: u64 = 25;

/// What the goal's recent turns spent, oldest first, at most [`TURNS_MEASURED`] of each.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnSpends {
    /// Tokens each turn added to the count the token budget reads.
    pub tokens: Vec<u64>,
    /// US dollars each turn's replies cost.
    pub cost: Vec<f64>,
    /// Wall time of each turn's cycle, ms (the last one: up to now).
    pub ms: Vec<f64>,
}

/// What comes next, as the forecast sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum Ahead {
    /// A normal turn: one more leaves room for a wrap-up after it.
    Continue,
    /// The next turn is the wrap-up, before this limit.
    WrapUp(CauseCode),
    /// Not even one more turn fits this limit: the goal stops now, before crossing it.
    NoRoom(Shortfall),
}

/// A limit with no room left for a turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Shortfall {
    /// The limit.
    pub code: CauseCode,
    /// What is left of it (tokens, US dollars or ms).
    pub left: f64,
    /// What one turn is forecast to take of it.
    pub turn: f64,
}

impl Shortfall {
    /// How it reads in a note and the trail: `1,200 tokens left, and a turn takes about 3,000`.
    pub fn describe(&self) -> String {
        match self.code {
            CauseCode::CostBudget => format!("${:.2} left, and a turn costs about ${:.2}", self.left, self.turn),
            CauseCode::TimeBudget => {
                format!("{} left, and a turn takes about {}", minutes(self.left), minutes(self.turn))
            }
            _ => format!(
                "{} tokens left, and a turn takes about {}",
                thousands(self.left.max(0.0) as u64),
                thousands(self.turn.ceil() as u64)
            ),
        }
    }
}

fn minutes(ms: f64) -> String {
    let seconds = (ms.max(0.0) / 1000.0).round() as u64;
    if seconds < 120 {
        format!("{seconds} s")
    } else {
        format!("{} min", seconds / 60)
    }
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The goal's recent turns, measured from the messages read: each prompt the goal's session got
/// since the goal began (a user message that is no check run or claim), with the replies to it.
pub fn measured(goal: &Goal, messages: &[Message], now: f64) -> TurnSpends {
    let ordered = chronological(messages);
    let starts: Vec<&Message> = ordered
        .iter()
        .filter(|m| m.role == Role::User && !is_check_message_id(&m.id))
        .filter(|m| m.created.is_some_and(|created| created >= goal.created_at))
        .copied()
        .collect();
    // The goal's first prompt is the first of those only when the messages read reach back to
    // before the goal began (or no turn was sent yet); its growth is counted from the goal's
    // baseline, as the budget counts.
    let reaches_start = ordered.first().and_then(|m| m.created).is_some_and(|first| first < goal.created_at);
    let mut spends = TurnSpends::default();
    let mut previous: Option<u64> = None;
    for (index, start) in starts.iter().enumerate() {
        let replies: Vec<&Message> =
            ordered.iter().filter(|m| m.role == Role::Assistant && m.parent_id == start.id).copied().collect();
        if replies.is_empty() {
            continue;
        }
        let snapshot = replies.iter().rev().map(|m| m.tokens.total()).find(|total| *total > 0);
        let compacted = replies.iter().any(|m| m.summary);
        let first_of_goal = index == 0 && (goal.turns_used == 0 || reaches_start);
        match (previous, snapshot) {
            (Some(before), Some(after)) if !compacted => spends.tokens.push(after.saturating_sub(before)),
            (None, Some(after)) if first_of_goal => spends.tokens.push(after.saturating_sub(goal.tokens_baseline)),
            _ => {}
        }
        previous = if compacted { None } else { snapshot.or(previous) };
        spends.cost.push(replies.iter().map(|m| m.cost).sum());
        let end = starts.get(index + 1).and_then(|next| next.created).unwrap_or(now);
        if let Some(begin) = start.created {
            spends.ms.push((end - begin).max(0.0));
        }
    }
    for list in [&mut spends.cost, &mut spends.ms] {
        keep_newest(list);
    }
    keep_newest(&mut spends.tokens);
    spends
}

fn keep_newest<T>(list: &mut Vec<T>) {
    let extra = list.len().saturating_sub(TURNS_MEASURED);
    list.drain(..extra);
}

/// One turn's forecast from measured values: the largest, plus the margin (0 with none).
pub fn forecast(values: impl IntoIterator<Item = f64>) -> f64 {
    let largest = values.into_iter().filter(|v| v.is_finite()).fold(0.0, f64::max);
    largest * (100 + MARGIN_PERCENT) as f64 / 100.0
}

/// What the next turn is: a normal one, the wrap-up, or none. `accounting` is the fresh count,
/// `active_ms` the goal's active time now, `max_turns` the turn cap.
pub fn ahead(goal: &Goal, accounting: &Accounting, spends: &TurnSpends, active_ms: f64, max_turns: u64) -> Ahead {
    let limits = [
        goal.token_budget.map(|budget| {
            let left = budget as f64 - accounting.tokens_used as f64;
            (CauseCode::TokenBudget, left, forecast(spends.tokens.iter().map(|t| *t as f64)))
        }),
        goal.cost_budget.get().map(|budget| {
            (CauseCode::CostBudget, budget - accounting.cost_used, forecast(spends.cost.iter().copied()))
        }),
        goal.time_budget_ms
            .get()
            .map(|budget| (CauseCode::TimeBudget, *budget as f64 - active_ms, forecast(spends.ms.iter().copied()))),
    ];
    let measured: Vec<(CauseCode, f64, f64)> =
        limits.into_iter().flatten().filter(|(_, _, turn)| *turn > 0.0).collect();
    if let Some((code, left, turn)) = measured.iter().find(|(_, left, turn)| left < turn) {
        return Ahead::NoRoom(Shortfall { code: *code, left: *left, turn: *turn });
    }
    if let Some((code, _, _)) = measured.iter().find(|(_, left, turn)| *left < 2.0 * turn) {
        return Ahead::WrapUp(*code);
    }
    if goal.turns_used.saturating_add(1) >= max_turns {
        return Ahead::WrapUp(CauseCode::TurnCap);
    }
    Ahead::Continue
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::test_goal::goal;
    use serde_json::json;

    const T0: f64 = 1_000_000.0;

    /// A transcript: a user prompt at `t` and its reply of `context` tokens costing `cost`, for
    /// each `(t, context, cost)`; the goal began at T0.
    fn turns(list: &[(f64, u64, f64)]) -> Vec<Message> {
        let mut out = Vec::new();
        for (n, (t, context, cost)) in list.iter().enumerate() {
            let user = format!("msg_u{n:03}");
            out.push(json!({"info": {"id": user, "role": "user", "time": {"created": t}}, "parts": []}));
            out.push(json!({"info": {"id": format!("msg_a{n:03}"), "role": "assistant", "parentID": user,
                "time": {"created": t + 1.0, "completed": t + 2.0}, "cost": cost,
                "tokens": {"input": context, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}}, "parts": []}));
        }
        out.iter().enumerate().filter_map(|(i, v)| Message::from_value(v, i)).collect()
    }

    fn accounting(tokens_used: u64, cost_used: f64) -> Accounting {
        let g = goal(json!({}));
        Accounting { tokens_used, cost_used, ..Accounting::of(&g) }
    }

    #[test]
    fn a_turn_spends_what_the_context_grew_by_what_its_replies_cost_and_the_time_to_the_next_prompt() {
        let g = goal(json!({"createdAt": T0, "turnsUsed": 3}));
        let messages = turns(&[(T0 + 10.0, 10_000, 0.5), (T0 + 60_000.0, 14_000, 0.25), (T0 + 90_000.0, 20_000, 0.75)]);
        let spends = measured(&g, &messages, T0 + 100_000.0);
        assert_eq!(spends.tokens, vec![4_000, 6_000], "the first turn's growth is unknown after the goal's first turn");
        assert_eq!(spends.cost, vec![0.5, 0.25, 0.75]);
        assert_eq!(spends.ms, vec![59_990.0, 30_000.0, 10_000.0]);
        // The goal's first turn grew the context from its baseline.
        let first = goal(json!({"createdAt": T0, "turnsUsed": 0, "tokensBaseline": 2_000}));
        assert_eq!(measured(&first, &turns(&[(T0 + 10.0, 9_000, 0.0)]), T0 + 20.0).tokens, vec![7_000]);
        // Read back to before the goal began (an exchange it was set on): its first prompt is
        // known, so its growth counts even after that turn was sent.
        let set_on_an_exchange = goal(json!({"createdAt": T0, "turnsUsed": 1, "tokensBaseline": 2_000}));
        let messages = turns(&[(T0 - 5_000.0, 2_000, 0.0), (T0 + 10.0, 5_000, 0.0)]);
        assert_eq!(measured(&set_on_an_exchange, &messages, T0 + 20.0).tokens, vec![3_000]);
    }

    #[test]
    fn only_the_goal_s_own_prompts_count_and_only_the_newest_three_turns() {
        let g = goal(json!({"createdAt": T0, "turnsUsed": 5}));
        let list: Vec<(f64, u64, f64)> =
            (0..6).map(|i| (T0 - 5_000.0 + 10_000.0 * i as f64, 1_000 * (i + 1), 0.1)).collect();
        let spends = measured(&g, &turns(&list), T0 + 60_000.0);
        // The prompt before the goal began is not its turn; of the five after, the newest three.
        assert_eq!(spends.tokens, vec![1_000, 1_000, 1_000]);
        assert_eq!(spends.cost.len(), TURNS_MEASURED);
    }

    #[test]
    fn the_forecast_is_the_largest_turn_and_a_quarter() {
        assert_eq!(forecast([1_000.0, 4_000.0, 2_000.0]), 5_000.0);
        assert_eq!(forecast([]), 0.0);
    }

    #[test]
    fn a_wrap_up_where_one_more_turn_leaves_no_room_for_it_and_none_where_no_turn_fits() {
        let spends = TurnSpends { tokens: vec![3_000, 4_000], cost: vec![], ms: vec![] };
        let g = goal(json!({"tokenBudget": 20_000, "turnsUsed": 2}));
        // A turn is forecast at 5,000: 10,000 left is room for one and a wrap-up.
        assert_eq!(ahead(&g, &accounting(10_000, 0.0), &spends, 0.0, 20), Ahead::Continue);
        assert_eq!(ahead(&g, &accounting(10_001, 0.0), &spends, 0.0, 20), Ahead::WrapUp(CauseCode::TokenBudget));
        assert_eq!(ahead(&g, &accounting(15_000, 0.0), &spends, 0.0, 20), Ahead::WrapUp(CauseCode::TokenBudget));
        let none = ahead(&g, &accounting(15_001, 0.0), &spends, 0.0, 20);
        assert_eq!(none, Ahead::NoRoom(Shortfall { code: CauseCode::TokenBudget, left: 4_999.0, turn: 5_000.0 }));
        if let Ahead::NoRoom(shortfall) = none {
            assert_eq!(shortfall.describe(), "4,999 tokens left, and a turn takes about 5,000");
        }
    }

    #[test]
    fn cost_time_and_the_turn_cap_each_bring_their_own_wrap_up() {
        let spends = TurnSpends { tokens: vec![], cost: vec![0.4], ms: vec![60_000.0] };
        let cost = goal(json!({"costBudget": 2.0, "turnsUsed": 1}));
        assert_eq!(ahead(&cost, &accounting(0, 1.1), &spends, 0.0, 20), Ahead::WrapUp(CauseCode::CostBudget));
        let time = goal(json!({"timeBudgetMs": 600_000, "turnsUsed": 1}));
        assert_eq!(ahead(&time, &accounting(0, 0.0), &spends, 500_000.0, 20), Ahead::WrapUp(CauseCode::TimeBudget));
        let capped = goal(json!({"turnsUsed": 19}));
        assert_eq!(ahead(&capped, &accounting(0, 0.0), &spends, 0.0, 20), Ahead::WrapUp(CauseCode::TurnCap));
        assert_eq!(ahead(&goal(json!({"turnsUsed": 18})), &accounting(0, 0.0), &spends, 0.0, 20), Ahead::Continue);
        // No measured turn: nothing to forecast a budget from.
        let unmeasured = TurnSpends::default();
        assert_eq!(ahead(&cost, &accounting(0, 1.99), &unmeasured, 0.0, 20), Ahead::Continue);
    }
}
