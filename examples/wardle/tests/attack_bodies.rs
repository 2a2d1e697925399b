//! Request bodies built to exhaust the server, sent to the real `wardle` binary over HTTPS:
//! deeply nested YAML, JSON patches whose `copy` operations double the object, lists of
//! tens of thousands of keyed items, and values that used to panic. Each is answered within a
//! bound generous for a busy two-core machine (and far below what the attack cost before),
//! while `/readyz` keeps answering; an unauthorized request costs no parse even with auditing
//! on.

mod support;

#[allow(dead_code)]
#[path = "production/stack.rs"]
mod stack;

use std::time::{Duration, Instant};

use apiserver_framework::testing::wait;
use reqwest::{Client, Method, StatusCode};
use serde_json::{Value, json};
use support::checks::answer;
use support::checks::message;
use support::fixtures::flunder_with_toppings;
use support::{FLUNDERS, Wardle};

/// 3 MiB, the largest body the server reads.
const MAX_BODY: usize = 3 * 1024 * 1024;

async fn send(
    client: &Client,
    method: Method,
    url: &str,
    content_type: &str,
    body: impl Into<reqwest::Body>,
) -> (StatusCode, String) {
    let res = client
        .request(method, url)
        .header("Content-Type", content_type)
        .body(body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{url}: {e}"));
    let code = res.status();
    (code, res.text().await.unwrap_or_default())
}

fn status_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not a Status ({e}): {text}"))
}

/// A kilobyte-sized line of the process's `/proc/<pid>/status`, in KiB.
fn proc_kib(pid: u32, field: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read proc status");
    text.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in {text}"))
}

/// YAML bodies of about 3 MiB nested far past 128 levels: flow sequences, flow mappings and
/// compact block sequences.
fn deep_yaml_bodies() -> Vec<(&'static str, String)> {
    let half = MAX_BODY / 2 - 16;
    vec![
        ("flow sequences", "[".repeat(half) + &"]".repeat(half)),
        (
            "flow mappings",
            "{a: ".repeat(MAX_BODY / 5) + &"}".repeat(MAX_BODY / 5),
        ),
        ("block sequences", "- ".repeat(half) + "x\n"),
    ]
}

/// About 3 MiB of valid YAML that is expensive to parse (flow collections 100 levels deep,
/// over and over) but not a Flunder.
fn expensive_yaml() -> String {
    let segment = format!("{}{}", "[".repeat(100), "]".repeat(100));
    let items = vec![segment.as_str(); MAX_BODY / (segment.len() + 2) - 1];
    format!("[{}]", items.join(","))
}

