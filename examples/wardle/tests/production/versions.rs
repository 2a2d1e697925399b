//! The host's discovery of wardle's two Flunder versions: both listed, v1beta1 preferred, in
//! the legacy documents and in aggregated discovery.

use apiserver_framework::testing::wait;
use reqwest::Method;
use serde_json::Value;

use crate::stack::{Stack, TIMEOUT};

const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// The versions of wardle's group in the host's aggregated discovery.
async fn aggregated_versions(stack: &Stack) -> Vec<String> {
    let res = stack
        .client()
        .request(Method::GET, format!("{}/apis", stack.host_url()))
        .bearer_auth(stack.token("admin"))
        .header("accept", AGGREGATED)
        .send()
        .await
        .expect("the request is answered");
    let doc: Value = res.json().await.expect("JSON");
    doc["items"]
        .as_array()
        .and_then(|items| {
            items
                .iter()
                .find(|g| g["metadata"]["name"] == "wardle.example.com")
        })
        .and_then(|g| g["versions"].as_array())
        .map(|vs| {
            vs.iter()
                .filter_map(|v| v["version"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_prefers_v1beta1() {
    let stack = Stack::start(&[]).await;
    // Each version has its APIService; wait until both are available.
    let versions = wait::poll("both versions to be available", TIMEOUT, || async {
        let versions = aggregated_versions(&stack).await;
        if versions.len() >= 2 {
            Ok(versions)
        } else {
            Err(format!("{versions:?}"))
        }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(versions, ["v1beta1", "v1alpha1"]);

    let (code, body) = stack
        .as_bearer(
            &stack.client(),
            Method::GET,
            &format!("{}/apis/wardle.example.com", stack.host_url()),
            &stack.token("admin"),
        )
        .await;
    assert_eq!(code, 200, "{body}");
    let group: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(group["preferredVersion"]["version"], "v1beta1", "{group}");

    // kubectl through the host reads Flunders in the preferred version.
    let out = stack.kubectl(
        "admin",
        &["api-resources", "--api-group=wardle.example.com"],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("wardle.example.com/v1beta1"), "{text}");
}
