//! Issue 48, tracing: `wardle local --tracing-config-file` exporting to a real OTLP receiver
//! (Jaeger v2, `scripts/build-upstream jaeger`), the spans read back through Jaeger's query API.
//!
//! 1. A caller's sampled `traceparent` is the parent of wardle's request span (named as
//!    upstream names it), which holds the storage span; a write's trace also holds admission.
//! 2. Sampling is upstream's parent-based sampling: a trace the caller did not sample is not
//!    recorded, and with `samplingRatePerMillion` 0 no trace starts here; with a million, every
//!    request without a caller's trace starts one.
//! 3. A bad configuration refuses to start, naming the field.

mod support;

use std::process::{Command, Stdio};
use std::time::Duration;

use apiserver_framework::testing::wait;
use serde_json::json;
use support::jaeger::{Jaeger, Span, describe, new_span_id, new_trace_id};
use support::{FLUNDERS, Wardle};

/// How long the spans of a request may take to reach Jaeger (the servers export in batches,
/// every 5 s as upstream's).
const EXPORTED: Duration = Duration::from_secs(40);

/// The request span's name for the namespaced Flunder collection, as upstream names it.
const FLUNDERS_SPAN: &str = "/apis/wardle.example.com/v1alpha1/namespaces/{:namespace}/flunders";

/// Starts wardle on the memory store exporting to `jaeger` with `rate` per million.
fn wardle_tracing_to(jaeger: &Jaeger, dir: &tempfile::TempDir, rate: u32) -> Wardle {
    let config = jaeger.tracing_config(dir.path(), rate);
    Wardle::start_with_args(&[
        "--storage-backend",
        "memory",
        "--tracing-config-file",
        config.to_str().expect("a UTF-8 path"),
    ])
}

/// The span named `name` in `spans`, failing the test with the spans when there is none.
fn span<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    spans
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no span {name:?} among:{}", describe(spans)))
}

