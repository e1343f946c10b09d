//! Operator lines: the few log lines an operator of a host wants on the console by default
//! (a goal settled, a continuation turn was sent, an audit failed). Each is one `info`/`warn`
//! event with the target `session-goal` and a finished sentence as its message, so a host can
//! pick them out by target and print them as they are. They carry ids, statuses, counters and
//! fixed reasons only: never a prompt, model output or a credential.

use tracing::{info, warn};

use crate::goal::plan as decide;
use crate::record::Goal;

/// The `tracing` target of operator lines (the Node binding prints `[session-goal] …`).
pub const TARGET: &str = "session-goal";

/// Reasons the runtime writes itself; anything else may be an auditor's note (model output).
const FIXED_REASONS: &[&str] = &[
    decide::REASON_RESUMED,
    decide::REASON_PAUSED_AFTER_ABORT,
    decide::REASON_BUDGET,
    decide::REASON_TURN_CAP,
    decide::REASON_AUDIT_UNAVAILABLE,
    decide::REASON_VERIFIED,
    decide::REASON_BLOCKED_PER_AUDIT,
    decide::REASON_TURN_FAILED,
    decide::REASON_REPEATED_TRUNCATION,
    decide::REASON_MESSAGES_UNAVAILABLE,
    decide::REASON_OBJECTIVE_UNAVAILABLE,
    decide::REASON_DISPATCH_FAILED,
    crate::evidence::REASON_NO_PROGRESS,
    crate::time::active::REASON_TIME_BUDGET,
    "marked by user",
    "reported by agent",
    crate::goal::park::REASON_WAITING_FOR_PROVIDER,
    crate::goal::park::REASON_PROVIDER_QUOTA,
    crate::goal::park::REASON_PROVIDER_AUTH,
    crate::goal::park::REASON_CONTEXT_OVERFLOW,
    crate::goal::park::REASON_CONTENT_FILTER,
    crate::goal::park::REASON_TURN_INTERRUPTED,
    crate::goal::lineage::REASON_COPIED,
];

/// The reason as it may be printed: fixed reasons and error names (`MessageAbortedError`) as
/// they are; free text (an auditor's note) replaced, since it is model output.
pub fn printable_reason(reason: &str) -> &str {
    let reason = reason.trim();
    if reason.is_empty() {
        return "no reason given";
    }
    if FIXED_REASONS.contains(&reason) {
        return reason;
    }
    let identifier = reason.len() <= 64 && reason.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    if identifier {
        reason
    } else {
        decide::REASON_BLOCKED_PER_AUDIT
    }
}

/// `<session> settled as <status> (<reason>)`.
pub fn settled(session_id: &str, goal: &Goal) {
    info!(target: TARGET, "{session_id} settled as {} ({})", goal.status.as_str(), printable_reason(&goal.status_reason));
}

/// `<session> continuation turn <n>/<max>`.
pub fn continuation_sent(session_id: &str, turn: u64, max_turns: u64) {
    info!(target: TARGET, "{session_id} continuation turn {turn}/{max_turns}");
}

/// `progress audit failed (<status or code>)`; the silent 404 ("no small model") is not logged.
pub fn audit_failed(detail: &str) {
    warn!(target: TARGET, "progress audit failed ({detail})");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_reasons_and_error_names_print_as_is() {
        assert_eq!(printable_reason(decide::REASON_VERIFIED), decide::REASON_VERIFIED);
        assert_eq!(printable_reason("MessageAbortedError"), "MessageAbortedError");
        assert_eq!(printable_reason("  "), "no reason given");
        assert_eq!(printable_reason(crate::evidence::REASON_NO_PROGRESS), "no progress");
        assert_eq!(printable_reason(crate::time::active::REASON_TIME_BUDGET), "time budget reached");
        assert_eq!(printable_reason(crate::goal::park::REASON_PROVIDER_AUTH), "provider authentication failed");
    }

    #[test]
    fn free_text_reasons_are_never_printed() {
        let note = "The tests still fail in src/secret_module.rs because the API key is wrong";
        assert_eq!(printable_reason(note), decide::REASON_BLOCKED_PER_AUDIT);
    }
}
