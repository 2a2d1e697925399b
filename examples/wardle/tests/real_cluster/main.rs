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

mod cluster;
mod controllers;
mod kubectl_flows;

use std::process::ExitCode;
use std::sync::{Arc, OnceLock};

use cluster::RealCluster;
use libtest_mimic::{Arguments, Trial};

/// The cluster, started by the first check that needs it.
type Shared = Arc<OnceLock<RealCluster>>;

fn check(shared: &Shared, name: &'static str, body: fn(&RealCluster)) -> Trial {
    let shared = Arc::clone(shared);
    Trial::test(name, move || {
        body(shared.get_or_init(|| RealCluster::up(&[])));
        Ok(())
    })
}

fn main() -> ExitCode {
    let mut args = Arguments::from_args();
    // One at a time: the availability check stops wardle, the others need it up.
    args.test_threads = Some(1);
    let shared: Shared = Arc::new(OnceLock::new());
    let trials = vec![
        check(
            &shared,
            "api_resources_lists_wardle",
            kubectl_flows::api_resources,
        ),
        check(
            &shared,
            "kubectl_verbs_on_every_type",
            kubectl_flows::verbs_on_every_type,
        ),
        check(
            &shared,
            "rbac_decides_through_subject_access_review",
            kubectl_flows::rbac,
        ),
        check(
            &shared,
            "auth_can_i_and_whoami",
            kubectl_flows::can_i_and_whoami,
        ),
        check(
            &shared,
            "impersonation_reaches_wardle",
            kubectl_flows::impersonation,
        ),
        check(
            &shared,
            "explain_through_aggregated_openapi",
            kubectl_flows::explain,
        ),
        check(
            &shared,
            "server_side_apply_conflict",
            kubectl_flows::server_side_apply,
        ),
        check(&shared, "watch_across_the_proxy", kubectl_flows::watch),
        check(
            &shared,
            "namespace_deletion_removes_flunders",
            controllers::namespace_deletion,
        ),
        check(
            &shared,
            "garbage_collector_removes_dependents",
            controllers::garbage_collection,
        ),
        check(
            &shared,
            "availability_follows_wardle",
            controllers::availability,
        ),
    ];
    let conclusion = libtest_mimic::run(&args, trials);
    // Down before the exit code: Drop of the cluster runs `scripts/real-cluster down`.
    drop(shared);
    conclusion.exit_code()
}
