use std::collections::VecDeque;

use parking_lot::Mutex;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use super::*;
use crate::intake::Consumer;
use crate::io::opencode::StaticEndpoint;

#[test]
fn blocks_split_across_chunks_come_out_whole() {
    let mut blocks = SseBlocks::default();
    assert_eq!(blocks.push(b"data: {\"a\":").unwrap(), Vec::<String>::new());
    assert_eq!(blocks.push(b"1}\n\ndata: x\ndata:y\n\n: ping\n\nda").unwrap(), ["{\"a\":1}", "x\ny"]);
    // A CRLF separator split over three chunks, and a CR-only one.
    assert_eq!(blocks.push(b"ta: z\r\n").unwrap(), Vec::<String>::new());
    assert_eq!(blocks.push(b"\r").unwrap(), Vec::<String>::new());
    assert_eq!(blocks.push(b"\ndata: w\r\r").unwrap(), ["z", "w"]);
    assert_eq!(
        blocks.push(b"event: x\nid: 3\n\n").unwrap(),
        Vec::<String>::new(),
        "a block without data gives nothing"
    );
}

#[test]
fn an_event_over_the_limit_ends_the_connection() {
    let mut blocks = SseBlocks::default();
    assert!(blocks.push(b"data: ").is_some());
    assert!(blocks.push(&vec![b'x'; MAX_EVENT_BYTES]).is_none());
}

/// How the test server answers one request.
#[derive(Clone)]
enum Reply {
    /// A JSON body with this status.
    Json(u16, Value),
    /// `200 text/event-stream` with these events (each a `data:` line), then closed.
    Events(Vec<Value>),
    /// The same, then held open until the client goes.
    EventsHeld(Vec<Value>),
    /// Read and never answered.
    Silence,
}

/// A request the test server saw: `METHOD /path?query`, and its headers lower-cased.
#[derive(Debug, Clone)]
struct Seen {
    line: String,
    headers: String,
}

/// A loopback HTTP server: each `GET /global/event` takes the next of `streams` (the last one
/// repeats); every other request is answered by `other`.
struct TestServer {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    /// One message per connection the server saw closed by the client.
    closed: mpsc::UnboundedReceiver<()>,
}

impl TestServer {
    async fn start(streams: Vec<Reply>, other: fn(&str) -> Reply) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let streams = Arc::new(Mutex::new(VecDeque::from(streams)));
        let (closed_tx, closed) = mpsc::unbounded_channel();
        let log = seen.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let (log, streams, closed_tx) = (log.clone(), streams.clone(), closed_tx.clone());
                tokio::spawn(async move {
                    serve(socket, &log, &streams, other).await;
                    let _ = closed_tx.send(());
                });
            }
        });
        TestServer { url, seen, closed }
    }

    fn requests(&self, starting: &str) -> usize {
        self.seen.lock().iter().filter(|seen| seen.line.starts_with(starting)).count()
    }
}

