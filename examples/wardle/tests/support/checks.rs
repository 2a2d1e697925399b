//! Checks that twin tests (in-process, production behind the dev host, a real cluster) make of
//! what wardle answered, written once. A test file that uses nothing else of `support`
//! includes this module alone: `#[path = "support/checks.rs"] mod checks;`.

#![allow(dead_code, unused_imports)]

use std::fmt::Debug;
use std::future::Future;
use std::time::Duration;

use futures::{SinkExt, Stream, StreamExt, TryStreamExt};
use kube::runtime::watcher;
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;

/// A session of a Flunder's `console` (WebSocket, channel protocol v5).
pub type Console =
    tokio_tungstenite::WebSocketStream<hyper_util::rt::TokioIo<hyper::upgrade::Upgraded>>;

/// Opens the upper-casing console at `path` (`.../flunders/<name>/console`) with `client`,
/// checks that channel protocol v5 was negotiated and that `text` sent on stdin comes back
/// upper-cased on stdout within `timeout`; the open session.
pub async fn upper_console(
    client: &kube::Client,
    path: &str,
    text: &str,
    timeout: Duration,
) -> Console {
    let request = http::Request::get(format!("{path}?upper=true"))
        .body(Vec::new())
        .unwrap();
    let conn = client.connect(request).await.expect("the console connects");
    assert!(conn.supports_stream_close(), "v5.channel.k8s.io negotiated");
    let mut ws = conn.into_stream();
    let sent: Vec<u8> = std::iter::once(0).chain(text.bytes()).collect();
    ws.send(Message::Binary(sent.into())).await.unwrap();
    let echoed = tokio::time::timeout(timeout, ws.next())
        .await
        .expect("an answer in time")
        .expect("a message")
        .expect("no error");
    let upper: Vec<u8> = std::iter::once(1)
        .chain(text.to_uppercase().bytes())
        .collect();
    assert_eq!(echoed, Message::Binary(upper.into()));
    ws
}

/// Closes the console's stdin and checks that the session ends with a `Success` Status on
/// the error channel (v5).
pub async fn close_console(ws: &mut Console) {
    ws.send(Message::Binary(vec![255, 0].into())).await.unwrap();
    let last = ws.next().await.unwrap().unwrap();
    let Message::Binary(data) = last else {
        panic!("expected the final Status, got {last:?}")
    };
    assert_eq!(data[0], 3);
    let status: Value = serde_json::from_slice(&data[1..]).unwrap();
    assert_eq!(status["status"], "Success", "{status}");
}

/// The first event of the watch answer `res`, read within 10 s.
pub async fn first_event(res: &mut reqwest::Response) -> Value {
    let chunk = tokio::time::timeout(Duration::from_secs(10), res.chunk())
        .await
        .expect("an event in time")
        .expect("a chunk")
        .expect("an event");
    serde_json::from_slice(&chunk).expect("an event")
}

/// Reads the kube-rs watcher `stream`'s initial list (until `InitDone`; any other event before
/// it fails the test), then awaits `write`, then the first `Apply` after it: the names of the
/// initial list and of the applied object.
pub async fn initial_list_then_apply<K, S>(
    stream: &mut S,
    write: impl Future<Output = ()>,
) -> (Vec<String>, String)
where
    K: kube::Resource + Debug,
    S: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Unpin,
{
    let name = |k: &K| k.meta().name.clone().expect("a name");
    let mut next = async || {
        stream
            .try_next()
            .await
            .expect("a watch event")
            .expect("the stream goes on")
    };
    let mut initial = Vec::new();
    loop {
        match next().await {
            watcher::Event::Init => {}
            watcher::Event::InitApply(k) => initial.push(name(&k)),
            watcher::Event::InitDone => break,
            other => panic!("unexpected event before InitDone: {other:?}"),
        }
    }
    write.await;
    loop {
        if let watcher::Event::Apply(k) = next().await {
            return (initial, name(&k));
        }
    }
}

/// Sends `request` and returns the answer, failing the test when none comes.
pub async fn answer(request: reqwest::RequestBuilder) -> reqwest::Response {
    request.send().await.expect("an answer")
}

/// The `message` of a `Status` read as JSON (the kit's).
pub use apiserver_framework::testing::status_message as message;

/// The Content-Type of the answer `res` (empty when it has none).
pub fn content_type(res: &reqwest::Response) -> String {
    res.headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

/// Asserts that the audited `user` carries what the requests impersonating jürgen sent: the
/// groups `editors` and `équipe`, and the extra `rôle` = `chef ✓`.
pub fn assert_jurgen_groups_and_extra(user: &Value) {
    let groups: Vec<&str> = user["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        groups.contains(&"editors") && groups.contains(&"équipe"),
        "{user}"
    );
    assert_eq!(user["extra"]["rôle"][0], "chef ✓", "{user}");
}

/// Asserts that `metrics` (a `/metrics` text) counts requests, a refused (403) scrape of
/// `/metrics` among them.
pub fn assert_refused_scrape_counted(metrics: &str) {
    assert!(
        metrics.contains("# TYPE apiserver_request_total counter"),
        "{metrics}"
    );
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("apiserver_request_total{")
                && l.contains(r#"code="403""#)
                && l.contains(r#"subresource="/metrics""#)),
        "a refused scrape is counted: {metrics}"
    );
}

/// Asserts that an answer `code` with the Status `status` is `want` with `reason` and
/// `message`, as upstream answers.
pub fn assert_status(code: u16, status: &Value, want: u16, reason: &str, message: &str) {
    assert_eq!(code, want, "{status}");
    assert_eq!(status["reason"], reason, "{status}");
    assert_eq!(status["message"], message, "{status}");
}