/// Answers `/readyz` within `bound`, polled `rounds` times; the slowest answer.
async fn readyz_keeps_answering(w: &Wardle, rounds: usize, bound: Duration) -> Duration {
    let client = w.client();
    let mut slowest = Duration::ZERO;
    for _ in 0..rounds {
        let started = Instant::now();
        let res = client
            .get(w.at("/readyz"))
            .timeout(bound)
            .send()
            .await
            .unwrap_or_else(|e| panic!("/readyz did not answer within {bound:?}: {e}"));
        assert_eq!(res.status(), 200);
        slowest = slowest.max(started.elapsed());
        // The probe's period, on purpose: /readyz is asked every 100 ms, as a kubelet would.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    slowest
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deeply_nested_yaml_is_refused_at_once() {
    let w = Wardle::start();
    let client = w.client();
    for (what, body) in deep_yaml_bodies() {
        assert!(body.len() <= MAX_BODY, "{what}: {}", body.len());
        let started = Instant::now();
        let (code, text) = send(
            &client,
            Method::POST,
            &w.at(FLUNDERS),
            "application/yaml",
            body,
        )
        .await;
        let took = started.elapsed();
        assert_eq!(code, StatusCode::BAD_REQUEST, "{what}: {text}");
        let status = status_of(&text);
        assert_eq!(status["reason"], "BadRequest", "{what}: {text}");
        let message = status["message"].as_str().unwrap();
        assert!(
            message.starts_with(
                "couldn't get version/kind; yaml parse error: exceeded max depth of 127 at line "
            ),
            "{what}: {message}"
        );
        // Before the bound, the flow sequences alone took hours of CPU.
        assert!(took < Duration::from_secs(10), "{what} took {took:?}");
    }
    // Server-side apply bodies are YAML too.
    let (code, text) = send(
        &client,
        Method::PATCH,
        &w.at(&format!("{FLUNDERS}/f1?fieldManager=m")),
        "application/apply-patch+yaml",
        "[".repeat(MAX_BODY / 2),
    )
    .await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{text}");
    assert!(
        message(&status_of(&text)).starts_with("error decoding YAML: exceeded max depth of 127"),
        "{text}"
    );
}

/// Large YAML bodies are parsed off the async workers: with four expensive ones in flight,
/// `/readyz` still answers within a second or two.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_answers_while_large_bodies_are_parsed() {
    let w = Wardle::start();
    let body = expensive_yaml();
    let mut attacks = Vec::new();
    for _ in 0..4 {
        let (client, url, body) = (w.client(), w.at(FLUNDERS), body.clone());
        attacks.push(tokio::spawn(async move {
            let _ = client
                .post(url)
                .header("Content-Type", "application/yaml")
                .timeout(Duration::from_secs(120))
                .body(body)
                .send()
                .await;
        }));
    }
    // The four are in flight (their bodies arrive and are parsed).
    wait::eventually(
        "the four bodies in flight",
        Duration::from_secs(20),
        || async { w.inflight("mutating").await >= 4.0 },
    )
    .await;
    let slowest = readyz_keeps_answering(&w, 20, Duration::from_secs(3)).await;
    eprintln!("slowest /readyz while parsing: {slowest:?}");
    for a in attacks {
        a.abort();
    }
}

/// Keyed lists are merged through indexes: creating, patching and applying tens of thousands
/// of toppings takes time in proportion to their number (before: 48 s of CPU for a dry-run
/// create of 100k in a release build).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_keyed_lists_take_linear_time() {
    let w = Wardle::start();
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::AUTHORIZATION,
        format!("Bearer {}", w.token).parse().unwrap(),
    );
    let client = w
        .client_builder()
        .timeout(Duration::from_secs(300))
        .default_headers(headers)
        .build()
        .unwrap();
    let timed = |what: &'static str, bound: Duration, res: (StatusCode, String), took| {
        let (code, text) = res;
        assert!(
            code.is_success(),
            "{what}: {code} {}",
            &text[..text.len().min(500)]
        );
        eprintln!("{what}: {took:?}");
        assert!(took < bound, "{what} took {took:?}");
    };

    let body = flunder_with_toppings("big", 100_000, "t").to_string();
    assert!(body.len() <= MAX_BODY, "{}", body.len());
    let started = Instant::now();
    let res = send(
        &client,
        Method::POST,
        &w.at(&format!("{FLUNDERS}?dryRun=All")),
        "application/json",
        body,
    )
    .await;
    timed(
        "dry-run create of 100k toppings",
        Duration::from_secs(60),
        res,
        started.elapsed(),
    );

    let body = flunder_with_toppings("big", 20_000, "t").to_string();
    let started = Instant::now();
    let res = send(
        &client,
        Method::POST,
        &w.at(FLUNDERS),
        "application/json",
        body,
    )
    .await;
    timed(
        "create of 20k toppings",
        Duration::from_secs(30),
        res,
        started.elapsed(),
    );

    // A strategic merge patch adding 20k more, merged by name.
    let patch = json!({"spec": {"toppings": flunder_with_toppings("big", 20_000, "u")["spec"]["toppings"]}});
    let started = Instant::now();
    let res = send(
        &client,
        Method::PATCH,
        &w.at(&format!("{FLUNDERS}/big")),
        "application/strategic-merge-patch+json",
        patch.to_string(),
    )
    .await;
    let took = started.elapsed();
    let stored: Value = serde_json::from_str(&res.1).unwrap_or_default();
    timed(
        "strategic merge patch of 20k toppings",
        Duration::from_secs(30),
        res,
        took,
    );
    assert_eq!(
        stored["spec"]["toppings"].as_array().map(Vec::len),
        Some(40_000)
    );

    // Server-side apply of 20k toppings (owned by another manager from now on).
    let config = flunder_with_toppings("big", 20_000, "v").to_string();
    let started = Instant::now();
    let res = send(
        &client,
        Method::PATCH,
        &w.at(&format!("{FLUNDERS}/big?fieldManager=applier")),
        "application/apply-patch+yaml",
        config,
    )
    .await;
    let took = started.elapsed();
    let stored: Value = serde_json::from_str(&res.1).unwrap_or_default();
    timed(
        "server-side apply of 20k toppings",
        Duration::from_secs(60),
        res,
        took,
    );
    assert_eq!(
        stored["spec"]["toppings"].as_array().map(Vec::len),
        Some(60_000)
    );
}

