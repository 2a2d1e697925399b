//! Answers given before the request body is read (401, 403, 404, 405, 413, 415, 429) reach
//! HTTP/2 clients intact, status and body, while the client is still sending: from hyper's
//! HTTP/2 client and from `curl --http2`, 20 tries each. Before the connection layer read
//! the unread rest of such bodies, curl reported `Stream error in the HTTP/2 framing layer`
//! on most tries: the stream was reset while it was still uploading.

mod support_serving;

use std::process::Stdio;
use std::time::Duration;

use apiserver_framework::server::filters::RequestLimits;
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
async fn over_curl(s: &Served, name: &str, case: &Case) {
    let body_path = s.dir.path().join(format!("body-{name}"));
    std::fs::write(&body_path, &case.body).unwrap();
    let out_path = s.dir.path().join(format!("out-{name}"));
    let mut failures = Vec::new();
    for attempt in 0..TRIES {
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
        "{name}: curl failed {} of {TRIES} tries:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn early_answers_reach_http2_clients() {
    let s = serve(RequestLimits::default(), Duration::ZERO).await;
    for (name, case) in cases() {
        over_hyper_h2(&s, name, &case).await;
        over_curl(&s, name, &case).await;
    }
    // The server still serves.
    let res = s
        .http
        .get(format!("{}/readyz", s.url))
        .send()
        .await
        .unwrap();
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
    tokio::time::sleep(Duration::from_millis(500)).await;
    let case = too_many();
    over_hyper_h2(&s, "429", &case).await;
    over_curl(&s, "429", &case).await;
    holder.abort();
    s.running.shutdown().await;
}
