//! Answers given before the request body is read (401, 403, 404, 405, 413, 415, 429) reach
//! HTTP/2 clients intact, status and body, while the client is still sending: from hyper's
//! HTTP/2 client and from `curl --http2`, 20 tries each. Before the connection layer read
//! the unread rest of such bodies, curl reported `Stream error in the HTTP/2 framing layer`
//! on most tries: the stream was reset while it was still uploading.
//!
//! They also reach a client that stops sending as soon as it reads the answer's headers
//! (curl 7.88 does) when the answer's body leaves the server well after its headers (a
//! response layer delays it; a loaded machine sometimes did the same by scheduling): the
//! stream was reset with `PROTOCOL_ERROR` before the answer's body went out, rarely in CI.
//!
//! `EARLY_ANSWERS_STRESS=<tries> cargo test --test early_answers -- --ignored` runs every case
//! that many times with curl, body sizes varied.

mod support_chain;
mod support_serving;

use std::process::Stdio;
use std::time::Duration;

use apiserver_framework::server::filters::RequestLimits;
use apiserver_framework::testing::wait;
use bytes::Bytes;
use http_body_util::BodyExt;
use serde_json::Value;
use support_serving::{LOCKED, SNAILS, Served, TOKEN, serve, snail_of_size};

const TRIES: usize = 20;
/// Larger than the server's HTTP/2 stream window (1 MiB): the client is still sending when
/// the answer comes.
const BODY: usize = 2 * 1024 * 1024;
/// Larger than the 3 MiB body limit.
const TOO_LARGE: usize = 4 * 1024 * 1024;

/// One early answer to provoke.
struct Case {
    method: &'static str,
    path: String,
    token: &'static str,
    content_type: &'static str,
    body: Bytes,
    code: u16,
    /// The Status `reason`, or (for 429) the plain-text body.
    expect: Expect,
}

