//! Issue 48, tracing across our own aggregator: the dev host (in this process, its spans
//! exported by the process's subscriber as `<server> dev-host --tracing-config-file` installs
//! it) proxies to `wardle serve --tracing-config-file`, both exporting to a real OTLP receiver
//! (Jaeger v2). A caller's sampled trace runs through the host's request span, its proxy span
//! (`HTTP GET`, whose context the proxy sends on in `traceparent`), wardle's request span and
//! wardle's storage span, each the parent of the next.
//!
//! A test binary of its own: it installs the process's `tracing` subscriber.

#![allow(dead_code)]

#[path = "support/mod.rs"]
mod support;

#[path = "production/stack.rs"]
mod stack;

use std::time::Duration;

use apiserver_framework::server::tracing::{Tracing, TracingConfiguration, TracingOptions};
use stack::{FLUNDERS, Stack};
use support::jaeger::{Jaeger, Span, describe, new_span_id, new_trace_id};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// How long spans may take to reach the receiver (exported every 5 s).
const EXPORTED: Duration = Duration::from_secs(40);

fn only<'a>(spans: &'a [Span], service: &str, name: &str) -> &'a Span {
    let found: Vec<&Span> = spans
        .iter()
        .filter(|s| s.service == service && s.name == name)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "{service}: {name} among:{}",
        describe(spans)
    );
    found[0]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trace_runs_through_the_aggregators_proxy_to_wardles_storage() {
    let jaeger = Jaeger::start().await;
    let host_dir = tempfile::tempdir().unwrap();
    let wardle_dir = tempfile::tempdir().unwrap();
    // The host samples nothing of its own and wardle neither: only the caller's trace is
    // recorded, on both sides of the proxy.
    let host_config = jaeger.tracing_config(host_dir.path(), 0);
    let wardle_config = jaeger.tracing_config(wardle_dir.path(), 0);
    let tracing = Tracing::start(
        &TracingConfiguration::read(&host_config).unwrap(),
        "wardle-dev-host",
    )
    .unwrap();
    tracing_subscriber::registry()
        .with(tracing.layer())
        .try_init()
        .expect("the only subscriber of this process");
    let stack = Stack::start_with_host(
        env!("CARGO_BIN_EXE_wardle").into(),
        |opts| {
            opts.tracing = TracingOptions {
                tracing_config_file: Some(host_config.clone()),
            }
        },
        &["--tracing-config-file", wardle_config.to_str().unwrap()],
    )
    .await;

    let (trace, parent) = (new_trace_id(), new_span_id());
    let res = stack
        .client()
        .get(format!("{}{FLUNDERS}", stack.host_url()))
        .bearer_auth(stack.token("admin"))
        .header("traceparent", format!("00-{trace}-{parent}-01"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);

    let list = "GET /apis/wardle.example.com/v1alpha1/namespaces/{:namespace}/flunders";
    let spans = jaeger
        .wait_for_trace(&trace, EXPORTED, |spans| {
            spans.iter().any(|s| s.name == "HTTP GET")
                && spans.iter().any(|s| s.name == "List storage")
                && spans.iter().filter(|s| s.name == list).count() == 2
        })
        .await;
    let host = only(&spans, "wardle-dev-host", list);
    assert_eq!(host.parent.as_deref(), Some(parent.as_str()));
    let proxy = only(&spans, "wardle-dev-host", "HTTP GET");
    assert_eq!(proxy.parent.as_deref(), Some(host.span_id.as_str()));
    assert_eq!(proxy.tag("span.kind"), "client");
    assert_eq!(proxy.tag("http.status_code"), "200");
    let wardle = only(&spans, "wardle", list);
    assert_eq!(wardle.parent.as_deref(), Some(proxy.span_id.as_str()));
    let storage = only(&spans, "wardle", "List storage");
    assert_eq!(storage.parent.as_deref(), Some(wardle.span_id.as_str()));
    tracing.shutdown();
}
