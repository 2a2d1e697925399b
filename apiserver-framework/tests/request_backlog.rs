//! Security issue 44: an HTTP/2 connection reads no more while the requests it sent wait for
//! their tasks to start (`ConnectionLimits::max_unstarted_requests_per_connection`, and
//! `max_unstarted_requests` over the server). Requests whose handlers read their bodies must
//! still all be served when those bounds are tiny: a connection's reading waits only on tasks
//! that start without it, never on a handler waiting for its body.

mod support_chain;
mod support_serving;

use std::time::Duration;

use apiserver_framework::server::connections::ConnectionLimits;
use apiserver_framework::server::filters::RequestLimits;
use http_body_util::BodyExt;
use support_serving::{SNAILS, Served, serve, snail_of_size};

/// Bounds of a few requests, reached at once by the clients below.
fn tiny_backlog() -> RequestLimits {
    RequestLimits {
        connections: ConnectionLimits {
            max_unstarted_requests_per_connection: 2,
            max_unstarted_requests: 3,
            ..ConnectionLimits::default()
        },
        ..RequestLimits::default()
    }
}

/// Creates `count` snails of about 64 KiB at once over one HTTP/2 connection, named
/// `prefix-N`, and returns their answers' statuses.
async fn create_at_once(s: &Served, prefix: String, count: usize) -> Vec<u16> {
    let (send, _conn) = s.h2().await;
    let requests = (0..count).map(|i| {
        let mut send = send.clone();
        let body = snail_of_size(&format!("{prefix}-{i}"), 64 * 1024);
        let req = s.request("POST", SNAILS, body);
        tokio::spawn(async move {
            let res = send.send_request(req).await.expect("an answer");
            let status = res.status().as_u16();
            res.into_body().collect().await.expect("the answer's body");
            status
        })
    });
    let mut statuses = Vec::with_capacity(count);
    for request in requests.collect::<Vec<_>>() {
        statuses.push(request.await.expect("a request's task"));
    }
    statuses
}

/// The snails stored.
async fn stored(s: &Served) -> usize {
    let list: serde_json::Value = support_serving::answer(s.get(SNAILS))
        .await
        .json()
        .await
        .expect("a list");
    list["items"].as_array().expect("items").len()
}

/// 150 uploads at once on one connection (within the 200 writes in flight the server takes),
/// each read by its handler, are all served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_on_one_connection_are_all_served() {
    let s = serve(tiny_backlog(), Duration::ZERO).await;
    let statuses = tokio::time::timeout(
        Duration::from_secs(60),
        create_at_once(&s, "one".into(), 150),
    )
    .await
    .expect("every upload answered");
    assert!(statuses.iter().all(|&st| st == 201), "{statuses:?}");
    assert_eq!(stored(&s).await, 150);
}

/// Uploads on 10 connections at once, past the server's bound together: all served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_on_many_connections_are_all_served() {
    let s = serve(tiny_backlog(), Duration::ZERO).await;
    let clients = (0..10).map(|c| create_at_once(&s, format!("c{c}"), 15));
    let statuses =
        tokio::time::timeout(Duration::from_secs(60), futures::future::join_all(clients))
            .await
            .expect("every upload answered");
    let statuses: Vec<u16> = statuses.into_iter().flatten().collect();
    assert_eq!(statuses.len(), 150);
    assert!(statuses.iter().all(|&st| st == 201), "{statuses:?}");
    assert_eq!(stored(&s).await, 150);
}
