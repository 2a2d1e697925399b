//! Bounds on connect sessions, attacking the real `wardle local` binary over real TLS with
//! kube-rs' WebSocket client on Flunder's `console` (an echo, channel protocol v5): what a
//! session holds in memory when its client sends without reading, the largest message, the
//! bound on open connections counting upgraded ones, and the streaming idle timeout.
//!
//! Memory is the resident set of the wardle process (`VmRSS` of `/proc/<pid>/status`).

mod support;

use std::time::{Duration, Instant};

use apiserver_framework::testing::wait;
use futures::{SinkExt, StreamExt};
use hyper_util::rt::TokioIo;
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::json;
use support::process::rss_mib;
use support::{FLUNDERS, Wardle};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

type Session = WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>;

/// A MiB: the largest message the server accepts.
const MIB: usize = 1024 * 1024;

/// How long one step (a connection, an answer) may take on a busy two-core machine.
const STEP: Duration = Duration::from_secs(20);

/// Starts wardle with `args` and creates the Flunder `x`, whose console the tests open.
async fn start(args: &[&str]) -> (Wardle, kube::Client) {
    let server = Wardle::start_with_args(args);
    let flunder = json!({
        "apiVersion": "wardle.example.com/v1alpha1",
        "kind": "Flunder",
        "metadata": {"name": "x"},
        "spec": {},
    });
    let res = server
        .client()
        .post(server.at(FLUNDERS))
        .json(&flunder)
        .send()
        .await
        .expect("create the Flunder");
    assert_eq!(res.status(), 201);
    let kubeconfig = Kubeconfig::read_from(&server.kubeconfig).expect("read the kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("a client config");
    let client = kube::Client::try_from(config).expect("a client");
    (server, client)
}

/// Opens `x`'s console (a connection of its own).
async fn console(client: &kube::Client) -> Result<Session, kube::Error> {
    let req = http::Request::get(format!("{FLUNDERS}/x/console"))
        .body(Vec::new())
        .unwrap();
    match tokio::time::timeout(STEP, client.connect(req)).await {
        Ok(conn) => conn.map(kube::client::Connection::into_stream),
        Err(_) => panic!("the console did not open or fail within {STEP:?}"),
    }
}

/// A message of `len` bytes on the standard input channel (channel byte included).
fn stdin_message(len: usize) -> Message {
    let mut data = vec![b'a'; len];
    data[0] = 0;
    Message::Binary(data.into())
}

/// The next message of `session`, within [`STEP`].
async fn next(session: &mut Session) -> Option<Message> {
    match tokio::time::timeout(STEP, session.next()).await {
        Ok(m) => m.map(|m| m.expect("a message")),
        Err(_) => panic!("no message within {STEP:?}"),
    }
}

/// Sends one message and checks that it comes back on standard output.
async fn echoes(session: &mut Session, len: usize) {
    tokio::time::timeout(STEP, session.send(stdin_message(len)))
        .await
        .expect("sent in time")
        .expect("sent");
    let Some(Message::Binary(data)) = next(session).await else {
        panic!("expected the echo")
    };
    assert_eq!((data.len(), data[0]), (len, 1), "the echo on stdout");
}

/// Closes standard input (v5) and reads until the server has ended the session: its Status,
/// its close frame, then the connection's end.
async fn ends(session: &mut Session) {
    session
        .send(Message::Binary(vec![255, 0].into()))
        .await
        .expect("stdin closed");
    let mut close_frame = false;
    for _ in 0..3 {
        match tokio::time::timeout(STEP, session.next()).await {
            Ok(Some(Ok(Message::Close(_)))) => close_frame = true,
            Ok(Some(Ok(_))) => {}
            Ok(None | Some(Err(_))) => {
                assert!(close_frame, "the session ended without a close frame");
                return;
            }
            Err(_) => panic!("the session did not end within {STEP:?}"),
        }
    }
    panic!("the session did not end after its Status and close frame");
}

/// How long a send may wait before the server is taken to have stopped reading. The test
/// measures nothing by it: it is how a client that sends without reading learns that the
/// server has stopped taking its bytes (they wait in the kernel's socket buffers).
const STALLED: Duration = Duration::from_secs(3);

/// At most this many messages are sent on one session; the server must stop reading before.
const MAX_PUSHED: usize = 64;

/// Sends 1 MiB messages on `session`, never reading, until the server stops taking them;
/// returns how many were sent.
async fn push_until_stalled(session: &mut Session) -> usize {
    for sent in 0..MAX_PUSHED {
        match tokio::time::timeout(STALLED, session.send(stdin_message(MIB))).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => panic!("the session failed after {sent} messages: {e}"),
            Err(_) => return sent,
        }
    }
    MAX_PUSHED
}

