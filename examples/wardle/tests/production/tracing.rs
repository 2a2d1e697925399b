//! Issue 48: whose `traceparent` wardle takes as its request span's parent. As upstream's
//! `WithTracing` (its public-endpoint rule), only a caller in `system:masters` or
//! `system:monitoring` (behind the aggregator, the user it names) joins its trace; anyone
//! else's trace becomes a link and wardle starts a trace of its own. The host here does not
//! trace, so the caller's `traceparent` reaches wardle as the caller sent it.

use std::time::Duration;

use reqwest::Method;

use crate::stack::{FLUNDERS, Stack};
use crate::support::jaeger::{Jaeger, Span, describe, new_span_id, new_trace_id};

/// How long spans may take to reach the receiver (exported every 5 s).
const EXPORTED: Duration = Duration::from_secs(40);

/// Wardle's request span of a Flunder list.
const LIST: &str = "GET /apis/wardle.example.com/v1alpha1/namespaces/{:namespace}/flunders";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_privileged_callers_choose_the_parent_others_are_a_link() {
    let jaeger = Jaeger::start().await;
    let dir = tempfile::tempdir().unwrap();
    // Wardle samples every trace it starts, so alice's request is recorded either way.
    let config = jaeger.tracing_config(dir.path(), 1_000_000);
    let stack = Stack::start(&["--tracing-config-file", config.to_str().unwrap()]).await;
    let url = format!("{}{FLUNDERS}", stack.host_url());
    let mut sent = Vec::new();
    for user in ["admin", "alice"] {
        let (trace, parent) = (new_trace_id(), new_span_id());
        let res = stack
            .client()
            .request(Method::GET, &url)
            .bearer_auth(stack.token(user))
            .header("traceparent", format!("00-{trace}-{parent}-01"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{user}");
        sent.push((trace, parent));
    }
    let (admin_trace, admin_parent) = &sent[0];
    let (alice_trace, alice_parent) = &sent[1];

    // admin (system:masters): wardle's span is in admin's trace, its parent admin's span.
    let spans = jaeger
        .wait_for_trace(admin_trace, EXPORTED, |spans| {
            spans.iter().any(|s| s.name == LIST)
        })
        .await;
    let admins: Vec<&Span> = spans.iter().filter(|s| s.name == LIST).collect();
    assert_eq!(admins.len(), 1, "{}", describe(&spans));
    assert_eq!(admins[0].parent.as_deref(), Some(admin_parent.as_str()));

    // alice: a trace of wardle's own, whose request span links to alice's span.
    let linked: Vec<Span> = apiserver_framework::testing::wait::poll(
        "wardle's span linked to alice's trace",
        EXPORTED,
        || async {
            let found: Vec<Span> = jaeger
                .traces_of("wardle", 1000)
                .await
                .into_iter()
                .flatten()
                .filter(|s| {
                    s.links
                        .iter()
                        .any(|(t, s)| t == alice_trace && s == alice_parent)
                })
                .collect();
            if found.is_empty() {
                Err("not yet")
            } else {
                Ok(found)
            }
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e}; Jaeger's log:\n{}", jaeger.log()));
    assert_eq!(linked.len(), 1, "{linked:?}");
    assert_eq!(linked[0].name, LIST);
    assert!(linked[0].parent.is_none(), "{linked:?}");
    assert_ne!(&linked[0].trace_id, alice_trace);
    assert!(jaeger.trace(alice_trace).await.is_empty());
}
