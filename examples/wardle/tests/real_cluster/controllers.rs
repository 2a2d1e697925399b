//! kube-controller-manager's controllers on wardle's resources, and kube-aggregator's
//! availability checks following wardle down and up.

use crate::cluster::{RealCluster, TIMEOUT};

/// Whether `kubectl get ARGS` as admin answers NotFound.
fn gone(cluster: &RealCluster, args: &[&str]) -> bool {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    let out = cluster.kubectl("admin", &all);
    !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("(NotFound)")
}

/// Deleting a namespace removes the Flunders in it, and the namespace finishes terminating:
/// the namespace controller finds wardle's resources through discovery and empties them with
/// deletecollection.
pub fn namespace_deletion(cluster: &RealCluster) {
    cluster.kubectl_ok("admin", &["create", "namespace", "doomed"]);
    for name in ["one", "two"] {
        let flunder = format!(
            "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata:\n  name: {name}\n  \
             namespace: doomed\nspec:\n  reference: x\n"
        );
        cluster.kubectl_input_ok("admin", &["create", "-f", "-"], &flunder);
    }
    let listed = cluster.get_json(&["flunders", "-n", "doomed"]);
    assert_eq!(
        listed["items"].as_array().map(Vec::len),
        Some(2),
        "{listed}"
    );
    cluster.kubectl_ok("admin", &["delete", "namespace", "doomed", "--wait=false"]);
    cluster.wait_until("namespace doomed gone", TIMEOUT, || {
        gone(cluster, &["namespace", "doomed"])
    });
    let listed = cluster.get_json(&["flunders", "-n", "doomed"]);
    assert_eq!(listed["items"], serde_json::json!([]), "{listed}");
}

/// A Flunder owned by a ConfigMap is removed by the garbage collector once the ConfigMap is
/// deleted: the collector watches wardle's resources through metadata-only requests.
pub fn garbage_collection(cluster: &RealCluster) {
    cluster.kubectl_ok("admin", &["create", "configmap", "owner", "-n", "alice"]);
    let owner = cluster.get_json(&["configmap", "owner", "-n", "alice"]);
    let uid = owner["metadata"]["uid"].as_str().expect("the owner's uid");
    let flunder = format!(
        "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata:\n  name: owned\n  \
         namespace: alice\n  ownerReferences:\n  - apiVersion: v1\n    kind: ConfigMap\n    \
         name: owner\n    uid: {uid}\nspec:\n  reference: x\n"
    );
    cluster.kubectl_input_ok("admin", &["create", "-f", "-"], &flunder);
    cluster.kubectl_ok("admin", &["delete", "configmap", "owner", "-n", "alice"]);
    cluster.wait_until(
        "the garbage collector deletes flunder owned",
        TIMEOUT,
        || gone(cluster, &["flunder", "owned", "-n", "alice"]),
    );
}

/// wardle stopped: its APIServices go `Available=False` with kube-aggregator's reason,
/// discovery still answers for every other group, and requests for flunders get the
/// aggregator's 503. wardle started again: all recovers.
pub fn availability(cluster: &RealCluster) {
    let service = "v1alpha1.wardle.example.com";
    assert_eq!(cluster.apiservice_available(service).0, "True");
    cluster.script("stop-wardle");
    cluster.wait_until("the APIService Available=False", TIMEOUT, || {
        cluster.apiservice_available(service).0 == "False"
    });
    let (_, reason, message) = cluster.apiservice_available(service);
    assert_eq!(reason, "FailedDiscoveryCheck", "{message}");
    assert!(
        message.contains("/apis/wardle.example.com/v1alpha1") && message.contains("refused"),
        "{message}"
    );
    let groups = cluster.kubectl_ok("admin", &["get", "--raw", "/apis"]);
    assert!(groups.contains("\"apps\""), "{groups}");
    cluster.kubectl_ok("admin", &["get", "configmaps", "-n", "alice"]);
    let refused = cluster.kubectl_err(
        "alice",
        &["get", "flunders.v1alpha1.wardle.example.com", "-n", "alice"],
    );
    assert!(
        refused.contains("(ServiceUnavailable)")
            && refused.contains("the server is currently unable to handle the request"),
        "{refused}"
    );

    cluster.script("start-wardle");
    cluster.wait_until("the APIService Available=True again", TIMEOUT, || {
        cluster.apiservice_available(service).0 == "True"
    });
    // kube-aggregator's proxy learns the new condition from its own APIService informer, a
    // moment after the status is written: until then it still answers 503.
    cluster.wait_until("the aggregator proxies to wardle again", TIMEOUT, || {
        cluster
            .kubectl("alice", &["get", "flunders", "-n", "alice"])
            .status
            .success()
    });
    cluster.kubectl_ok("alice", &["get", "flunders", "-n", "alice"]);
}
