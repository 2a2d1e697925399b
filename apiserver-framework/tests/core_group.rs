//! Resources of the core group (group `""`) served under `/api/v1`, over real HTTPS: discovery,
//! CRUD and watch at upstream's paths, upstream's error messages, and real clients (kube-rs with
//! k8s-openapi's own `ConfigMap`, its watcher, and kubectl).

mod support_kinds;
mod support_local;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use apiserver_framework::prelude::*;
use apiserver_framework::server::GenericApiServer;
use apiserver_framework::testing::TestServer;
use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, PostParams};
use kube::runtime::watcher;
use serde_json::{Value, json};
use support_kinds::kind;
use support_local::{Local, LocalClient, start_local};

/// A ConfigMap: string data at the top level of the object, as upstream's.
#[derive(ApiResource, Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[resource(
    group = "",
    version = "v1",
    kind = "ConfigMap",
    namespaced,
    flat,
    shortname = "cm"
)]
pub struct ConfigMapSpec {
    /// Configuration data.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub data: BTreeMap<String, String>,
}

/// A Namespace, cluster-scoped, with a status subresource.
#[derive(ApiResource, Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[resource(
    group = "",
    version = "v1",
    kind = "Namespace",
    shortname = "ns",
    status = "NamespaceStatus"
)]
pub struct NamespaceSpec {
    /// Finalizers that must be empty before the namespace is removed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub finalizers: Vec<String>,
}

/// The status of a Namespace.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
pub struct NamespaceStatus {
    /// `Active` or `Terminating`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
}

/// The Accept header of aggregated discovery, as client-go sends it.
const AGGREGATED: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";

/// How long one kubectl invocation may take.
const KUBECTL_TIMEOUT: Duration = Duration::from_secs(60);

struct Fixture {
    test: TestServer,
    client: LocalClient,
}

impl Fixture {
    /// A server of the core group's ConfigMap and Namespace, delegating to none.
    async fn start() -> Fixture {
        let server = GenericApiServer::builder("core")
            .group(
                Group::new("")
                    .resource::<ConfigMap>()
                    .resource::<Namespace>(),
            )
            .build();
        Self::start_server(server).await
    }

    async fn start_server(server: GenericApiServer) -> Fixture {
        let Local { test, client } = start_local("core", server, &[]).await;
        Fixture { test, client }
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        let (code, _, body) = self
            .client
            .send(reqwest::Method::GET, path, "application/json", None)
            .await;
        (code, body)
    }

    async fn kube_client(&self) -> kube::Client {
        self.test.client()
    }

    /// Runs kubectl with the server's kubeconfig and a cache directory of this test's own.
    async fn kubectl(&self, args: &[&str]) -> std::process::Output {
        let mut cmd = Command::new("kubectl");
        cmd.arg("--kubeconfig")
            .arg(self.test.kubeconfig())
            .arg("--cache-dir")
            .arg(self.test.dir().join("kube-cache"))
            .args(args);
        let run = tokio::task::spawn_blocking(move || cmd.output());
        tokio::time::timeout(KUBECTL_TIMEOUT, run)
            .await
            .expect("kubectl finished in time")
            .unwrap()
            .expect("kubectl runs")
    }
}

fn config_map(name: &str, data: &[(&str, &str)]) -> Value {
    let data: BTreeMap<&str, &str> = data.iter().copied().collect();
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "kube-system"},
        "data": data,
    })
}

#[test]
fn derived_names_of_the_core_group() {
    use apiserver_framework::resource::ApiResource;
    assert_eq!(<ConfigMap as kube::Resource>::api_version(&()), "v1");
    assert_eq!(<ConfigMap as kube::Resource>::group(&()), "");
    let info = ConfigMap::resource_info();
    assert_eq!(info.api_version(), "v1");
    assert_eq!(info.group_resource(), "configmaps");
    assert_eq!(info.group_kind(), "ConfigMap");
    let mut cm = ConfigMap::new("x", ConfigMapSpec::default());
    cm.spec.data.insert("k".into(), "v".into());
    assert_eq!(
        serde_json::to_value(&cm).unwrap(),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"k": "v"}})
    );
}

