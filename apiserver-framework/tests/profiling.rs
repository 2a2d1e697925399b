//! `--profiling`: on by default in local mode as upstream's flag is, so `/debug/pprof/` is
//! served to an authorized caller; off, the path is not served at all (404 with the index, as
//! any unknown path), and an unknown profile name is Go's `404 Unknown profile`.

mod support_local;

use apiserver_framework::server::GenericApiServer;
use reqwest::Method;
use support_local::start_local;

#[tokio::test]
async fn profiles_are_served_only_with_profiling_on() {
    let on = start_local("profiled", GenericApiServer::builder("on").build(), &[]).await;
    let (code, content_type, _) = on.send(Method::GET, "/debug/pprof/", "*/*", None).await;
    assert_eq!(
        (code, content_type.as_str()),
        (200, "text/html; charset=utf-8")
    );
    let res = on
        .http
        .get(format!("{}/debug/pprof/heap", on.url))
        .bearer_auth(&on.token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    assert_eq!(res.headers()["x-go-pprof"], "1");
    assert_eq!(res.text().await.unwrap(), "Unknown profile\n");

    let off = start_local(
        "unprofiled",
        GenericApiServer::builder("off").build(),
        &["--profiling=false".to_string()],
    )
    .await;
    let res = off
        .http
        .get(format!("{}/debug/pprof/", off.url))
        .bearer_auth(&off.token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    assert!(res.headers().get("x-go-pprof").is_none());
    // The server's answer to any path it does not serve: its index, as upstream's.
    let index: serde_json::Value = res.json().await.unwrap();
    assert!(index["paths"].as_array().is_some(), "{index}");
}
