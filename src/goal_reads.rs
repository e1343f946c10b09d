//! `history` and `explain`, the two reads of a session's goal that the goal runtime and the goal
//! control both offer. Each class says where it reads them ([`GoalReads`]: the runtime under its
//! log span and with its lease holder, the control directly); the napi methods, the conversion
//! to JavaScript and the errors are the same for both, written once here ([`goal_read_methods!`]).

use napi::bindgen_prelude::*;
use serde_json::Value;

use goal_core::{BoxFuture, ExplainReport, GoalError, HttpError};

use crate::types::answers::{GoalHistory, GoalHistoryRecord, HistoryLimit};
use crate::types::explanation::GoalExplanation;

/// Where a class reads a goal's audit trail and explanation.
pub(crate) trait GoalReads {
    /// The session's audit trail records, oldest first; `limit` keeps the newest.
    fn trail(&self, session_id: String, limit: Option<usize>) -> BoxFuture<'static, Vec<Value>>;
    /// Why the session's goal is where it is.
    fn report(
        &self,
        session_id: String,
        directory: String,
    ) -> BoxFuture<'static, std::result::Result<ExplainReport, HttpError>>;
}

/// `history(sessionId, limit?)`: the trail as `GoalHistoryRecord`s; an unusable `limit` means all.
pub(crate) fn history<'env>(
    env: &'env Env,
    reads: &impl GoalReads,
    session_id: String,
    limit: Option<f64>,
) -> Result<PromiseRaw<'env, Vec<GoalHistoryRecord>>> {
    let trail = reads.trail(session_id, HistoryLimit::from(limit).0);
    crate::failure::resolve(env, async move { GoalHistory::from(trail.await).0 })
}

/// `explain(sessionId, directory?)`: the report as a `GoalExplanation`; rejects with the
/// operation `explain` when OpenCode cannot be read.
pub(crate) fn explain<'env>(
    env: &'env Env,
    reads: &impl GoalReads,
    session_id: String,
    directory: Option<String>,
) -> Result<PromiseRaw<'env, GoalExplanation>> {
    let report = reads.report(session_id, directory.unwrap_or_default());
    crate::failure::settle(env, async move {
        report.await.map(GoalExplanation::from).map_err(|error| GoalError::from_http("explain", &error))
    })
}

/// The `history` and `explain` methods of a class that implements [`GoalReads`]. A napi class
/// cannot inherit methods, so each class gets them from here. The documentation is written as
/// `#[doc = "…"]` lines: napi-derive would copy a `///` comment that passes through a macro into
/// index.d.ts with its `r"` prefix.
macro_rules! goal_read_methods {
    ($class:ident) => {
        #[napi]
        impl $class {
            #[doc = " The goal's audit trail (`goals/<sessionId>.history.jsonl`), oldest first; `limit` keeps the"]
            #[doc = " newest. Each record is a `GoalHistoryRecord`: the audit's verdict, note and action, its"]
            #[doc = " evidence counts, and the goal's active time and time budget then. An unknown session or a"]
            #[doc = " missing trail reads as an empty list."]
            #[napi]
            pub fn history<'env>(
                &self,
                env: &'env Env,
                session_id: String,
                limit: Option<f64>,
            ) -> Result<PromiseRaw<'env, Vec<$crate::types::answers::GoalHistoryRecord>>> {
                $crate::goal_reads::history(env, self, session_id, limit)
            }

            #[doc = " Why the session's goal is where it is: `{sessionId, status, statusReason, cause, fixAction,"]
            #[doc = " nextWakeAt, lease, pending, lastAudit, lastChecks, checks, findings}`, `null` where a part"]
            #[doc = " is unknown. Read only. Rejects when OpenCode cannot be read (docs/errors.md)."]
            #[napi]
            pub fn explain<'env>(
                &self,
                env: &'env Env,
                session_id: String,
                directory: Option<String>,
            ) -> Result<PromiseRaw<'env, $crate::types::explanation::GoalExplanation>> {
                $crate::goal_reads::explain(env, self, session_id, directory)
            }
        }
    };
}
pub(crate) use goal_read_methods;
