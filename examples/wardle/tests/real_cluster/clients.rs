//! kube-rs, the official Python client and client-go through the real kube-apiserver: typed
//! requests, a watcher, server-side apply, and the `console` WebSocket subresource across the
//! aggregator's upgrade proxy; client-go's dynamic client, paging, informers synced from watch
//! lists, and server-side apply.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::watcher;
use kube::{Api, Client};
use serde_json::{Value, json};
use wardle::{Flunder, ReferenceType};

use crate::cluster::{RealCluster, TIMEOUT, block_on};
use crate::support::checks::{close_console, initial_list_then_apply, upper_console};
use crate::support::fixtures::typed_flunder;
use crate::support::process::run_ok;

/// A kube-rs client of the cluster as `user`.
pub async fn kube_client(cluster: &RealCluster, user: &str) -> Client {
    let kubeconfig = Kubeconfig::read_from(cluster.kubeconfig(user)).expect("read the kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("a client config");
    Client::try_from(config).expect("a client")
}

/// kube-rs' typed `Api<Flunder>` as alice: create, get, a watcher (streaming list, then a
/// change), server-side apply with a conflict, delete; bob's typed request is refused with
/// upstream's Status.
pub fn kube_rs(cluster: &RealCluster) {
    block_on(async {
        let alice = kube_client(cluster, "alice").await;
        let api: Api<Flunder> = Api::namespaced(alice.clone(), "alice");
        let created = api
            .create(
                &PostParams::default(),
                &typed_flunder("kube-one", "a", ReferenceType::Flunder),
            )
            .await
            .expect("alice creates a Flunder through kube-apiserver");
        assert!(created.metadata.uid.is_some());
        let got = api.get("kube-one").await.expect("alice gets it");
        assert_eq!(got.spec.reference.as_deref(), Some("a"));

        let mut stream = watcher(api.clone(), watcher::Config::default().streaming_lists()).boxed();
        let events = initial_list_then_apply(&mut stream, async {
            api.create(
                &PostParams::default(),
                &typed_flunder("kube-two", "b", ReferenceType::Flunder),
            )
            .await
            .expect("create kube-two");
        });
        let (initial, after) = tokio::time::timeout(TIMEOUT, events)
            .await
            .expect("the watcher's initial list and the create in time");
        assert_eq!(initial, ["kube-one"]);
        assert_eq!(after, "kube-two");

        // Server-side apply: a field owned by another manager conflicts.
        let applied = json!({
            "apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
            "metadata": {"name": "kube-one"}, "spec": {"reference": "applied"},
        });
        let conflict = api
            .patch(
                "kube-one",
                &PatchParams::apply("other-manager"),
                &Patch::Apply(&applied),
            )
            .await
            .expect_err("a conflict with kube-one's creator");
        let kube::Error::Api(status) = conflict else {
            panic!("expected a Status, got {conflict:?}")
        };
        assert_eq!(status.code, 409, "{status:?}");
        assert_eq!(status.reason, "Conflict", "{status:?}");
        let forced = api
            .patch(
                "kube-one",
                &PatchParams::apply("other-manager").force(),
                &Patch::Apply(&applied),
            )
            .await
            .expect("a forced apply");
        assert_eq!(forced.spec.reference.as_deref(), Some("applied"));

        let bob: Api<Flunder> = Api::namespaced(kube_client(cluster, "bob").await, "alice");
        let refused = bob
            .get("kube-one")
            .await
            .expect_err("bob may not read flunders");
        let kube::Error::Api(status) = refused else {
            panic!("expected a Status, got {refused:?}")
        };
        assert_eq!(status.code, 403);
        assert_eq!(
            status.message,
            "flunders.wardle.example.com \"kube-one\" is forbidden: User \"bob\" cannot get \
             resource \"flunders\" in API group \"wardle.example.com\" in the namespace \"alice\""
        );
        for name in ["kube-one", "kube-two"] {
            api.delete(name, &DeleteParams::default())
                .await
                .expect("delete");
        }
    });
}

/// The `console` subresource (connect, WebSocket, channel protocol v5) through
/// kube-apiserver's upgrade proxy: bytes echoed, stdin's close ends the session with a Success
/// Status; bob may not connect.
pub fn websocket(cluster: &RealCluster) {
    block_on(async {
        let alice = kube_client(cluster, "alice").await;
        let api: Api<Flunder> = Api::namespaced(alice.clone(), "alice");
        api.create(
            &PostParams::default(),
            &typed_flunder("console", "a", ReferenceType::Flunder),
        )
        .await
        .expect("create console");
        let path = "/apis/wardle.example.com/v1alpha1/namespaces/alice/flunders/console/console";
        let mut ws = upper_console(&alice, path, "through the host", TIMEOUT).await;
        close_console(&mut ws).await;

        let bob = kube_client(cluster, "bob").await;
        let refused = bob
            .connect(http::Request::get(path).body(Vec::new()).unwrap())
            .await;
        assert!(refused.is_err(), "bob connected to alice's console");
        api.delete("console", &DeleteParams::default())
            .await
            .expect("delete");
    });
}

/// A watch kept open across the aggregator's proxy delivers changes made a while after it
/// started (past any short idle timeout of a proxy in between).
pub fn long_watch(cluster: &RealCluster) {
    block_on(async {
        let alice = kube_client(cluster, "alice").await;
        let api: Api<Flunder> = Api::namespaced(alice, "alice");
        let params = kube::api::WatchParams::default().timeout(120);
        let list = api.list(&Default::default()).await.expect("list");
        let version = list.metadata.resource_version.expect("a list version");
        let mut events = api.watch(&params, &version).await.expect("a watch").boxed();
        // The watch idles past 10 s before the change it must deliver.
        let idle = tokio::time::timeout(Duration::from_secs(12), events.try_next()).await;
        assert!(idle.is_err(), "an event while nothing changed: {idle:?}");
        api.create(
            &PostParams::default(),
            &typed_flunder("late", "a", ReferenceType::Flunder),
        )
        .await
        .expect("create late");
        let event = tokio::time::timeout(TIMEOUT, events.try_next())
            .await
            .expect("the change in time")
            .expect("no error")
            .expect("the watch still open");
        let kube::api::WatchEvent::Added(added) = event else {
            panic!("expected ADDED, got {event:?}")
        };
        assert_eq!(added.metadata.name.as_deref(), Some("late"));
        api.delete("late", &DeleteParams::default())
            .await
            .expect("delete");
    });
}

/// The official Python client's dynamic client as alice: discovery through kube-apiserver,
/// create, list, server-side apply and a watch (tests/python/real_cluster.py).
pub fn python(cluster: &RealCluster) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/real_cluster.py");
    let out = run_ok(
        Command::new(crate::support::kubectl_matrix::python())
            .arg(&script)
            .arg(cluster.kubeconfig("alice"))
            .arg("alice")
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null()),
        "python",
    );
    let answer: Value = serde_json::from_slice(&out.stdout).expect("the script prints JSON");
    assert_eq!(
        answer,
        json!({
            "kind": "Flunder", "namespaced": true, "preferred": "v1beta1",
            "created": "py-one", "listed": ["py-one"],
            "applied": "applied-by-python", "manager": "python-apply",
            "watched": ["ADDED py-one"],
        }),
        "{answer}"
    );
}

/// The client-go program of `tests/client_go/` as alice, in her namespace, through
/// kube-apiserver: the dynamic client's verbs, 2,000 Flunders in pages, dynamic and metadata
/// informers synced from watch lists across the aggregator's proxy, server-side apply.
pub fn client_go(cluster: &RealCluster) {
    crate::support::client_go::program();
    block_on(crate::support::client_go::run(
        "wardle",
        &cluster.kubeconfig("alice"),
        "alice",
        || cluster.logs(),
    ));
}