enum Expect {
    Status(&'static str),
    Text(&'static str),
    /// The index of served paths, upstream's not-found handler's body.
    Index,
}

fn cases() -> Vec<(&'static str, Case)> {
    let body = snail_of_size("early", BODY);
    let case = |method, path: &str, token, content_type, body: &Bytes, code, expect| Case {
        method,
        path: path.to_string(),
        token,
        content_type,
        body: body.clone(),
        code,
        expect,
    };
    vec![
        (
            "401",
            case(
                "POST",
                SNAILS,
                "wrong",
                "application/json",
                &body,
                401,
                Expect::Status("Unauthorized"),
            ),
        ),
        (
            "403",
            case(
                "POST",
                &SNAILS.replace("default", LOCKED),
                TOKEN,
                "application/json",
                &body,
                403,
                Expect::Status("Forbidden"),
            ),
        ),
        (
            "404",
            case(
                "POST",
                &SNAILS.replace("snails", "slugs"),
                TOKEN,
                "application/json",
                &body,
                404,
                Expect::Status("NotFound"),
            ),
        ),
        (
            "405",
            case(
                "POST",
                &format!("{SNAILS}/early"),
                TOKEN,
                "application/json",
                &body,
                405,
                Expect::Status("MethodNotAllowed"),
            ),
        ),
        (
            "413",
            case(
                "POST",
                SNAILS,
                TOKEN,
                "application/json",
                &snail_of_size("early", TOO_LARGE),
                413,
                Expect::Status("RequestEntityTooLarge"),
            ),
        ),
        (
            "415",
            case(
                "POST",
                SNAILS,
                TOKEN,
                "text/plain",
                &body,
                415,
                Expect::Status("UnsupportedMediaType"),
            ),
        ),
    ]
}

/// The case of a write refused for the in-flight limit, while another write holds it.
fn too_many() -> Case {
    Case {
        method: "POST",
        path: SNAILS.to_string(),
        token: TOKEN,
        content_type: "application/json",
        body: snail_of_size("early", BODY),
        code: 429,
        expect: Expect::Text("Too many requests, please try again later.\n"),
    }
}

fn check(name: &str, case: &Case, code: u16, body: &[u8]) {
    assert_eq!(code, case.code, "{name}: {}", String::from_utf8_lossy(body));
    match case.expect {
        Expect::Status(reason) => {
            let status: Value = serde_json::from_slice(body)
                .unwrap_or_else(|e| panic!("{name}: not JSON ({e}): {body:?}"));
            assert_eq!(status["kind"], "Status", "{name}: {status}");
            assert_eq!(status["reason"], reason, "{name}: {status}");
            assert_eq!(status["code"], case.code, "{name}: {status}");
        }
        Expect::Text(text) => assert_eq!(String::from_utf8_lossy(body), text, "{name}"),
        Expect::Index => {
            let index: Value = serde_json::from_slice(body)
                .unwrap_or_else(|e| panic!("{name}: not JSON ({e}): {body:?}"));
            let paths = index["paths"]
                .as_array()
                .unwrap_or_else(|| panic!("{name}: {index}"));
            assert!(paths.iter().any(|p| p == "/healthz"), "{name}: {index}");
        }
    }
}

/// `TRIES` requests over one HTTP/2 connection from hyper's client.
async fn over_hyper_h2(s: &Served, name: &str, case: &Case) {
    let (mut h2, _conn) = s.h2().await;
    for _ in 0..TRIES {
        let req = http::Request::builder()
            .method(case.method)
            .uri(format!("{}{}", s.url, case.path))
            .header("authorization", format!("Bearer {}", case.token))
            .header("content-type", case.content_type)
            .body(http_body_util::Full::new(case.body.clone()))
            .unwrap();
        let res = tokio::time::timeout(Duration::from_secs(30), h2.send_request(req))
            .await
            .unwrap_or_else(|_| panic!("{name}: no answer"))
            .unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let code = res.status().as_u16();
        let body = res
            .into_body()
            .collect()
            .await
            .unwrap_or_else(|e| panic!("{name}: the body broke off: {e:?}"))
            .to_bytes();
        check(name, case, code, &body);
    }
}

/// `TRIES` runs of `curl --http2`; every one must succeed.
async fn over_curl(s: &Served, name: &str, case: &Case, tries: usize) {
    let body_path = s.dir.path().join(format!("body-{name}"));
    std::fs::write(&body_path, &case.body).unwrap();
    let out_path = s.dir.path().join(format!("out-{name}"));
    let mut failures = Vec::new();
    for attempt in 0..tries {
        let _ = std::fs::remove_file(&out_path);
        let out = tokio::process::Command::new("curl")
            .args(["--silent", "--show-error", "--http2", "--max-time", "30"])
            .arg("--cacert")
            .arg(&s.ca_path)
            .args(["-X", case.method])
            .args(["-H", &format!("Authorization: Bearer {}", case.token)])
            .args(["-H", &format!("Content-Type: {}", case.content_type)])
            .arg("--data-binary")
            .arg(format!("@{}", body_path.display()))
            .arg("-o")
            .arg(&out_path)
            .args(["-w", "%{http_code} %{http_version}"])
            .arg(format!("{}{}", s.url, case.path))
            .stdin(Stdio::null())
            .output()
            .await
            .expect("run curl (scripts/install-test-deps installs it)");
        let written = String::from_utf8_lossy(&out.stdout).to_string();
        if !out.status.success() {
            failures.push(format!(
                "try {attempt}: {} {written} {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
            continue;
        }
        let (code, version) = written.split_once(' ').unwrap();
        assert_eq!(version, "2", "{name}: curl did not speak HTTP/2");
        let body = std::fs::read(&out_path).unwrap_or_default();
        check(name, case, code.parse().unwrap(), &body);
    }
    assert!(
        failures.is_empty(),
        "{name}: curl failed {} of {tries} tries:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn early_answers_reach_http2_clients() {
    let s = serve(RequestLimits::default(), Duration::ZERO).await;
    for (name, case) in cases() {
        over_hyper_h2(&s, name, &case).await;
        over_curl(&s, name, &case, TRIES).await;
    }
    // The server still serves.
    let res = s.readyz().await;
    assert_eq!(res.status(), 200);
    s.running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_many_requests_reaches_http2_clients() {
    let limits = RequestLimits {
        max_mutating_requests_inflight: 1,
        ..Default::default()
    };
    let s = serve(limits, Duration::from_secs(50)).await;
    // A slow create holds the one place for writes.
    let holder = {
        let req = s
            .http
            .post(format!("{}{SNAILS}", s.url))
            .bearer_auth(TOKEN)
            .header("content-type", "application/json")
            .body(snail_of_size("holder", 100));
        tokio::spawn(req.send())
    };
    wait::eventually(
        "the slow create in the store",
        Duration::from_secs(10),
        || std::future::ready(s.in_store.load(std::sync::atomic::Ordering::SeqCst) == 1),
    )
    .await;
    let case = too_many();
    over_hyper_h2(&s, "429", &case).await;
    over_curl(&s, "429", &case, TRIES).await;
    holder.abort();
    s.running.shutdown().await;
}

/// How long after its headers [`LateBody`] sends an answer's body.
const LATE: Duration = Duration::from_millis(200);

/// A response body that starts `LATE` after the response's headers went out: what a loaded
/// machine does when the task sending an answer's headers is scheduled well before the one
/// sending its body. Makes deterministic the rare case that a client reads the headers of an
/// early answer before its body.
struct LateBody {
    sleep: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
    inner: axum::body::Body,
}

impl http_body::Body for LateBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        if let Some(sleep) = self.sleep.as_mut() {
            std::task::ready!(sleep.as_mut().poll(cx));
            self.sleep = None;
        }
        std::pin::Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// The framework's server (no API groups; the test user's token) with every response body
/// sent [`LATE`].
async fn serve_late_bodies() -> Served {
    use apiserver_framework::authz::AllowAll;
    use apiserver_framework::server::GenericApiServer;
    use apiserver_framework::server::filters::ChainPosition;
    use std::sync::Arc;

    let late = axum::middleware::from_fn(
        |req: axum::extract::Request, next: axum::middleware::Next| async move {
            next.run(req).await.map(|inner| {
                axum::body::Body::new(LateBody {
                    // A slow server, on purpose: every body comes LATE.
                    sleep: Some(Box::pin(tokio::time::sleep(LATE))),
                    inner,
                })
            })
        },
    );
    let server = GenericApiServer::builder("late").build();
    let chain = support_serving::chain(server, Arc::new(AllowAll))
        .with_layer(ChainPosition::AfterRequestInfo, late);
    support_serving::serve_chain(chain).await
}

/// Early answers of a server that sends their bodies [`LATE`].
fn late_cases() -> Vec<(&'static str, Case)> {
    let body = snail_of_size("early", BODY);
    let case = |token, path: &str, code, expect| Case {
        method: "POST",
        path: path.to_string(),
        token,
        content_type: "application/json",
        body: body.clone(),
        code,
        expect,
    };
    vec![
        (
            "late 401",
            case("wrong", SNAILS, 401, Expect::Status("Unauthorized")),
        ),
        // The late server serves no group: its not-found handler's index of paths.
        ("late 404", case(TOKEN, SNAILS, 404, Expect::Index)),
    ]
}

/// Sends `case` as curl 7.88 does over HTTP/2: the body in 16 KiB chunks, and, should the
/// answer's headers arrive before the last chunk is sent, ends the body right there (an empty
/// DATA frame with END_STREAM, short of the `content-length` it announced). Returns the
/// status and the answer's body, or how reading it failed.
async fn send_like_curl(s: &Served, case: &Case) -> (u16, Result<Bytes, hyper::Error>) {
    use futures::SinkExt;
    use hyper_util::rt::{TokioExecutor, TokioIo};

    type Chunk = Result<http_body::Frame<Bytes>, std::convert::Infallible>;
    let tls = s.tls(&[b"h2"]).await;
    let (mut sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
            .await
            .unwrap();
    tokio::spawn(conn);
    let (tx, rx) = futures::channel::mpsc::channel::<Chunk>(0);
    let req = http::Request::builder()
        .method(case.method)
        .uri(format!("{}{}", s.url, case.path))
        .header("authorization", format!("Bearer {}", case.token))
        .header("content-type", case.content_type)
        .header("content-length", case.body.len())
        .body(http_body_util::StreamBody::new(rx))
        .unwrap();
    let response = sender.send_request(req);
    tokio::pin!(response);
    let mut tx = Some(tx);
    let mut sent = 0;
    let res = loop {
        let Some(sending) = tx.as_mut().filter(|_| sent < case.body.len()) else {
            // All sent: the body ends.
            tx = None;
            break response.await;
        };
        let chunk = case.body.slice(sent..case.body.len().min(sent + 16 * 1024));
        let len = chunk.len();
        tokio::select! {
            res = &mut response => break res,
            done = sending.send(Ok(http_body::Frame::data(chunk))) => {
                done.unwrap();
                sent += len;
            }
        }
    };
    // The answer came first: the body ends here, short.
    drop(tx);
    let res = res.unwrap_or_else(|e| panic!("no answer: {e:?}"));
    let code = res.status().as_u16();
    (code, res.into_body().collect().await.map(|b| b.to_bytes()))
}

/// An early answer whose body leaves the server after its headers reaches a client that
/// stops sending its request body as soon as it reads the answer's headers (curl 7.88 does:
/// "HTTP error before end of send, stop sending"), status and body intact. The server's
/// HTTP/2 stack resets a request stream whose body ends short of its `content-length` with
/// `PROTOCOL_ERROR`, dropping whatever of the answer it has not sent yet: so the server sends
/// an early answer only once the unread body has been read (within bounds).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn early_answers_sent_late_reach_clients_that_stop_sending() {
    log_if_asked();
    let s = serve_late_bodies().await;
    for (name, case) in late_cases() {
        over_curl(&s, name, &case, 2).await;
        for _ in 0..2 {
            let (code, body) = send_like_curl(&s, &case).await;
            let body = body.unwrap_or_else(|e| panic!("{name}: the answer broke off: {e:?}"));
            check(name, &case, code, &body);
        }
    }
    s.running.shutdown().await;
}

/// Body sizes the stress mode cycles through: around the 16 KiB frame, the 64 KiB initial
/// window and the server's 1 MiB stream window.
const STRESS_SIZES: &[usize] = &[
    1,
    1_000,
    16_384,
    16_385,
    65_535,
    65_536,
    200_000,
    (1 << 20) - 1,
    1 << 20,
    (1 << 20) + 1,
    2 << 20,
    3 << 20,
];

/// Stress mode (not run by default): `EARLY_ANSWERS_STRESS=<tries>` runs every early-answer
/// case that many times with `curl --http2`, body sizes varied, `EARLY_ANSWERS_PAR` curls
/// at once (default 2), and reports every failure with curl's trace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "stress mode: EARLY_ANSWERS_STRESS=<tries> cargo test --test early_answers -- --ignored"]
async fn stress_early_answers_over_curl() {
    let tries: usize = std::env::var("EARLY_ANSWERS_STRESS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let par: usize = std::env::var("EARLY_ANSWERS_PAR")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    let only = std::env::var("EARLY_ANSWERS_ONLY").ok();
    log_if_asked();
    let s = serve(RequestLimits::default(), Duration::ZERO).await;
    let mut all = cases();
    all.retain(|(name, _)| {
        only.as_deref()
            .is_none_or(|o| o.split(',').any(|n| n == *name))
    });
    let mut total = 0;
    let mut failures = Vec::new();
    for (name, case) in &all {
        // Bodies of every stress size (413: beyond the 3 MiB limit).
        let bodies: Vec<(usize, std::path::PathBuf)> = STRESS_SIZES
            .iter()
            .map(|&size| match *name {
                "413" => size + (3 << 20) + 200,
                _ => size,
            })
            .map(|size| {
                let path = s.dir.path().join(format!("stress-{name}-{size}"));
                let body = match *name {
                    "415" => Bytes::from(vec![b'x'; size]),
                    _ => snail_of_size("early", size),
                };
                std::fs::write(&path, &body).unwrap();
                (body.len(), path)
            })
            .collect();
        let sem = std::sync::Arc::new(tokio::sync::Semaphore::new(par));
        let mut runs = tokio::task::JoinSet::new();
        for attempt in 0..tries {
            let permit = sem.clone().acquire_owned().await.unwrap();
            let (size, body_path) = bodies[attempt % bodies.len()].clone();
            let trace = s.dir.path().join(format!("trace-{name}-{attempt}"));
            let mut curl = tokio::process::Command::new("curl");
            curl.args(["--silent", "--show-error", "--http2", "--max-time", "30"])
                .arg("--cacert")
                .arg(&s.ca_path)
                .arg("--trace-ascii")
                .arg(&trace)
                .arg("--trace-time")
                .args(["-X", case.method])
                .args(["-H", &format!("Authorization: Bearer {}", case.token)])
                .args(["-H", &format!("Content-Type: {}", case.content_type)])
                .arg("--data-binary")
                .arg(format!("@{}", body_path.display()))
                .args(["-o", "-"])
                .args(["-w", "\n%{http_code} %{http_version}"])
                .arg(format!("{}{}", s.url, case.path))
                .stdin(Stdio::null());
            let name = name.to_string();
            let code = case.code;
            runs.spawn(async move {
                let start = std::time::SystemTime::now();
                let out = curl.output().await.unwrap();
                drop(permit);
                let mut stdout = String::from_utf8_lossy(&out.stdout).to_string();
                let ok = out.status.success() && stdout.ends_with(&format!("\n{code} 2"));
                if stdout.len() > 400 {
                    stdout = format!("{}…{}", &stdout[..200], &stdout[stdout.len() - 200..]);
                }
                let report = (!ok).then(|| {
                    format!(
                        "{name} try {attempt} size {size} started {:?}: {} {stdout:?} {}\n{}",
                        start.duration_since(std::time::UNIX_EPOCH).unwrap(),
                        out.status,
                        String::from_utf8_lossy(&out.stderr).trim(),
                        std::fs::read_to_string(&trace).unwrap_or_default(),
                    )
                });
                let _ = std::fs::remove_file(&trace);
                report
            });
        }
        while let Some(report) = runs.join_next().await {
            total += 1;
            if let Some(report) = report.unwrap() {
                eprintln!("{report}");
                failures.push(report);
            }
        }
    }
    eprintln!("{} failures in {total} curl tries", failures.len());
    assert!(
        failures.is_empty(),
        "{} of {total} tries failed",
        failures.len()
    );
    s.running.shutdown().await;
}

/// With `EARLY_ANSWERS_LOG=<file>`, the server's logs (filtered by `RUST_LOG`, e.g.
/// `h2=debug` for every HTTP/2 frame) go to that file.
fn log_if_asked() {
    if let Ok(path) = std::env::var("EARLY_ANSWERS_LOG") {
        let file = std::fs::File::create(path).unwrap();
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::sync::Mutex::new(file))
            .with_ansi(false)
            .try_init();
    }
}
