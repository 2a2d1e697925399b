//! kube-rs watches against wardle: streaming lists (`sendInitialEvents`), bookmarks, a watch
//! that starts behind the kept history, and the strategic merge patch type.

mod support;

use std::sync::Arc;
use std::time::Duration;

use apiserver_framework::storage::memory::MemoryStorage;
use apiserver_framework::testing::TestServer;
use futures::{StreamExt, TryStreamExt};
use kube::api::{Patch, PatchParams, WatchEvent, WatchParams};
use kube::runtime::watcher;
use kube::{Api, Client};
use serde_json::json;
use support::checks::initial_list_then_apply;
use support::checks::message;
use support::fixtures::create;
use support::fixtures::typed_flunder;
use wardle::{Flunder, ReferenceType, Topping};

/// Starts wardle in-process on `storage` (the default memory storage when `None`).
async fn start(storage: Option<Arc<MemoryStorage>>) -> (TestServer, Client) {
    let s = support::in_process::start_with(storage).await;
    let client = s.client();
    (s, client)
}

#[tokio::test]
async fn streaming_list_watcher_gets_initial_events_then_changes() {
    let (_server, client) = start(None).await;
    let api: Api<Flunder> = Api::namespaced(client, "default");
    for name in ["a", "b", "c"] {
        create(&api, &typed_flunder(name, "r", ReferenceType::Flunder)).await;
    }
    // With streaming lists the watcher sends sendInitialEvents=true and reports InitDone only
    // when the bookmark annotated k8s.io/initial-events-end arrives.
    let config = watcher::Config::default().streaming_lists();
    let mut stream = watcher(api.clone(), config).boxed();
    let events = initial_list_then_apply(&mut stream, async {
        create(&api, &typed_flunder("d", "r", ReferenceType::Flunder)).await;
    });
    let (mut initial, after) = tokio::time::timeout(Duration::from_secs(20), events)
        .await
        .expect("the watcher finished its initial list and saw the create");
    initial.sort();
    assert_eq!(initial, ["a", "b", "c"]);
    assert_eq!(after, "d");
}

#[tokio::test]
async fn bookmarks_carry_the_latest_resource_version() {
    let (_server, client) = start(None).await;
    let api: Api<Flunder> = Api::namespaced(client, "default");
    let created = create(&api, &typed_flunder("a", "r", ReferenceType::Flunder)).await;
    let rv = created.metadata.resource_version.clone().unwrap();
    // A 4-second watch (kube asks for bookmarks by default) gets one about 2 s before its end.
    let params = WatchParams::default().timeout(4);
    let mut stream = api.watch(&params, "0").await.unwrap().boxed();
    let mut added = 0;
    let mut bookmark = None;
    let started = std::time::Instant::now();
    while let Some(ev) = stream.try_next().await.unwrap() {
        match ev {
            WatchEvent::Added(_) => added += 1,
            WatchEvent::Bookmark(b) => bookmark = Some(b),
            other => panic!("unexpected event {other:?}"),
        }
    }
    assert!(started.elapsed() >= Duration::from_secs(3));
    assert_eq!(added, 1);
    let bookmark = bookmark.expect("a bookmark before the watch ended");
    assert_eq!(bookmark.types.kind, "Flunder");
    assert_eq!(bookmark.types.api_version, "wardle.example.com/v1alpha1");
    assert_eq!(bookmark.metadata.resource_version, rv);

    // Without allowWatchBookmarks there are none.
    let params = WatchParams::default().disable_bookmarks().timeout(3);
    let events: Vec<_> = api
        .watch(&params, "0")
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(events.len(), 1);
    assert!(matches!(events[0], WatchEvent::Added(_)));
}

#[tokio::test]
async fn a_watch_from_before_the_kept_history_gets_a_410_error_event() {
    let (_server, client) = start(Some(Arc::new(MemoryStorage::with_history(3)))).await;
    let api: Api<Flunder> = Api::namespaced(client, "default");
    let first = create(&api, &typed_flunder("a", "r", ReferenceType::Flunder)).await;
    for name in ["b", "c", "d", "e", "f"] {
        create(&api, &typed_flunder(name, "r", ReferenceType::Flunder)).await;
    }
    let rv = first.metadata.resource_version.unwrap();
    let mut stream = api
        .watch(&WatchParams::default().timeout(10), &rv)
        .await
        .unwrap()
        .boxed();
    match stream.try_next().await.unwrap() {
        Some(WatchEvent::Error(e)) => {
            assert_eq!(e.code, 410);
            assert_eq!(e.reason, "Expired");
            assert!(
                e.message
                    .starts_with(&format!("too old resource version: {rv} (")),
                "{}",
                e.message
            );
        }
        other => panic!("expected an ERROR event, got {other:?}"),
    }
    assert!(
        stream.try_next().await.unwrap().is_none(),
        "the stream ends after it"
    );
}

