//! A server on etcd while etcd goes away and comes back: `/readyz` names `etcd-readiness`,
//! requests answer a 5xx Status within the storage timeout instead of hanging, and once etcd
//! is back the server serves again by itself, with no write lost.

mod support_etcd;
mod support_kinds;

use std::time::{Duration, Instant};

use apiserver_framework::prelude::*;
use apiserver_framework::testing::wait;
use serde_json::Value;
use support_etcd::Etcd;
use support_kinds::{sized, sized_kind};

sized_kind!(WidgetSpec, "down.example.com", "v1", "Widget");

const WIDGETS: &str = "/apis/down.example.com/v1/namespaces/default/widgets";

/// Widget `name` of size 1.
fn widget(name: &str) -> Value {
    sized("down.example.com/v1", "Widget", name, 1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_survives_etcd_going_away() {
    let mut etcd = Etcd::start().expect("etcd starts");
    let served = support_etcd::serve::<Widget>(
        "down",
        "down.example.com",
        etcd.options("/registry"),
        Duration::from_secs(60),
    )
    .await;
    let s = served.client();
    let (code, before) = s.create(WIDGETS, &widget("before")).await;
    assert_eq!(code, 201);
    let rv = before["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(s.get("/readyz").await.0, 200);
    // A watch open while etcd goes away.
    let watch = s
        .http
        .get(format!(
            "{}{WIDGETS}?watch=1&resourceVersion={rv}&timeoutSeconds=120",
            s.url
        ))
        .bearer_auth(&s.token)
        .send()
        .await
        .unwrap();
    assert_eq!(watch.status().as_u16(), 200);

    etcd.kill();
    // The open watch ends (with an ERROR event) instead of hanging: the client re-watches.
    let ended = tokio::time::timeout(Duration::from_secs(30), watch.text())
        .await
        .expect("the watch ends once etcd is gone")
        .unwrap_or_default();
    assert!(
        ended.is_empty() || ended.contains("\"type\":\"ERROR\""),
        "{ended}"
    );
    // Readiness fails and names the check.
    let (code, text) = s.get("/readyz?verbose").await;
    assert_eq!(code, 500, "{text}");
    assert!(text.contains("[-]etcd-readiness failed"), "{text}");
    assert!(text.contains("[-]etcd failed"), "{text}");
    // Requests answer a 5xx Status within the storage's timeout, never hang.
    let started = Instant::now();
    let (code, text) = s.get(WIDGETS).await;
    assert!((500..600).contains(&code), "{code}: {text}");
    let status: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(status["kind"], "Status", "{text}");
    let (code, body) = s.create(WIDGETS, &widget("during")).await;
    assert!((500..600).contains(&code), "{code}: {body}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "answered in {:?}",
        started.elapsed()
    );

    // etcd comes back on the same data: the server recovers by itself.
    etcd.restart().expect("etcd restarts");
    wait::eventually("ready again", Duration::from_secs(30), || async {
        s.get("/readyz").await.0 == 200
    })
    .await;
    assert_eq!(s.create(WIDGETS, &widget("after")).await.0, 201);
    let (code, text) = s.get(WIDGETS).await;
    assert_eq!(code, 200, "{text}");
    let list: Value = serde_json::from_str(&text).unwrap();
    let names: Vec<&str> = apiserver_framework::testing::item_names(&list);
    assert_eq!(names, ["after", "before"], "no acknowledged write lost");
    // Watching again from the last resourceVersion seen misses nothing.
    let res = s
        .http
        .get(format!(
            "{}{WIDGETS}?watch=1&resourceVersion={rv}&timeoutSeconds=2",
            s.url
        ))
        .bearer_auth(&s.token)
        .send()
        .await
        .unwrap();
    let events = res.text().await.unwrap();
    let added: Vec<Value> = events
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .collect();
    assert_eq!(added.len(), 1, "{events}");
    assert_eq!(added[0]["type"], "ADDED");
    assert_eq!(added[0]["object"]["metadata"]["name"], "after");
}