/// Whether `span` descends from the span `ancestor` within `spans`.
fn descends(spans: &[Span], span: &Span, ancestor: &str) -> bool {
    let mut at = span.parent.clone();
    while let Some(id) = at {
        if id == ancestor {
            return true;
        }
        let Some(next) = spans.iter().find(|s| s.span_id == id) else {
            return false;
        };
        at = next.parent.clone();
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callers_sampled_traceparent_parents_the_request_span_which_holds_storage() {
    let jaeger = Jaeger::start().await;
    let dir = tempfile::tempdir().unwrap();
    let wardle = wardle_tracing_to(&jaeger, &dir, 0);
    let (trace, parent) = (new_trace_id(), new_span_id());
    let res = wardle
        .client()
        .get(wardle.at(FLUNDERS))
        .header("traceparent", format!("00-{trace}-{parent}-01"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let audit_id = res.headers()["audit-id"].to_str().unwrap().to_owned();

    let spans = jaeger
        .wait_for_trace(&trace, EXPORTED, |spans| {
            spans.iter().any(|s| s.name == "List storage")
                && spans.iter().any(|s| s.parent.as_deref() == Some(&parent))
        })
        .await;
    let request = span(&spans, &format!("GET {FLUNDERS_SPAN}"));
    assert_eq!(request.service, "wardle");
    assert_eq!(request.trace_id, trace);
    assert_eq!(request.parent.as_deref(), Some(parent.as_str()));
    assert_eq!(request.tag("span.kind"), "server");
    assert_eq!(request.tag("http.method"), "GET");
    assert_eq!(request.tag("http.status_code"), "200");
    assert_eq!(
        request.tag("http.target"),
        "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders"
    );
    assert_eq!(request.tag("audit-id"), audit_id);
    let storage = span(&spans, "List storage");
    assert_eq!(storage.parent.as_deref(), Some(request.span_id.as_str()));
    assert!(
        storage.tag("key").contains("/flunders/default"),
        "{storage:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writes_trace_holds_admission_and_the_storage_write() {
    let jaeger = Jaeger::start().await;
    let dir = tempfile::tempdir().unwrap();
    let wardle = wardle_tracing_to(&jaeger, &dir, 0);
    let (trace, parent) = (new_trace_id(), new_span_id());
    let res = wardle
        .client()
        .post(wardle.at(FLUNDERS))
        .header("traceparent", format!("00-{trace}-{parent}-01"))
        .json(&json!({
            "apiVersion": "wardle.example.com/v1alpha1",
            "kind": "Flunder",
            "metadata": {"name": "traced"},
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201, "{}", res.text().await.unwrap());

    let spans = jaeger
        .wait_for_trace(&trace, EXPORTED, |spans| {
            [
                "Create storage",
                "Admission mutating",
                "Admission validating",
            ]
            .iter()
            .all(|name| spans.iter().any(|s| s.name == *name))
        })
        .await;
    let request = span(&spans, &format!("POST {FLUNDERS_SPAN}"));
    assert_eq!(request.tag("http.status_code"), "201");
    for name in [
        "Admission mutating",
        "Admission validating",
        "Create storage",
    ] {
        let s = span(&spans, name);
        assert!(
            descends(&spans, s, &request.span_id),
            "{name} is not under the request:{}",
            describe(&spans)
        );
    }
    let mutating = span(&spans, "Admission mutating");
    assert_eq!(mutating.tag("operation"), "CREATE");
    assert_eq!(mutating.tag("resource"), "flunders");
    assert!(
        span(&spans, "Create storage")
            .tag("key")
            .ends_with("/traced")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_follows_the_caller_and_the_rate() {
    let jaeger = Jaeger::start().await;
    let dir = tempfile::tempdir().unwrap();
    let wardle = wardle_tracing_to(&jaeger, &dir, 0);
    let client = wardle.client();
    // Not sampled by its caller, then no caller's trace at all (rate 0: none starts here),
    // then a sampled one.
    let unsampled = new_trace_id();
    let sampled = new_trace_id();
    for traceparent in [
        Some(format!("00-{unsampled}-{}-00", new_span_id())),
        None,
        Some(format!("00-{sampled}-{}-01", new_span_id())),
    ] {
        let mut req = client.get(wardle.at(FLUNDERS));
        if let Some(tp) = traceparent {
            req = req.header("traceparent", tp);
        }
        assert_eq!(req.send().await.unwrap().status(), 200);
    }
    jaeger
        .wait_for_trace(&sampled, EXPORTED, |spans| !spans.is_empty())
        .await;
    // Spans are exported in the order they end: the earlier requests' would be there by now.
    assert!(jaeger.trace(&unsampled).await.is_empty());
    let traces = jaeger.traces_of("wardle", 100).await;
    let ids: Vec<&str> = traces
        .iter()
        .filter_map(|t| t.first().map(|s| s.trace_id.as_str()))
        .collect();
    assert_eq!(ids, [sampled.as_str()], "only the caller's sampled trace");

    // A million per million: a request without a caller's trace starts one, a root span.
    let jaeger = Jaeger::start().await;
    let dir = tempfile::tempdir().unwrap();
    let wardle = wardle_tracing_to(&jaeger, &dir, 1_000_000);
    let res = wardle
        .client()
        .get(wardle.at(FLUNDERS))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let roots = wait::poll("a trace started by wardle", EXPORTED, || async {
        let roots: Vec<Span> = jaeger
            .traces_of("wardle", 100)
            .await
            .into_iter()
            .flatten()
            .filter(|s| s.name == format!("GET {FLUNDERS_SPAN}"))
            .collect();
        if roots.is_empty() {
            Err("no request span yet")
        } else {
            Ok(roots)
        }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}; Jaeger's log:\n{}", jaeger.log()));
    assert!(roots[0].parent.is_none(), "{roots:?}");
}

/// Runs `wardle local` with `config` as its tracing configuration, expecting it to exit
/// (within 20 s) with an error; its output.
fn refused(config: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tracing.yaml");
    std::fs::write(&path, config).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_wardle"))
        .args(["local", "--secure-port", "0", "--storage-backend", "memory"])
        .arg("--write-kubeconfig")
        .arg(dir.path().join("kubeconfig"))
        .arg("--cert-dir")
        .arg(dir.path().join("certificates"))
        .arg("--tracing-config-file")
        .arg(&path)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait::poll_blocking("wardle to refuse to start", Duration::from_secs(20), || {
        child.try_wait().unwrap().ok_or("still running")
    });
    let Ok(status) = status else {
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        panic!(
            "wardle started with a bad tracing configuration:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    assert!(!status.success());
    let out = child.wait_with_output().unwrap();
    assert!(!dir.path().join("kubeconfig").exists(), "it served");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn a_bad_configuration_refuses_to_start_naming_the_field() {
    let head = "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\n";
    let out = refused(&format!("{head}samplingRatePerMillion: 2000000\n"));
    assert!(
        out.contains("samplingRatePerMillion: Invalid value: 2000000")
            && out.contains("less than or equal to one million"),
        "{out}"
    );
    let out = refused(&format!("{head}endpoint: \"http://collector:4317\"\n"));
    assert!(
        out.contains("endpoint: Invalid value") && out.contains("unsupported scheme: http"),
        "{out}"
    );
    let out = refused(&format!("{head}samplingRate: 5\n"));
    assert!(out.contains("unknown field `samplingRate`"), "{out}");
    let out = refused("apiVersion: v1\nkind: ConfigMap\n");
    assert!(out.contains("TracingConfiguration"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_in_another_version_holds_the_conversion() {
    let jaeger = Jaeger::start().await;
    let dir = tempfile::tempdir().unwrap();
    let wardle = wardle_tracing_to(&jaeger, &dir, 0);
    let client = wardle.client();
    // Stored in v1alpha1 (wardle's storage version), read in v1beta1.
    let res = client
        .post(wardle.at(FLUNDERS))
        .json(&json!({
            "apiVersion": "wardle.example.com/v1alpha1",
            "kind": "Flunder",
            "metadata": {"name": "converted"},
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let (trace, parent) = (new_trace_id(), new_span_id());
    let res = client
        .get(wardle.at("/apis/wardle.example.com/v1beta1/namespaces/default/flunders/converted"))
        .header("traceparent", format!("00-{trace}-{parent}-01"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);

    let spans = jaeger
        .wait_for_trace(&trace, EXPORTED, |spans| {
            spans.iter().any(|s| s.name == "Convert")
                && spans.iter().any(|s| s.name == "Get storage")
        })
        .await;
    let request = span(
        &spans,
        "GET /apis/wardle.example.com/v1beta1/namespaces/{:namespace}/flunders/{:name}",
    );
    let convert = span(&spans, "Convert");
    assert_eq!(convert.tag("from"), "wardle.example.com/v1alpha1");
    assert_eq!(convert.tag("to"), "wardle.example.com/v1beta1");
    assert!(
        descends(&spans, convert, &request.span_id),
        "{}",
        describe(&spans)
    );
    let storage = span(&spans, "Get storage");
    assert!(
        storage.tag("key").ends_with("/default/converted"),
        "{storage:?}"
    );
    assert!(
        descends(&spans, storage, &request.span_id),
        "{}",
        describe(&spans)
    );
}
