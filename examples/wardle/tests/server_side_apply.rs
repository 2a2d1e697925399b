//! Server-side apply and managedFields, with kubectl, kube-rs and plain HTTP.

mod support;

use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};
use support::checks::answer;
use support::checks::message;
use support::fixtures::create;
use support::{FLUNDERS, Wardle, stderr, stdout};
use wardle::{Flunder, FlunderSpec, ReferenceType};

const APPLY: &str = "application/apply-patch+yaml";

/// The managers of an object, as (manager, operation, subresource, fieldsV1).
fn managers(obj: &Value) -> Vec<(String, String, String, Value)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|e| {
            (
                e["manager"].as_str().unwrap_or("").to_string(),
                e["operation"].as_str().unwrap_or("").to_string(),
                e["subresource"].as_str().unwrap_or("").to_string(),
                e["fieldsV1"].clone(),
            )
        })
        .collect()
}

fn manager<'a>(all: &'a [(String, String, String, Value)], name: &str) -> &'a Value {
    &all.iter()
        .find(|m| m.0 == name)
        .unwrap_or_else(|| panic!("no manager {name} in {all:?}"))
        .3
}

#[test]
fn kubectl_apply_server_side() {
    let w = Wardle::start();
    let first = w.write_file(
        "first.yaml",
        "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata:\n  name: ssa\n  namespace: default\n  labels: {app: web}\nspec:\n  reference: one\n  referenceType: Fischer\n  replicas: 2\n",
    );
    let f = first.to_str().unwrap();
    // Creates.
    assert_eq!(
        w.kubectl_ok(&["apply", "--server-side", "-f", f]).trim(),
        "flunder.wardle.example.com/ssa serverside-applied"
    );
    // Updates a value.
    std::fs::write(
        &first,
        "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata:\n  name: ssa\n  namespace: default\n  labels: {app: web}\nspec:\n  reference: two\n  referenceType: Fischer\n  replicas: 2\n",
    )
    .unwrap();
    w.kubectl_ok(&["apply", "--server-side", "-f", f]);
    let obj: Value = serde_json::from_str(&w.kubectl_ok(&[
        "get",
        "flunders.v1alpha1.wardle.example.com",
        "ssa",
        "-o",
        "json",
        "--show-managed-fields",
    ]))
    .unwrap();
    assert_eq!(obj["spec"]["reference"], "two");
    assert_eq!(obj["spec"]["replicas"], 2);

    // A second manager applying a field the first owns: upstream's conflict.
    let second = w.write_file(
        "second.yaml",
        "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata:\n  name: ssa\n  namespace: default\nspec:\n  reference: theirs\n",
    );
    let s = second.to_str().unwrap();
    let out = w.kubectl(&[
        "apply",
        "--server-side",
        "--field-manager",
        "other",
        "-f",
        s,
    ]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("Apply failed with 1 conflict: conflict with \"kubectl\": .spec.reference"),
        "{err}"
    );
    // Forcing takes the field over.
    w.kubectl_ok(&[
        "apply",
        "--server-side",
        "--field-manager",
        "other",
        "--force-conflicts",
        "-f",
        s,
    ]);

    // The first manager stops sending `replicas` (nobody else owns it: removed) and
    // `reference` (now owned by "other": kept).
    std::fs::write(
        &first,
        "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata:\n  name: ssa\n  namespace: default\n  labels: {app: web}\nspec:\n  referenceType: Fischer\n",
    )
    .unwrap();
    w.kubectl_ok(&["apply", "--server-side", "-f", f]);
    let yaml = w.kubectl_ok(&[
        "get",
        "flunders.v1alpha1.wardle.example.com",
        "ssa",
        "-o",
        "yaml",
        "--show-managed-fields",
    ]);
    let obj: Value = serde_yaml_ng::from_str(&yaml).unwrap();
    assert_eq!(obj["spec"]["reference"], "theirs", "{yaml}");
    assert!(obj["spec"].get("replicas").is_none(), "{yaml}");
    let all = managers(&obj);
    assert_eq!(all.len(), 2, "{yaml}");
    assert_eq!(
        manager(&all, "kubectl"),
        &json!({"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {"f:referenceType": {}}})
    );
    assert_eq!(
        manager(&all, "other"),
        &json!({"f:spec": {"f:reference": {}}})
    );
    assert!(all.iter().all(|m| m.1 == "Apply"), "{all:?}");
    assert!(yaml.contains("fieldsType: FieldsV1"), "{yaml}");

    // The default view hides them.
    let plain = w.kubectl_ok(&[
        "get",
        "flunders.v1alpha1.wardle.example.com",
        "ssa",
        "-o",
        "yaml",
    ]);
    assert!(!plain.contains("managedFields"), "{plain}");
}

#[test]
fn writes_other_than_apply_are_recorded_as_updates() {
    let w = Wardle::start();
    let file = w.write_file(
        "f.json",
        &json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
                "metadata": {"name": "upd", "namespace": "default"},
                "spec": {"reference": "a", "referenceType": "Fischer"}})
        .to_string(),
    );
    w.kubectl_ok(&["create", "-f", file.to_str().unwrap()]);
    w.kubectl_ok(&[
        "label",
        "flunders.v1alpha1.wardle.example.com",
        "upd",
        "team=blue",
    ]);
    let obj: Value = serde_json::from_str(&w.kubectl_ok(&[
        "get",
        "flunders.v1alpha1.wardle.example.com",
        "upd",
        "-o",
        "json",
        "--show-managed-fields",
    ]))
    .unwrap();
    let all = managers(&obj);
    let create = all
        .iter()
        .find(|m| m.0 == "kubectl-create")
        .expect("kubectl-create");
    assert_eq!(create.1, "Update");
    assert_eq!(
        create.3,
        json!({"f:spec": {".": {}, "f:reference": {}, "f:referenceType": {}}})
    );
    let label = all
        .iter()
        .find(|m| m.0 == "kubectl-label")
        .expect("kubectl-label");
    assert_eq!(label.1, "Update");
    assert_eq!(
        label.3,
        json!({"f:metadata": {"f:labels": {".": {}, "f:team": {}}}})
    );
    // Applying a different value of a field an Update manager owns conflicts, naming it
    // with its version.
    let apply = w.write_file(
        "a.yaml",
        "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata:\n  name: upd\n  namespace: default\nspec:\n  reference: b\n",
    );
    let out = w.kubectl(&["apply", "--server-side", "-f", apply.to_str().unwrap()]);
    assert!(!out.status.success(), "{}", stdout(&out));
    assert!(
        stderr(&out).contains(
            "Apply failed with 1 conflict: conflict with \"kubectl-create\" using wardle.example.com/v1alpha1: .spec.reference"
        ),
        "{}",
        stderr(&out)
    );
}

