//! Real clients against wardle, in `local` mode and through the dev host's aggregator: kube-rs'
//! discovery (legacy and aggregated), every kubectl from 1.27 to 1.33 (`api-resources`, `create`,
//! `get`, `explain`, `auth whoami`, `auth can-i`), and the official Python client's dynamic
//! client. Also sample-apiserver's Flunder defaulting and validation, over HTTPS.

mod support;

#[allow(dead_code)]
#[path = "production/stack.rs"]
mod stack;

use std::path::Path;
use std::process::Stdio;

use apiserver_framework::devhost::files::users;
use serde_json::{Value, json};
use stack::Stack;
use support::checks::answer;
use support::kubectl_matrix::{
    KUBECTL_MINORS, Kubectl, discovery_finds_wardle, kube_client, python, resource_commands_work,
    run_kubectl,
};
use support::{FLUNDERS, KUBECTL_TIMEOUT, Wardle, kubectl_binary};

// ---------------------------------------------------------------------------------------------
// helpers

// ---------------------------------------------------------------------------------------------
// kube-rs

#[tokio::test]
async fn kube_rs_discovery_finds_wardle_in_local_mode() {
    let w = Wardle::start();
    discovery_finds_wardle(kube_client(&w.kubeconfig).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_discovery_finds_wardle_through_the_dev_host() {
    let stack = Stack::start(&[]).await;
    let admin = stack.host.files.kubeconfig_path(users::ADMIN);
    discovery_finds_wardle(kube_client(&admin).await).await;
}

// ---------------------------------------------------------------------------------------------
// kubectl

/// Every kubectl from 1.27 to 1.33, one after another against one `wardle local`: the resource
/// commands, `auth whoami` (the local user) and `auth can-i` (local mode allows everything).
#[test]
fn every_kubectl_works_in_local_mode() {
    let w = Wardle::start();
    for minor in KUBECTL_MINORS {
        let k = Kubectl::new(minor, &w.kubeconfig, w.dir());
        resource_commands_work(&k, w.dir());

        let whoami = k.ok(&["auth", "whoami"]);
        let username = whoami
            .lines()
            .find(|l| l.starts_with("Username"))
            .unwrap_or_else(|| panic!("kubectl 1.{minor} auth whoami:\n{whoami}"));
        assert_eq!(
            username.split_whitespace().collect::<Vec<_>>(),
            ["Username", "local-admin"],
            "kubectl 1.{minor}"
        );
        assert_eq!(
            k.ok(&["auth", "can-i", "create", "flunders"]).trim(),
            "yes",
            "kubectl 1.{minor}"
        );
        let rules = k.ok(&["auth", "can-i", "--list"]);
        assert!(
            rules
                .lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["*.*", "[]", "[]", "[*]"]),
            "kubectl 1.{minor} auth can-i --list:\n{rules}"
        );
    }
    // Every create landed.
    let names: Vec<String> = String::from_utf8_lossy(
        &run_kubectl(
            &kubectl_binary(33),
            &w.kubeconfig,
            &w.dir().join("kube-cache-final"),
            &["get", "flunders", "-o", "name"],
            None,
        )
        .stdout,
    )
    .lines()
    .map(str::to_string)
    .collect();
    let expected: Vec<String> = KUBECTL_MINORS
        .map(|m| format!("flunder.wardle.example.com/made-by-1-{m}"))
        .collect();
    assert_eq!(names, expected);
}

/// Every kubectl from 1.27 to 1.33 through the dev host's aggregator to `wardle serve`: the
/// resource commands as the host's admin, and the host's own answers to `auth whoami` and
/// `auth can-i` for its users (alice edits, bob only reads).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kubectl_works_through_the_dev_host() {
    let stack = Stack::start(&[]).await;
    let kubeconfig = |user: &str| stack.host.files.kubeconfig_path(user);
    let (admin, alice, bob) = (
        kubeconfig(users::ADMIN),
        kubeconfig(users::ALICE),
        kubeconfig(users::BOB),
    );
    let scratch = stack.path("kubectl");
    std::fs::create_dir_all(&scratch).unwrap();
    // kubectl blocks; the host runs on this runtime's other worker meanwhile.
    tokio::task::spawn_blocking(move || {
        for minor in KUBECTL_MINORS {
            let admin = Kubectl::new(minor, &admin, &scratch);
            resource_commands_work(&admin, &scratch);
            let whoami = admin.ok(&["auth", "whoami"]);
            assert!(
                whoami
                    .lines()
                    .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["Username", users::ADMIN]),
                "kubectl 1.{minor} auth whoami:\n{whoami}"
            );
            let alice = Kubectl::new(minor, &alice, &scratch);
            alice.can(&["create", "flunders"]);
            Kubectl::new(minor, &bob, &scratch).cannot(&["create", "flunders"]);
        }
    })
    .await
    .expect("the kubectl runs");
}