/// A JSON patch of one 1 KiB `add` and 18 `copy` operations of `/spec` into itself would
/// double the object 18 times (256 MiB): it is refused after the copies pass 3 MiB, as
/// upstream refuses it, before the memory is taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_patch_copies_are_bounded_as_they_apply() {
    let w = Wardle::start();
    let client = w.client();
    let flunder = json!({
        "apiVersion": "wardle.example.com/v1alpha1",
        "kind": "Flunder",
        "metadata": {"name": "f1"},
        "spec": {"reference": "x", "referenceType": "Flunder"},
    });
    let (code, text) = send(
        &client,
        Method::POST,
        &w.at(FLUNDERS),
        "application/json",
        flunder.to_string(),
    )
    .await;
    assert_eq!(code, StatusCode::CREATED, "{text}");
    let mut ops = vec![json!({"op": "add", "path": "/spec/padding", "value": "x".repeat(1024)})];
    for i in 0..18 {
        ops.push(json!({"op": "copy", "from": "/spec", "path": format!("/spec/c{i}")}));
    }
    let patch = serde_json::to_string(&ops).unwrap();
    assert!(patch.len() < 2048);
    let before = proc_kib(w.pid(), "VmHWM:");
    let (code, text) = send(
        &client,
        Method::PATCH,
        &w.at(&format!("{FLUNDERS}/f1")),
        "application/json-patch+json",
        patch,
    )
    .await;
    let grown_mib = proc_kib(w.pid(), "VmHWM:").saturating_sub(before) / 1024;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{text}");
    let status = status_of(&text);
    let cause = status["details"]["causes"][0]["message"].as_str().unwrap();
    assert!(
        cause.starts_with("Unable to complete the copy, the accumulated size increase of copy is ")
            && cause.ends_with(", exceeding the limit 3145728"),
        "{cause}"
    );
    // Before: about 430 MiB more at the peak.
    assert!(grown_mib < 100, "peak RSS grew by {grown_mib} MiB");
    eprintln!("peak RSS growth: {grown_mib} MiB");
}

/// Values that used to panic in a handler (recovered as 500) are answered as client errors,
/// or served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_that_panicked_are_answered() {
    let w = Wardle::start();
    let client = w.client();
    // A generateName whose cut (at 58 bytes) falls inside a multi-byte character: cut before
    // it instead.
    let flunder = json!({
        "apiVersion": "wardle.example.com/v1alpha1",
        "kind": "Flunder",
        "metadata": {"generateName": format!("{}é", "a".repeat(57))},
    });
    let (code, text) = send(
        &client,
        Method::POST,
        &w.at(FLUNDERS),
        "application/json",
        flunder.to_string(),
    )
    .await;
    assert_eq!(code, StatusCode::CREATED, "{text}");
    let name = status_of(&text)["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        (name.len(), &name[..57]),
        (62, "a".repeat(57).as_str()),
        "{name}"
    );
    // A name made of what is not allowed is refused as invalid.
    let flunder = json!({
        "apiVersion": "wardle.example.com/v1alpha1",
        "kind": "Flunder",
        "metadata": {"generateName": "é".repeat(40)},
    });
    let (code, text) = send(
        &client,
        Method::POST,
        &w.at(FLUNDERS),
        "application/json",
        flunder.to_string(),
    )
    .await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{text}");
    assert_eq!(status_of(&text)["reason"], "Invalid", "{text}");

    // A watch as long as an i64 can say: served (for ten years at most).
    for timeout in ["9223372036854775807", "-9223372036854775808"] {
        let res = answer(
            client
                .get(w.at(&format!("{FLUNDERS}?watch=1&timeoutSeconds={timeout}")))
                .timeout(Duration::from_secs(5)),
        )
        .await;
        assert_eq!(res.status(), StatusCode::OK, "timeoutSeconds={timeout}");
    }
    let res =
        answer(client.get(w.at(&format!("{FLUNDERS}?timeoutSeconds=99999999999999999999")))).await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    // The server is still healthy.
    readyz_keeps_answering(&w, 1, Duration::from_secs(5)).await;
}

