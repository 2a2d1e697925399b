//! Request limits and lifecycle over real HTTPS: a resource whose storage sleeps gets `504`
//! past the request timeout; the in-flight limit answers `429` while slow requests are in
//! flight (watches not counted); a 4 MiB body is `413`; post-start hooks gate `/readyz`,
//! which fails as soon as shutdown begins.

mod support_chain;
mod support_serving;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use apiserver_framework::authz::AllowAll;
use apiserver_framework::server::filters::RequestLimits;
use apiserver_framework::server::lifecycle::ShutdownOptions;
use apiserver_framework::server::{GenericApiServer, GenericApiServerBuilder};
use apiserver_framework::testing::wait;
use serde_json::{Value, json};
use support_serving::{
    SNAILS, Served, TOKEN, answer, chain, serve_chain, snail_server, snail_server_counted,
};

/// A server of snails, each read and write delayed.
fn server_builder(delay: Duration) -> GenericApiServerBuilder {
    snail_server("limits", delay, delay)
}

/// Serves `server` to the test user, everything allowed.
async fn serve(
    server: GenericApiServer,
    limits: RequestLimits,
    shutdown: ShutdownOptions,
) -> Served {
    let chain = chain(server, Arc::new(AllowAll))
        .with_limits(limits)
        .with_shutdown(shutdown);
    serve_chain(chain).await
}