#[tokio::test]
async fn discovery_of_the_core_group() {
    let f = Fixture::start().await;

    // `/api`: the legacy APIVersions.
    let (code, api) = f.get("/api").await;
    assert_eq!(code, 200, "{api}");
    let authority = f.client.url.trim_start_matches("https://");
    assert_eq!(
        api,
        json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": authority}],
        })
    );
    assert_eq!(f.get("/api/").await.0, 200);

    // `/api/v1`: the APIResourceList of the core group-version.
    let (code, list) = f.get("/api/v1").await;
    assert_eq!(code, 200, "{list}");
    assert_eq!(list["kind"], "APIResourceList");
    assert_eq!(list["groupVersion"], "v1");
    let names: Vec<&str> = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["configmaps", "namespaces", "namespaces/status"]);
    assert_eq!(list["resources"][0]["namespaced"], true);
    assert_eq!(list["resources"][0]["kind"], "ConfigMap");
    assert_eq!(list["resources"][1]["namespaced"], false);
    assert_eq!(f.get("/api/v2").await.0, 404);

    // Aggregated discovery on `/api` holds the core group (no name); `/apis` does not.
    let (code, ct, agg) = f
        .client
        .send(reqwest::Method::GET, "/api", AGGREGATED, None)
        .await;
    assert_eq!(code, 200, "{agg}");
    assert!(ct.contains("as=APIGroupDiscoveryList"), "{ct}");
    assert_eq!(agg["kind"], "APIGroupDiscoveryList");
    let items = agg["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{agg}");
    assert_eq!(items[0]["metadata"], json!({}));
    assert_eq!(items[0]["versions"][0]["version"], "v1");
    let cm = &items[0]["versions"][0]["resources"][0];
    assert_eq!(cm["resource"], "configmaps");
    assert_eq!(
        cm["responseKind"],
        json!({"group": "", "version": "", "kind": "ConfigMap"})
    );
    assert_eq!(cm["scope"], "Namespaced");
    let (code, _, apis) = f
        .client
        .send(reqwest::Method::GET, "/apis", AGGREGATED, None)
        .await;
    assert_eq!(code, 200);
    assert_eq!(apis["items"], json!([]), "{apis}");
    let (code, groups) = f.get("/apis").await;
    assert_eq!(code, 200);
    assert_eq!(groups["groups"], json!([]), "{groups}");

    // The index lists the core group's paths, and no `/apis/` path for it.
    let (code, index) = f.get("/").await;
    assert_eq!(code, 200);
    let paths: Vec<&str> = index["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(
        paths.contains(&"/api") && paths.contains(&"/api/v1"),
        "{paths:?}"
    );
    assert!(!paths.iter().any(|p| p.starts_with("/apis/")), "{paths:?}");

    // OpenAPI: the core group-version's document is `api/v1`, with `/api/v1/...` paths.
    let (code, root) = f.get("/openapi/v3").await;
    assert_eq!(code, 200);
    let url = root["paths"]["api/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap_or_else(|| panic!("{root}"));
    assert!(url.starts_with("/openapi/v3/api/v1?hash="), "{url}");
    let (code, doc) = f.get(url).await;
    assert_eq!(code, 200);
    let item = &doc["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"];
    assert_eq!(
        item["get"]["x-kubernetes-group-version-kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert!(doc["paths"]["/api/v1/namespaces/{name}/status"].is_object());
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    assert!(
        schemas
            .keys()
            .all(|k| !k.starts_with('.') && !k.contains("..")),
        "{:?}",
        schemas.keys().collect::<Vec<_>>()
    );
    let (code, v2) = f.get("/openapi/v2").await;
    assert_eq!(code, 200);
    assert!(v2["paths"]["/api/v1/namespaces/{namespace}/configmaps"].is_object());
    assert!(
        v2["paths"]
            .as_object()
            .unwrap()
            .keys()
            .all(|p| !p.starts_with("/apis/"))
    );

    f.test.shutdown().await;
}

#[tokio::test]
async fn without_core_resources_api_is_not_served() {
    let server = GenericApiServer::builder("named")
        .group(Group::new("two.example.com").resource::<Gadget>())
        .build();
    let f = Fixture::start_server(server).await;
    let (code, body) = f.get("/api").await;
    assert_eq!(code, 404, "{body}");
    assert_eq!(f.get("/api/v1").await.0, 404);
    assert_eq!(
        f.get("/api/v1/namespaces/kube-system/configmaps").await.0,
        404
    );
    let (code, _, agg) = f
        .client
        .send(reqwest::Method::GET, "/api", AGGREGATED, None)
        .await;
    assert_eq!(code, 200);
    assert_eq!(agg["items"], json!([]));
    let (_, index) = f.get("/").await;
    assert!(
        !index["paths"]
            .as_array()
            .unwrap()
            .contains(&json!("/api/v1"))
    );
    f.test.shutdown().await;
}

// A named-group resource, to check that a core-group server delegates to a named-group one.
kind!(cluster GadgetSpec, "two.example.com", "v1", "Gadget", color: String);

#[tokio::test]
async fn core_group_along_a_delegation_chain() {
    // The core group is served by the last server of the chain.
    let last = GenericApiServer::builder("core")
        .group(Group::new("").resource::<ConfigMap>())
        .build();
    let first = GenericApiServer::builder("named")
        .group(Group::new("two.example.com").resource::<Gadget>())
        .build()
        .delegate_to(last);
    let f = Fixture::start_server(first).await;
    assert_eq!(f.get("/api").await.0, 200);
    let (code, list) = f.get("/api/v1").await;
    assert_eq!(code, 200, "{list}");
    assert_eq!(list["resources"][0]["name"], "configmaps");
    let (code, _, created) = f
        .client
        .send(
            reqwest::Method::POST,
            "/api/v1/namespaces/kube-system/configmaps",
            "application/json",
            Some(config_map("c", &[("k", "v")])),
        )
        .await;
    assert_eq!(code, 201, "{created}");
    let (code, got) = f.get("/api/v1/namespaces/kube-system/configmaps/c").await;
    assert_eq!(code, 200, "{got}");
    assert_eq!(got["data"], json!({"k": "v"}));
    let (_, groups) = f.get("/apis").await;
    let names: Vec<&Value> = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| &g["name"])
        .collect();
    assert_eq!(names, [&json!("two.example.com")]);
    f.test.shutdown().await;
}

#[tokio::test]
async fn config_maps_and_namespaces_at_upstream_paths() {
    let f = Fixture::start().await;
    let post = reqwest::Method::POST;
    let collection = "/api/v1/namespaces/kube-system/configmaps";

    let (code, _, created) = f
        .client
        .send(
            post.clone(),
            collection,
            "application/json",
            Some(config_map("x", &[("a", "1")])),
        )
        .await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["apiVersion"], "v1");
    assert_eq!(created["kind"], "ConfigMap");
    assert_eq!(created["data"], json!({"a": "1"}));
    assert!(created.get("spec").is_none(), "{created}");

    let (code, got) = f.get(&format!("{collection}/x")).await;
    assert_eq!(code, 200, "{got}");
    assert_eq!(got["metadata"]["namespace"], "kube-system");
    assert_eq!(got["data"]["a"], "1");

    let (code, list) = f.get(collection).await;
    assert_eq!(code, 200, "{list}");
    assert_eq!(list["kind"], "ConfigMapList");
    assert_eq!(list["apiVersion"], "v1");
    assert_eq!(list["items"][0]["metadata"]["name"], "x");
    let (code, all) = f.get("/api/v1/configmaps").await;
    assert_eq!(code, 200, "{all}");
    assert_eq!(all["items"].as_array().unwrap().len(), 1);

    // Upstream's not-found Status names the core group-resource without a group.
    let (code, status) = f.get(&format!("{collection}/nope")).await;
    assert_eq!(code, 404);
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "NotFound");
    assert_eq!(status["message"], "configmaps \"nope\" not found");
    assert_eq!(
        status["details"],
        json!({"name": "nope", "kind": "configmaps"})
    );

    // Watch from the last resourceVersion sees an update, both as `?watch=true` and under
    // the legacy `/watch/` prefix.
    let mut rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    for (i, path) in [
        format!("{collection}?watch=true&resourceVersion="),
        "/api/v1/watch/namespaces/kube-system/configmaps?resourceVersion=".to_owned(),
    ]
    .into_iter()
    .enumerate()
    {
        let mut res = f
            .client
            .http
            .get(format!("{}{path}{rv}", f.client.url))
            .bearer_auth(&f.client.token)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 200, "{path}");
        let (_, mut current) = f.get(&format!("{collection}/x")).await;
        let value = format!("v{i}");
        current["data"]["a"] = value.clone().into();
        let (code, _, replaced) = f
            .client
            .send(
                reqwest::Method::PUT,
                &format!("{collection}/x"),
                "application/json",
                Some(current),
            )
            .await;
        assert_eq!(code, 200, "{replaced}");
        let event = next_event(&mut res).await;
        assert_eq!(event["type"], "MODIFIED", "{event}");
        assert_eq!(event["object"]["kind"], "ConfigMap");
        assert_eq!(event["object"]["data"]["a"], value);
        rv = replaced["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_owned();
    }

    // The Namespace resource: `/api/v1/namespaces[/<name>[/status]]`, cluster-scoped.
    let (code, _, ns) = f
        .client
        .send(
            post.clone(),
            "/api/v1/namespaces",
            "application/json",
            Some(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system"}})),
        )
        .await;
    assert_eq!(code, 201, "{ns}");
    assert!(ns["metadata"].get("namespace").is_none(), "{ns}");
    let (code, ns) = f.get("/api/v1/namespaces/kube-system").await;
    assert_eq!(code, 200, "{ns}");
    assert_eq!(ns["kind"], "Namespace");
    let mut with_status = ns.clone();
    with_status["status"] = json!({"phase": "Active"});
    let (code, _, updated) = f
        .client
        .send(
            reqwest::Method::PUT,
            "/api/v1/namespaces/kube-system/status",
            "application/json",
            Some(with_status),
        )
        .await;
    assert_eq!(code, 200, "{updated}");
    assert_eq!(updated["status"]["phase"], "Active");
    let (code, ns) = f.get("/api/v1/namespaces/kube-system/status").await;
    assert_eq!(code, 200, "{ns}");
    assert_eq!(ns["status"]["phase"], "Active");
    let (code, list) = f.get("/api/v1/namespaces").await;
    assert_eq!(code, 200, "{list}");
    assert_eq!(list["kind"], "NamespaceList");
    let (code, status) = f.get("/api/v1/namespaces/nope").await;
    assert_eq!(code, 404);
    assert_eq!(status["message"], "namespaces \"nope\" not found");

    f.test.shutdown().await;
}

