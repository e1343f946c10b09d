//! A cause as stored: the code the loop decided (a
//! [`Settlement`](crate::goal::decide::plan_rules::Settlement) carries it), its detail, and the fix
//! sentence from the code's row in `record/cause.rs` with the session and the detail filled in.
//! Every settle, pause and wait names its code where it is decided. Pure.

use crate::record::cause::{Cause, CauseCode, FixAction};

/// The sentence a user can act on for `code` in session `session_id`.
pub fn fix_sentence(code: CauseCode, session_id: &str, detail: Option<&str>) -> Option<String> {
    if code == CauseCode::InvalidGoal {
        if let Some(field) = detail.and_then(crate::goal::decide::guard_rules::field_of_detail) {
            return Some(crate::goal::decide::guard_rules::fix_for(field, session_id));
        }
    }
    let row = code.fix_row();
    let detail = detail.filter(|d| !d.trim().is_empty()).unwrap_or(row.detail_fallback);
    row.sentence.map(|fix| fix.replace("{id}", session_id).replace("{detail}", detail).replace(" ()", ""))
}

/// The action `doctor --fix` applies for `code`.
pub fn fix_action(code: CauseCode) -> FixAction {
    code.fix_row().action
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
