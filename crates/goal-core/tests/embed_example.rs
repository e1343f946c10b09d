//! Runs the embedding example (examples/embed_goal.rs) as a test: a goal driven from `active`
//! to `complete` through `goal_core`'s embedding API against the example's local stand-in for OpenCode.

#[path = "../examples/embed_goal.rs"]
mod example;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_runtime_drives_a_goal_to_complete() {
    let outcome = example::drive_goal_to_completion().await.expect("example ran");
    assert_eq!(outcome.status, "complete", "{outcome:?}");
    assert_eq!(outcome.reason, goal_core::reasons::REASON_VERIFIED);
    assert!(outcome.ticks >= 1 && outcome.settled == 1, "{outcome:?}");
    // The settle went through OpenCode's API: a PATCH of the session's metadata, no prompt.
    let patches = outcome.requests.get("PATCH /session/ses_embedexample01").copied().unwrap_or(0);
    assert!(patches >= 1, "{outcome:?}");
    assert!(!outcome.requests.contains_key("POST /session/ses_embedexample01/prompt_async"), "{outcome:?}");
    // The control context reaches the same server: the directory's goal listed, as stored.
    assert_eq!(outcome.listed, ["ses_embedexample01: complete"], "{outcome:?}");
    assert!(outcome.requests.get("GET /session").copied().unwrap_or(0) >= 1, "{outcome:?}");
    // The events came through goal-core's follower of the server's event stream.
    assert_eq!(outcome.requests.get("GET /global/event").copied(), Some(1), "{outcome:?}");
}