// ---------------------------------------------------------------------------------------------
// the Python client

#[tokio::test]
async fn python_dynamic_client_lists_flunders_in_local_mode() {
    let w = Wardle::start();
    let client = w.client();
    for name in ["py-one", "py-two"] {
        let res = client
            .post(w.at(FLUNDERS))
            .json(
                &json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
                          "metadata": {"name": name}, "spec": {"reference": "x"}}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 201, "{}", res.text().await.unwrap());
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/list_flunders.py");
    let out = tokio::process::Command::new(python())
        .arg(&script)
        .arg(&w.kubeconfig)
        .arg("default")
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .output();
    let out = tokio::time::timeout(KUBECTL_TIMEOUT, out)
        .await
        .expect("the Python client finishes in time")
        .expect("run python");
    assert!(
        out.status.success(),
        "the Python client failed ({})\nstdout:\n{}\nstderr:\n{}\nserver log:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        w.log()
    );
    let answer: Value = serde_json::from_slice(&out.stdout).expect("the script prints JSON");
    assert_eq!(
        answer,
        json!({"version": "v1.33.0", "kind": "Flunder", "namespaced": true,
               "names": ["py-one", "py-two"]})
    );
}

// ---------------------------------------------------------------------------------------------
// sample-apiserver's defaulting and validation

#[tokio::test]
async fn flunders_are_defaulted_and_validated_as_sample_apiserver_does() {
    let w = Wardle::start();
    let client = w.client();
    let post = |spec: Value, name: &str| {
        client
            .post(w.at(FLUNDERS))
            .json(
                &json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
                          "metadata": {"name": name}, "spec": spec}),
            )
            .send()
    };
    // A reference without a type refers to a Flunder.
    let res = post(json!({"reference": "other"}), "defaulted")
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let created: Value = res.json().await.unwrap();
    assert_eq!(
        created["spec"],
        json!({"reference": "other", "referenceType": "Flunder"})
    );
    // A type without a reference is invalid, in upstream's words.
    for (kind, field) in [
        ("Flunder", "flunderReference"),
        ("Fischer", "fischerReference"),
    ] {
        let res = post(json!({"referenceType": kind}), "typed").await.unwrap();
        assert_eq!(res.status(), 422);
        let status: Value = res.json().await.unwrap();
        assert_eq!(status["reason"], "Invalid");
        assert_eq!(
            status["message"],
            format!(
                "Flunder.wardle.example.com \"typed\" is invalid: spec.{field}: Invalid value: \"\": cannot be empty if referenceType is {kind}"
            )
        );
        assert_eq!(
            status["details"]["causes"],
            json!([{"reason": "FieldValueInvalid", "field": format!("spec.{field}"),
                    "message": format!("Invalid value: \"\": cannot be empty if referenceType is {kind}")}])
        );
    }
    // Upstream's strategy validates no update: the same spec is accepted by a replace.
    let mut replaced = created.clone();
    replaced["spec"] = json!({"referenceType": "Fischer"});
    let res = answer(
        client
            .put(w.at(&format!("{FLUNDERS}/defaulted")))
            .json(&replaced),
    )
    .await;
    assert_eq!(res.status(), 200);
    let after: Value = res.json().await.unwrap();
    assert_eq!(after["spec"], json!({"referenceType": "Fischer"}));
}
