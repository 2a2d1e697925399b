//! The client-go program of `tests/client_go/` (`scripts/build-upstream wardle-client-go`):
//! built once per test process, run against a server, its report checked.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

/// The checks the program runs, each of which must print its `ok` line.
const CHECKS: [&str; 7] = [
    "crud",
    "paging",
    "dynamic-informer",
    "metadata-informer",
    "dynamic-informer-list-watch",
    "metadata-informer-list-watch",
    "apply",
];

/// How long the program may take in all (it gives itself a minute less).
const TIMEOUT: Duration = Duration::from_secs(360);

/// `scripts/build-upstream what` (a build, or nothing when the program is there already), and
/// the path of `binary` in the directory it builds into; fails the test, naming what is missing,
/// when the build fails (no Go, say).
pub fn build_upstream(what: &str, binary: &str) -> PathBuf {
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
pub fn program() -> &'static Path {
    static PROGRAM: OnceLock<PathBuf> = OnceLock::new();
    PROGRAM.get_or_init(|| build_upstream("wardle-client-go", "wardle-client-go"))
}

/// Runs the program against `server` (`wardle` or `sample-apiserver`) of `kubeconfig`, in
/// `namespace`, and fails the test with its output and `log()` (the server's log) unless every
/// check passed.
pub async fn run(server: &str, kubeconfig: &Path, namespace: &str, log: impl Fn() -> String) {
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
