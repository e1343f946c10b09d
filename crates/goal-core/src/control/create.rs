//! Goal creation: fitting the objective (small-model distillation above 5,000 chars, language
//! guarded, else a head + tail excerpt), the objective file before the metadata (inline when
//! the file cannot be written), and a metadata MERGE through the shared writer so an existing
//! session keeps every other key (the reference replaced the whole metadata object).

use std::hash::{BuildHasher, Hasher};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tracing::warn;

use crate::control::goal_settings::GoalSettings;
use crate::error::{Cancelled, ErrorKind, Warning, WarningCode};
use crate::io::objectives::{is_valid_session_id, normalize_objective, write_objective};
use crate::io::opencode::OpenCodeClient;
use crate::io::services::{SmallModel, SmallModelQuery};
use crate::io::writer::write_namespace_key;
use crate::record::session::SessionView;
use crate::record::{Goal, GoalStatus, GOAL_OBJECTIVE_CHAR_LIMIT};
use crate::text::prompts;
use crate::text::script_guard::introduces_foreign_script;
use crate::text::truncate_chars;
use crate::time::clock::now_ms;

/// What goal creation and the host actions need: OpenCode, the data directory of the objective
/// files, and the small model for distilling over-long objectives.
#[derive(Clone)]
pub struct ControlContext {
    /// OpenCode client (timeouts, `?directory=`).
    pub client: OpenCodeClient,
    /// Small model (distillation only).
    pub small_model: Arc<dyn SmallModel>,
    /// The OpenChamber data directory (`goals/<sessionId>.md` lives under it).
    pub data_dir: PathBuf,
    /// Timeout of one distillation call.
    pub small_model_timeout: Duration,
    /// How long a dispatch waits for the prompt to show up in the session.
    pub landing_timeout: Duration,
    /// Poll interval of that wait.
    pub landing_poll: Duration,
    /// Timeout of `POST /session/:id/command` (OpenCode answers it after the whole turn).
    pub command_timeout: Duration,
}

pub use crate::error::{GoalError, PartialAction};

/// Refuses a session id that could not be an OpenCode id (and could not name an objective file).
pub fn check_session_id(session_id: &str) -> Result<(), GoalError> {
    if is_valid_session_id(session_id) {
        Ok(())
    } else {
        Err(GoalError::invalid("sessionId", "invalid session id"))
    }
}

/// A new goal id: `Date.now().toString(36)` followed by 6 random base-36 characters.
pub fn new_goal_id() -> String {
    let millis = now_ms() as u64;
    let mut id = to_base36(millis);
    // RandomState is seeded from the OS once per thread and stepped per instance; mixing in a
    // process-wide counter and the clock keeps ids distinct even within one millisecond. The
    // counter stays a static: ids must differ across every context of the process, so it is
    // process identity rather than state a context owns.
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u128(
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0),
    );
    let mut random = hasher.finish();
    for _ in 0..6 {
        id.push(BASE36[(random % 36) as usize] as char);
        random /= 36;
    }
    id
}

const BASE36: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";

fn to_base36(mut value: u64) -> String {
    if value == 0 {
        return "0".into();
    }
    let mut digits = Vec::new();
    while value > 0 {
        digits.push(BASE36[(value % 36) as usize]);
        value /= 36;
    }
    digits.reverse();
    String::from_utf8(digits).unwrap_or_default()
}

crate::wire::wire_enum! {
    /// How the objective text was obtained.
    pub enum ObjectiveFit {
        #[doc = "Within 5,000 chars: used as written (trimmed)."] Verbatim = "verbatim",
        #[doc = "Distilled into completion criteria by the small model."] Distilled = "distilled",
        #[doc = "Head + tail excerpt (distillation unavailable, empty, or in another script)."] Excerpt = "excerpt",
    }
}

/// An objective ready to store.
#[derive(Debug, Clone, PartialEq)]
pub struct FittedObjective {
    /// At most 5,000 chars, trimmed.
    pub text: String,
    /// How it was obtained.
    pub fit: ObjectiveFit,
}