/// Sends a POST as an HTTP/1.1 client careful with large bodies does (curl, Go's client):
/// `Expect: 100-continue`, and the body only once the server asks for it. A server that
/// answers without reading the body (a refused request) answers at once. The status and the
/// time until it came.
async fn post_expecting_continue(
    base: &str,
    path: &str,
    ca_pem: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, Duration) {
    use tokio::io::AsyncWriteExt;

    let config = apiserver_framework::testing::tls::client_config(ca_pem, &[]);
    let authority = base.trim_start_matches("https://").to_string();
    let mut tls = apiserver_framework::testing::tls::connect(&authority, "127.0.0.1", config)
        .await
        .expect("a TLS handshake");
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Length: {}\r\nExpect: 100-continue\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let started = Instant::now();
    tls.write_all(head.as_bytes()).await.expect("send the head");
    let mut code = response_code(&mut tls).await;
    if code == 100 {
        tls.write_all(body).await.expect("send the body");
        code = response_code(&mut tls).await;
    }
    (code, started.elapsed())
}

/// The status code of the next response head on `stream`.
async fn response_code<S: tokio::io::AsyncRead + Unpin>(stream: &mut S) -> u16 {
    use tokio::io::AsyncReadExt;
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let byte = stream.read_u8().await.expect("a response head");
        head.push(byte);
    }
    let text = String::from_utf8_lossy(&head);
    text.split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("not a response head: {text}"))
}

/// With auditing at `RequestResponse`, a request that authorization refuses is answered
/// without its body being read or parsed: an anonymous caller sending a pathological YAML
/// body straight to wardle gets its 403 at once, and the audit event holds no request object.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_requests_cost_no_parse_with_audit_on() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: RequestResponse\n",
    )
    .unwrap();
    let log = dir.path().join("audit.log");
    let (policy, log_text) = (policy.display().to_string(), log.display().to_string());
    let stack = stack::Stack::start(&[
        "--audit-policy-file",
        &policy,
        "--audit-log-path",
        &log_text,
    ])
    .await;
    let wardle_url = stack.wardle_url();
    let mut bodies = deep_yaml_bodies();
    bodies.push(("expensive", expensive_yaml()));
    for (what, body) in bodies {
        let audit_id = format!("attack-{}", what.replace(' ', "-"));
        let headers = [
            ("Content-Type", "application/yaml"),
            ("Audit-ID", audit_id.as_str()),
        ];
        let answer = post_expecting_continue(
            &wardle_url,
            FLUNDERS,
            &stack.host.files.ca_pem,
            &headers,
            body.as_bytes(),
        );
        let (code, took) = tokio::time::timeout(Duration::from_secs(30), answer)
            .await
            .unwrap_or_else(|_| panic!("{what}: no answer within 30 s"));
        assert_eq!(code, 403, "{what}");
        assert!(
            took < Duration::from_secs(3),
            "{what}: the 403 took {took:?}"
        );
    }
    let text = std::fs::read_to_string(&log).unwrap();
    let attacks: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| {
            e["auditID"]
                .as_str()
                .is_some_and(|id| id.starts_with("attack-"))
        })
        .collect();
    assert_eq!(attacks.len(), 8, "two events for each of four requests");
    for e in &attacks {
        assert_eq!(e["user"]["username"], "system:anonymous", "{e}");
        assert!(e.get("requestObject").is_none(), "{e}");
    }
}