#[tokio::test]
async fn patch_types_through_kube() {
    let (_server, client) = start(None).await;
    let api: Api<Flunder> = Api::namespaced(client, "default");
    let mut f = typed_flunder("p", "r", ReferenceType::Flunder);
    f.spec.toppings = vec![
        Topping {
            name: "x".into(),
            amount: Some(1),
        },
        Topping {
            name: "y".into(),
            amount: None,
        },
    ];
    create(&api, &f).await;
    let pp = PatchParams::default();

    let p: Patch<()> = Patch::Json(
        serde_json::from_value(json!([{"op": "replace", "path": "/spec/reference", "value": "j"}]))
            .unwrap(),
    );
    assert_eq!(
        api.patch("p", &pp, &p)
            .await
            .unwrap()
            .spec
            .reference
            .as_deref(),
        Some("j")
    );
    let merged = api
        .patch(
            "p",
            &pp,
            &Patch::Merge(json!({"spec": {"toppings": [{"name": "z"}]}})),
        )
        .await
        .unwrap();
    assert_eq!(
        merged.spec.toppings.len(),
        1,
        "a merge patch replaces lists"
    );
    let strategic = api
        .patch(
            "p",
            &pp,
            &Patch::Strategic(json!({"spec": {"toppings": [{"name": "x", "amount": 2}]}})),
        )
        .await
        .unwrap();
    let toppings: Vec<(String, Option<i32>)> = strategic
        .spec
        .toppings
        .iter()
        .map(|t| (t.name.clone(), t.amount))
        .collect();
    assert_eq!(
        toppings,
        [("x".to_string(), Some(2)), ("z".to_string(), None)],
        "a strategic merge patch merges toppings by name; a new item goes before the existing \
         ones, as on Kubernetes API servers"
    );
}

#[tokio::test]
async fn metadata_only_clients() {
    let (server, client) = start(None).await;
    let local = server.local_server().expect("served as local mode serves");
    let api: Api<Flunder> = Api::namespaced(client, "default");
    let mut f = typed_flunder("m", "r", ReferenceType::Flunder);
    f.metadata.labels = Some([("app".to_string(), "m".to_string())].into());
    create(&api, &f).await;

    let one = api.get_metadata("m").await.unwrap();
    assert_eq!(one.types.as_ref().unwrap().kind, "PartialObjectMetadata");
    assert_eq!(one.metadata.labels.unwrap()["app"], "m");
    let list = api
        .list_metadata(&kube::api::ListParams::default())
        .await
        .unwrap();
    assert_eq!(list.types.kind, "PartialObjectMetadataList");
    assert_eq!(list.items.len(), 1);
    assert_eq!(list.items[0].metadata.name.as_deref(), Some("m"));

    // The metadata watcher of controllers: initial list, then a change.
    // `Api<PartialObjectMeta<_>>` makes the watcher ask for metadata only.
    let meta_api: Api<kube::core::PartialObjectMeta<Flunder>> =
        Api::namespaced(api.clone().into_client(), "default");
    let mut stream = watcher(meta_api, watcher::Config::default()).boxed();
    let seen = async {
        loop {
            if let watcher::Event::InitDone = stream.try_next().await.unwrap().unwrap() {
                break;
            }
        }
        api.patch(
            "m",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"app": "n"}}})),
        )
        .await
        .unwrap();
        loop {
            if let watcher::Event::Apply(m) = stream.try_next().await.unwrap().unwrap() {
                return m;
            }
        }
    };
    let changed = tokio::time::timeout(Duration::from_secs(20), seen)
        .await
        .expect("the metadata watcher saw the change");
    assert_eq!(
        changed.types.as_ref().unwrap().kind,
        "PartialObjectMetadata"
    );
    assert_eq!(changed.metadata.labels.unwrap()["app"], "n");

    // Asking for the wrong cardinality is refused with 406, as upstream.
    let http = reqwest::Client::builder()
        .use_preconfigured_tls(apiserver_framework::testing::tls::http1_config(
            &local.ca_pem,
        ))
        .build()
        .unwrap();
    let res = http
        .get(format!(
            "{}/apis/wardle.example.com/v1alpha1/namespaces/default/flunders",
            local.url
        ))
        .bearer_auth(&local.token)
        .header(
            "Accept",
            "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 406);
    let status: serde_json::Value = res.json().await.unwrap();
    assert_eq!(status["reason"], "NotAcceptable");
    assert!(
        message(&status)
            .starts_with("you requested PartialObjectMetadata, but the requested object is a list"),
        "{status}"
    );
}
