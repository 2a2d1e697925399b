//! The schema checks of the framework against kube-apiserver's own: a CustomResourceDefinition
//! with the schema of the test kit's Gadget (constraints and CEL rules declared with the
//! derive) is created in the real cluster, and the same bad objects are sent to it and to the
//! Gadget served in-process by the framework: both refuse each with the same 422 Status
//! (message, and causes with their field, reason and message).

use apiserver_framework::App;
use apiserver_framework::resource::ApiResource as _;
use apiserver_framework::testing::TestServer;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, PostParams};
use kube::{Api, Client};
use serde_json::{Value, json};

use crate::clients::kube_client;
use crate::cluster::{RealCluster, block_on};
use crate::support::schema_types::Gadget;

/// Removes what a CRD's schema may not hold: the strategic merge patch extensions (a CRD's
/// objects are never patched that way).
fn without_patch_extensions(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            map.remove("x-kubernetes-patch-strategy");
            map.remove("x-kubernetes-patch-merge-key");
            map.values_mut().for_each(without_patch_extensions);
        }
        Value::Array(items) => items.iter_mut().for_each(without_patch_extensions),
        _ => {}
    }
}

/// The CRD of Gadget, with the schema the framework publishes for it.
fn crd() -> Value {
    let info = Gadget::resource_info();
    let mut schema = (*info.schema).clone();
    without_patch_extensions(&mut schema);
    // A CRD's metadata is ObjectMeta, implicitly: its schema says no more than its type.
    schema["properties"]["metadata"] = json!({"type": "object"});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.schema.example.com"},
        "spec": {
            "group": "schema.example.com",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget",
                      "listKind": "GadgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                          "schema": {"openAPIV3Schema": schema}}],
        },
    })
}

fn gadget(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "schema.example.com/v1", "kind": "Gadget",
        "metadata": {"name": name}, "spec": spec,
    }))
    .expect("a Gadget")
}

/// What a refusal says: code, reason, message and causes (field, reason, message).
///
/// kube-apiserver orders the causes of different fields as Go iterates over a map, differently
/// from one request to the next: with several causes they are sorted, and of the message,
/// listing them, the part before the list and the length are kept.
fn refusal<T>(result: Result<T, kube::Error>) -> Value {
    match result {
        Err(kube::Error::Api(status)) => {
            let mut causes: Vec<Value> = status
                .details
                .map(|d| d.causes)
                .unwrap_or_default()
                .into_iter()
                .map(|c| json!([c.field, c.reason, c.message]))
                .collect();
            let message = if causes.len() > 1 {
                causes.sort_by_key(|c| c.to_string());
                let (head, _) = status.message.split_once('[').unwrap_or_default();
                format!("{head}[... {} bytes]", status.message.len())
            } else {
                status.message
            };
            json!({
                "code": status.code,
                "reason": status.reason,
                "message": message,
                "causes": causes,
            })
        }
        Err(e) => json!({"error": e.to_string()}),
        Ok(_) => json!("accepted"),
    }
}

/// The bad objects, each alone on a fresh name.
fn cases() -> Vec<(&'static str, Value)> {
    vec![
        ("minimum", json!({"size": 0, "maxSize": 10})),
        ("maximum", json!({"size": 11, "maxSize": 20})),
        (
            "max-length-and-pattern",
            json!({"size": 1, "maxSize": 10, "name": "abcdef1"}),
        ),
        ("min-length", json!({"size": 1, "maxSize": 10, "name": "a"})),
        ("pattern", json!({"size": 1, "maxSize": 10, "name": "Abc"})),
        ("minimum-and-rule", json!({"size": 0, "maxSize": -1})),
        (
            "maximum-and-items",
            json!({"size": 12, "maxSize": 20, "tags": ["a", "b", "a"], "mode": "x"}),
        ),
        ("enum", json!({"size": 1, "maxSize": 10, "mode": "Ajar"})),
        (
            "max-items",
            json!({"size": 1, "maxSize": 10, "tags": ["a", "b", "c"]}),
        ),
        (
            "set-duplicate",
            json!({"size": 1, "maxSize": 10, "tags": ["a", "a"]}),
        ),
        ("root-rule-field-path", json!({"size": 5, "maxSize": 2})),
        (
            "message-expression",
            json!({"size": 1, "maxSize": 10, "note": "hello"}),
        ),
    ]
}

