//! Operator lines: the few log lines an operator of a host wants on the console by default
//! (a goal settled, a continuation turn was sent, an audit failed). Each is one `info`/`warn`
//! event with the target `session-goal` and a finished sentence as its message, so a host can
//! pick them out by target and print them as they are. They carry ids, statuses, counters and
//! fixed reasons only: never a prompt, model output or a credential.

use tracing::{info, warn};

use crate::record::reasons::{self, REASON_BLOCKED_PER_AUDIT};
use crate::record::Goal;

/// The `tracing` target of operator lines (the Node binding prints `[session-goal] …`).
pub const TARGET: &str = "session-goal";

/// The reason as it may be printed: fixed reasons and error names (`MessageAbortedError`) as
/// they are; free text (an auditor's note) replaced, since it is model output.
pub fn printable_reason(reason: &str) -> &str {
    let reason = reason.trim();
    if reason.is_empty() {
        return "no reason given";
    }
    // The runtime's own reasons; anything else may be an auditor's note (model output).
    if reasons::ALL.contains(&reason) {
        return reason;
    }
    let identifier = reason.len() <= 64 && reason.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    if identifier {
        reason
    } else {
        REASON_BLOCKED_PER_AUDIT
    }
}

/// `<session> settled as <status> (<reason>)`.
pub fn settled(session_id: &str, goal: &Goal) {
    info!(target: TARGET, "{session_id} settled as {} ({})", goal.status.as_str(), printable_reason(&goal.status_reason));
}

/// `continuing <session> (turn <n>/<max>, tokens <used>)`, or `tokens <used>/<budget>` with a
/// token budget: word for word the line OpenChamber prints.
pub fn continuation_sent(session_id: &str, turn: u64, max_turns: u64, tokens: u64, budget: Option<u64>) {
    info!(target: TARGET, "{}", continuing_line(session_id, turn, max_turns, tokens, budget));
}

/// The text of [`continuation_sent`].
pub fn continuing_line(session_id: &str, turn: u64, max_turns: u64, tokens: u64, budget: Option<u64>) -> String {
    let tokens = match budget {
        Some(budget) => format!("{tokens}/{budget}"),
        None => tokens.to_string(),
    };
    format!("continuing {session_id} (turn {turn}/{max_turns}, tokens {tokens})")
}

/// `<session> check <n>/<total> <result>`: never the command or its output.
pub fn check_finished(session_id: &str, index: usize, total: usize, result: &str) {
    info!(target: TARGET, "{session_id} acceptance check {index}/{total} {result}");
}

/// `<session> review started in <reviewer session>`.
pub fn review_started(session_id: &str, reviewer: &str) {
    info!(target: TARGET, "{session_id} review started in {reviewer}");
}

/// `<session> review <approved | rejected | unavailable>`: never the findings.
pub fn review_finished(session_id: &str, verdict: &str) {
    info!(target: TARGET, "{session_id} review {verdict}");
}

/// `progress audit failed (<status or code>)`; the silent 404 ("no small model") is not logged.
pub fn audit_failed(detail: &str) {
    warn!(target: TARGET, "progress audit failed ({detail})");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::reasons::{REASON_NO_PROGRESS, REASON_TIME_BUDGET, REASON_VERIFIED};

    #[test]
    fn fixed_reasons_and_error_names_print_as_is() {
        assert_eq!(printable_reason(REASON_VERIFIED), REASON_VERIFIED);
        assert_eq!(printable_reason("MessageAbortedError"), "MessageAbortedError");
        assert_eq!(printable_reason("  "), "no reason given");
        assert_eq!(printable_reason(REASON_NO_PROGRESS), "no progress");
        assert_eq!(printable_reason(REASON_TIME_BUDGET), "time budget reached");
    }

    #[test]
    fn the_continuation_line_reads_as_openchamber_prints_it() {
        assert_eq!(continuing_line("ses_1", 3, 20, 1234, None), "continuing ses_1 (turn 3/20, tokens 1234)");
        assert_eq!(continuing_line("ses_1", 1, 20, 50, Some(9000)), "continuing ses_1 (turn 1/20, tokens 50/9000)");
    }

    #[test]
    fn free_text_reasons_are_never_printed() {
        let note = "The tests still fail in src/secret_module.rs because the API key is wrong";
        assert_eq!(printable_reason(note), REASON_BLOCKED_PER_AUDIT);
    }
}
