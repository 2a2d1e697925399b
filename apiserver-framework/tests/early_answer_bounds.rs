//! Security issue 44: over HTTP/2, an answer given before the request body was read must not
//! let a client hold streams open for nothing. When the client sends none of the body it
//! announced, the answer is sent at once and its stream reset (`RST_STREAM`, `NO_ERROR`), as
//! Go's server does; while it sends, the answer waits until the body's rest is read, but only
//! for 16 streams of a connection at once, and such a stream keeps its connection from being
//! closed to make room no more than an idle one does. The client is the `h2` crate's: it can
//! announce a body and send none, or only part of it.

mod support_chain;
mod support_serving;

use std::time::{Duration, Instant};

use apiserver_framework::server::connections::ConnectionLimits;
use apiserver_framework::server::filters::RequestLimits;
use bytes::Bytes;
use support_serving::{SNAILS, Served, TOKEN, serve};

/// How long a refused stream may stay open.
const RESET_BOUND: Duration = Duration::from_secs(1);

/// An HTTP/2 connection of the `h2` crate's client.
async fn connect(s: &Served) -> h2::client::SendRequest<Bytes> {
    let (send, conn) = h2::client::handshake(s.tls(&[b"h2"]).await)
        .await
        .expect("HTTP/2");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    send
}

/// Opens a POST of `path` as `token` announcing `announced` body bytes and sending none.
async fn open(
    send: &mut h2::client::SendRequest<Bytes>,
    s: &Served,
    path: &str,
    token: &str,
    announced: usize,
) -> (h2::client::ResponseFuture, h2::SendStream<Bytes>) {
    let req = http::Request::post(format!("{}{path}", s.url))
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .header("content-length", announced.to_string())
        .body(())
        .unwrap();
    let ready = send.clone().ready().await.expect("room for a stream");
    *send = ready;
    send.send_request(req, false).expect("a stream")
}

/// Resolves with the reason `stream` is reset with.
async fn reset(stream: &mut h2::SendStream<Bytes>) -> h2::Reason {
    std::future::poll_fn(|cx| stream.poll_reset(cx))
        .await
        .expect("a reset")
}

fn serve_limits(connections: ConnectionLimits) -> RequestLimits {
    RequestLimits {
        connections,
        ..RequestLimits::default()
    }
}

/// Refusals of streams that send none of their body are answered, whole, and their streams
/// reset with `NO_ERROR` within a second of the request; so are streams announcing more than
/// would be read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_streams_are_answered_and_reset_at_once() {
    let s = serve(RequestLimits::default(), Duration::ZERO).await;
    let mut send = connect(&s).await;
    for i in 0..50 {
        // Within the 8 MiB read after an early answer, and beyond it.
        let announced = if i % 2 == 0 { 1 << 20 } else { (8 << 20) + 1 };
        let opened = Instant::now();
        let (response, mut body) = open(&mut send, &s, SNAILS, "wrong", announced).await;
        let res = response.await.expect("an answer");
        assert_eq!(res.status(), 401);
        let reason = reset(&mut body).await;
        let after = opened.elapsed();
        assert_eq!(reason, h2::Reason::NO_ERROR);
        assert!(after < RESET_BOUND, "reset {after:?} after the request");
        let mut answer = res.into_body();
        let mut text = Vec::new();
        while let Some(chunk) = answer.data().await {
            text.extend_from_slice(&chunk.expect("the answer's body"));
        }
        let status: serde_json::Value = serde_json::from_slice(&text).expect("a Status");
        assert_eq!(status["reason"], "Unauthorized", "{status}");
    }
    s.running.shutdown().await;
}

/// Past 16 bodies being read on a connection, another early answer (a 404) to a client sending
/// its body is sent at once and its stream reset; the 16 wait until their bodies end, and then
/// end cleanly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_reads_at_most_16_unread_bodies_at_once() {
    use futures::StreamExt;

    let limits = ConnectionLimits {
        // Far beyond the test: the held answers wait for the bodies, not for this.
        unread_body_drain_timeout: Duration::from_secs(60),
        ..ConnectionLimits::default()
    };
    let s = serve(serve_limits(limits), Duration::ZERO).await;
    let mut send = connect(&s).await;
    let unserved = SNAILS.replace("snails", "slugs");
    let mut bodies = Vec::new();
    let mut responses = futures::stream::FuturesUnordered::new();
    for i in 0..20 {
        let (response, mut body) = open(&mut send, &s, &unserved, TOKEN, 100).await;
        body.send_data(Bytes::from(vec![b' '; 10]), false)
            .expect("the body's start");
        bodies.push(Some(body));
        responses.push(async move { (i, response.await.expect("an answer")) });
    }
    // With their bodies unfinished, four streams are answered (and reset); the other 16 are
    // held.
    for _ in 0..4 {
        let (i, res) = responses.next().await.expect("an answer");
        assert_eq!(res.status(), 404);
        let mut body = bodies[i].take().unwrap();
        assert_eq!(reset(&mut body).await, h2::Reason::NO_ERROR);
    }
    assert!(
        futures::FutureExt::now_or_never(responses.next()).is_none(),
        "a fifth stream was answered before its body was sent"
    );
    // Their bodies sent, the 16 are answered, whole.
    for body in bodies.iter_mut().flatten() {
        body.send_data(Bytes::from(vec![b' '; 90]), true)
            .expect("the body's rest");
    }
    let mut held = 0;
    while let Some((_, res)) = responses.next().await {
        assert_eq!(res.status(), 404);
        let mut answer = res.into_body();
        let mut text = Vec::new();
        while let Some(chunk) = answer.data().await {
            text.extend_from_slice(&chunk.expect("the answer's body"));
        }
        let status: serde_json::Value = serde_json::from_slice(&text).expect("a Status");
        assert_eq!(status["reason"], "NotFound", "{status}");
        held += 1;
    }
    assert_eq!(held, 16);
    s.running.shutdown().await;
}

/// A connection whose only stream waits for the rest of its body is idle for the connection bound:
/// at the bound, a new connection makes it close rather than being refused itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_whose_body_is_read_keeps_no_connection_open() {
    let limits = ConnectionLimits {
        max_open_connections: Some(1),
        unread_body_drain_timeout: Duration::from_secs(60),
        ..ConnectionLimits::default()
    };
    let s = serve(serve_limits(limits), Duration::ZERO).await;
    let mut send = connect(&s).await;
    let unserved = SNAILS.replace("snails", "slugs");
    let (held, mut body) = open(&mut send, &s, &unserved, TOKEN, 100).await;
    body.send_data(Bytes::from(vec![b' '; 10]), false)
        .expect("the body's start");
    // The stream has reached the server once its connection's next request is answered.
    let ping = http::Request::get(format!("{}/readyz", s.url))
        .body(())
        .unwrap();
    let (ready, _) = send.send_request(ping, true).expect("a stream");
    assert_eq!(ready.await.expect("readyz").status(), 200);

    // Another client, at the bound of one connection: served.
    let res = s
        .http
        .get(format!("{}/readyz", s.url))
        .send()
        .await
        .expect("the new connection is served");
    assert_eq!(res.status(), 200);
    // The held stream's connection was closed to make room.
    assert!(
        held.await.is_err(),
        "the held stream outlived its connection"
    );
    s.running.shutdown().await;
}