fn snail(name: &str) -> Value {
    json!({"apiVersion": "slow.example.com/v1", "kind": "Snail",
           "metadata": {"name": name}, "spec": {"pace": "slow"}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_past_the_timeout_get_504() {
    let limits = RequestLimits {
        request_timeout: Duration::from_secs(1),
        ..Default::default()
    };
    let s = serve(
        server_builder(Duration::from_secs(3)).build(),
        limits,
        ShutdownOptions::default(),
    )
    .await;

    let started = Instant::now();
    let res = answer(s.get(SNAILS)).await;
    let took = started.elapsed();
    assert_eq!(res.status(), 504);
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_millis(2900),
        "{took:?}"
    );
    let body: Value = serde_json::from_str(&res.text().await.unwrap()).unwrap();
    assert_eq!(
        body,
        json!({"metadata": {}, "status": "Failure",
               "message": "Timeout: request did not complete within the allotted timeout",
               "reason": "Timeout", "details": {}, "code": 504})
    );

    // A shorter ?timeout= wins; a longer one does not.
    let started = Instant::now();
    let res = answer(s.get(&format!("{SNAILS}?timeout=200ms"))).await;
    assert_eq!(res.status(), 504);
    assert!(started.elapsed() < Duration::from_millis(900));
    let started = Instant::now();
    let res = answer(s.get(&format!("{SNAILS}?timeout=10s"))).await;
    assert_eq!(res.status(), 504);
    assert!(started.elapsed() < Duration::from_millis(2900));
    let res = answer(s.get(&format!("{SNAILS}?timeout=soon"))).await;
    assert_eq!(res.status(), 400);
    let body: Value = res.json().await.unwrap();
    assert_eq!(
        body["message"],
        "invalid timeout specified in the request URL - time: invalid duration \"soon\""
    );

    // Mutations time out too.
    let res = answer(s.post(SNAILS, &snail("a"))).await;
    assert_eq!(res.status(), 504);

    // A watch is not bound by the request timeout.
    let mut watch = answer(s.get(&format!("{SNAILS}?watch=true&timeoutSeconds=3"))).await;
    assert_eq!(watch.status(), 200);
    let started = Instant::now();
    while watch.chunk().await.unwrap().is_some() {}
    let lasted = started.elapsed();
    assert!(lasted >= Duration::from_millis(2500), "{lasted:?}");
    s.running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_without_timeout_seconds_last_min_request_timeout() {
    let limits = RequestLimits {
        min_request_timeout: Duration::from_secs(1),
        ..Default::default()
    };
    let s = serve(
        server_builder(Duration::ZERO).build(),
        limits,
        ShutdownOptions::default(),
    )
    .await;
    let started = Instant::now();
    let mut watch = answer(s.get(&format!("{SNAILS}?watch=true"))).await;
    assert_eq!(watch.status(), 200);
    while watch.chunk().await.unwrap().is_some() {}
    let lasted = started.elapsed();
    assert!(
        lasted >= Duration::from_millis(900) && lasted < Duration::from_secs(5),
        "a watch lasts [1 s, 2 s): {lasted:?}"
    );
    s.running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beyond_the_in_flight_limit_429() {
    let limits = RequestLimits {
        max_requests_inflight: 1,
        max_mutating_requests_inflight: 1,
        ..Default::default()
    };
    let (builder, in_store) =
        snail_server_counted("limits", Duration::from_secs(2), Duration::from_secs(2));
    let s = Arc::new(serve(builder.build(), limits, ShutdownOptions::default()).await);
    // Watches are not counted.
    let watch1 = answer(s.get(&format!("{SNAILS}?watch=true"))).await;
    let watch2 = answer(s.get(&format!("{SNAILS}?watch=1"))).await;
    assert_eq!(
        (watch1.status().as_u16(), watch2.status().as_u16()),
        (200, 200)
    );

    let slow_read = {
        let s = s.clone();
        tokio::spawn(async move { answer(s.get(SNAILS)).await.status() })
    };
    let slow_write = {
        let s = s.clone();
        tokio::spawn(async move { answer(s.post(SNAILS, &snail("one"))).await.status() })
    };
    // Both are in flight once they reach the (slow) store.
    wait::eventually(
        "the slow read and write in the store",
        Duration::from_secs(10),
        || std::future::ready(in_store.load(Ordering::SeqCst) == 2),
    )
    .await;

    let res = answer(s.get(&format!("{SNAILS}/x"))).await;
    assert_eq!(res.status(), 429);
    assert_eq!(res.headers()["retry-after"], "1");
    assert_eq!(res.headers()["content-type"], "text/plain; charset=utf-8");
    assert_eq!(
        res.text().await.unwrap(),
        "Too many requests, please try again later.\n"
    );
    let res = answer(s.post(SNAILS, &snail("two"))).await;
    assert_eq!(res.status(), 429);
    // Another watch is still served.
    let watch3 = answer(s.get(&format!("{SNAILS}?watch=true&timeoutSeconds=1"))).await;
    assert_eq!(watch3.status(), 200);

    assert_eq!(slow_read.await.unwrap(), 200);
    assert_eq!(slow_write.await.unwrap(), 201);
    // The places are free again.
    assert_eq!(
        s.get(&format!("{SNAILS}/one"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    drop((watch1, watch2, watch3));
    Arc::into_inner(s).unwrap().running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_mib_body_is_413() {
    let s = serve(
        server_builder(Duration::ZERO).build(),
        RequestLimits::default(),
        ShutdownOptions::default(),
    )
    .await;
    let mut body = snail("big");
    body["spec"]["pace"] = "x".repeat(4 * 1024 * 1024).into();
    let res = answer(s.post(SNAILS, &body)).await;
    assert_eq!(res.status(), 413);
    let status: Value = res.json().await.unwrap();
    assert_eq!(status["reason"], "RequestEntityTooLarge");
    assert_eq!(
        status["message"],
        "Request entity too large: limit is 3145728"
    );
    s.running.shutdown().await;
}

async fn readyz(s: &Served) -> (u16, String) {
    let res = answer(s.get("/readyz?verbose")).await;
    (res.status().as_u16(), res.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_and_readiness_through_shutdown() {
    let (go, wait) = tokio::sync::oneshot::channel::<()>();
    let (hook_ran, mut pre_shutdown) = tokio::sync::mpsc::unbounded_channel::<Instant>();
    let server = server_builder(Duration::ZERO)
        .post_start_hook("wait-for-go", move || async move {
            wait.await.map_err(|e| e.to_string())
        })
        .pre_shutdown_hook("note", move || async move {
            hook_ran.send(Instant::now()).map_err(|e| e.to_string())
        })
        .build();
    let s = serve(
        server,
        RequestLimits::default(),
        ShutdownOptions {
            delay: Duration::from_millis(1500),
            drain_timeout: Duration::from_secs(5),
        },
    )
    .await;

    let (code, body) = readyz(&s).await;
    assert_eq!(code, 500);
    assert!(
        body.contains("[-]poststarthook/wait-for-go failed: reason withheld\n"),
        "{body}"
    );
    assert!(body.contains("[+]shutdown ok\n"), "{body}");
    go.send(()).unwrap();
    let ready = wait::poll("/readyz to pass", Duration::from_secs(2), || async {
        let ready = readyz(&s).await;
        if ready.0 == 200 {
            Ok(ready)
        } else {
            Err(ready.1)
        }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(ready.1.contains("[+]poststarthook/wait-for-go ok\n"));
    assert!(
        ready.1.ends_with("[+]shutdown ok\nreadyz check passed\n"),
        "{}",
        ready.1
    );

    // Shutdown: /readyz fails at once while requests are still served; then the listener
    // closes.
    let url = s.url.clone();
    let http = s.http.clone();
    let began = Instant::now();
    let stopping = tokio::spawn(s.running.shutdown());
    // At once: within the 300 ms the shutdown's task may take to start.
    let res = wait::poll("/readyz to fail", Duration::from_millis(300), || async {
        let res = answer(http.get(format!("{url}/readyz")).bearer_auth(TOKEN)).await;
        if res.status() == 200 {
            Err("still ready")
        } else {
            Ok(res)
        }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(res.status(), 500);
    assert!(
        res.text()
            .await
            .unwrap()
            .contains("[-]shutdown failed: reason withheld\n")
    );
    let res = answer(http.get(format!("{url}/livez")).bearer_auth(TOKEN)).await;
    assert_eq!(res.status(), 200);
    let res = answer(http.get(format!("{url}{SNAILS}")).bearer_auth(TOKEN)).await;
    assert_eq!(res.status(), 200);
    let hook_at = pre_shutdown.recv().await.unwrap();
    assert!(hook_at.duration_since(began) < Duration::from_millis(1000));
    stopping.await.unwrap();
    assert!(began.elapsed() >= Duration::from_millis(1400));
    let err = reqwest::Client::builder()
        .danger_accept_invalid_certs(true)
        .build()
        .unwrap()
        .get(format!("{url}/readyz"))
        .send()
        .await
        .unwrap_err();
    assert!(err.is_connect(), "{err:?}");
}