/// Ten sessions whose client sends 1 MiB messages and never reads: the server holds a few
/// MiB per session (its queues are bounded in bytes, each way) and stops reading; the rest
/// waits in the kernel. Before the byte bound, sixteen messages each way made it 37 MB a
/// session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_that_send_without_reading_hold_a_few_mib_each() {
    let (server, client) = start(&[]).await;
    // One session first, so that what any session costs once (TLS, the allocator's first
    // large blocks) is in the baseline.
    let mut warm = console(&client).await.expect("a console");
    echoes(&mut warm, MIB).await;
    ends(&mut warm).await;
    let before = rss_mib(server.pid());

    let mut sessions = Vec::new();
    for _ in 0..10 {
        sessions.push(console(&client).await.expect("a console"));
    }
    let pushed: Vec<usize> =
        futures::future::join_all(sessions.iter_mut().map(push_until_stalled)).await;
    let after = rss_mib(server.pid());
    let grown = after - before;
    eprintln!(
        "pushed {pushed:?} MiB; RSS {before:.1} MiB before, {after:.1} MiB with the sessions \
         stalled: {grown:.1} MiB more"
    );
    // The server stopped taking messages on every session (and each took a few).
    assert!(
        pushed.iter().all(|n| (3..MAX_PUSHED).contains(n)),
        "{pushed:?}"
    );
    assert!(grown < 50.0, "{grown:.1} MiB more for 10 sessions");

    // Still serving: a new session echoes.
    let mut fresh = console(&client).await.expect("a console");
    echoes(&mut fresh, 16).await;
    drop(sessions);
}

/// A message of 1 MiB (channel byte included) is echoed; one byte more ends the session with
/// close code 1009, Message Too Big.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_over_the_bound_closes_the_session_as_too_big() {
    let (_server, client) = start(&[]).await;
    let mut session = console(&client).await.expect("a console");
    echoes(&mut session, MIB).await;
    // Sent whole: the server reads what follows the refused message's header (and drops it)
    // so that the client can send it and read the close frame.
    session
        .send(stdin_message(MIB + 1))
        .await
        .expect("the message is sent");
    match next(&mut session).await {
        Some(Message::Close(Some(frame))) => {
            assert_eq!(frame.code, CloseCode::Size, "{frame:?}");
            assert_eq!(u16::from(frame.code), 1009);
            assert!(frame.reason.contains("too big"), "{frame:?}");
        }
        other => panic!("expected a close frame with code 1009, got {other:?}"),
    }
    // Nothing follows: the session is over.
    let rest = tokio::time::timeout(STEP, session.next())
        .await
        .expect("the connection ends");
    assert!(!matches!(rest, Some(Ok(Message::Binary(_)))), "{rest:?}");
}

/// Opens sessions one after another, `attempts` times; returns those that opened.
async fn open_sessions(client: &kube::Client, attempts: usize) -> Vec<Session> {
    let mut open = Vec::new();
    for _ in 0..attempts {
        match console(client).await {
            Ok(session) => open.push(session),
            // Refused: the connection is closed during its TLS handshake, before any answer.
            Err(kube::Error::Api(status)) => panic!("an answer, not a refusal: {status:?}"),
            Err(_) => {}
        }
    }
    open
}

