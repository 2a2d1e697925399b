//! client-go, Kubernetes' Go client, drives wardle as controllers do: the program of
//! `tests/client_go/` (client-go of the release `scripts/build-upstream` pins) runs its checks
//! against `wardle local` and against `wardle serve` behind the dev host's aggregator. Its
//! checks: the dynamic client's verbs and the errors controllers act on, 2,000 Flunders listed
//! in pages, a shared dynamic informer and a metadata-only informer each synced from a watch
//! list (client-go's WatchListClient feature on, with its consistency detector) and from a list
//! and a watch (the feature off, client-go's default), and
//! server-side apply of unstructured objects with a conflict and a forced apply. The same
//! program runs against Kubernetes' sample-apiserver behind the same dev host, the checks
//! meaning upstream's behaviour.
//!
//! The program is built by `scripts/build-upstream wardle-client-go` (Go's build cache makes a
//! build of unchanged sources a link check), sample-apiserver and etcd 3.6 by the same script;
//! a machine without Go fails these tests, naming what is missing. `tests/real_cluster` runs
//! the program through a real kube-apiserver as well.

mod support;

#[allow(dead_code)]
#[path = "production/stack.rs"]
mod stack;

use apiserver_framework::devhost::files::users;
use apiserver_framework::testing::etcd::Etcd;
use stack::Stack;
use support::Wardle;
use support::client_go::{build_upstream, program, run};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_go_drives_wardle_in_local_mode() {
    program();
    let w = Wardle::start();
    run("wardle", &w.kubeconfig, "default", || w.log()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_go_drives_wardle_through_the_dev_host() {
    // Built before the host starts on this runtime: the build blocks its thread.
    program();
    let stack = Stack::start(&[]).await;
    let admin = stack.host.files.kubeconfig_path(users::ADMIN);
    run("wardle", &admin, "default", || stack.log()).await;
}

/// The same program against Kubernetes' sample-apiserver (of the pinned release, on etcd 3.6)
/// behind the same dev host: what the checks expect of wardle is what upstream does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_go_drives_sample_apiserver_through_the_dev_host() {
    program();
    let sample_apiserver = build_upstream("sample-apiserver", "sample-apiserver");
    // Watch lists need etcd's RequestWatchProgress, which upstream's storage finds in etcd
    // 3.4.31, 3.5.13 and newer only.
    let etcd = Etcd::start_binary(&build_upstream("etcd", "etcd")).expect("etcd 3.6 starts");
    let stack = Stack::start_sample_apiserver(sample_apiserver, &etcd.url()).await;
    let admin = stack.host.files.kubeconfig_path(users::ADMIN);
    run("sample-apiserver", &admin, "default", || stack.log()).await;
}