/// Sends every case to `api` and the transition rule's update; what each answered.
async fn answers(api: &Api<DynamicObject>) -> Vec<(String, Value)> {
    let pp = PostParams::default();
    let mut out = Vec::new();
    for (name, spec) in cases() {
        let answer = refusal(api.create(&pp, &gadget(name, spec)).await);
        out.push((name.to_string(), answer));
    }
    // The transition rule: the lock cannot change once set.
    let created = api
        .create(
            &pp,
            &gadget("locked", json!({"size": 1, "maxSize": 10, "lock": "a"})),
        )
        .await
        .expect("create a locked Gadget");
    let mut changed = created.clone();
    changed.data["spec"]["lock"] = json!("b");
    out.push((
        "transition-rule".into(),
        refusal(api.replace("locked", &pp, &changed).await),
    ));
    out
}

fn gadgets(client: Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("schema.example.com", "v1", "Gadget");
    Api::namespaced_with(client, "default", &ApiResource::from_gvk(&gvk))
}

/// kube-apiserver's CRD and the framework refuse the same objects with the same Status.
pub fn crd_and_framework_refuse_alike(cluster: &RealCluster) {
    cluster.kubectl_input_ok("admin", &["create", "-f", "-"], &crd().to_string());
    cluster.kubectl_ok(
        "admin",
        &[
            "wait",
            "--for=condition=Established",
            "crd/gadgets.schema.example.com",
            "--timeout=60s",
        ],
    );
    block_on(async {
        let upstream_api = gadgets(kube_client(cluster, "admin").await);
        let upstream = answers(&upstream_api).await;
        let server = TestServer::start(App::new("gadgets").resource::<Gadget>())
            .await
            .expect("the server starts");
        let ours_api = gadgets(server.client());
        let ours = answers(&ours_api).await;
        // Known difference: a body that does not decode into the Rust type (a field the type
        // requires is missing, a value of the wrong type) is refused when it is decoded, with
        // 400 BadRequest as a built-in kind (and sample-apiserver) answers, where a CRD answers
        // 422 with Required or TypeInvalid causes.
        let n = cases().len();
        for (name, spec) in [
            ("required", json!({"maxSize": 10})),
            ("wrong-type", json!({"size": "big", "maxSize": 10})),
        ] {
            let pp = PostParams::default();
            let theirs = refusal(upstream_api.create(&pp, &gadget(name, spec.clone())).await);
            let mine = refusal(ours_api.create(&pp, &gadget(name, spec)).await);
            assert_eq!(
                (&theirs["code"], &theirs["reason"]),
                (&json!(422), &json!("Invalid"))
            );
            assert_eq!(
                (&mine["code"], &mine["reason"]),
                (&json!(400), &json!("BadRequest"))
            );
            assert!(
                mine["message"]
                    .as_str()
                    .unwrap_or_default()
                    .starts_with("Gadget in version \"v1\" cannot be handled as a Gadget: "),
                "{mine}"
            );
        }
        assert_eq!(upstream.len(), n + 1);
        let differences: Vec<String> = upstream
            .iter()
            .zip(&ours)
            .filter(|(a, b)| a != b)
            .map(|((name, a), (_, b))| {
                format!("{name}:\n  kube-apiserver: {a}\n  framework:      {b}")
            })
            .collect();
        assert!(
            differences.is_empty(),
            "answers differ:\n{}",
            differences.join("\n")
        );
    });
    cluster.kubectl_ok(
        "admin",
        &["delete", "crd", "gadgets.schema.example.com", "--wait=true"],
    );
}