/// The model the goal's first turn runs on (the distillation prefers its provider).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelChoice {
    /// Provider id.
    pub provider_id: String,
    /// Model id.
    pub model_id: String,
}

/// Fits an objective into 5,000 chars. Over the limit the small model distills it into
/// completion criteria (restricted to the dispatch model's provider, the full text as prompt);
/// a result that is empty or introduces a script the objective does not use (a Korean
/// distillation of a Japanese task) falls back to the head + tail excerpt.
pub async fn fit_objective(
    ctx: &ControlContext,
    objective: &str,
    directory: &str,
    model: &ModelChoice,
) -> FittedObjective {
    let trimmed = objective.trim();
    if trimmed.chars().count() <= GOAL_OBJECTIVE_CHAR_LIMIT {
        return FittedObjective { text: trimmed.to_string(), fit: ObjectiveFit::Verbatim };
    }
    let request = SmallModelQuery {
        prompt: trimmed.to_string(),
        system: prompts::distill_system_prompt(),
        directory: directory.to_string(),
        preferred_provider_id: model.provider_id.clone(),
        preferred_model_id: model.model_id.clone(),
        restrict_to_preferred_provider: true,
        max_output_tokens: None,
        timeout_ms: ctx.small_model_timeout.as_millis() as u64,
    };
    let call = ctx.small_model.generate(request);
    let distilled = match tokio::time::timeout(ctx.small_model_timeout + Duration::from_millis(500), call).await {
        Ok(Ok(reply)) => Some(reply.text),
        Ok(Err(error)) => {
            if !error.is_silent() {
                warn!(target: "session_goal", status = ?error.status, code = %error.code, "objective distillation failed");
            }
            None
        }
        Err(_) => {
            warn!(target: "session_goal", "objective distillation timed out");
            None
        }
    };
    match distilled.map(|text| normalize_objective(&text)) {
        Some(text) if !text.is_empty() && !introduces_foreign_script(&text, trimmed) => {
            FittedObjective { text: truncate_chars(&text, GOAL_OBJECTIVE_CHAR_LIMIT), fit: ObjectiveFit::Distilled }
        }
        Some(text) if !text.is_empty() => {
            warn!(target: "session_goal", "distilled objective changed language; using an excerpt");
            FittedObjective { text: prompts::objective_excerpt(trimmed), fit: ObjectiveFit::Excerpt }
        }
        _ => FittedObjective { text: prompts::objective_excerpt(trimmed), fit: ObjectiveFit::Excerpt },
    }
}

/// Stores an objective for a goal: the file when possible (metadata then carries only the
/// flag), else inline. Returns `(objective_file, warning)`.
pub async fn store_objective(ctx: &ControlContext, session_id: &str, text: &str) -> (bool, Option<Warning>) {
    match write_objective(&ctx.data_dir, session_id, text).await {
        Ok(_) => (true, None),
        Err(error) => {
            warn!(target: "session_goal", session = session_id, %error, "objective file not written; storing the objective inline");
            let message = format!("objective file not written ({error}); the objective is stored inline");
            (false, Some(Warning::new(WarningCode::ObjectiveInline, message)))
        }
    }
}

/// A fresh active goal with zeroed counters and no settings.
fn fresh_goal(objective: &str, objective_file: bool, now: f64) -> Goal {
    Goal {
        id: new_goal_id(),
        objective: if objective_file { String::new() } else { objective.to_string() },
        objective_file,
        status: GoalStatus::Active,
        created_at: now,
        updated_at: now,
        ..Goal::default()
    }
}

/// Input of [`create_session_goal`].
#[derive(Debug, Clone, Default)]
pub struct NewGoal {
    /// Target session.
    pub session_id: String,
    /// Its directory (empty: OpenCode's default instance).
    pub directory: String,
    /// Objective text (any length; fitted here).
    pub objective: String,
    /// The model the goal's turns run on.
    pub model: ModelChoice,
    /// The goal's settings (checked when they were given).
    pub settings: GoalSettings,
}

