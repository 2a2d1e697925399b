//! The dev host's aggregator keeps kube-aggregator's availability metrics, the series the
//! kubernetes-mixin's `AggregatedAPIDown` alert reads: `aggregator_unavailable_apiservice`
//! turns 1 while wardle is down and 0 once it is back, and
//! `aggregator_unavailable_apiservice_total` counts the change to unavailable with its reason.
//!
//! A test binary of its own: the metrics are process-wide, as upstream's, and every dev host
//! of a process would write the same APIService's series.

#![allow(dead_code)]

#[path = "production/stack.rs"]
mod stack;

use std::time::Duration;

use apiserver_framework::testing::wait;
use reqwest::Method;
use stack::Stack;

const GAUGE: &str = r#"aggregator_unavailable_apiservice{name="v1alpha1.wardle.example.com"}"#;
const COUNTER: &str = r#"aggregator_unavailable_apiservice_total{name="v1alpha1.wardle.example.com",reason="FailedDiscoveryCheck"}"#;

/// The value of `series` in the dev host's `/metrics`, read as its admin (`None`: absent).
async fn value(stack: &Stack, series: &str) -> Option<f64> {
    let url = format!("{}/metrics", stack.host_url());
    let (code, body) = stack
        .as_bearer(&stack.client(), Method::GET, &url, &stack.token("admin"))
        .await;
    assert_eq!(code, 200, "{body}");
    body.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
}

/// Waits until `series` reads `want`.
async fn until(stack: &Stack, series: &str, want: f64) {
    wait::poll(
        &format!("{series} to be {want}"),
        Duration::from_secs(60),
        || async {
            match value(stack, series).await {
                Some(v) if v == want => Ok(()),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregated_api_down_follows_wardle() {
    let mut stack = Stack::start(&[]).await;
    stack.wait_available("True").await;
    until(&stack, GAUGE, 0.0).await;
    assert_eq!(
        value(&stack, COUNTER).await,
        None,
        "never marked unavailable yet"
    );

    stack.stop_wardle();
    stack.wait_available("False").await;
    until(&stack, GAUGE, 1.0).await;
    assert_eq!(value(&stack, COUNTER).await, Some(1.0));

    stack.start_wardle().await;
    stack.wait_available("True").await;
    until(&stack, GAUGE, 0.0).await;
    assert_eq!(
        value(&stack, COUNTER).await,
        Some(1.0),
        "the change back counts nothing"
    );
}
