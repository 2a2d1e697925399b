//! client-go, Kubernetes' Go client, drives wardle as controllers do: the program of
//! `tests/client_go/` (client-go of the release `scripts/build-upstream` pins) runs its checks
//! against `wardle local` and against `wardle serve` behind the dev host's aggregator. Its
//! checks: the dynamic client's verbs and the errors controllers act on, 2,000 Flunders listed
//! in pages, a shared dynamic informer and a metadata-only informer each synced from a watch
//! list (client-go's WatchListClient feature on, with its consistency detector), and
//! server-side apply of unstructured objects with a conflict and a forced apply. The same
//! program runs against Kubernetes' sample-apiserver behind the same dev host, the checks
//! meaning upstream's behaviour.
//!
//! The program is built by `scripts/build-upstream wardle-client-go` (Go's build cache makes a
//! build of unchanged sources a link check), sample-apiserver and etcd 3.6 by the same script;
//! a machine without Go fails these tests, naming what is missing.

mod support;

#[allow(dead_code)]
#[path = "production/stack.rs"]
mod stack;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use apiserver_framework::devhost::files::users;
use apiserver_framework::testing::etcd::Etcd;
use stack::Stack;
use support::Wardle;

/// The checks the program runs, each of which must print its `ok` line.
const CHECKS: [&str; 5] = [
    "crud",
    "paging",
    "dynamic-informer",
    "metadata-informer",
    "apply",
];

/// How long the program may take in all (it gives itself a minute less).
const TIMEOUT: Duration = Duration::from_secs(360);

/// `scripts/build-upstream what` (a build, or nothing when the program is there already), and
/// the path of `binary` in the directory it builds into; fails the test, naming what is missing,
/// when the build fails (no Go, say).
fn build_upstream(what: &str, binary: &str) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/build-upstream");
    let build = Command::new(&script)
        .arg(what)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", script.display()));
    assert!(
        build.status.success(),
        "scripts/build-upstream {what} failed ({}): these tests need Go 1.24 or newer on PATH and \
         the Go module proxy (or a filled module cache)\n{}{}",
        build.status,
        String::from_utf8_lossy(&build.stdout),
        String::from_utf8_lossy(&build.stderr)
    );
    let bin_dir = Command::new(&script)
        .arg("bin-dir")
        .stdin(Stdio::null())
        .output()
        .expect("scripts/build-upstream bin-dir");
    let path = PathBuf::from(String::from_utf8_lossy(&bin_dir.stdout).trim()).join(binary);
    assert!(path.is_file(), "{} was not built", path.display());
    path
}

/// The client-go program, built once per test process.
fn program() -> &'static Path {
    static PROGRAM: OnceLock<PathBuf> = OnceLock::new();
    PROGRAM.get_or_init(|| build_upstream("wardle-client-go", "wardle-client-go"))
}

/// Runs the program against `server` (`wardle` or `sample-apiserver`) of `kubeconfig`, in
/// `namespace`, and fails the test with its output and `log()` (the server's log) unless every
/// check passed.
async fn run(server: &str, kubeconfig: &Path, namespace: &str, log: impl Fn() -> String) {
    let out = tokio::process::Command::new(program())
        .arg("-kubeconfig")
        .arg(kubeconfig)
        .args(["-namespace", namespace, "-server", server])
        .arg(format!("-timeout={}s", TIMEOUT.as_secs() - 60))
        // client-go's watch lists in its reflectors, and its check of what they delivered
        // against a list at the same resourceVersion; the program refuses to run without them.
        .env("KUBE_FEATURE_WatchListClient", "true")
        .env("KUBE_WATCHLIST_INCONSISTENCY_DETECTOR", "true")
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(TIMEOUT, out)
        .await
        .unwrap_or_else(|_| {
            panic!(
                "the client-go program ran for over {TIMEOUT:?}; server log:\n{}",
                log()
            )
        })
        .expect("run the client-go program");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report = || {
        format!(
            "stdout:\n{stdout}\nstderr:\n{}\nserver log (last 100 lines):\n{}",
            String::from_utf8_lossy(&out.stderr),
            tail(&log(), 100)
        )
    };
    assert!(
        out.status.success(),
        "the client-go program failed ({})\n{}",
        out.status,
        report()
    );
    for check in CHECKS {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(&format!("ok   {check}: "))),
            "no ok line for the check {check}\n{}",
            report()
        );
    }
    eprintln!("{stdout}");
}

/// The last `n` lines of `text`.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

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