/// A goal installed on a session.
#[derive(Debug, Clone)]
pub struct CreatedGoal {
    /// The goal as written.
    pub goal: Goal,
    /// The directory used (the caller's, else the one OpenCode reports).
    pub directory: String,
    /// The effective objective text (what the auditor judges against).
    pub objective: String,
    /// How it was fitted.
    pub fit: ObjectiveFit,
    /// Non-fatal problems (e.g. the objective file could not be written).
    pub warnings: Vec<Warning>,
    /// The id of a goal this one replaced.
    pub replaced_goal_id: Option<String>,
}

/// Installs a fresh active goal on a session: fit the objective, write the objective file,
/// then merge `openchamber.goal` into a fresh read of the metadata (every other key survives).
/// Unknown sessions (404) and sub-agent sessions (400; the loop never runs on them) are refused
/// before anything is written.
pub async fn create_session_goal(ctx: &ControlContext, request: &NewGoal) -> Result<CreatedGoal, GoalError> {
    check_session_id(&request.session_id)?;
    if request.objective.trim().is_empty() {
        return Err(GoalError::invalid("objective", "goal objective is required"));
    }
    // Look before writing anything: an unknown session or a sub-agent is refused with no file
    // written. The merge below reads fresh again inside the session's write slot.
    let session = ctx
        .client
        .get_session(&request.session_id, request.directory.trim())
        .await
        .map_err(|error| GoalError::from_http("session lookup", &error))?;
    if session.is_subagent() {
        return Err(GoalError::invalid("sessionId", "sub-agent sessions cannot carry a goal"));
    }
    let directory = match request.directory.trim() {
        "" => session.directory.clone(),
        given => given.to_string(),
    };
    let fitted = fit_objective(ctx, &request.objective, &directory, &request.model).await;
    if fitted.text.is_empty() {
        return Err(GoalError::invalid("objective", "goal objective is required"));
    }
    let (objective_file, warning) = store_objective(ctx, &request.session_id, &fitted.text).await;
    let mut goal = fresh_goal(&fitted.text, objective_file, ctx.client.clock().now_ms());
    request.settings.apply_to(&mut goal);
    goal.session_id = Some(request.session_id.clone());
    let mut refusal: Option<GoalError> = None;
    let mut replaced: Option<String> = None;
    let value = goal.to_value();
    let written = write_namespace_key(&ctx.client, &request.session_id, &directory, "goal", |session: &SessionView| {
        if session.is_subagent() {
            refusal = Some(GoalError::invalid("sessionId", "sub-agent sessions cannot carry a goal"));
            return Err(Cancelled);
        }
        replaced = session.goal().map(|g| g.id);
        Ok(Some(value))
    })
    .await
    .map_err(|error| GoalError::from_http("goal metadata write", &error))?;
    if written.is_none() {
        return Err(refusal.unwrap_or_else(|| GoalError::new(ErrorKind::Conflict, "goal not written")));
    }
    Ok(CreatedGoal {
        goal,
        directory,
        objective: fitted.text,
        fit: fitted.fit,
        warnings: warning.into_iter().collect(),
        replaced_goal_id: replaced,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::opencode::{BoxFuture, StaticEndpoint};
    use crate::io::services::{SmallModelError, SmallModelReply};
    use parking_lot::Mutex;

    struct Scripted {
        reply: Result<String, u16>,
        calls: Mutex<Vec<SmallModelQuery>>,
    }

    impl SmallModel for Scripted {
        fn generate(&self, request: SmallModelQuery) -> BoxFuture<'_, Result<SmallModelReply, SmallModelError>> {
            self.calls.lock().push(request);
            let reply = self.reply.clone();
            Box::pin(async move {
                reply
                    .map(|text| SmallModelReply { text, provider_id: "p".into(), model_id: "m".into(), tokens: None })
                    .map_err(|status| SmallModelError { status: Some(status), code: String::new() })
            })
        }
    }

    fn context(reply: Result<String, u16>) -> (ControlContext, Arc<Scripted>) {
        let model = Arc::new(Scripted { reply, calls: Mutex::new(Vec::new()) });
        let endpoint = Arc::new(StaticEndpoint::new("http://127.0.0.1:9", Vec::new()));
        let ctx = ControlContext {
            client: OpenCodeClient::new(&crate::io::shared::SharedContext::new(), endpoint, Duration::from_millis(100)),
            small_model: model.clone(),
            data_dir: std::env::temp_dir(),
            small_model_timeout: Duration::from_secs(1),
            landing_timeout: Duration::from_millis(10),
            landing_poll: Duration::from_millis(5),
            command_timeout: Duration::from_secs(1),
        };
        (ctx, model)
    }

    #[test]
    fn goal_ids_look_like_the_reference() {
        let a = new_goal_id();
        let b = new_goal_id();
        assert_ne!(a, b);
        let stamp = to_base36(now_ms() as u64);
        assert_eq!(a.len(), stamp.len() + 6);
        assert!(a.bytes().all(|c| c.is_ascii_digit() || c.is_ascii_lowercase()));
        assert_eq!(to_base36(35), "z");
        assert_eq!(to_base36(36), "10");
    }

    #[tokio::test]
    async fn short_objectives_skip_the_model() {
        let (ctx, model) = context(Ok("never".into()));
        let fitted = fit_objective(&ctx, "  ship it  ", "/d", &ModelChoice::default()).await;
        assert_eq!(fitted, FittedObjective { text: "ship it".into(), fit: ObjectiveFit::Verbatim });
        assert!(model.calls.lock().is_empty());
    }

    #[tokio::test]
    async fn long_objectives_are_distilled_with_the_dispatch_provider() {
        let long = "Build the importer. ".repeat(400);
        let (ctx, model) = context(Ok("  Importer exists and its tests pass.  ".into()));
        let choice = ModelChoice { provider_id: "anthropic".into(), model_id: "big".into() };
        let fitted = fit_objective(&ctx, &long, "/d", &choice).await;
        assert_eq!(
            fitted,
            FittedObjective { text: "Importer exists and its tests pass.".into(), fit: ObjectiveFit::Distilled }
        );
        let calls = model.calls.lock();
        assert_eq!(calls.len(), 1);
        assert!(calls[0].restrict_to_preferred_provider);
        assert_eq!(calls[0].preferred_provider_id, "anthropic");
        assert_eq!(calls[0].prompt, long.trim());
        assert_eq!(calls[0].system, prompts::distill_system_prompt());
    }

    #[tokio::test]
    async fn failed_empty_or_foreign_distillations_fall_back_to_the_excerpt() {
        let long = "ログイン画面を直す。".repeat(600);
        for reply in [Err(404), Ok("   ".to_string()), Ok("로그인 화면 수정".to_string())] {
            let (ctx, _) = context(reply.clone());
            let fitted = fit_objective(&ctx, &long, "/d", &ModelChoice::default()).await;
            assert_eq!(fitted.fit, ObjectiveFit::Excerpt, "{reply:?}");
            assert!(fitted.text.chars().count() <= GOAL_OBJECTIVE_CHAR_LIMIT);
            assert!(fitted.text.starts_with("ログイン画面を直す。"));
        }
        let (ctx, _) = context(Ok("ログイン画面が動くこと".into()));
        assert_eq!(fit_objective(&ctx, &long, "/d", &ModelChoice::default()).await.fit, ObjectiveFit::Distilled);
    }

    #[test]
    fn fresh_goals_keep_file_backed_text_out_of_metadata() {
        let goal = fresh_goal("do it", true, 42.0);
        assert_eq!(goal.objective, "");
        assert!(goal.objective_file);
        assert_eq!(goal.status, GoalStatus::Active);
        assert_eq!(goal.token_budget, None);
        let inline = fresh_goal("do it", false, 42.0);
        assert_eq!(inline.objective, "do it");
        assert_eq!(Goal::from_value(&inline.to_value()).unwrap().created_at, 42.0);
    }
}
