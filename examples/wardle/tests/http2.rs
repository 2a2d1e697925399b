//! wardle over HTTP/2 and with compression, as the aggregator and client-go use it: 500
//! watches multiplexed on one HTTP/2 connection are all established and all see an event
//! (`--http2-max-streams-per-connection` is 1000); a LIST over 128 KiB asked for with
//! `Accept-Encoding: gzip` comes back gzip-encoded and decodes to the uncompressed LIST; a
//! watch is never compressed, not even one sending more than 128 KiB.

mod support;

use std::io::Read;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::Value;
use support::checks::answer;
use support::fixtures::flunder_with_note;
use support::{FLUNDERS, Wardle};

const WATCHES: usize = 500;

/// An HTTP/2 connection to `w` (ALPN `h2`, trusting its CA).
async fn h2_connection(w: &Wardle) -> hyper::client::conn::http2::SendRequest<Empty<Bytes>> {
    let config = apiserver_framework::testing::tls::client_config(&w.ca_pem, &[b"h2"]);
    let addr = w.url.trim_start_matches("https://");
    let tls = apiserver_framework::testing::tls::connect(addr, "127.0.0.1", config)
        .await
        .unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (send, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
            .await
            .unwrap();
    tokio::spawn(conn);
    send
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_watches_on_one_http2_connection() {
    let w = Wardle::start();
    let http = w.client();
    let list: Value = support::get_json(&http, w.at(FLUNDERS)).await;
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();

    let h2 = h2_connection(&w).await;
    let uri = format!(
        "{}?watch=true&resourceVersion={rv}&timeoutSeconds=300",
        w.at(FLUNDERS)
    );
    let opened = (0..WATCHES).map(|_| {
        let mut h2 = h2.clone();
        let req = hyper::Request::get(&uri)
            .header("authorization", format!("Bearer {}", w.token))
            .body(Empty::<Bytes>::new())
            .unwrap();
        async move { h2.send_request(req).await }
    });
    let responses =
        tokio::time::timeout(Duration::from_secs(120), futures::future::join_all(opened))
            .await
            .expect("500 watches on one connection were not all established");
    let mut bodies = Vec::new();
    for res in responses {
        let res = res.unwrap();
        assert_eq!(res.status(), 200);
        bodies.push(res.into_body());
    }

    let res = answer(
        http.post(w.at(FLUNDERS))
            .json(&flunder_with_note("ping", 10)),
    )
    .await;
    assert_eq!(res.status(), 201);

    let seen = bodies.into_iter().map(|mut body| async move {
        let mut text = String::new();
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame.unwrap().into_data() {
                text.push_str(std::str::from_utf8(&data).unwrap());
            }
            if let Some(line) = text.lines().find(|l| l.contains("\"ping\"")) {
                let event: Value = serde_json::from_str(line).unwrap();
                return event["type"] == "ADDED" && event["object"]["metadata"]["name"] == "ping";
            }
        }
        false
    });
    let seen = tokio::time::timeout(Duration::from_secs(120), futures::future::join_all(seen))
        .await
        .expect("not every watch saw the event");
    let count = seen.iter().filter(|s| **s).count();
    assert_eq!(count, WATCHES);
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut plain = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut plain)
        .expect("a gzip stream");
    plain
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_lists_are_gzipped_and_watches_never() {
    let w = Wardle::start();
    let http = w.client();
    for i in 0..40 {
        let res = answer(
            http.post(w.at(FLUNDERS))
                .json(&flunder_with_note(&format!("f-{i}"), 4000)),
        )
        .await;
        assert_eq!(res.status(), 201);
    }

    let plain = http.get(w.at(FLUNDERS)).send().await.unwrap();
    assert_eq!(plain.status(), 200);
    assert!(plain.headers().get("content-encoding").is_none());
    let plain = plain.bytes().await.unwrap();
    assert!(plain.len() > 128 * 1024, "{}", plain.len());

    let gzipped = answer(http.get(w.at(FLUNDERS)).header("accept-encoding", "gzip")).await;
    assert_eq!(gzipped.status(), 200);
    assert_eq!(gzipped.headers()["content-encoding"], "gzip");
    let vary = gzipped.headers()["vary"]
        .to_str()
        .unwrap()
        .to_ascii_lowercase();
    assert!(vary.contains("accept-encoding"), "{vary}");
    assert!(gzipped.headers().get("content-length").is_none());
    let body = gzipped.bytes().await.unwrap();
    assert!(
        body.len() < plain.len() / 4,
        "{} of {}",
        body.len(),
        plain.len()
    );
    assert_eq!(gunzip(&body), plain);

    // Small responses are not compressed.
    let one = answer(
        http.get(w.at(&format!("{FLUNDERS}/f-0")))
            .header("accept-encoding", "gzip"),
    )
    .await;
    assert_eq!(one.status(), 200);
    assert!(one.headers().get("content-encoding").is_none());
    assert!(one.headers().get("vary").is_none());

    // A watch whose first event alone is over 128 KiB is not compressed either.
    let res = answer(
        http.post(w.at(FLUNDERS))
            .json(&flunder_with_note("big", 200 * 1024)),
    )
    .await;
    assert_eq!(res.status(), 201);
    let watch = answer(
        http.get(w.at(&format!("{FLUNDERS}?watch=true&timeoutSeconds=2")))
            .header("accept-encoding", "gzip"),
    )
    .await;
    assert_eq!(watch.status(), 200);
    assert!(watch.headers().get("content-encoding").is_none());
    let body = watch.bytes().await.unwrap();
    assert!(body.len() > 128 * 1024 + 160 * 1024, "{}", body.len());
    let events: Vec<Value> = std::str::from_utf8(&body)
        .expect("a watch is plain JSON lines")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), 41);
    assert!(
        events
            .iter()
            .any(|e| e["object"]["metadata"]["name"] == "big" && e["type"] == "ADDED")
    );
}
