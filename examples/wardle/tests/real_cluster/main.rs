//! Wardle behind a real host cluster: kube-apiserver (its aggregator, RBAC, TokenReview and
//! SubjectAccessReview, the authentication ConfigMap) and kube-controller-manager (the
//! namespace controller and the garbage collector) of the release `scripts/build-upstream`
//! pins, started by `scripts/real-cluster`. Every check talks to wardle only through
//! kube-apiserver, as users of a cluster do.
//!
//! One cluster serves every check (it takes tens of seconds to start), so this test has its own
//! harness (libtest-mimic): the cluster starts before the first check that runs and is taken
//! down after the last. The checks run one at a time, in order: the last stops wardle.

#[path = "../support/mod.rs"]
mod support;

#[allow(dead_code)]
#[path = "../production/stack.rs"]
mod stack;

mod auth;
mod clients;
// Shared with tests/real_cluster_replicas.rs, which uses more of it.
#[allow(dead_code)]
mod cluster;
mod controllers;
mod http;
mod kubectl_flows;
mod matrix;
mod policies;
mod routing;
mod schema_validation;
mod tracing;

use std::process::ExitCode;
use std::sync::{Arc, OnceLock};

use cluster::RealCluster;
use libtest_mimic::{Arguments, Trial};

/// The cluster, started by the first check that needs it.
type Shared = Arc<OnceLock<RealCluster>>;

/// A check: its name and its body.
type Check = (&'static str, fn(&RealCluster));

/// Every check, in the order they run.
const CHECKS: &[Check] = &[
    ("api_resources_lists_wardle", kubectl_flows::api_resources),
    (
        "kubectl_verbs_on_every_type",
        kubectl_flows::verbs_on_every_type,
    ),
    (
        "rbac_decides_through_subject_access_review",
        kubectl_flows::rbac,
    ),
    ("auth_can_i_and_whoami", kubectl_flows::can_i_and_whoami),
    ("impersonation_reaches_wardle", kubectl_flows::impersonation),
    ("explain_through_aggregated_openapi", kubectl_flows::explain),
    (
        "server_side_apply_conflict",
        kubectl_flows::server_side_apply,
    ),
    ("watch_across_the_proxy", kubectl_flows::watch),
    (
        "aggregated_discovery_prefers_v1beta1",
        routing::aggregated_discovery,
    ),
    (
        "namespace_lifecycle_follows_the_host",
        routing::namespace_lifecycle,
    ),
    (
        "validating_admission_policies_of_the_cluster",
        policies::policies,
    ),
    (
        "mutating_admission_policies_of_the_cluster",
        policies::mutating_policies,
    ),
    ("service_account_tokens", auth::service_account_tokens),
    (
        "metrics_are_authorized_by_the_host",
        auth::metrics_are_authorized,
    ),
    (
        "direct_callers_are_their_certificates",
        auth::direct_callers,
    ),
    ("reviews_are_cached_for_their_ttl", auth::reviews_are_cached),
    (
        "group_version_is_matched_whole",
        routing::group_version_matching,
    ),
    (
        "proxied_identities_arrive_exactly",
        routing::proxied_identities,
    ),
    (
        "connection_named_headers_are_not_forwarded",
        routing::connection_headers,
    ),
    (
        "writes_under_the_watch_prefix_are_refused",
        routing::writes_under_the_watch_prefix,
    ),
    (
        "named_get_with_watch_is_a_get",
        routing::named_get_with_watch,
    ),
    (
        "every_kubectl_through_kube_apiserver",
        matrix::every_kubectl,
    ),
    ("kube_rs_discovery_finds_wardle", matrix::kube_rs_discovery),
    ("kube_rs_typed_watch_and_apply", clients::kube_rs),
    (
        "crd_and_framework_refuse_alike",
        schema_validation::crd_and_framework_refuse_alike,
    ),
    ("websocket_console_across_the_proxy", clients::websocket),
    ("idle_watch_still_delivers", clients::long_watch),
    ("python_client_through_kube_apiserver", clients::python),
    ("client_go_through_kube_apiserver", clients::client_go),
    ("kubectl_top_node_reads_metrics", matrix::top_node),
    (
        "namespace_deletion_removes_flunders",
        controllers::namespace_deletion,
    ),
    (
        "garbage_collector_removes_dependents",
        controllers::garbage_collection,
    ),
    (
        "configmap_changes_apply_without_restart",
        auth::configmap_changes_apply_without_restart,
    ),
    (
        "one_trace_from_kube_apiserver_to_wardles_storage",
        tracing::one_trace_from_kube_apiserver_to_wardles_storage,
    ),
    // Last: it stops wardle (and starts it again).
    ("availability_follows_wardle", controllers::availability),
];

fn main() -> ExitCode {
    let mut args = Arguments::from_args();
    // One at a time: the availability check stops wardle, the others need it up.
    args.test_threads = Some(1);
    let shared: Shared = Arc::new(OnceLock::new());
    let trials = CHECKS
        .iter()
        .map(|&(name, body)| {
            let shared = Arc::clone(&shared);
            Trial::test(name, move || {
                body(shared.get_or_init(|| RealCluster::up(&["--with-metrics"])));
                Ok(())
            })
        })
        .collect();
    let conclusion = libtest_mimic::run(&args, trials);
    // Down before the exit code: Drop of the cluster runs `scripts/real-cluster down`.
    drop(shared);
    conclusion.exit_code()
}
