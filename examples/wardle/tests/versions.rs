//! Flunder in two versions (v1alpha1 stored, v1beta1 preferred) with real clients: kube-rs
//! typed APIs and watcher, kubectl, discovery, storage-version migration under load, and a
//! stored object that no longer decodes.

mod support;

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use apiserver_framework::registry::versions::VersionedStorage;
use apiserver_framework::server::generic::GenericApiServer;
use apiserver_framework::storage::memory::MemoryStorage;
use apiserver_framework::storage::{ListRequest, Storage};
use apiserver_framework::testing::TestServer;
use futures::{StreamExt, TryStreamExt};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube::{Api, Client};
use serde_json::{Value, json};
use support::checks::message;
use support::fixtures::create;
use wardle::{ReferenceType, v1alpha1, v1beta1};

const PREFIX: &str = "/wardle.example.com/flunders/";

struct Served {
    server: TestServer,
    generic: Arc<GenericApiServer>,
    client: Client,
}

impl Served {
    fn kubeconfig(&self) -> &std::path::Path {
        self.server.kubeconfig()
    }

    /// `kubectl explain flunders.spec` of wardle's `version`, which must succeed.
    fn explain_spec(&self, version: &str) -> String {
        let api_version = format!("--api-version=wardle.example.com/{version}");
        let out = self.kubectl(&["explain", "flunders.spec", &api_version]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn kubectl(&self, args: &[&str]) -> std::process::Output {
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(self.kubeconfig())
            .arg("--cache-dir")
            .arg(self.server.dir().join("cache"))
            .args(args)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .output()
            .expect("run kubectl")
    }

    /// A raw request: the status and the JSON body.
    async fn raw(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let req = http::Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .body(kube::client::Body::from(
                body.map(|b| b.to_string().into_bytes()).unwrap_or_default(),
            ))
            .expect("build a request");
        let res = self.client.send(req).await.expect("send");
        let status = res.status().as_u16();
        let bytes = res
            .into_body()
            .collect_bytes()
            .await
            .expect("read the body");
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    fn versioned(&self, version: &str) -> &VersionedStorage {
        self.generic
            .registry()
            .resources()
            .iter()
            .filter_map(|r| r.downcast_ref::<VersionedStorage>())
            .find(|v| apiserver_framework::registry::rest::RestStorage::info(*v).version == version)
            .expect("a versioned Flunder storage")
    }
}

async fn serve(app: apiserver_framework::App, storage: Arc<MemoryStorage>) -> Served {
    let generic = Arc::new(app.server_builder().storage(storage).build());
    let server = support::in_process::serve(generic.clone()).await;
    let client = server.client();
    Served {
        server,
        generic,
        client,
    }
}

fn alpha(name: &str, reference: &str) -> v1alpha1::Flunder {
    v1alpha1::Flunder::new(
        name,
        v1alpha1::FlunderSpec {
            reference: Some(reference.into()),
            replicas: Some(3),
            ..Default::default()
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_object_through_both_versions() {
    let s = serve(wardle::app(), Arc::new(MemoryStorage::new())).await;
    let a: Api<v1alpha1::Flunder> = Api::namespaced(s.client.clone(), "default");
    let b: Api<v1beta1::Flunder> = Api::namespaced(s.client.clone(), "default");

    // Created through v1alpha1 (defaulted there: a reference refers to a Flunder).
    let created = create(&a, &alpha("x", "other")).await;
    assert_eq!(created.spec.reference_type, Some(ReferenceType::Flunder));
    let seen = b.get("x").await.unwrap();
    assert_eq!(seen.spec.flunder_reference.as_deref(), Some("other"));
    assert_eq!(seen.spec.fischer_reference, None);
    assert_eq!(seen.spec.reference_type, Some(ReferenceType::Flunder));
    assert_eq!(seen.spec.replicas, Some(3));
    assert_eq!(seen.metadata.uid, created.metadata.uid);
    assert_eq!(seen.metadata.generation, Some(1));
    assert_eq!(
        seen.metadata.resource_version,
        created.metadata.resource_version
    );

    // Updated through v1beta1: same uid, next generation, a later resourceVersion.
    let mut changed = seen.clone();
    changed.spec.flunder_reference = None;
    changed.spec.fischer_reference = Some("fi".into());
    changed.spec.reference_type = Some(ReferenceType::Fischer);
    let updated = b
        .replace("x", &PostParams::default(), &changed)
        .await
        .unwrap();
    assert_eq!(updated.metadata.uid, created.metadata.uid);
    assert_eq!(updated.metadata.generation, Some(2));
    let rv = |f: &Option<String>| f.as_deref().unwrap().parse::<u64>().unwrap();
    assert!(rv(&updated.metadata.resource_version) > rv(&created.metadata.resource_version));
    let again = a.get("x").await.unwrap();
    assert_eq!(again.spec.reference.as_deref(), Some("fi"));
    assert_eq!(again.spec.reference_type, Some(ReferenceType::Fischer));
    assert_eq!(again.metadata.generation, Some(2));
    assert_eq!(
        again.metadata.resource_version,
        updated.metadata.resource_version
    );

    // v1beta1's validation (upstream's ValidateFlunder) holds through v1beta1.
    let mut bad = v1beta1::Flunder::new("bad", Default::default());
    bad.spec.flunder_reference = Some("a".into());
    bad.spec.fischer_reference = Some("b".into());
    let err = b.create(&PostParams::default(), &bad).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("spec.fischerReference: Invalid value: \"b\": cannot be set with flunderReference at the same time"),
        "{err}"
    );

    // Lists and label selectors through either version see the same objects.
    let mut labelled = alpha("y", "x");
    labelled.metadata.labels = Some([("k".to_string(), "v".to_string())].into());
    create(&a, &labelled).await;
    let listed = b.list(&ListParams::default().labels("k=v")).await.unwrap();
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.items[0].spec.flunder_reference.as_deref(), Some("x"));
    let page = b.list(&ListParams::default().limit(1)).await.unwrap();
    assert_eq!(page.items.len(), 1);
    let rest = b
        .list(
            &ListParams::default()
                .limit(1)
                .continue_token(page.metadata.continue_.as_deref().unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(rest.items.len(), 1);
    assert_ne!(rest.items[0].metadata.name, page.items[0].metadata.name);

    // Field selectors name each version's own fields.
    let by_beta = b
        .list(&ListParams::default().fields("spec.flunderReference=x"))
        .await
        .unwrap();
    assert_eq!(by_beta.items.len(), 1);
    assert_eq!(by_beta.items[0].metadata.name.as_deref(), Some("y"));
    let by_alpha = a
        .list(&ListParams::default().fields("spec.reference=x"))
        .await
        .unwrap();
    assert_eq!(by_alpha.items.len(), 1);
    let err = b
        .list(&ListParams::default().fields("spec.reference=x"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("spec.reference"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v1beta1_watcher_sees_v1alpha1_writes() {
    let s = serve(wardle::app(), Arc::new(MemoryStorage::new())).await;
    let a: Api<v1alpha1::Flunder> = Api::namespaced(s.client.clone(), "default");
    let b: Api<v1beta1::Flunder> = Api::namespaced(s.client.clone(), "default");
    let mut events = watcher(b, watcher::Config::default()).boxed();
    let mut next = async || {
        tokio::time::timeout(Duration::from_secs(20), events.try_next())
            .await
            .expect("an event within 20s")
            .unwrap()
            .expect("an event")
    };
    // The write comes once the watcher has listed (its watch starts from that list).
    while !matches!(next().await, watcher::Event::InitDone) {}
    create(&a, &alpha("w", "target")).await;
    let seen = loop {
        if let watcher::Event::Apply(object) = next().await {
            break object;
        }
    };
    assert_eq!(seen.metadata.name.as_deref(), Some("w"));
    assert_eq!(seen.spec.flunder_reference.as_deref(), Some("target"));
    assert_eq!(seen.spec.reference_type, Some(ReferenceType::Flunder));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_prefers_v1beta1() {
    let s = serve(wardle::app(), Arc::new(MemoryStorage::new())).await;
    let (code, group) = s.raw("GET", "/apis/wardle.example.com", None).await;
    assert_eq!(code, 200);
    assert_eq!(group["preferredVersion"]["version"], "v1beta1");
    let versions: Vec<&str> = group["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["v1beta1", "v1alpha1"]);
    let (code, list) = s.raw("GET", "/apis/wardle.example.com/v1beta1", None).await;
    assert_eq!(code, 200);
    let kinds: Vec<&str> = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"flunders"), "{kinds:?}");
    assert!(!kinds.contains(&"fischers"), "{kinds:?}");
    // One storage version, so one storageVersionHash through every version.
    let (_, alpha_list) = s
        .raw("GET", "/apis/wardle.example.com/v1alpha1", None)
        .await;
    let hash = |list: &Value| {
        list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "flunders")
            .unwrap()["storageVersionHash"]
            .clone()
    };
    assert!(hash(&list).is_string());
    assert_eq!(hash(&list), hash(&alpha_list));

    let req = http::Request::builder()
        .uri("/apis")
        .header(
            "accept",
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        )
        .body(kube::client::Body::empty())
        .unwrap();
    let res = s.client.send(req).await.unwrap();
    let doc: Value =
        serde_json::from_slice(&res.into_body().collect_bytes().await.unwrap()).unwrap();
    let wardle = doc["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "wardle.example.com")
        .expect("the wardle group");
    let versions: Vec<&str> = wardle["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["v1beta1", "v1alpha1"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_reads_each_version_and_explains_v1beta1() {
    let s = serve(wardle::app(), Arc::new(MemoryStorage::new())).await;
    let a: Api<v1alpha1::Flunder> = Api::namespaced(s.client.clone(), "default");
    create(&a, &alpha("k", "ref")).await;
    let get = |version: &str| {
        let out = s.kubectl(&[
            "get",
            &format!("flunders.{version}.wardle.example.com"),
            "k",
            "-n",
            "default",
            "-o",
            "json",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let (old, new) = (get("v1alpha1"), get("v1beta1"));
    assert_eq!(old["apiVersion"], "wardle.example.com/v1alpha1");
    assert_eq!(
        old["spec"],
        json!({"reference": "ref", "referenceType": "Flunder", "replicas": 3})
    );
    assert_eq!(new["apiVersion"], "wardle.example.com/v1beta1");
    assert_eq!(
        new["spec"],
        json!({"flunderReference": "ref", "referenceType": "Flunder", "replicas": 3})
    );
    assert_eq!(old["metadata"], new["metadata"]);

    // `kubectl get flunders` uses the preferred version, with its columns.
    let out = s.kubectl(&["get", "flunders", "-n", "default"]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("FLUNDER"), "{table}");

    let text = s.explain_spec("v1beta1");
    assert!(text.contains("VERSION:    v1beta1"), "{text}");
    assert!(text.contains("flunderReference"), "{text}");
    assert!(text.contains("fischerReference"), "{text}");
    let text = s.explain_spec("v1alpha1");
    assert!(text.contains("reference"), "{text}");
    assert!(!text.contains("flunderReference"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deprecated_version_warns() {
    use apiserver_framework::registry::versions::Deprecation;
    let app = apiserver_framework::App::new("wardle").group(
        apiserver_framework::Group::new("wardle.example.com")
            .kind(
                wardle::flunder_kind()
                    .deprecated("v1alpha1", Deprecation::since(1, 3).removed_in(1, 10)),
            )
            .resource::<wardle::Fischer>(),
    );
    let s = serve(app, Arc::new(MemoryStorage::new())).await;
    let out = s.kubectl(&[
        "get",
        "flunders.v1alpha1.wardle.example.com",
        "-n",
        "default",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Warning: wardle.example.com/v1alpha1 Flunder is deprecated in v1.3+, unavailable in v1.10+"),
        "{err}"
    );
    let out = s.kubectl(&[
        "get",
        "flunders.v1beta1.wardle.example.com",
        "-n",
        "default",
    ]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("deprecated"));
}

/// Values under the Flunder prefix, straight from the storage.
async fn stored(storage: &MemoryStorage) -> Vec<Value> {
    storage
        .list(ListRequest {
            prefix: PREFIX.into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .items
        .iter()
        .map(|kv| serde_json::from_slice(&kv.value).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn storage_version_migration_under_load() {
    let storage = Arc::new(MemoryStorage::new());
    let first = serve(wardle::app(), storage.clone()).await;
    let b: Api<v1beta1::Flunder> = Api::namespaced(first.client.clone(), "default");
    for i in 0..40 {
        let mut f = v1beta1::Flunder::new(&format!("m{i}"), Default::default());
        f.spec.fischer_reference = Some(format!("fi{i}"));
        f.spec.reference_type = Some(ReferenceType::Fischer);
        create(&b, &f).await;
    }
    // Stored as upstream stores them: v1alpha1.
    let before = stored(&storage).await;
    assert_eq!(before.len(), 40);
    assert!(
        before
            .iter()
            .all(|o| o["apiVersion"] == "wardle.example.com/v1alpha1")
    );
    first.server.shutdown().await;

    // The next server stores v1beta1; old objects are read converted meanwhile.
    let app = wardle::app().storage_version("flunders.wardle.example.com", "v1beta1");
    let s = serve(app, storage.clone()).await;
    let errors = Arc::new(AtomicUsize::new(0));
    let requests = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut clients = Vec::new();
    for c in 0..2 {
        let (client, errors, requests, stop) = (
            s.client.clone(),
            errors.clone(),
            requests.clone(),
            stop.clone(),
        );
        clients.push(tokio::spawn(async move {
            let a: Api<v1alpha1::Flunder> = Api::namespaced(client.clone(), "default");
            let b: Api<v1beta1::Flunder> = Api::namespaced(client, "default");
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let name = format!("m{}", (i * 7 + c) % 40);
                let ok = match i % 3 {
                    0 => a
                        .list(&ListParams::default())
                        .await
                        .map(|l| l.items.len() == 40)
                        .unwrap_or(false),
                    1 => b
                        .get(&name)
                        .await
                        .map(|f| f.spec.fischer_reference.is_some())
                        .unwrap_or(false),
                    _ => b
                        .patch(
                            &name,
                            &PatchParams::default(),
                            &Patch::Merge(
                                json!({"metadata": {"labels": {"touched": format!("{i}")}}}),
                            ),
                        )
                        .await
                        .is_ok(),
                };
                requests.fetch_add(1, Ordering::Relaxed);
                if !ok {
                    errors.fetch_add(1, Ordering::Relaxed);
                }
                i += 1;
            }
        }));
    }
    // Spaced on purpose: the clients write for a while before, and after, the migration.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let report = s.versioned("v1beta1").migrate().await.unwrap();
    assert_eq!(report.seen, 40);
    assert!(report.failed.is_empty());
    // The while after, spaced on purpose too.
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.await.unwrap();
    }
    assert!(requests.load(Ordering::Relaxed) > 10);
    assert_eq!(errors.load(Ordering::Relaxed), 0, "clients saw errors");
    let after = stored(&storage).await;
    assert_eq!(after.len(), 40);
    for o in &after {
        assert_eq!(o["apiVersion"], "wardle.example.com/v1beta1", "{o}");
        assert!(
            o["spec"]["fischerReference"]
                .as_str()
                .unwrap()
                .starts_with("fi")
        );
    }
    // Running it again finds nothing left to do.
    let again = s.versioned("v1beta1").migrate().await.unwrap();
    assert_eq!(again.migrated, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undecodable_object_is_named_and_can_be_deleted() {
    let storage = Arc::new(MemoryStorage::new());
    let s = serve(wardle::app(), storage.clone()).await;
    let a: Api<v1alpha1::Flunder> = Api::namespaced(s.client.clone(), "default");
    create(&a, &alpha("good", "r")).await;
    storage
        .create(
            &format!("{PREFIX}default/bad"),
            bytes::Bytes::from_static(
                br#"{"apiVersion":"wardle.example.com/v1alpha1","kind":"Flunder","metadata":{"name":"bad","namespace":"default","uid":"u"},"spec":{"replicas":"many"}}"#,
            ),
        )
        .await
        .unwrap();
    for version in ["v1alpha1", "v1beta1"] {
        let path = format!("/apis/wardle.example.com/{version}/namespaces/default/flunders");
        let (code, status) = s.raw("GET", &path, None).await;
        assert_eq!(code, 500, "{status}");
        assert_eq!(status["reason"], "StorageReadError", "{status}");
        assert!(
            status["message"].as_str().unwrap().contains(
                "failed to read one or more flunders.wardle.example.com from the storage"
            )
        );
        let causes = status["details"]["causes"].as_array().unwrap();
        assert_eq!(causes.len(), 1, "{status}");
        assert_eq!(causes[0]["field"], format!("{PREFIX}default/bad"));
        assert_eq!(causes[0]["reason"], "UnexpectedServerResponse");
        let (code, status) = s.raw("GET", &format!("{path}/bad"), None).await;
        assert_eq!(code, 500);
        assert_eq!(status["reason"], "InternalError");
        assert!(message(&status).contains("corrupt object"));
    }
    // A normal delete cannot read it; the unsafe option deletes it.
    let path = "/apis/wardle.example.com/v1beta1/namespaces/default/flunders/bad";
    let (code, _) = s.raw("DELETE", path, None).await;
    assert_eq!(code, 500);
    let (code, status) = s
        .raw(
            "DELETE",
            path,
            Some(json!({"kind": "DeleteOptions", "apiVersion": "v1", "ignoreStoreReadErrorWithClusterBreakingPotential": true})),
        )
        .await;
    assert_eq!(code, 200, "{status}");
    assert_eq!(status["status"], "Success");
    let names: Vec<String> = a
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|f| f.metadata.name)
        .collect();
    assert_eq!(names, ["good"]);
    // The option on a readable object is an ordinary delete.
    let dp = DeleteParams::default();
    a.delete("good", &dp).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_apply_across_versions() {
    let s = serve(wardle::app(), Arc::new(MemoryStorage::new())).await;
    let a: Api<v1alpha1::Flunder> = Api::namespaced(s.client.clone(), "default");
    let b: Api<v1beta1::Flunder> = Api::namespaced(s.client.clone(), "default");
    let alpha_config = json!({
        "apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
        "metadata": {"name": "ssa"},
        "spec": {"reference": "one", "referenceType": "Flunder"},
    });
    a.patch(
        "ssa",
        &PatchParams::apply("alpha"),
        &Patch::Apply(&alpha_config),
    )
    .await
    .unwrap();
    // Another manager applies the same field, as v1beta1 names it: a conflict with the
    // manager that owns it through v1alpha1.
    let beta_config = json!({
        "apiVersion": "wardle.example.com/v1beta1", "kind": "Flunder",
        "metadata": {"name": "ssa"},
        "spec": {"flunderReference": "two", "referenceType": "Flunder"},
    });
    let err = b
        .patch(
            "ssa",
            &PatchParams::apply("beta"),
            &Patch::Apply(&beta_config),
        )
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("not an API error: {err}")
    };
    assert_eq!(status.code, 409, "{status:?}");
    assert!(
        status.message.contains("conflict with \"alpha\"")
            && status.message.contains(".spec.reference"),
        "{}",
        status.message
    );
    // A field nobody owns is applied; each entry keeps its own apiVersion.
    let beta_config = json!({
        "apiVersion": "wardle.example.com/v1beta1", "kind": "Flunder",
        "metadata": {"name": "ssa"},
        "spec": {"replicas": 5},
    });
    let applied = b
        .patch(
            "ssa",
            &PatchParams::apply("beta"),
            &Patch::Apply(&beta_config),
        )
        .await
        .unwrap();
    assert_eq!(applied.spec.replicas, Some(5));
    assert_eq!(applied.spec.flunder_reference.as_deref(), Some("one"));
    let managers: Vec<(String, String)> = applied
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .map(|e| {
            (
                e.manager.unwrap_or_default(),
                e.api_version.unwrap_or_default(),
            )
        })
        .collect();
    assert!(
        managers.contains(&("alpha".into(), "wardle.example.com/v1alpha1".into())),
        "{managers:?}"
    );
    assert!(
        managers.contains(&("beta".into(), "wardle.example.com/v1beta1".into())),
        "{managers:?}"
    );
    // Forced, the field changes hands: alpha no longer owns `.spec.reference`.
    let beta_config = json!({
        "apiVersion": "wardle.example.com/v1beta1", "kind": "Flunder",
        "metadata": {"name": "ssa"},
        "spec": {"replicas": 5, "flunderReference": "two", "referenceType": "Flunder"},
    });
    b.patch(
        "ssa",
        &PatchParams::apply("beta").force(),
        &Patch::Apply(&beta_config),
    )
    .await
    .unwrap();
    let now = a.get("ssa").await.unwrap();
    assert_eq!(now.spec.reference.as_deref(), Some("two"));
    let alpha_fields = now
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .find(|e| e.manager.as_deref() == Some("alpha"))
        .and_then(|e| e.fields_v1)
        .map(|f| f.0.to_string())
        .unwrap_or_default();
    assert!(!alpha_fields.contains("f:reference\""), "{alpha_fields}");
}

/// `wardle migrate-storage` on the embedded store of a stopped server: every Flunder is then
/// stored in the version `--storage-version` names, read straight from the store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_migrate_storage_command_rewrites_the_embedded_store() {
    let mut w = support::Wardle::start_with_args(&["--data-dir", "{dir}/data"]);
    let client = w.client();
    for i in 0..5 {
        let res = client
            .post(w.at(support::FLUNDERS))
            .json(&json!({
                "apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
                "metadata": {"name": format!("c{i}")},
                "spec": {"reference": format!("r{i}")},
            }))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 201);
    }
    w.signal("TERM");
    assert!(
        w.wait_exit(Duration::from_secs(20)).is_some(),
        "wardle did not stop"
    );
    let data = w.dir().join("data");
    let migrate = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_wardle"))
            .arg("migrate-storage")
            .arg("--data-dir")
            .arg(&data)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run wardle migrate-storage")
    };
    // A version the kind does not have is refused before anything is written.
    let out = migrate(&["--storage-version", "flunders.wardle.example.com=v9"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("has no version \"v9\""),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = migrate(&["--storage-version", "flunders.wardle.example.com=v1beta1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("flunders.wardle.example.com: 5 objects, 5 rewritten into wardle.example.com/v1beta1, 0 not convertible"),
        "{text}"
    );
    let store = apiserver_framework::storage::embedded::EmbeddedStorage::open(&data).unwrap();
    let stored = store
        .list(ListRequest {
            prefix: PREFIX.into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(stored.items.len(), 5);
    for kv in &stored.items {
        let o: Value = serde_json::from_slice(&kv.value).unwrap();
        assert_eq!(o["apiVersion"], "wardle.example.com/v1beta1", "{o}");
        assert_eq!(o["spec"]["referenceType"], "Flunder", "{o}");
        assert!(
            o["spec"]["flunderReference"]
                .as_str()
                .unwrap()
                .starts_with('r')
        );
    }
}
