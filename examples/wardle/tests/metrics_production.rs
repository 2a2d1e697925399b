//! `/metrics` of wardle in production mode: like upstream, it is no always-allowed path, so
//! wardle asks the host (SubjectAccessReview) whether the caller may `get` it.

#![allow(dead_code)]

#[path = "support/checks.rs"]
mod checks;
#[path = "production/stack.rs"]
mod stack;

use checks::answer;
use reqwest::Method;
use stack::Stack;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_authorized_by_the_host() {
    let stack = Stack::start(&[]).await;
    let client = stack.client();
    let url = format!("{}/metrics", stack.wardle_url());

    // No credentials: as upstream, production mode lets anonymous requests through
    // authentication, and the host does not authorize system:anonymous to read /metrics.
    let (code, body) = stack.call(&client, Method::GET, &url, None, None).await;
    assert_eq!(code, 403, "{body}");
    assert!(
        body.contains(r#"forbidden: User \"system:anonymous\" cannot get path \"/metrics\""#),
        "{body}"
    );

    // bob may read wardle's resources and discovery, but the host grants him no /metrics.
    let (code, body) = stack
        .as_bearer(&client, Method::GET, &url, &stack.token("bob"))
        .await;
    assert_eq!(code, 403, "{body}");
    assert!(
        body.contains(r#"forbidden: User \"bob\" cannot get path \"/metrics\""#),
        "{body}"
    );

    // The host's admin (system:masters) may.
    let res = answer(client.get(&url).bearer_auth(stack.token("admin"))).await;
    assert_eq!(res.status(), 200);
    assert_eq!(
        res.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    let text = res.text().await.unwrap();
    // bob's refused scrape was counted.
    checks::assert_refused_scrape_counted(&text);
}
