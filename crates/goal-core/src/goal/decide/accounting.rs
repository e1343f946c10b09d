//! Token accounting by chronology: turns are counted in `time.created` order (see
//! `docs/opencode.md`, "Messages"), never by comparing ids.
//!
//! A turn's `input + output + reasoning + cache.read + cache.write` already includes everything
//! paid before it in the same context, so the cost of a run is a snapshot of its latest turn,
//! minus the pre-goal snapshot (baseline). A compaction summary closes a segment: the next
//! segment starts from a zero baseline, and `tokensUsed` never moves backwards.
//!
//! Cost is simpler: every reply's `info.cost` is its own price, so `costUsed` adds the price of
//! each reply the cursor passes (summaries included: a compaction costs money too).

use crate::record::session::{chronological, Message, Role};
use crate::record::Goal;

/// The accounting fields written back to the goal.
#[derive(Debug, Clone, PartialEq)]
pub struct Accounting {
    /// Tokens charged to the goal (monotonic).
    pub tokens_used: u64,
    /// Snapshot subtracted from the current segment.
    pub tokens_baseline: u64,
    /// Closed segments' total.
    pub tokens_committed: u64,
    /// Newest counted assistant message.
    pub last_accounted_message_id: String,
    /// Its `time.created` (0 when unknown).
    pub last_accounted_created: f64,
    /// US dollars spent since the goal began (monotonic).
    pub cost_used: f64,
}

/// US dollars the goal has spent so far (0 when never counted).
pub fn cost_used(goal: &Goal) -> f64 {
    goal.cost_used.get().copied().unwrap_or(0.0)
}

impl Accounting {
    /// The goal's current fields, unchanged.
    pub fn of(goal: &Goal) -> Accounting {
        Accounting {
            tokens_used: goal.tokens_used,
            tokens_baseline: goal.tokens_baseline,
            tokens_committed: goal.tokens_committed,
            last_accounted_message_id: goal.last_accounted_message_id.clone(),
            last_accounted_created: goal.last_accounted_created,
            cost_used: cost_used(goal),
        }
    }

    /// Copies the fields onto a goal.
    pub fn apply(&self, goal: &mut Goal) {
        goal.tokens_used = self.tokens_used;
        goal.tokens_baseline = self.tokens_baseline;
        goal.tokens_committed = self.tokens_committed;
        goal.last_accounted_message_id = self.last_accounted_message_id.clone();
        goal.last_accounted_created = self.last_accounted_created;
        // Written once something was spent, so goals on unpriced models keep their old shape.
        if self.cost_used > 0.0 || goal.cost_used.is_present() {
            goal.cost_used.set(self.cost_used);
        }
    }
}

/// Runs one accounting pass over the fetched window.
pub fn account(goal: &Goal, messages: &[Message]) -> Accounting {
    let mut result = Accounting::of(goal);
    let replies: Vec<&Message> =
        chronological(messages).into_iter().filter(|m| m.role == Role::Assistant && !m.id.is_empty()).collect();
    let first_pass = goal.last_accounted_message_id.is_empty() && goal.tokens_baseline == 0;
    if first_pass {
        // Pre-goal context is not the goal's cost.
        result.tokens_baseline = replies
            .iter()
            .filter(|m| matches!(m.completed, Some(done) if done <= goal.created_at))
            .map(|m| m.tokens.total())
            .max()
            .unwrap_or(0);
    }

    let fresh: Vec<&Message> = new_since_cursor(goal, &replies, first_pass);
    let mut snapshot: Option<u64> = None;
    let mut seen_any = false;
    for message in fresh.into_iter().filter(|m| m.is_completed()) {
        seen_any = true;
        result.cost_used += message.cost;
        if message.summary {
            let closed = snapshot.unwrap_or(0).saturating_sub(result.tokens_baseline);
            result.tokens_committed = goal.tokens_used.max(result.tokens_committed.saturating_add(closed));
            result.tokens_baseline = 0;
            snapshot = None;
        } else if message.tokens.total() > 0 || snapshot.is_none() {
            // A reply that reports no tokens at all (cut by a restart, failed before the
            // provider answered, aborted at once) says nothing of the context: it leaves the
            // snapshot of the reply before it, which a zero would undercount (the simulator
            // found a goal continued past its budget over a cut turn).
            snapshot = Some(message.tokens.total());
        }
        result.last_accounted_message_id = message.id.clone();
        result.last_accounted_created = message.created.unwrap_or(0.0);
    }
    if seen_any {
        let current = snapshot.map_or(0, |s| s.saturating_sub(result.tokens_baseline));
        result.tokens_used = goal.tokens_used.max(result.tokens_committed.saturating_add(current));
    }
    result
}