/// A controller-style loop: one manager applies the spec, a controller applies the status
/// through the status subresource; neither removes what the other wrote.
#[tokio::test]
async fn spec_and_status_appliers_do_not_clobber_each_other() {
    let s = support::in_process::start().await;
    let api: Api<Flunder> = Api::namespaced(s.client(), "default");
    let spec_pp = PatchParams::apply("spec-owner");
    let status_pp = PatchParams::apply("status-controller");
    for round in 0..3 {
        let spec = json!({
            "apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
            "metadata": {"name": "loop"},
            "spec": {"reference": format!("r{round}"), "referenceType": "Fischer", "replicas": round + 1}
        });
        api.patch("loop", &spec_pp, &Patch::Apply(&spec))
            .await
            .expect("spec apply");
        let status = json!({
            "apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
            "metadata": {"name": "loop"},
            "status": {"replicas": round, "selector": "app=loop"}
        });
        let after = api
            .patch_status("loop", &status_pp, &Patch::Apply(&status))
            .await
            .expect("status apply");
        assert_eq!(
            after.spec.reference.as_deref(),
            Some(format!("r{round}").as_str())
        );
        assert_eq!(after.spec.replicas, Some(round + 1));
        assert_eq!(after.status.as_ref().and_then(|s| s.replicas), Some(round));
    }
    // The spec owner re-applies: the status stays.
    let spec = json!({
        "apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
        "metadata": {"name": "loop"},
        "spec": {"reference": "final", "referenceType": "Fischer", "replicas": 9}
    });
    let obj = api
        .patch("loop", &spec_pp, &Patch::Apply(&spec))
        .await
        .unwrap();
    let status = obj.status.clone().expect("status kept");
    assert_eq!(status.replicas, Some(2));
    assert_eq!(status.selector.as_deref(), Some("app=loop"));
    assert_eq!(obj.spec.reference.as_deref(), Some("final"));
    let managed = obj.metadata.managed_fields.clone().unwrap_or_default();
    let by = |m: &str| {
        managed
            .iter()
            .find(|e| e.manager.as_deref() == Some(m))
            .unwrap_or_else(|| panic!("no {m}: {managed:?}"))
            .clone()
    };
    let spec_entry = by("spec-owner");
    assert_eq!(spec_entry.operation.as_deref(), Some("Apply"));
    assert_eq!(spec_entry.subresource, None);
    let status_entry = by("status-controller");
    assert_eq!(status_entry.operation.as_deref(), Some("Apply"));
    assert_eq!(status_entry.subresource.as_deref(), Some("status"));
    assert_eq!(
        status_entry.fields_v1.unwrap().0,
        json!({"f:status": {"f:replicas": {}, "f:selector": {}}})
    );
    // A plain kube-rs create (no fieldManager, no User-Agent) is recorded as an Update.
    let created = create(
        &api,
        &Flunder::new(
            "made",
            FlunderSpec {
                reference: Some("x".into()),
                reference_type: Some(ReferenceType::Fischer),
                ..Default::default()
            },
        ),
    )
    .await;
    let entry = &created.metadata.managed_fields.unwrap()[0];
    assert_eq!(entry.operation.as_deref(), Some("Update"));
    assert_eq!(
        entry.fields_v1.clone().unwrap().0,
        json!({"f:spec": {".": {}, "f:reference": {}, "f:referenceType": {}}})
    );
}

