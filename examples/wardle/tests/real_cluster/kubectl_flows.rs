//! kubectl through the real kube-apiserver: discovery, every verb on both types, RBAC decided
//! by the real SubjectAccessReview, impersonation, the aggregated OpenAPI, server-side apply
//! and a watch across the aggregator's proxy.

use std::process::Stdio;

use crate::cluster::{RealCluster, TIMEOUT};
use crate::support::fixtures::flunder_yaml;
use crate::support::process::Lines;

/// `kubectl api-resources` lists wardle's resources as kube-apiserver's discovery serves them
/// (aggregated from wardle).
pub fn api_resources(cluster: &RealCluster) {
    let text = cluster.kubectl_ok(
        "alice",
        &["api-resources", "--api-group=wardle.example.com"],
    );
    let rows: Vec<Vec<&str>> = text
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert!(
        rows.contains(&vec![
            "fischers",
            "fi",
            "wardle.example.com/v1alpha1",
            "false",
            "Fischer"
        ]),
        "{text}"
    );
    assert!(
        rows.contains(&vec![
            "flunders",
            "fl",
            "wardle.example.com/v1beta1",
            "true",
            "Flunder"
        ]),
        "{text}"
    );
    // Both versions are in kube-apiserver's own discovery documents.
    let group = cluster.kubectl_ok("alice", &["get", "--raw", "/apis/wardle.example.com"]);
    let group: serde_json::Value = serde_json::from_str(&group).unwrap();
    assert_eq!(group["preferredVersion"]["version"], "v1beta1", "{group}");
    let versions: Vec<&str> = group["versions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["version"].as_str())
        .collect();
    assert_eq!(versions, ["v1beta1", "v1alpha1"], "{group}");
}

/// create, get, list, replace, patch and delete of Flunders (alice, in her namespace) and
/// Fischers (admin, cluster-scoped), through kube-apiserver.
pub fn verbs_on_every_type(cluster: &RealCluster) {
    let out = cluster.kubectl_input_ok(
        "alice",
        &["create", "-f", "-"],
        &flunder_yaml("verbs", Some("alice"), "other", None),
    );
    assert_eq!(out.trim(), "flunder.wardle.example.com/verbs created");
    let table = cluster.kubectl_ok("alice", &["get", "flunders", "-n", "alice"]);
    let row = table
        .lines()
        .find(|l| l.starts_with("verbs "))
        .unwrap_or_else(|| panic!("{table}"));
    // The preferred version's columns: NAME TYPE FLUNDER FISCHER AGE.
    assert_eq!(
        row.split_whitespace().take(3).collect::<Vec<_>>(),
        ["verbs", "Flunder", "other"],
        "{table}"
    );

    // replace: the object as kubectl reads it (v1beta1, the preferred version), edited.
    let mut object: serde_json::Value = serde_json::from_str(&cluster.kubectl_ok(
        "alice",
        &["get", "flunder", "verbs", "-n", "alice", "-o", "json"],
    ))
    .unwrap();
    assert_eq!(object["apiVersion"], "wardle.example.com/v1beta1");
    assert_eq!(object["spec"]["flunderReference"], "other", "{object}");
    object["spec"]["flunderReference"] = "replaced".into();
    let out = cluster.kubectl_input_ok("alice", &["replace", "-f", "-"], &object.to_string());
    assert_eq!(out.trim(), "flunder.wardle.example.com/verbs replaced");

    let out = cluster.kubectl_ok(
        "alice",
        &[
            "patch",
            "flunder",
            "verbs",
            "-n",
            "alice",
            "--type=merge",
            "-p",
            r#"{"metadata":{"labels":{"patched":"yes"}}}"#,
        ],
    );
    assert_eq!(out.trim(), "flunder.wardle.example.com/verbs patched");
    let object: serde_json::Value = serde_json::from_str(&cluster.kubectl_ok(
        "alice",
        &[
            "get",
            "flunders.v1alpha1.wardle.example.com",
            "verbs",
            "-n",
            "alice",
            "-o",
            "json",
        ],
    ))
    .unwrap();
    assert_eq!(object["apiVersion"], "wardle.example.com/v1alpha1");
    assert_eq!(object["spec"]["reference"], "replaced", "{object}");
    assert_eq!(object["metadata"]["labels"]["patched"], "yes", "{object}");
    let listed = cluster.kubectl_ok("alice", &["get", "fl", "-n", "alice", "-l", "patched=yes"]);
    assert!(listed.lines().any(|l| l.starts_with("verbs ")), "{listed}");
    let out = cluster.kubectl_ok("alice", &["delete", "flunder", "verbs", "-n", "alice"]);
    assert_eq!(out.trim(), "flunder.wardle.example.com \"verbs\" deleted");

    // Fischer, cluster-scoped: admin.
    let fischer = "apiVersion: wardle.example.com/v1alpha1\nkind: Fischer\nmetadata:\n  name: \
                   verbs-fischer\ndisallowedFlunders: [banned]\n";
    let out = cluster.kubectl_input_ok("admin", &["create", "-f", "-"], fischer);
    assert_eq!(
        out.trim(),
        "fischer.wardle.example.com/verbs-fischer created"
    );
    let out = cluster.kubectl_ok(
        "admin",
        &[
            "patch",
            "fischer",
            "verbs-fischer",
            "--type=json",
            "-p",
            r#"[{"op":"add","path":"/disallowedFlunders/-","value":"forbidden"}]"#,
        ],
    );
    assert_eq!(
        out.trim(),
        "fischer.wardle.example.com/verbs-fischer patched"
    );
    let got = cluster.get_json(&["fischer", "verbs-fischer"]);
    assert_eq!(
        got["disallowedFlunders"],
        serde_json::json!(["banned", "forbidden"])
    );
    // Wardle's admission plugin reads the Fischer: a banned name is refused.
    let out = cluster.kubectl_with_input(
        "alice",
        &["create", "-f", "-"],
        &flunder_yaml("banned", Some("alice"), "x", None),
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Forbidden"), "{stderr}");
    cluster.kubectl_ok("admin", &["delete", "fischer", "verbs-fischer"]);
}

/// RBAC as the real SubjectAccessReview decides it: alice may in her namespace only, bob
/// nowhere; the refusal is upstream's.
pub fn rbac(cluster: &RealCluster) {
    cluster.kubectl_ok("alice", &["get", "flunders", "-n", "alice"]);
    let refused = cluster.kubectl_err("alice", &["get", "flunders", "-n", "default"]);
    assert_eq!(
        refused,
        "Error from server (Forbidden): flunders.wardle.example.com is forbidden: User \"alice\" \
         cannot list resource \"flunders\" in API group \"wardle.example.com\" in the namespace \
         \"default\""
    );
    let refused = cluster.kubectl_err("bob", &["get", "flunders", "-n", "alice"]);
    assert_eq!(
        refused,
        "Error from server (Forbidden): flunders.wardle.example.com is forbidden: User \"bob\" \
         cannot list resource \"flunders\" in API group \"wardle.example.com\" in the namespace \
         \"alice\""
    );
    // The same words as kube-apiserver's own refusal of a built-in resource.
    let builtin = cluster.kubectl_err("bob", &["get", "configmaps", "-n", "alice"]);
    assert_eq!(
        builtin,
        "Error from server (Forbidden): configmaps is forbidden: User \"bob\" cannot list \
         resource \"configmaps\" in API group \"\" in the namespace \"alice\""
    );
    let created = cluster.kubectl_input_ok(
        "admin",
        &["create", "-f", "-"],
        &flunder_yaml("rbac", Some("alice"), "x", None),
    );
    assert!(created.contains("created"), "{created}");
    let refused = cluster.kubectl_err("bob", &["delete", "flunder", "rbac", "-n", "alice"]);
    assert_eq!(
        refused,
        "Error from server (Forbidden): flunders.wardle.example.com \"rbac\" is forbidden: User \
         \"bob\" cannot delete resource \"flunders\" in API group \"wardle.example.com\" in the \
         namespace \"alice\""
    );
    let refused = cluster.kubectl_err("alice", &["get", "fischers"]);
    assert_eq!(
        refused,
        "Error from server (Forbidden): fischers.wardle.example.com is forbidden: User \"alice\" \
         cannot list resource \"fischers\" in API group \"wardle.example.com\" at the cluster scope"
    );
    cluster.kubectl_ok("alice", &["delete", "flunder", "rbac", "-n", "alice"]);
}

/// `kubectl auth can-i` (SelfSubjectAccessReview) agrees with what wardle lets each user do;
/// `kubectl auth whoami` names the client certificate's user.
pub fn can_i_and_whoami(cluster: &RealCluster) {
    let can_i = |user: &str, args: &[&str]| {
        let mut all = vec!["auth", "can-i"];
        all.extend_from_slice(args);
        let out = cluster.kubectl(user, &all);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(
        can_i("alice", &["create", "flunders", "-n", "alice"]),
        "yes"
    );
    assert_eq!(
        can_i("alice", &["create", "flunders", "-n", "default"]),
        "no"
    );
    assert_eq!(can_i("bob", &["list", "flunders", "-n", "alice"]), "no");
    assert_eq!(can_i("admin", &["delete", "fischers"]), "yes");
    let whoami = cluster.kubectl_ok("alice", &["auth", "whoami", "-o", "json"]);
    let whoami: serde_json::Value = serde_json::from_str(&whoami).unwrap();
    assert_eq!(
        whoami["status"]["userInfo"]["username"], "alice",
        "{whoami}"
    );
}

/// `--as alice` through kube-apiserver: wardle sees (and authorizes) alice, not admin.
pub fn impersonation(cluster: &RealCluster) {
    cluster.kubectl_ok(
        "admin",
        &["get", "flunders", "-n", "alice", "--as", "alice"],
    );
    let refused = cluster.kubectl_err(
        "admin",
        &["get", "flunders", "-n", "default", "--as", "alice"],
    );
    assert_eq!(
        refused,
        "Error from server (Forbidden): flunders.wardle.example.com is forbidden: User \"alice\" \
         cannot list resource \"flunders\" in API group \"wardle.example.com\" in the namespace \
         \"default\""
    );
    // bob impersonated is refused as bob: wardle authorizes the impersonated user.
    let refused = cluster.kubectl_err("admin", &["get", "flunders", "-n", "alice", "--as", "bob"]);
    assert!(refused.contains("User \"bob\" cannot list"), "{refused}");
}

/// `kubectl explain` reads wardle's schema from kube-apiserver's aggregated OpenAPI v3 and v2.
pub fn explain(cluster: &RealCluster) {
    let v3 = cluster.kubectl_ok("alice", &["explain", "flunders.spec"]);
    assert!(v3.contains("KIND:       Flunder"), "{v3}");
    assert!(v3.contains("VERSION:    v1beta1"), "{v3}");
    assert!(v3.contains("flunderReference"), "{v3}");
    let v2 = cluster.kubectl_ok(
        "alice",
        &[
            "explain",
            "flunders.spec",
            "--api-version=wardle.example.com/v1alpha1",
            "--output=plaintext-openapiv2",
        ],
    );
    assert!(v2.contains("KIND:     Flunder"), "{v2}");
    assert!(v2.contains("reference"), "{v2}");
    assert!(
        v2.contains("The name of a Flunder or a Fischer."),
        "the field's description: {v2}"
    );
}

/// `kubectl apply --server-side`: a second manager changing a field the first owns is refused
/// with upstream's conflict, and `--force-conflicts` takes it over.
pub fn server_side_apply(cluster: &RealCluster) {
    let first = flunder_yaml("applied", Some("alice"), "first", None);
    let out = cluster.kubectl_input_ok(
        "alice",
        &["apply", "--server-side", "--field-manager=one", "-f", "-"],
        &first,
    );
    assert_eq!(
        out.trim(),
        "flunder.wardle.example.com/applied serverside-applied"
    );
    let second = flunder_yaml("applied", Some("alice"), "second", None);
    let out = cluster.kubectl_with_input(
        "alice",
        &["apply", "--server-side", "--field-manager=two", "-f", "-"],
        &second,
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Apply failed with 1 conflict: conflict with \"one\": .spec.reference"),
        "{stderr}"
    );
    cluster.kubectl_input_ok(
        "alice",
        &[
            "apply",
            "--server-side",
            "--field-manager=two",
            "--force-conflicts",
            "-f",
            "-",
        ],
        &second,
    );
    let object = cluster.get_json(&[
        "flunders.v1alpha1.wardle.example.com",
        "applied",
        "-n",
        "alice",
    ]);
    assert_eq!(object["spec"]["reference"], "second", "{object}");
    cluster.kubectl_ok("alice", &["delete", "flunder", "applied", "-n", "alice"]);
}

/// `kubectl get -w` across kube-apiserver's proxy: the existing object, then a new one.
pub fn watch(cluster: &RealCluster) {
    cluster.kubectl_input_ok(
        "alice",
        &["create", "-f", "-"],
        &flunder_yaml("watched-1", Some("alice"), "a", None),
    );
    let mut child = cluster
        .kubectl_command(
            "alice",
            &[
                "get",
                "flunders",
                "-n",
                "alice",
                "-w",
                "--output-watch-events",
            ],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn kubectl get -w");
    let lines = Lines::of(child.stdout.take().unwrap());
    let wait_for = |needle: &str| lines.wait_for(needle, TIMEOUT);
    wait_for("watched-1");
    cluster.kubectl_input_ok(
        "alice",
        &["create", "-f", "-"],
        &flunder_yaml("watched-2", Some("alice"), "b", None),
    );
    let line = wait_for("watched-2");
    assert!(line.starts_with("ADDED"), "{line}");
    cluster.kubectl_ok("alice", &["delete", "flunder", "watched-2", "-n", "alice"]);
    let line = wait_for("watched-2");
    assert!(
        line.starts_with("MODIFIED") || line.starts_with("DELETED"),
        "{line}"
    );
    let _ = child.kill();
    let _ = child.wait();
    cluster.kubectl_ok("alice", &["delete", "flunder", "watched-1", "-n", "alice"]);
}
