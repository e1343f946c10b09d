//! The cause table: for every code of the closed list, the sentence a user can act on and the
//! one action `doctor --fix` may apply. Every settle, pause and wait the loop decides names its
//! code where it is decided (a [`Settlement`](crate::goal::decide::plan::Settlement) carries it); this
//! table turns the code into the stored `cause`. Pure.

use crate::record::cause::{Cause, CauseCode};

/// What `doctor --fix` may do for a cause: nothing, or exactly the action its fix names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FixAction {
    /// Nothing to apply: the goal is done, or waits for something that ends by itself, or the
    /// fix needs a choice only the user can make.
    None,
    /// Resume the goal (a fresh turn allowance).
    Resume,
    /// Resume with a larger token budget (the user names it).
    ResumeWithTokenBudget,
    /// Resume with a larger time budget (the user names it).
    ResumeWithTimeBudget,
    /// Resume with a larger cost budget (the user names it).
    ResumeWithCostBudget,
}

impl FixAction {
    /// The wire name (`explain` and `doctor --json`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Resume => "resume",
            Self::ResumeWithTokenBudget => "resumeWithTokenBudget",
            Self::ResumeWithTimeBudget => "resumeWithTimeBudget",
            Self::ResumeWithCostBudget => "resumeWithCostBudget",
        }
    }
}

/// One row: the fix sentence (`{id}` is the session id, `{detail}` the cause's detail, or the
/// words in `detail_fallback` when there is none) and the action.
struct Row {
    fix: Option<&'static str>,
    detail_fallback: &'static str,
    action: FixAction,
}

const fn row(fix: &'static str, detail_fallback: &'static str, action: FixAction) -> Row {
    Row { fix: Some(fix), detail_fallback, action }
}

const DONE: Row = Row { fix: None, detail_fallback: "", action: FixAction::None };

/// The fix of a turn that failed with an error the provider table does not name. A bare resume
/// meets the same failed tail again (resume does not bypass assistant errors), so it names the
/// message that moves past it.
const TURN_FAILED_FIX: &str = "Read the failed turn's error in the session, fix its cause (or switch the session's model) and send the agent a message, then resume: `session-goal resume {id}`.";
/// The fix of a spent cost budget.
const COST_BUDGET_FIX: &str =
    "Resume with a larger cost budget in US dollars: `session-goal resume {id} --goal-cost-budget 5`.";

/// The table, one row per code.
fn row_of(code: CauseCode) -> Row {
    use CauseCode::*;
    use FixAction::{None as Nothing, Resume};
    match code {
        Verified | ChecksPassed | UserComplete | ReviewApproved => DONE,
        ReviewUnavailable => row(
            "The reviewer gave no readable answer ({detail}): check its model and agent, or turn review off (editGoal with review: false), then resume: `session-goal resume {id}`.",
            "no answer",
            Resume,
        ),
        AuditorBlocked => row(
            "Read the auditor's note, answer it in the session or sharpen the objective, then resume: `session-goal resume {id}`.",
            "",
            Resume,
        ),
        NoProgress => row(
            "Give the agent a hint or narrow the objective, then resume: `session-goal resume {id}`.",
            "",
            Resume,
        ),
        AuditUnavailable => row(
            "Connect the auditor's provider ({detail}) or set small_model, then resume: `session-goal resume {id}`.",
            "no status",
            Resume,
        ),
        DispatchFailed => row(
            "Check that OpenCode is reachable and the session's model is available ({detail}), then resume: `session-goal resume {id}`.",
            "no status",
            Resume,
        ),
        MessagesUnavailable => row(
            "Check that OpenCode is reachable and the goal's objective is readable ({detail}), then resume: `session-goal resume {id}`.",
            "messages",
            Resume,
        ),
        TokenBudget | TimeBudget | CostBudget => budget_row(code),
        TurnCap => row(
            "Check the session's progress, then resume for another round of automatic turns: `session-goal resume {id}`.",
            "",
            Resume,
        ),
        UserPaused | UserAborted => row("Resume when ready: `session-goal resume {id}`.", "", Resume),
        UserAskedToPause => row(
            "Paused as you asked in the chat; resume when the goal should go on: `session-goal resume {id}`.",
            "",
            Resume,
        ),
        WaitingForUser | WaitingForHours | WaitingForProviderLimit | WaitingForLease | WaitingForOpenCode => {
            waiting_row(code)
        }
        ProviderAuth => row(
            "Connect provider {detail} again (check its API key), then resume: `session-goal resume {id}`.",
            "of the session",
            Resume,
        ),
        ProviderQuota => row(
            "Raise the quota of provider {detail} or switch the session's model, then resume: `session-goal resume {id}`.",
            "of the session",
            Resume,
        ),
        ContextOverflow => row(
            "Compact the session (or continue in a new one), then resume: `session-goal resume {id}`.",
            "",
            Resume,
        ),
        ContentFilter => row(
            "Rephrase the objective or the last request, then resume: `session-goal resume {id}`.",
            "",
            Resume,
        ),
        TurnInterrupted => row(
            "Check why the OpenCode server restarted, then resume: `session-goal resume {id}`.",
            "",
            Resume,
        ),
        TurnFailed => row(TURN_FAILED_FIX, "", Nothing),
        Inherited => row(
            "This goal was copied from session {detail}: resume it to run it here, or clear it: `session-goal resume {id}`.",
            "another session",
            Resume,
        ),
        // The sentence names the field's own call (`goal/decide/guard_rules.rs`); this one is for a
        // detail that names no guard field.
        InvalidGoal => row(
            "Correct the goal's unreadable field ({detail}) with `editGoal`; the edit resumes the goal.",
            "",
            Nothing,
        ),
    }
}

