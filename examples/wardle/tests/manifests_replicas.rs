//! `wardle manifests --etcd-servers … --replicas 3`: every document decodes strictly into its
//! k8s-openapi type (a field the type does not know fails the test), and the Deployment runs
//! three replicas with a rolling update that never goes below them, pod anti-affinity and a
//! PodDisruptionBudget; the embedded store keeps one replica and says why.

#[path = "support/api_service.rs"]
mod api_service;

use std::process::Command;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Secret, Service, ServiceAccount};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, RoleBinding};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use api_service::ApiService;

/// Decodes `doc` as `T` strictly: k8s-openapi's types ignore unknown fields, so the decoded
/// object is encoded again and must give back exactly `doc` — a field the type does not know
/// (or a value of the wrong shape) would be missing.
fn strict<T: DeserializeOwned + serde::Serialize>(doc: &Value) -> T {
    let typed: T = serde_json::from_value(doc.clone())
        .unwrap_or_else(|e| panic!("{e}: not a valid {}: {doc:#}", std::any::type_name::<T>()));
    let again = serde_json::to_value(&typed).unwrap();
    assert_eq!(
        &again,
        doc,
        "{} lost or changed fields in decoding",
        std::any::type_name::<T>()
    );
    typed
}

/// Runs `wardle manifests <args>` and returns its YAML output.
fn manifests(args: &[&str]) -> (bool, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_wardle"))
        .arg("manifests")
        .arg("--cert-dir")
        .arg(dir.path())
        .args(args)
        .output()
        .expect("run wardle manifests");
    (
        output.status.success(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn documents(yaml: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(yaml)
        .map(|d| Value::deserialize(d).expect("a YAML document"))
        .filter(|v| !v.is_null())
        .collect()
}

#[test]
fn etcd_backed_manifests_run_replicas_without_outage() {
    let (ok, yaml, stderr) = manifests(&[
        "--etcd-servers",
        "https://etcd-0.etcd:2379,https://etcd-1.etcd:2379",
        "--replicas",
        "3",
        "--image",
        "example/wardle:1",
    ]);
    assert!(ok, "{stderr}");
    let docs = documents(&yaml);
    let mut deployments = Vec::new();
    let mut budgets = Vec::new();
    let mut kinds = Vec::new();
    for doc in &docs {
        let kind = doc["kind"].as_str().unwrap().to_string();
        match kind.as_str() {
            "Namespace" => drop(strict::<Namespace>(doc)),
            "ServiceAccount" => drop(strict::<ServiceAccount>(doc)),
            "Secret" => drop(strict::<Secret>(doc)),
            "Service" => drop(strict::<Service>(doc)),
            "Deployment" => deployments.push(strict::<Deployment>(doc)),
            "PodDisruptionBudget" => budgets.push(strict::<PodDisruptionBudget>(doc)),
            "APIService" => drop(strict_api_service(doc)),
            "RoleBinding" => drop(strict::<RoleBinding>(doc)),
            "ClusterRoleBinding" => drop(strict::<ClusterRoleBinding>(doc)),
            "ClusterRole" => drop(strict::<ClusterRole>(doc)),
            other => panic!("unexpected kind {other}"),
        }
        kinds.push(kind);
    }
    assert!(
        !kinds.iter().any(|k| k == "PersistentVolumeClaim"),
        "no volume for etcd-backed replicas: {kinds:?}"
    );

    let [deployment] = &deployments[..] else {
        panic!("one Deployment: {kinds:?}")
    };
    let spec = deployment.spec.as_ref().unwrap();
    assert_eq!(spec.replicas, Some(3));
    let strategy = spec.strategy.as_ref().unwrap();
    assert_eq!(strategy.type_.as_deref(), Some("RollingUpdate"));
    let rolling = strategy.rolling_update.as_ref().unwrap();
    assert_eq!(rolling.max_unavailable, Some(IntOrString::Int(0)));
    assert!(matches!(rolling.max_surge, Some(IntOrString::Int(n)) if n >= 1));
    let pod = spec.template.spec.as_ref().unwrap();
    let anti = pod
        .affinity
        .as_ref()
        .and_then(|a| a.pod_anti_affinity.as_ref())
        .expect("pod anti-affinity");
    let terms = anti
        .preferred_during_scheduling_ignored_during_execution
        .as_ref()
        .expect("preferred anti-affinity terms");
    let selector_labels = spec.selector.match_labels.clone().unwrap();
    assert!(terms.iter().any(|t| {
        t.pod_affinity_term.topology_key == "kubernetes.io/hostname"
            && t.pod_affinity_term
                .label_selector
                .as_ref()
                .and_then(|s| s.match_labels.clone())
                == Some(selector_labels.clone())
    }));
    let container = &pod.containers[0];
    let args = container.args.clone().unwrap();
    assert!(
        args.contains(
            &"--etcd-servers=https://etcd-0.etcd:2379,https://etcd-1.etcd:2379".to_string()
        ),
        "{args:?}"
    );
    assert!(
        !args.iter().any(|a| a.starts_with("--data-dir")),
        "{args:?}"
    );
    // A terminating replica leaves the endpoints first, within its grace period.
    let delay: i64 = args
        .iter()
        .find_map(|a| a.strip_prefix("--shutdown-delay-duration="))
        .and_then(|d| d.strip_suffix('s'))
        .and_then(|d| d.parse().ok())
        .expect("a shutdown delay in seconds");
    let grace = pod
        .termination_grace_period_seconds
        .expect("a grace period");
    assert!(
        delay > 0 && grace > delay + 30,
        "delay {delay}s, grace {grace}s"
    );
    assert!(container.readiness_probe.is_some());

    let [budget] = &budgets[..] else {
        panic!("one PodDisruptionBudget: {kinds:?}")
    };
    let budget_spec = budget.spec.as_ref().unwrap();
    assert_eq!(
        budget_spec.selector.as_ref().unwrap().match_labels,
        Some(selector_labels)
    );
    assert_eq!(budget_spec.max_unavailable, Some(IntOrString::Int(1)));
    assert_eq!(
        budget.metadata.namespace, deployment.metadata.namespace,
        "the budget is in the Deployment's namespace"
    );
}

fn strict_api_service(doc: &Value) -> ApiService {
    serde_json::from_value(doc.clone()).unwrap_or_else(|e| panic!("{e}: {doc:#}"))
}

#[test]
fn etcd_backed_manifests_default_to_two_replicas() {
    let (ok, yaml, stderr) = manifests(&["--etcd-servers", "https://etcd:2379"]);
    assert!(ok, "{stderr}");
    let docs = documents(&yaml);
    let deployment = docs.iter().find(|d| d["kind"] == "Deployment").unwrap();
    let deployment: Deployment = strict(deployment);
    assert_eq!(deployment.spec.unwrap().replicas, Some(2));
    assert!(docs.iter().any(|d| d["kind"] == "PodDisruptionBudget"));
}

#[test]
fn the_embedded_store_keeps_one_replica_and_says_why() {
    let (ok, yaml, stderr) = manifests(&[]);
    assert!(ok, "{stderr}");
    let docs = documents(&yaml);
    let deployment = docs.iter().find(|d| d["kind"] == "Deployment").unwrap();
    let deployment: Deployment = strict(deployment);
    let spec = deployment.spec.unwrap();
    assert_eq!(spec.replicas, Some(1));
    assert_eq!(spec.strategy.unwrap().type_.as_deref(), Some("Recreate"));
    assert!(!docs.iter().any(|d| d["kind"] == "PodDisruptionBudget"));
    assert!(
        yaml.lines()
            .any(|l| l.starts_with("# One replica") && l.contains("embedded store")),
        "{yaml}"
    );
    // Several replicas need etcd.
    let (ok, _, stderr) = manifests(&["--replicas", "3"]);
    assert!(!ok);
    assert!(stderr.contains("--etcd-servers"), "{stderr}");
}