async fn serve(
    mut socket: TcpStream,
    log: &Mutex<Vec<Seen>>,
    streams: &Mutex<VecDeque<Reply>>,
    other: fn(&str) -> Reply,
) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match socket.read(&mut byte).await {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let (first, headers) = head.split_once("\r\n").unwrap_or((&head, ""));
    let mut words = first.split_whitespace();
    let (method, path) = (words.next().unwrap_or("").to_string(), words.next().unwrap_or("").to_string());
    log.lock().push(Seen { line: format!("{method} {path}"), headers: headers.to_lowercase() });
    let reply = if path.starts_with("/global/event") {
        let mut streams = streams.lock();
        if streams.len() > 1 { streams.pop_front() } else { streams.front().cloned() }.unwrap_or(Reply::Silence)
    } else {
        other(&path)
    };
    let events = |events: &[Value]| -> String { events.iter().map(|event| format!("data: {event}\n\n")).collect() };
    let (text, hold) = match reply {
        Reply::Json(status, body) => {
            let body = body.to_string();
            (format!("HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len()), false)
        }
        Reply::Events(list) => (
            format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{}", events(&list)),
            false,
        ),
        Reply::EventsHeld(list) => (
            format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{}", events(&list)),
            true,
        ),
        Reply::Silence => (String::new(), true),
    };
    if socket.write_all(text.as_bytes()).await.is_err() {
        return;
    }
    if hold {
        // Until the client closes its side.
        let mut rest = [0u8; 256];
        while matches!(socket.read(&mut rest).await, Ok(n) if n > 0) {}
    }
}

fn not_found(_path: &str) -> Reply {
    Reply::Json(404, json!({"error": "not found"}))
}

/// A consumer of the intake that records what reaches it.
struct Recorder {
    group: String,
    events: Mutex<Vec<IntakeEvent>>,
}

impl Consumer for Recorder {
    fn accept(&self, event: &IntakeEvent) {
        self.events.lock().push(event.clone());
    }
    fn group(&self) -> String {
        self.group.clone()
    }
    fn is_live(&self) -> bool {
        true
    }
}

struct Followed {
    follower: EventFollower,
    recorder: Arc<Recorder>,
    statuses: Arc<Mutex<Vec<StreamStatus>>>,
    hooked: Arc<Mutex<Vec<IntakeEvent>>>,
}

fn follow(server: &TestServer, configure: impl FnOnce(EventFollowerBuilder) -> EventFollowerBuilder) -> Followed {
    let shared = SharedContext::new();
    let endpoint =
        Arc::new(StaticEndpoint::new(&server.url, vec![("authorization".into(), "Basic dGVzdDp0ZXN0".into())]));
    let recorder = Arc::new(Recorder { group: endpoint.key(), events: Mutex::new(Vec::new()) });
    let consumer: Arc<dyn Consumer> = recorder.clone();
    shared.intake().register(&consumer);
    let (statuses, hooked) = (Arc::new(Mutex::new(Vec::new())), Arc::new(Mutex::new(Vec::new())));
    let (status_log, event_log) = (statuses.clone(), hooked.clone());
    let builder = EventFollowerBuilder::new(&shared, endpoint)
        .first_retry(Duration::from_millis(20))
        .on_status(move |status| status_log.lock().push(status.clone()))
        .on_event(move |event| event_log.lock().push(event.clone()));
    let follower = configure(builder).start(&tokio::runtime::Handle::current());
    // The context must outlive the follower's deliveries: the recorder holds nothing of it, so
    // it is kept by the follower's task itself.
    Followed { follower, recorder, statuses, hooked }
}

async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn status_event(session: &str, directory: &str) -> Value {
    json!({"directory": directory, "payload": {"type": "session.status", "properties": {"sessionID": session, "status": {"type": "idle"}}}})
}

#[tokio::test]
async fn events_reach_the_runtimes_once_each_and_every_connection_is_announced() {
    let first = vec![
        json!({"payload": {"type": "server.connected", "properties": {}}}),
        status_event("ses_first", "/p"),
        json!({"payload": {"type": "sync", "properties": {}}}),
        json!({"directory": "/p", "payload": {"type": "message.part.updated", "properties": {"sessionID": "ses_first"}}}),
        json!({"directory": "global", "payload": {"type": "session.deleted", "properties": {"info": {"id": "ses_gone"}}}}),
    ];
    let server = TestServer::start(
        vec![Reply::Events(first), Reply::EventsHeld(vec![status_event("ses_second", "/q")])],
        not_found,
    )
    .await;
    let followed = follow(&server, |builder| builder);
    until("the second stream's event arrived", || followed.recorder.events.lock().len() == 5).await;
    let idle = |session: &str, directory: &str| IntakeEvent::Status {
        session_id: session.into(),
        directory: directory.into(),
        working: false,
    };
    let expected = vec![
        IntakeEvent::Connected,
        idle("ses_first", "/p"),
        IntakeEvent::SessionDeleted { session_id: "ses_gone".into() },
        IntakeEvent::Connected,
        idle("ses_second", "/q"),
    ];
    assert_eq!(*followed.recorder.events.lock(), expected, "server.connected is not a second announcement");
    assert_eq!(*followed.hooked.lock(), expected, "the host's hook sees what the runtimes saw");
    let statuses = followed.statuses.lock().clone();
    assert_eq!(
        statuses,
        [
            StreamStatus::Connected,
            StreamStatus::Disconnected {
                reason: "the server closed the stream".into(),
                retry_in: Duration::from_millis(20)
            },
            StreamStatus::Connected,
        ]
    );
    let seen = server.seen.lock().clone();
    assert!(seen.iter().all(|request| request.line == "GET /global/event"), "{seen:?}");
    for request in &seen {
        assert!(request.headers.contains("authorization: basic dgvzddp0zxn0"), "the endpoint's headers: {request:?}");
        assert!(request.headers.contains("accept: text/event-stream"), "{request:?}");
    }
    followed.follower.stop();
}

/// The host's payload hook: what it was handed, in order.
type Handed = Arc<Mutex<Vec<(Value, String)>>>;

fn handed_to(log: &Handed) -> impl Fn(Value, String) + Send + Sync + 'static {
    let log = log.clone();
    move |payload, directory| log.lock().push((payload, directory))
}

#[tokio::test]
async fn the_payload_hook_gets_each_payload_unwrapped_and_the_runtimes_still_their_events() {
    let deleted = json!({"type": "session.deleted", "properties": {"info": {"id": "ses_gone"}}});
    let delta = json!({"type": "message.part.delta", "properties": {"sessionID": "ses_a"}});
    let server = TestServer::start(
        vec![Reply::EventsHeld(vec![
            json!({"payload": {"type": "server.connected", "properties": {}}}),
            status_event("ses_a", "/p"),
            json!({"directory": "/p", "payload": {"type": "sync", "syncEvent": {}}}),
            json!({"directory": "global", "payload": deleted}),
            delta.clone(),
            json!("no object"),
        ])],
        not_found,
    )
    .await;
    let handed: Handed = Arc::default();
    let followed = follow(&server, |builder| builder.on_payload(handed_to(&handed)));
    until("the bare payload arrived", || handed.lock().len() == 4).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let status = status_event("ses_a", "/p")["payload"].clone();
    assert_eq!(
        *handed.lock(),
        [
            (json!({"type": "server.connected", "properties": {}}), String::new()),
            (status, "/p".to_string()),
            (deleted, String::new()),
            (delta, String::new()),
        ],
        "envelopes unwrapped, `global` read as no directory, sync twins and non-objects left out"
    );
    assert_eq!(
        followed.recorder.events.lock().len(),
        3,
        "the runtimes still have theirs: {:?}",
        followed.recorder.events
    );
}

#[tokio::test]
async fn a_host_that_forwards_itself_gets_the_payloads_and_the_runtimes_nothing_from_the_follower() {
    let server = TestServer::start(
        vec![Reply::Events(vec![status_event("ses_a", "/p")]), Reply::EventsHeld(vec![status_event("ses_b", "/q")])],
        not_found,
    )
    .await;
    let handed: Handed = Arc::default();
    let followed = follow(&server, |builder| builder.on_payload(handed_to(&handed)).deliver_to_runtimes(false));
    until("both streams' payloads arrived", || handed.lock().len() == 2).await;
    let directories: Vec<String> = handed.lock().iter().map(|(_, directory)| directory.clone()).collect();
    assert_eq!(directories, ["/p", "/q"]);
    assert!(followed.recorder.events.lock().is_empty(), "not even a connection is announced to the runtimes");
    assert_eq!(
        followed.hooked.lock().len(),
        4,
        "the host's event hook still reads them: two connections, two statuses"
    );
}

#[tokio::test]
async fn a_payload_hook_that_panics_does_not_end_the_stream() {
    let server = TestServer::start(
        vec![Reply::EventsHeld(vec![status_event("ses_a", "/p"), status_event("ses_b", "/p")])],
        not_found,
    )
    .await;
    let followed = follow(&server, |builder| builder.on_payload(|_, _| panic!("the host's hook broke")));
    until("both events arrived", || followed.recorder.events.lock().len() == 3).await;
    assert!(followed.follower.is_running());
}

#[tokio::test]
async fn failures_back_off_and_say_why() {
    let streams = vec![
        Reply::Json(500, json!({})),
        Reply::Json(401, json!({})),
        Reply::Silence,
        Reply::EventsHeld(vec![status_event("ses_up", "/p")]),
    ];
    let server = TestServer::start(streams, not_found).await;
    let followed = follow(&server, |builder| builder.answer_timeout(Duration::from_millis(200)));
    until("the fourth attempt connected", || followed.statuses.lock().contains(&StreamStatus::Connected)).await;
    let ms = Duration::from_millis;
    let retry = |reason: &str, retry_in| StreamStatus::Disconnected { reason: reason.into(), retry_in };
    assert_eq!(
        *followed.statuses.lock(),
        [
            retry("HTTP 500", ms(20)),
            retry("HTTP 401 (check the authorization header: OPENCODE_SERVER_PASSWORD)", ms(40)),
            retry("no answer within 200 ms", ms(80)),
            StreamStatus::Connected,
        ]
    );
    until("the event after the failures arrived", || followed.recorder.events.lock().len() == 2).await;
}

#[tokio::test]
async fn a_server_that_is_not_there_is_tried_again_and_named() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let server = TestServer { url, seen: Arc::new(Mutex::new(Vec::new())), closed: mpsc::unbounded_channel().1 };
    let followed = follow(&server, |builder| builder);
    until("two attempts failed", || followed.statuses.lock().len() >= 2).await;
    let statuses = followed.statuses.lock().clone();
    for (status, wait) in statuses.iter().zip([20, 40]) {
        let StreamStatus::Disconnected { reason, retry_in } = status else { panic!("{statuses:?}") };
        assert!(reason.to_lowercase().contains("connect"), "the reason names the failed connection: {reason}");
        assert_eq!(*retry_in, Duration::from_millis(wait));
    }
    assert!(followed.recorder.events.lock().is_empty());
}

