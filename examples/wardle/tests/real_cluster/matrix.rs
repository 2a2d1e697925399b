//! The client matrix through the real kube-apiserver: every kubectl from 1.27 to 1.33 runs the
//! resource commands as admin and asks `auth whoami` and `auth can-i`, and kube-rs' two
//! discovery algorithms find wardle. Twins of the dev host's
//! `every_kubectl_works_through_the_dev_host` and `kube_rs_discovery_finds_wardle_through_the_dev_host`.

use crate::cluster::{RealCluster, block_on};
use crate::support::kubectl_matrix::{
    KUBECTL_MINORS, Kubectl, discovery_finds_wardle, kube_client, resource_commands_work,
};

/// Every kubectl, one after another: resource commands as admin; whoami names the client
/// certificate's user; can-i is the real RBAC's answer for alice and bob.
pub fn every_kubectl(cluster: &RealCluster) {
    let scratch = cluster.dir().join("kubectl-matrix");
    std::fs::create_dir_all(&scratch).expect("a scratch directory");
    for minor in KUBECTL_MINORS {
        let admin = Kubectl::new(minor, &cluster.kubeconfig("admin"), &scratch);
        resource_commands_work(&admin, &scratch);
        let alice = Kubectl::new(minor, &cluster.kubeconfig("alice"), &scratch);
        if minor == 27 {
            // kubectl 1.27 knows SelfSubjectReview in v1alpha1 and v1beta1 only, which
            // kube-apiserver 1.34 no longer serves (it is outside the version-skew policy).
            let out = alice.run(&["auth", "whoami"], None);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                !out.status.success()
                    && stderr.contains("the selfsubjectreviews API is not enabled in the cluster"),
                "kubectl 1.27 auth whoami against 1.34: {stderr}"
            );
        } else {
            let whoami = alice.ok(&["auth", "whoami"]);
            assert!(
                whoami
                    .lines()
                    .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["Username", "alice"]),
                "kubectl 1.{minor} auth whoami:\n{whoami}"
            );
        }
        alice.can(&["create", "flunders", "-n", "alice"]);
        let bob = Kubectl::new(minor, &cluster.kubeconfig("bob"), &scratch);
        bob.cannot(&["create", "flunders", "-n", "alice"]);
    }
    for minor in KUBECTL_MINORS {
        let name = format!("made-by-1-{minor}");
        cluster.kubectl_ok("admin", &["delete", "flunder", &name, "-n", "default"]);
    }
}

/// kube-rs' legacy and aggregated discovery, as admin through kube-apiserver.
pub fn kube_rs_discovery(cluster: &RealCluster) {
    block_on(async {
        discovery_finds_wardle(kube_client(&cluster.kubeconfig("admin")).await).await;
    });
}

/// `kubectl top node` through kube-apiserver reads `examples/metrics`, registered as the
/// cluster's `v1beta1.metrics.k8s.io`, for the cluster's Node; bob is refused by the real RBAC.
/// Twin of the dev host's `through_the_dev_hosts_aggregator` of the metrics example.
pub fn top_node(cluster: &RealCluster) {
    let node = cluster.env("NODE_NAME");
    let top = cluster.kubectl_ok("admin", &["top", "node"]);
    let row: Vec<&str> = top
        .lines()
        .find(|l| l.starts_with(&format!("{node} ")))
        .unwrap_or_else(|| panic!("kubectl top node lists no {node}:\n{top}"))
        .split_whitespace()
        .collect();
    // NAME CPU(cores) CPU(%) MEMORY(bytes) MEMORY(%), the percentages of the Node's capacity.
    assert_eq!(row.len(), 5, "{top}");
    assert!(row[1].ends_with('m') && row[2].ends_with('%'), "{top}");
    assert!(row[3].ends_with("Mi") && row[4].ends_with('%'), "{top}");
    let refused = cluster.kubectl_err("bob", &["top", "node"]);
    assert!(
        refused.contains(
            "nodes.metrics.k8s.io is forbidden: User \"bob\" cannot list resource \"nodes\" in \
             API group \"metrics.k8s.io\" at the cluster scope"
        ),
        "{refused}"
    );
}
