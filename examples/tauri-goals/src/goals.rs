//! The page's commands: list the directory's goals, pause one, resume one. Each goes through
//! goal-core's control functions with the runtime's own control context (same server, headers,
//! data directory); the runtime learns of the change from OpenCode's `session.updated` event.

use goal_core::{CriterionState, EmbeddedGoalRuntime, EventFollower, Goal, GoalTarget};
use serde::Serialize;
use tauri::State;

/// What the commands share, managed by Tauri: the running goal runtime, the follower of
/// OpenCode's events that feeds it, the directory the window shows, and whether the test hooks
/// are on.
pub struct AppState {
    runtime: EmbeddedGoalRuntime,
    events: EventFollower,
    directory: String,
    test_control: bool,
}

impl AppState {
    /// State for a window that shows `directory`'s goals.
    pub fn new(runtime: EmbeddedGoalRuntime, events: EventFollower, directory: String, test_control: bool) -> Self {
        Self { runtime, events, directory, test_control }
    }

    /// Whether the app runs with its test hooks (`TAURI_GOALS_TEST_CONTROL=1`).
    pub fn test_control(&self) -> bool {
        self.test_control
    }

    /// Stops following events, then the runtime (ticks in flight finish first).
    pub async fn stop(&self) {
        self.events.stop();
        self.runtime.stop().await;
    }
}

/// One goal as the page shows it.
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GoalRowView {
    /// The session the goal belongs to.
    pub session_id: String,
    /// The session's title.
    pub title: String,
    /// The objective (empty when it lives in an objective file).
    pub objective: String,
    /// `active | paused | blocked | budgetLimited | complete`.
    pub status: String,
    /// Continuations sent since the goal started or was last resumed.
    pub turns: u64,
    /// Criteria graded met.
    pub criteria_met: usize,
    /// All acceptance criteria.
    pub criteria_total: usize,
    /// The latest audit note.
    pub note: String,
    /// Why the goal stopped or waits (a cause code), empty while it simply runs.
    pub cause: String,
    /// The sentence that says how to get it going again, if any.
    pub fix: String,
    /// A turn is running now.
    pub working: bool,
}

/// The page's view of `goal`.
pub fn view_of(session_id: &str, title: &str, goal: &Goal, working: bool) -> GoalRowView {
    let cause = goal.cause.as_ref();
    GoalRowView {
        session_id: session_id.to_string(),
        title: title.to_string(),
        objective: goal.objective.clone(),
        status: goal.status.as_str().to_string(),
        turns: goal.turns_used,
        criteria_met: goal.criteria.iter().filter(|c| c.state == CriterionState::Met).count(),
        criteria_total: goal.criteria.len(),
        note: goal.note.clone(),
        cause: cause.map(|c| c.code.as_str().to_string()).unwrap_or_default(),
        fix: cause.and_then(|c| c.fix.clone()).unwrap_or_default(),
        working,
    }
}

/// The directory and its goals, newest session first.
#[derive(Debug, Serialize)]
pub struct GoalList {
    /// The directory shown.
    pub directory: String,
    /// Its goals.
    pub goals: Vec<GoalRowView>,
}

/// Lists the goals of the window's directory.
#[tauri::command]
pub async fn list_goals(state: State<'_, AppState>) -> Result<GoalList, String> {
    let rows = goal_core::list_goals(&state.runtime.control_context(), &state.directory)
        .await
        .map_err(|error| error.to_string())?;
    let goals = rows.iter().map(|row| view_of(&row.session.id, &row.session.title, &row.goal, row.working)).collect();
    Ok(GoalList { directory: state.directory.clone(), goals })
}

/// Pauses a session's goal (and aborts its running turn); returns the goal as stored.
#[tauri::command]
pub async fn pause_goal(state: State<'_, AppState>, session_id: String) -> Result<GoalRowView, String> {
    let report = goal_core::pause_goal(&state.runtime.control_context(), &target(&state, session_id)).await;
    view_of_report(report)
}

/// Resumes a session's goal; the runtime kicks it off within its resume delay.
#[tauri::command]
pub async fn resume_goal(state: State<'_, AppState>, session_id: String) -> Result<GoalRowView, String> {
    let report = goal_core::resume_goal(&state.runtime.control_context(), &target(&state, session_id)).await;
    view_of_report(report)
}

fn target(state: &AppState, session_id: String) -> GoalTarget {
    GoalTarget { session_id, directory: state.directory.clone(), expected_goal_id: None }
}

fn view_of_report(report: Result<goal_core::ActionReport, goal_core::GoalError>) -> Result<GoalRowView, String> {
    let report = report.map_err(|error| error.to_string())?;
    let goal = report.goal.as_ref().ok_or("the session has no goal")?;
    Ok(view_of(&report.session_id, "", goal, false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_view_counts_met_criteria_and_carries_cause_and_fix() {
        let goal = Goal::from_value(&json!({
            "id": "g1", "status": "blocked", "objective": "Ship it", "turnsUsed": 3, "note": "tests fail",
            "criteria": [
                {"id": "c1", "text": "builds", "source": "user", "state": "met", "evidence": ["e1"]},
                {"id": "c2", "text": "tests pass", "source": "user", "state": "unmet"}
            ],
            "cause": {"code": "auditorBlocked", "since": 1, "fix": "Fix the tests, then resume."}
        }))
        .expect("a goal");
        let view = view_of("ses_1", "Title", &goal, false);
        assert_eq!((view.status.as_str(), view.turns, view.criteria_met, view.criteria_total), ("blocked", 3, 1, 2));
        assert_eq!((view.cause.as_str(), view.fix.as_str()), ("auditorBlocked", "Fix the tests, then resume."));
        let page = serde_json::to_value(&view).unwrap();
        assert_eq!(page["criteriaMet"], 1);
        assert_eq!(page["sessionId"], "ses_1");
    }
}