/// The next watch event of a streamed watch response (one JSON object a line).
async fn next_event(res: &mut reqwest::Response) -> Value {
    let mut buf = Vec::new();
    while !buf.contains(&b'\n') {
        let chunk = tokio::time::timeout(Duration::from_secs(10), res.chunk())
            .await
            .expect("a watch event in time")
            .unwrap()
            .expect("the watch goes on");
        buf.extend_from_slice(&chunk);
    }
    let line = buf.split(|b| *b == b'\n').next().unwrap_or_default();
    serde_json::from_slice(line)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(line)))
}

#[tokio::test]
async fn kube_rs_reads_and_watches_config_maps() {
    use k8s_openapi::api::core::v1::ConfigMap as UpstreamConfigMap;

    let f = Fixture::start().await;
    let client = f.kube_client().await;
    let api: Api<UpstreamConfigMap> = Api::namespaced(client, "kube-system");
    let mut cm = UpstreamConfigMap::default();
    cm.metadata.name = Some("extension-apiserver-authentication".into());
    cm.data = Some(BTreeMap::from([(
        "requestheader-username-headers".to_string(),
        "[\"X-Remote-User\"]".to_string(),
    )]));
    api.create(&PostParams::default(), &cm).await.unwrap();

    let got = api.get("extension-apiserver-authentication").await.unwrap();
    assert_eq!(
        got.data.as_ref().unwrap()["requestheader-username-headers"],
        "[\"X-Remote-User\"]"
    );
    assert_eq!(got.metadata.namespace.as_deref(), Some("kube-system"));
    let err = api.get("nope").await.unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("{err:?}")
    };
    assert_eq!(status.code, 404);
    assert_eq!(status.message, "configmaps \"nope\" not found");

    // The watcher sees the object, then its update.
    let config =
        watcher::Config::default().fields("metadata.name=extension-apiserver-authentication");
    let mut stream = watcher(api.clone(), config).boxed();
    let mut updated = false;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let event = tokio::time::timeout_at(deadline, stream.try_next())
            .await
            .expect("the watcher sees the update in time")
            .unwrap()
            .expect("the watch goes on");
        match event {
            watcher::Event::InitDone if !updated => {
                let mut current = api.get("extension-apiserver-authentication").await.unwrap();
                current
                    .data
                    .get_or_insert_default()
                    .insert("client-ca-file".into(), "pem".into());
                api.replace(
                    "extension-apiserver-authentication",
                    &PostParams::default(),
                    &current,
                )
                .await
                .unwrap();
                updated = true;
            }
            watcher::Event::Apply(cm) if updated => {
                assert_eq!(cm.data.unwrap()["client-ca-file"], "pem");
                break;
            }
            _ => {}
        }
    }
    f.test.shutdown().await;
}