#[tokio::test]
async fn stopping_closes_the_stream_and_tries_no_more() {
    let mut server = TestServer::start(vec![Reply::EventsHeld(vec![])], not_found).await;
    let followed = follow(&server, |builder| builder);
    until("connected", || !followed.statuses.lock().is_empty()).await;
    assert!(followed.follower.is_running());
    followed.follower.stop();
    tokio::time::timeout(Duration::from_secs(5), server.closed.recv()).await.expect("the server saw the stream closed");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!followed.follower.is_running());
    assert_eq!(server.requests("GET /global/event"), 1, "no attempt after the stop");
    drop(followed);
}

#[tokio::test]
async fn a_hook_that_panics_does_not_end_the_stream() {
    let server = TestServer::start(
        vec![Reply::EventsHeld(vec![status_event("ses_a", "/p"), status_event("ses_b", "/p")])],
        not_found,
    )
    .await;
    let followed = follow(&server, |builder| builder.on_event(|_| panic!("the host's hook broke")));
    until("both events arrived", || followed.recorder.events.lock().len() == 3).await;
    assert!(followed.follower.is_running());
}

fn sessions_of_the_directory(path: &str) -> Reply {
    if path.starts_with("/session?") || path.starts_with("/session/status") {
        return Reply::Json(200, json!(if path.starts_with("/session?") { json!([]) } else { json!({}) }));
    }
    not_found(path)
}