/// Waits (polling, at most [`STEP`]) until a new session opens.
async fn a_session_opens(client: &kube::Client) -> Session {
    wait::poll("a new session to open", STEP, || console(client))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Upgraded connections stay counted against `--max-open-connections` for as long as they
/// live, and busy: of forty idle sessions, twenty open and the others are refused, as a
/// plain connection is when every open one has a request in flight; they outlive
/// `--idle-connection-timeout`; one session ending makes room for one more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sessions_count_against_the_bound_on_open_connections() {
    let (server, client) = start(&[
        "--max-open-connections",
        "20",
        "--idle-connection-timeout",
        "1s",
    ])
    .await;
    let mut sessions = open_sessions(&client, 40).await;
    assert_eq!(sessions.len(), 20, "sessions open at once");

    // Three times the connection idle timeout later, every session still echoes. The measured
    // subject: the sessions must outlive the idle timeout, waited out on purpose.
    tokio::time::sleep(Duration::from_secs(3)).await;
    for session in &mut sessions {
        echoes(session, 16).await;
    }
    // A plain request is refused too: every open connection is busy.
    let plain = server.client().get(server.at("/readyz")).send().await;
    assert!(plain.is_err(), "{plain:?}");
    assert!(open_sessions(&client, 1).await.is_empty());

    // One session ends; its place is free for one more, and then no other.
    let mut first = sessions.swap_remove(0);
    ends(&mut first).await;
    drop(first);
    sessions.push(a_session_opens(&client).await);
    assert!(open_sessions(&client, 1).await.is_empty());
    for session in &mut sessions {
        echoes(session, 16).await;
    }
}

/// With `--streaming-connection-idle-timeout 2s`, a session with nothing read or written for
/// two seconds is closed (and its connection no longer counted), while one that keeps
/// talking stays open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_idle_past_the_streaming_idle_timeout_are_closed() {
    let timeout = Duration::from_secs(2);
    let (_server, client) = start(&[
        "--max-open-connections",
        "20",
        "--streaming-connection-idle-timeout",
        "2s",
    ])
    .await;
    let opened = Instant::now();
    let mut idle = open_sessions(&client, 19).await;
    assert_eq!(idle.len(), 19);
    let mut talking = console(&client).await.expect("a console");
    // At the bound: no more.
    assert!(open_sessions(&client, 1).await.is_empty());

    // The talking session echoes every half second (a pace well within the timeout) for
    // three timeouts, while the idle ones are waited for.
    let talk = async {
        let mut echoed = 0;
        let deadline = Instant::now() + 3 * timeout;
        while Instant::now() < deadline {
            echoes(&mut talking, 16).await;
            echoed += 1;
            // The talking session's pace, on purpose (see above).
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        echoed
    };
    let wait_for_the_idle = async {
        for session in &mut idle {
            // Closed without a close frame, as a connection past a deadline is.
            let end = tokio::time::timeout(STEP, session.next())
                .await
                .expect("closed within the step");
            assert!(
                matches!(end, None | Some(Err(_))),
                "an idle session got {end:?}"
            );
        }
        opened.elapsed()
    };
    let (echoed, closed_after) = tokio::join!(talk, wait_for_the_idle);
    eprintln!(
        "the idle sessions were closed {closed_after:?} after they opened; the talking one echoed {echoed} times"
    );
    // After the timeout, not before it.
    assert!(closed_after >= timeout, "{closed_after:?}");
    // Still open past three timeouts, as it kept talking.
    echoes(&mut talking, 16).await;
    // The closed sessions' connections are no longer counted: there is room again.
    let more = open_sessions(&client, 19).await;
    assert_eq!(more.len(), 19);
}
