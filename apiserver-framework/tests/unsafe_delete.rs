//! A delete that sets `ignoreStoreReadErrorWithClusterBreakingPotential` needs the
//! `unsafe-delete-ignore-read-errors` verb as well as `delete`, as upstream's delete handler
//! asks: a user without it gets 403 naming the verb and the object stays; with it, the delete
//! goes on to the storage. Over real HTTPS, through the handler chain.

mod support_chain;
mod support_serving;

use std::time::Duration;

use apiserver_framework::server::filters::RequestLimits;
use serde_json::{Value, json};
use support_serving::{GUARDED, TOKEN, serve, snail_of_size};

fn snails(namespace: &str) -> String {
    format!("/apis/slow.example.com/v1/namespaces/{namespace}/snails")
}

async fn send(
    s: &support_serving::Served,
    method: reqwest::Method,
    path: &str,
    body: Option<Vec<u8>>,
) -> (u16, Value) {
    let mut req = s
        .http
        .request(method, format!("{}{path}", s.url))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json");
    if let Some(body) = body {
        req = req.body(body);
    }
    let res = req.send().await.expect("send the request");
    let code = res.status().as_u16();
    let text = res.text().await.expect("read the answer");
    (code, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn unsafe_options() -> Vec<u8> {
    serde_json::to_vec(&json!({
        "kind": "DeleteOptions", "apiVersion": "v1",
        "ignoreStoreReadErrorWithClusterBreakingPotential": true,
    }))
    .unwrap()
}

#[tokio::test]
async fn an_unsafe_delete_needs_its_own_verb() {
    let s = serve(RequestLimits::default(), Duration::ZERO).await;
    for namespace in [GUARDED, "default"] {
        let (code, status) = send(
            &s,
            reqwest::Method::POST,
            &snails(namespace),
            Some(snail_of_size("a", 200).to_vec()),
        )
        .await;
        assert_eq!(code, 201, "{status}");
    }
    let guarded = format!("{}/a", snails(GUARDED));

    // Without the verb: refused with upstream's message, in the body or in the query.
    let (code, status) = send(
        &s,
        reqwest::Method::DELETE,
        &guarded,
        Some(unsafe_options()),
    )
    .await;
    assert_eq!(code, 403, "{status}");
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(
        status["message"],
        "snails.slow.example.com \"a\" is forbidden: not permitted to do \
         \"unsafe-delete-ignore-read-errors\", reason: unsafe deletes are not allowed here"
    );
    let query = format!("{guarded}?ignoreStoreReadErrorWithClusterBreakingPotential=true");
    let (code, status) = send(&s, reqwest::Method::DELETE, &query, None).await;
    assert_eq!(code, 403, "{status}");
    let (code, _) = send(&s, reqwest::Method::GET, &guarded, None).await;
    assert_eq!(code, 200, "the refused delete left the object");

    // The snails' storage serves no delete: a request the check lets through reaches it and
    // gets its 405, which shows the check passed. An ordinary delete is not checked.
    let (code, status) = send(&s, reqwest::Method::DELETE, &guarded, None).await;
    assert_eq!(code, 405, "{status}");
    // Where the verb is allowed, the unsafe delete goes on to the storage.
    let allowed = format!("{}/a", snails("default"));
    let (code, status) = send(
        &s,
        reqwest::Method::DELETE,
        &allowed,
        Some(unsafe_options()),
    )
    .await;
    assert_eq!(code, 405, "{status}");
    assert_eq!(status["reason"], "MethodNotAllowed");
}