/// The rows of the spent budgets (`goal/decide/budgets/`; `row_of` sends only those here): each fix
/// resumes with a new budget, which the user names.
fn budget_row(code: CauseCode) -> Row {
    use CauseCode::*;
    match code {
        TokenBudget => row(
            "Resume with a larger token budget: `session-goal resume {id} --goal-token-budget N`.",
            "",
            FixAction::ResumeWithTokenBudget,
        ),
        TimeBudget => row(
            "Resume with a larger time budget: `session-goal resume {id} --goal-time-budget 2h`.",
            "",
            FixAction::ResumeWithTimeBudget,
        ),
        CostBudget => row(COST_BUDGET_FIX, "", FixAction::ResumeWithCostBudget),
        _ => DONE,
    }
}

/// The rows of the codes a running goal waits under (`row_of` sends only those here).
fn waiting_row(code: CauseCode) -> Row {
    use CauseCode::*;
    use FixAction::None as Nothing;
    match code {
        WaitingForUser => row("Answer the pending permission or question in the session.", "", Nothing),
        WaitingForHours => row("Nothing to do: the goal goes on when its working hours begin.", "", Nothing),
        WaitingForProviderLimit => {
            row("Nothing to do: the goal goes on when the provider's limit resets ({detail}).", "provider", Nothing)
        }
        WaitingForLease => row(
            "Nothing to do while host {detail} runs the goal; its lease ends by itself if that host is gone.",
            "(unknown)",
            Nothing,
        ),
        WaitingForOpenCode => row(
            "Check why OpenCode fails {detail} (its log, a proxy in front of it, its version); the goal goes on by itself once it answers.",
            "a request",
            Nothing,
        ),
        _ => DONE,
    }
}

/// The sentence a user can act on for `code` in session `session_id`.
pub fn fix_sentence(code: CauseCode, session_id: &str, detail: Option<&str>) -> Option<String> {
    if code == CauseCode::InvalidGoal {
        if let Some(field) = detail.and_then(crate::goal::decide::guard_rules::field_of_detail) {
            return Some(crate::goal::decide::guard_rules::fix_for(field, session_id));
        }
    }
    let row = row_of(code);
    let detail = detail.filter(|d| !d.trim().is_empty()).unwrap_or(row.detail_fallback);
    row.fix.map(|fix| fix.replace("{id}", session_id).replace("{detail}", detail).replace(" ()", ""))
}

/// The action `doctor --fix` applies for `code`.
pub fn fix_action(code: CauseCode) -> FixAction {
    row_of(code).action
}

/// The stored cause for `code` at `since`, with its detail and the fix from the table.
pub fn cause_of(code: CauseCode, since: f64, session_id: &str, detail: Option<&str>) -> Cause {
    let mut cause = Cause::new(code, since);
    if let Some(detail) = detail {
        cause = cause.with_detail(detail);
    }
    if let Some(fix) = fix_sentence(code, session_id, cause.detail.as_deref()) {
        cause = cause.with_fix(fix);
    }
    cause
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_stop_but_a_finished_goal_has_a_fix() {
        for &code in CauseCode::ALL {
            let fix = fix_sentence(code, "ses_1", None);
            let finished = matches!(
                code,
                CauseCode::Verified | CauseCode::ChecksPassed | CauseCode::UserComplete | CauseCode::ReviewApproved
            );
            assert_eq!(fix.is_none(), finished, "{code:?}");
            if let Some(fix) = fix {
                assert!(!fix.contains('{'), "{code:?}: {fix}");
                assert!(fix.len() < crate::record::cause::CAUSE_FIX_CHAR_LIMIT, "{code:?}");
            }
        }
    }

    #[test]
    fn the_fix_names_the_session_and_the_detail() {
        let cause = cause_of(CauseCode::ProviderAuth, 5.0, "ses_9", Some("anthropic"));
        assert_eq!(cause.detail.as_deref(), Some("anthropic"));
        let fix = cause.fix.unwrap();
        assert!(fix.contains("provider anthropic") && fix.contains("session-goal resume ses_9"), "{fix}");
        let budget = fix_sentence(CauseCode::TokenBudget, "ses_9", None).unwrap();
        assert!(budget.contains("--goal-token-budget N"));
        assert_eq!(fix_action(CauseCode::TokenBudget), FixAction::ResumeWithTokenBudget);
        assert_eq!(fix_action(CauseCode::WaitingForHours), FixAction::None);
        assert_eq!(fix_action(CauseCode::UserPaused), FixAction::Resume);
        // An unreadable guard's fix is the guard's own, found from the field the detail names.
        for guard in crate::record::GUARDS {
            let invalid = cause_of(CauseCode::InvalidGoal, 5.0, "ses_9", Some(&format!("{}: is text", guard.field)));
            let own = crate::goal::decide::guard_rules::fix_for(guard.field, "ses_9");
            assert_eq!(invalid.fix.as_deref(), Some(own.as_str()), "{}", guard.field);
            assert!(own.contains("ses_9") && !own.starts_with("Correct the goal's unreadable field"), "{own}");
        }
        assert_eq!(fix_action(CauseCode::InvalidGoal), FixAction::None, "only the user can say what was meant");
        let unavailable = fix_sentence(CauseCode::AuditUnavailable, "s", Some("status 401")).unwrap();
        assert!(unavailable.contains("(status 401)"), "{unavailable}");
    }
}