/// Apply requests that upstream refuses, the conflict Status, upsert, dry run, resetting
/// managedFields and apply on the scale subresource, over plain HTTP.
#[tokio::test]
async fn apply_edge_cases_over_http() {
    let w = tokio::task::spawn_blocking(Wardle::start).await.unwrap();
    let c = w.client();
    let url = |name: &str, query: &str| format!("{}/{name}?{query}", w.at(FLUNDERS));
    let send = |method: reqwest::Method, u: String, ct: &'static str, body: String| {
        let c = c.clone();
        async move {
            let res = answer(c.request(method, u).header("Content-Type", ct).body(body)).await;
            let code = res.status().as_u16();
            let v: Value = serde_json::from_str(&res.text().await.unwrap()).unwrap_or(Value::Null);
            (code, v)
        }
    };
    let config = |reference: &str| {
        format!(
            "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata:\n  name: e\nspec:\n  reference: {reference}\n  referenceType: Fischer\n"
        )
    };
    let patch = reqwest::Method::PATCH;

    // fieldManager is required; force is for apply only.
    let (code, v) = send(patch.clone(), url("e", ""), APPLY, config("a")).await;
    assert_eq!(code, 422, "{v}");
    assert_eq!(
        v["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
    assert_eq!(v["details"]["kind"], "PatchOptions");
    let (code, v) = send(
        patch.clone(),
        url("e", "force=true"),
        "application/merge-patch+json",
        "{}".into(),
    )
    .await;
    assert_eq!(code, 422, "{v}");
    assert_eq!(
        v["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
    );

    // A dry-run apply of an absent object creates nothing.
    let (code, v) = send(
        patch.clone(),
        url("e", "fieldManager=m1&dryRun=All"),
        APPLY,
        config("a"),
    )
    .await;
    assert_eq!(code, 201, "{v}");
    let res = c.get(format!("{}/e", w.at(FLUNDERS))).send().await.unwrap();
    assert_eq!(res.status(), 404);
    // Upsert: 201, then 200.
    let (code, v) = send(
        patch.clone(),
        url("e", "fieldManager=m1"),
        APPLY,
        config("a"),
    )
    .await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(v["metadata"]["managedFields"][0]["manager"], "m1");
    let (code, _) = send(
        patch.clone(),
        url("e", "fieldManager=m1"),
        APPLY,
        config("a"),
    )
    .await;
    assert_eq!(code, 200);

    // The conflict Status: 409 Conflict, details with the causes only.
    let (code, v) = send(
        patch.clone(),
        url("e", "fieldManager=m2"),
        APPLY,
        config("b"),
    )
    .await;
    support::checks::assert_status(
        code,
        &v,
        409,
        "Conflict",
        "Apply failed with 1 conflict: conflict with \"m1\": .spec.reference",
    );
    assert_eq!(
        v["details"],
        json!({"causes": [{"reason": "FieldManagerConflict", "message": "conflict with \"m1\"", "field": ".spec.reference"}]})
    );

    // Bad apply bodies.
    let with_managed = config("a").replace(
        "metadata:\n  name: e\n",
        "metadata:\n  name: e\n  managedFields: [{manager: x, operation: Apply}]\n",
    );
    let (code, v) = send(
        patch.clone(),
        url("e", "fieldManager=m1"),
        APPLY,
        with_managed,
    )
    .await;
    assert_eq!(
        (code, v["message"].as_str()),
        (400, Some("metadata.managedFields must be nil")),
        "{v}"
    );
    let wrong_version = config("a").replace("v1alpha1", "v9");
    let (code, v) = send(
        patch.clone(),
        url("e", "fieldManager=m1"),
        APPLY,
        wrong_version,
    )
    .await;
    assert_eq!(code, 400, "{v}");
    // Upstream's field manager checks the configuration's type first (versionCheckManager).
    assert_eq!(
        v["message"],
        "invalid object type: wardle.example.com/v9, Kind=Flunder"
    );
    let (code, _) = send(
        patch.clone(),
        url("e", "fieldManager=m1"),
        APPLY,
        "spec: [1".into(),
    )
    .await;
    assert_eq!(code, 400);
    let (code, v) = send(
        patch.clone(),
        url("e", "fieldManager=m1&fieldValidation=Strict"),
        APPLY,
        config("a").replace(
            "  referenceType: Fischer\n",
            "  referenceType: Fischer\n  bogus: 1\n",
        ),
    )
    .await;
    assert_eq!(code, 400, "{v}");
    assert!(
        message(&v).ends_with(".spec.bogus: field not declared in schema"),
        "{v}"
    );

    // Writing an empty list resets managedFields.
    let (code, v) = send(
        patch.clone(),
        url("e", ""),
        "application/merge-patch+json",
        r#"{"metadata":{"managedFields":[]}}"#.into(),
    )
    .await;
    assert_eq!(code, 200, "{v}");
    assert!(v["metadata"].get("managedFields").is_none(), "{v}");

    // Apply on the scale subresource owns the replicas, as subresource "scale".
    let (code, v) = send(
        patch.clone(),
        format!("{}/e/scale?fieldManager=scaler", w.at(FLUNDERS)),
        APPLY,
        "apiVersion: autoscaling/v1\nkind: Scale\nmetadata:\n  name: e\nspec:\n  replicas: 5\n"
            .into(),
    )
    .await;
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["kind"], "Scale");
    assert_eq!(v["spec"]["replicas"], 5);
    let obj: Value = support::get_json(&c, format!("{}/e", w.at(FLUNDERS))).await;
    assert_eq!(obj["spec"]["replicas"], 5);
    let all = managers(&obj);
    let scaler = all.iter().find(|m| m.0 == "scaler").expect("scaler");
    assert_eq!((scaler.1.as_str(), scaler.2.as_str()), ("Apply", "scale"));
    assert_eq!(scaler.3, json!({"f:spec": {"f:replicas": {}}}));
}