/// The list of the one directory the host named, as the fallback of a server without a
/// server-wide list asks for it: top-level sessions, all of them, the directory escaped as a
/// query value (everything but RFC 3986's unreserved characters).
const DIRECTORY_LIST: &str = "GET /session?roots=true&limit=100000&directory=%2Fmy%20project%2F%C3%A4";

#[tokio::test]
async fn an_embedded_runtime_finds_its_goals_on_every_connection() {
    let streams = vec![
        Reply::Events(vec![json!({"payload": {"type": "server.connected", "properties": {}}})]),
        Reply::EventsHeld(vec![json!({"payload": {"type": "server.connected", "properties": {}}})]),
    ];
    // An older server: no `/experimental/session` and no `/project`, so each connection's census
    // lists the directory the host named.
    let server = TestServer::start(streams, sessions_of_the_directory).await;
    let data_dir = std::env::temp_dir().join(format!("goal-core-follower-test-{}", std::process::id()));
    let runtime = crate::GoalRuntimeBuilder::new(&server.url)
        .data_dir(&data_dir)
        .small_model(Arc::new(crate::NoSmallModel))
        .directories(["/my project/ä"])
        .recover_on_start(false)
        .start(&tokio::runtime::Handle::current());
    let follower =
        runtime.event_follower().first_retry(Duration::from_millis(20)).start(&tokio::runtime::Handle::current());
    until("two connections", || server.requests("GET /global/event") == 2).await;
    until("a census per connection", || server.requests(DIRECTORY_LIST) == 2).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(server.requests(DIRECTORY_LIST), 2, "one census per connection, not two");
    assert_eq!(
        server.requests("GET /experimental/session?roots=true&limit=1000"),
        2,
        "each tried the server-wide list first"
    );
    follower.stop();
    runtime.stop().await;
    let _ = std::fs::remove_dir_all(&data_dir);
}