/// The replies (in chronological order) that come after the accounting cursor.
fn new_since_cursor<'a>(goal: &Goal, replies: &[&'a Message], first_pass: bool) -> Vec<&'a Message> {
    let cursor = goal.last_accounted_message_id.as_str();
    if !cursor.is_empty() {
        if let Some(position) = replies.iter().position(|m| m.id == cursor) {
            return replies[position + 1..].to_vec();
        }
        if goal.last_accounted_created > 0.0 {
            return replies
                .iter()
                .copied()
                .filter(|m| m.created.is_some_and(|c| c > goal.last_accounted_created))
                .collect();
        }
        // A cursor written by the reference (id only, scrolled out of the window): its ids
        // sort in creation order, the best remaining hint.
        return replies.iter().copied().filter(|m| m.id.as_str() > cursor).collect();
    }
    if first_pass && goal.created_at > 0.0 {
        return replies
            .iter()
            .copied()
            .filter(|m| {
                m.created.is_some_and(|c| c > goal.created_at) || m.completed.is_some_and(|c| c > goal.created_at)
            })
            .collect();
    }
    replies.to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::session::Tokens;
    use crate::record::GoalStatus;

    fn goal(created_at: f64) -> Goal {
        Goal::from_value(&serde_json::json!({
            "id": "g", "status": "active", "objective": "x", "createdAt": created_at
        }))
        .map(|mut g| {
            g.status = GoalStatus::Active;
            g
        })
        .unwrap()
    }

    fn reply(id: &str, index: usize, created: f64, total: u64, summary: bool) -> Message {
        Message {
            id: id.into(),
            role: Role::Assistant,
            parent_id: String::new(),
            created: Some(created),
            completed: Some(created + 1.0),
            error: None,
            finish: "stop".into(),
            summary,
            tokens: Tokens { input: total, ..Tokens::default() },
            selection: crate::record::session::Selection {
                provider_id: "p".into(),
                model_id: "m".into(),
                agent: "build".into(),
                ..Default::default()
            },
            text: String::new(),
            cost: 0.0,
            provider_error: None,
            produced_output: false,
            index,
        }
    }

    fn step(goal: &mut Goal, window: &[Message]) -> u64 {
        let result = account(goal, window);
        result.apply(goal);
        goal.tokens_used
    }

    #[test]
    fn worked_example_with_compaction() {
        let mut g = goal(100.0);
        let mut window = vec![reply("m1", 0, 50.0, 50_000, false)];
        window.push(reply("m2", 1, 200.0, 60_000, false));
        assert_eq!(step(&mut g, &window), 10_000);
        assert_eq!(g.tokens_baseline, 50_000);
        window.push(reply("m3", 2, 300.0, 80_000, false));
        assert_eq!(step(&mut g, &window), 30_000);
        window.push(reply("m4", 3, 400.0, 0, true));
        assert_eq!(step(&mut g, &window), 30_000);
        assert_eq!(g.tokens_committed, 30_000);
        assert_eq!(g.tokens_baseline, 0);
        window.push(reply("m5", 4, 500.0, 20_000, false));
        assert_eq!(step(&mut g, &window), 50_000);
    }

    #[test]
    fn compaction_in_the_same_pass_closes_the_segment() {
        let mut g = goal(100.0);
        let window = vec![
            reply("m1", 0, 50.0, 10_000, false),
            reply("m2", 1, 200.0, 40_000, false),
            reply("m3", 2, 300.0, 0, true),
            reply("m4", 3, 400.0, 5_000, false),
        ];
        // Segment one: 40k - 10k = 30k; segment two: 5k from a zero baseline.
        assert_eq!(step(&mut g, &window), 35_000);
        assert_eq!(g.tokens_committed, 30_000);
    }

    #[test]
    fn cost_sums_every_reply_since_the_goal_began_summaries_included() {
        let mut g = goal(100.0);
        let priced = |id: &str, index: usize, created: f64, cost: f64, summary: bool| Message {
            cost,
            ..reply(id, index, created, 1_000, summary)
        };
        // Before the goal: not its cost.
        let mut window = vec![priced("m1", 0, 50.0, 9.0, false), priced("m2", 1, 200.0, 0.25, false)];
        step(&mut g, &window);
        assert_eq!(g.cost_used.get(), Some(&0.25));
        window.push(priced("m3", 2, 300.0, 0.5, true));
        window.push(priced("m4", 3, 400.0, 0.125, false));
        step(&mut g, &window);
        assert_eq!(g.cost_used.get(), Some(&0.875), "the summary's cost counts");
        // A second pass over the same window adds nothing.
        step(&mut g, &window);
        assert_eq!(g.cost_used.get(), Some(&0.875));
        // A provider that reports no cost leaves the record without the field.
        let mut free = goal(100.0);
        step(&mut free, &[reply("m2", 0, 200.0, 1_000, false)]);
        assert!(!free.cost_used.is_present());
    }

    #[test]
    fn counts_reasoning_and_cache_writes() {
        let mut g = goal(0.0);
        let mut m = reply("m1", 0, 10.0, 0, false);
        m.tokens = Tokens { input: 1, output: 2, reasoning: 4, cache_read: 8, cache_write: 16 };
        assert_eq!(step(&mut g, &[m]), 31);
    }

    #[test]
    fn chronology_beats_lexical_ids() {
        let mut g = goal(100.0);
        // Ids that sort backwards: "z" is older than "a".
        let window = vec![reply("z", 0, 200.0, 1_000, false), reply("a", 1, 300.0, 4_000, false)];
        assert_eq!(step(&mut g, &window), 4_000);
        assert_eq!(g.last_accounted_message_id, "a");
        // Nothing new: no change, cursor kept.
        assert_eq!(step(&mut g, &window), 4_000);
        let mut more = window.clone();
        more.push(reply("b", 2, 400.0, 7_000, false));
        assert_eq!(step(&mut g, &more), 7_000);
    }

    #[test]
    fn monotonic_when_context_shrinks() {
        let mut g = goal(0.0);
        let mut window = vec![reply("m1", 0, 10.0, 9_000, false)];
        assert_eq!(step(&mut g, &window), 9_000);
        window.push(reply("m2", 1, 20.0, 3_000, false));
        assert_eq!(step(&mut g, &window), 9_000);
    }

    #[test]
    fn a_reply_without_tokens_leaves_the_snapshot_of_the_one_before() {
        // A finished reply, then a turn cut by a restart (made plannable: completed, no tokens).
        let mut g = goal(0.0);
        let window = vec![reply("m1", 0, 100.0, 5_000, false), reply("m2", 1, 200.0, 0, false)];
        assert_eq!(step(&mut g, &window), 5_000);
    }

    #[test]
    fn unfinished_replies_are_not_counted() {
        let mut g = goal(0.0);
        let mut running = reply("m1", 0, 10.0, 9_000, false);
        running.completed = None;
        assert_eq!(step(&mut g, &[running]), 0);
        assert_eq!(g.last_accounted_message_id, "");
    }

    #[test]
    fn cursor_out_of_window_uses_its_timestamp() {
        let mut g = goal(0.0);
        g.last_accounted_message_id = "gone".into();
        g.last_accounted_created = 150.0;
        g.tokens_used = 500;
        let window = vec![reply("m1", 0, 100.0, 99_999, false), reply("m2", 1, 200.0, 2_000, false)];
        assert_eq!(step(&mut g, &window), 2_000);
    }
}