#[tokio::test]
async fn kubectl_gets_config_maps() {
    let f = Fixture::start().await;
    let (code, _, created) = f
        .client
        .send(
            reqwest::Method::POST,
            "/api/v1/namespaces/kube-system/configmaps",
            "application/json",
            Some(config_map(
                "extension-apiserver-authentication",
                &[("k", "v")],
            )),
        )
        .await;
    assert_eq!(code, 201, "{created}");

    let out = f.kubectl(&["get", "configmaps", "-n", "kube-system"]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.starts_with("NAME"), "{stdout}");
    assert!(
        stdout.contains("extension-apiserver-authentication"),
        "{stdout}"
    );
    assert!(stderr.is_empty(), "{stderr}");

    let out = f
        .kubectl(&[
            "get",
            "cm",
            "extension-apiserver-authentication",
            "-n",
            "kube-system",
            "-o",
            "json",
        ])
        .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cm: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(cm["data"], json!({"k": "v"}));

    let out = f
        .kubectl(&[
            "get",
            "--raw",
            "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication",
        ])
        .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let raw: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(raw["kind"], "ConfigMap");

    // kubectl explains a missing object by its namespace when that is missing (it reads the
    // Namespace resource), and by the object once the namespace exists.
    let out = f
        .kubectl(&["get", "configmaps", "nope", "-n", "kube-system"])
        .await;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("namespaces \"kube-system\" not found"),
        "{stderr}"
    );
    // (`kubectl create namespace` would send protobuf, which this server does not read.)
    let manifest = f.test.dir().join("namespace.json");
    let namespace =
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system"}});
    std::fs::write(&manifest, namespace.to_string()).unwrap();
    let out = f
        .kubectl(&["create", "-f", manifest.to_str().unwrap()])
        .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = f
        .kubectl(&["get", "configmaps", "nope", "-n", "kube-system"])
        .await;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("configmaps \"nope\" not found"), "{stderr}");

    let out = f.kubectl(&["api-resources", "--api-group="]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("configmaps") && stdout.contains("namespaces"),
        "{stdout}"
    );
    f.test.shutdown().await;
}
