//! kube-rs against wardle: `Api<Flunder>` on the very same generated type, and a watcher.

mod support;

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use kube::Api;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::runtime::watcher;
use support::fixtures::typed_flunder;
use support::fixtures::{create, resource_version};
use support::in_process::start_parts as start;
use wardle::{Fischer, FischerSpec, Flunder, ReferenceType};

#[tokio::test]
async fn crud_with_the_generated_type() {
    let (server, client) = start().await;
    let api: Api<Flunder> = Api::namespaced(client.clone(), "default");

    let created = create(&api, &typed_flunder("f1", "a", ReferenceType::Fischer)).await;
    assert_eq!(created.metadata.name.as_deref(), Some("f1"));
    assert_eq!(created.metadata.namespace.as_deref(), Some("default"));
    assert_eq!(created.metadata.generation, Some(1));
    assert!(created.metadata.uid.is_some());
    assert!(created.metadata.creation_timestamp.is_some());
    let rv1: u64 = resource_version(&created);

    let got = api.get("f1").await.unwrap();
    assert_eq!(got.spec, created.spec);
    assert_eq!(
        got.metadata.resource_version,
        created.metadata.resource_version
    );

    create(&api, &typed_flunder("f2", "b", ReferenceType::Fischer)).await;
    let list = api.list(&ListParams::default()).await.unwrap();
    let names: Vec<_> = list
        .items
        .iter()
        .filter_map(|f| f.metadata.name.clone())
        .collect();
    assert_eq!(names, ["f1", "f2"]);

    let mut changed = got.clone();
    changed.spec.reference = Some("c".into());
    let replaced = api
        .replace("f1", &PostParams::default(), &changed)
        .await
        .unwrap();
    assert_eq!(replaced.spec.reference.as_deref(), Some("c"));
    assert_eq!(
        replaced.metadata.generation,
        Some(2),
        "a spec change bumps generation"
    );
    let rv2: u64 = resource_version(&replaced);
    assert!(rv2 > rv1);

    // A replace with the old resourceVersion is a conflict.
    let err = api
        .replace("f1", &PostParams::default(), &got)
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 409);
            assert_eq!(s.reason, "Conflict");
        }
        other => panic!("expected a 409, got {other:?}"),
    }

    // A label-only change does not bump generation.
    let mut labelled = replaced.clone();
    labelled.metadata.labels = Some([("a".to_string(), "b".to_string())].into());
    let labelled = api
        .replace("f1", &PostParams::default(), &labelled)
        .await
        .unwrap();
    assert_eq!(labelled.metadata.generation, Some(2));

    api.delete("f1", &DeleteParams::default()).await.unwrap();
    let err = api.get("f1").await.unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 404),
        "{err:?}"
    );

    // Cluster-scoped resources work the same way.
    let fischers: Api<Fischer> = Api::all(client);
    let fi = Fischer::new(
        "fi1",
        FischerSpec {
            disallowed_flunders: vec!["x".into()],
        },
    );
    let created = create(&fischers, &fi).await;
    assert_eq!(created.spec.disallowed_flunders, ["x"]);
    assert_eq!(created.metadata.namespace, None);
    server.shutdown().await;
}

#[tokio::test]
async fn watcher_sees_every_change() {
    let (server, client) = start().await;
    let api: Api<Flunder> = Api::namespaced(client.clone(), "default");
    create(&api, &typed_flunder("before", "a", ReferenceType::Fischer)).await;

    let stream = watcher(api.clone(), watcher::Config::default());
    let mut stream = Box::pin(stream);
    let mut seen = Vec::new();
    // The writes start once the watcher has listed.
    let listed = tokio::sync::Notify::new();
    let writer = {
        let api = api.clone();
        let listed = &listed;
        async move {
            listed.notified().await;
            create(&api, &typed_flunder("during", "b", ReferenceType::Fischer)).await;
            let mut f = api.get("during").await.unwrap();
            f.spec.reference = Some("changed".into());
            api.replace("during", &PostParams::default(), &f)
                .await
                .unwrap();
            api.delete("during", &DeleteParams::default())
                .await
                .unwrap();
        }
    };
    let reader = async {
        while let Some(ev) = stream.try_next().await.unwrap() {
            match ev {
                watcher::Event::InitApply(f) => {
                    seen.push(format!("init:{}", f.metadata.name.unwrap()))
                }
                watcher::Event::Apply(f) => seen.push(format!(
                    "apply:{}:{}",
                    f.metadata.name.unwrap(),
                    f.spec.reference.unwrap_or_default()
                )),
                watcher::Event::Delete(f) => {
                    seen.push(format!("delete:{}", f.metadata.name.unwrap()));
                    break;
                }
                watcher::Event::InitDone => listed.notify_one(),
                watcher::Event::Init => {}
            }
        }
    };
    tokio::time::timeout(
        Duration::from_secs(20),
        futures::future::join(writer, reader),
    )
    .await
    .expect("the watcher saw every event in time");
    assert_eq!(
        seen,
        [
            "init:before",
            "apply:during:b",
            "apply:during:changed",
            "delete:during"
        ]
    );
    server.shutdown().await;
}

#[tokio::test]
async fn raw_watch_resumes_from_a_resource_version() {
    let (server, client) = start().await;
    let api: Api<Flunder> = Api::namespaced(client, "default");
    let a = create(&api, &typed_flunder("a", "1", ReferenceType::Fischer)).await;
    create(&api, &typed_flunder("b", "2", ReferenceType::Fischer)).await;
    api.delete("a", &DeleteParams::default()).await.unwrap();
    let rv = a.metadata.resource_version.unwrap();
    let events: Vec<_> = api
        .watch(&kube::api::WatchParams::default().timeout(2), &rv)
        .await
        .unwrap()
        .take(2)
        .try_collect()
        .await
        .unwrap();
    let kinds: Vec<String> = events
        .iter()
        .map(|e| match e {
            kube::api::WatchEvent::Added(f) => {
                format!("ADDED {}", f.metadata.name.clone().unwrap())
            }
            kube::api::WatchEvent::Deleted(f) => {
                format!("DELETED {}", f.metadata.name.clone().unwrap())
            }
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(kinds, ["ADDED b", "DELETED a"]);
    server.shutdown().await;
}
