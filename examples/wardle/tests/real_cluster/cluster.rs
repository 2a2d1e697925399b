//! A real host cluster (`scripts/real-cluster`) with wardle registered in it, and kubectl as its
//! users.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use apiserver_framework::testing::wait;
use serde_json::Value;

use crate::support::process::run_ok;

/// How long a condition of the cluster (an APIService's, a controller's work) may take.
pub const TIMEOUT: Duration = Duration::from_secs(120);

/// wardle's audit policy: the metadata of every request.
const AUDIT_POLICY: &str = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n";

/// The cluster of `scripts/real-cluster up`, taken down when dropped.
pub struct RealCluster {
    dir: tempfile::TempDir,
    kubectl: PathBuf,
}

/// The `metrics` example's binary, beside wardle's (`cargo test --workspace` builds both).
fn metrics_binary() -> PathBuf {
    let wardle = Path::new(env!("CARGO_BIN_EXE_wardle"));
    let metrics = wardle.with_file_name("metrics");
    assert!(
        metrics.is_file(),
        "{} is missing: build it with cargo build -p metrics (cargo test --workspace does)",
        metrics.display()
    );
    metrics
}

/// Runs `future` to its end on a runtime of its own (the checks are plain threads).
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(future)
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/real-cluster")
}

impl RealCluster {
    /// `scripts/real-cluster up` with this build's wardle, `extra` appended; fails the test run
    /// with the script's output when the cluster does not come up.
    pub fn up(extra: &[&str]) -> RealCluster {
        let dir = tempfile::tempdir().expect("a temporary directory");
        // wardle's audit log: every request's metadata, as wardle saw it.
        let audit = dir.path().join("audit");
        std::fs::create_dir_all(&audit).expect("the audit directory");
        std::fs::write(audit.join("policy.yaml"), AUDIT_POLICY).expect("the audit policy");
        let audit_flags = [
            format!(
                "--audit-policy-file={}",
                audit.join("policy.yaml").display()
            ),
            format!("--audit-log-path={}", audit.join("audit.log").display()),
        ];
        let started = Instant::now();
        let out = Command::new(script())
            .arg("up")
            .arg(dir.path())
            .args(extra)
            .args(
                audit_flags
                    .iter()
                    .flat_map(|f| ["--wardle-flag", f.as_str()]),
            )
            .env("WARDLE", env!("CARGO_BIN_EXE_wardle"))
            .env("METRICS", metrics_binary())
            .stdin(Stdio::null())
            .output()
            .expect("run scripts/real-cluster up");
        let cluster = RealCluster {
            dir,
            kubectl: super::support::kubectl_binary(33),
        };
        assert!(
            out.status.success(),
            "scripts/real-cluster up failed:\n{}{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            cluster.logs()
        );
        eprintln!(
            "real cluster up in {:.1} s: {}",
            started.elapsed().as_secs_f64(),
            String::from_utf8_lossy(&out.stdout).trim()
        );
        cluster
    }

    /// A value of the cluster's `env` file (`API_URL`, `WARDLE_ADDRESSES`, ...).
    pub fn env(&self, key: &str) -> String {
        let env = std::fs::read_to_string(self.dir().join("env")).expect("the cluster's env");
        env.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .map(|v| v.trim_matches('"').to_string())
            .unwrap_or_else(|| panic!("no {key} in the cluster's env:\n{env}"))
    }

    /// kube-apiserver's URL.
    pub fn api_url(&self) -> String {
        self.env("API_URL")
    }

    /// Where (the first) wardle listens, in the servers' network namespace.
    pub fn wardle_address(&self) -> std::net::SocketAddr {
        let first = self.env("WARDLE_ADDRESSES");
        let ip = first.split_whitespace().next().expect("a wardle address");
        format!("{ip}:8443").parse().expect("an address")
    }

    /// The directory of the cluster (kubeconfigs, logs, `env`).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The last lines of every log of the cluster's processes.
    pub fn logs(&self) -> String {
        let mut text = String::new();
        if let Ok(entries) = std::fs::read_dir(self.dir()) {
            for entry in entries.flatten() {
                let path = entry.path();
                if path.extension().is_some_and(|e| e == "log") {
                    let log = std::fs::read_to_string(&path).unwrap_or_default();
                    let lines: Vec<&str> = log.lines().collect();
                    let tail = lines[lines.len().saturating_sub(30)..].join("\n");
                    text.push_str(&format!("==== {} ====\n{tail}\n", path.display()));
                }
            }
        }
        text
    }

    /// `scripts/real-cluster COMMAND DIR` (`stop-wardle`, `start-wardle`).
    pub fn script(&self, command: &str) {
        self.script_with(command, &[]);
    }

    /// `scripts/real-cluster COMMAND DIR ARGS` (`start-wardle DIR ADDRESS`).
    pub fn script_with(&self, command: &str, args: &[&str]) {
        run_ok(
            Command::new(script())
                .arg(command)
                .arg(self.dir())
                .args(args)
                .env("WARDLE", env!("CARGO_BIN_EXE_wardle"))
                .stdin(Stdio::null()),
            &format!("scripts/real-cluster {command}"),
        );
    }

    /// The process ids of everything the cluster's script started (its `*.pid` files).
    pub fn processes(&self) -> Vec<i32> {
        let mut pids = Vec::new();
        for entry in std::fs::read_dir(self.dir())
            .expect("the cluster's directory")
            .flatten()
        {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "pid")
                && let Ok(pid) = std::fs::read_to_string(&path)
                    .unwrap_or_default()
                    .trim()
                    .parse()
            {
                pids.push(pid);
            }
        }
        pids
    }

    /// The kubeconfig of `user` (`admin`, `alice`, `bob`).
    pub fn kubeconfig(&self, user: &str) -> PathBuf {
        self.dir().join(format!("{user}.kubeconfig"))
    }

    /// kubectl 1.33 as `user`, with `stdin` as its input.
    pub fn kubectl_with_input(&self, user: &str, args: &[&str], stdin: &str) -> Output {
        let input = self.dir().join(format!("input-{}", std::process::id()));
        std::fs::write(&input, stdin).expect("write kubectl's input");
        let out = Command::new(&self.kubectl)
            .arg("--kubeconfig")
            .arg(self.kubeconfig(user))
            .arg("--cache-dir")
            .arg(self.dir().join(format!("kube-cache-{user}")))
            .arg("--request-timeout=60s")
            .args(args)
            .env_remove("KUBECONFIG")
            .stdin(std::fs::File::open(&input).expect("open kubectl's input"))
            .output()
            .expect("run kubectl");
        let _ = std::fs::remove_file(input);
        out
    }

    /// kubectl 1.33 as `user`.
    pub fn kubectl(&self, user: &str, args: &[&str]) -> Output {
        self.kubectl_with_input(user, args, "")
    }

    /// A kubectl command as `user` to spawn (for `get -w`).
    pub fn kubectl_command(&self, user: &str, args: &[&str]) -> Command {
        let mut command = Command::new(&self.kubectl);
        command
            .arg("--kubeconfig")
            .arg(self.kubeconfig(user))
            .arg("--cache-dir")
            .arg(self.dir().join(format!("kube-cache-{user}-background")))
            .args(args)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null());
        command
    }

    /// kubectl as `user`, which must succeed; its stdout.
    pub fn kubectl_ok(&self, user: &str, args: &[&str]) -> String {
        succeeded(self.kubectl(user, args), user, args)
    }

    /// kubectl as `user` with `stdin`, which must succeed; its stdout.
    pub fn kubectl_input_ok(&self, user: &str, args: &[&str], stdin: &str) -> String {
        succeeded(self.kubectl_with_input(user, args, stdin), user, args)
    }

    /// kubectl as `user`, which must fail; its stderr.
    pub fn kubectl_err(&self, user: &str, args: &[&str]) -> String {
        let out = self.kubectl(user, args);
        assert!(
            !out.status.success(),
            "kubectl {} as {user} succeeded: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8_lossy(&out.stderr).trim().to_string()
    }

    /// `kubectl get ARGS -o json` as admin, parsed.
    pub fn get_json(&self, args: &[&str]) -> Value {
        let mut all = vec!["get"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-o", "json"]);
        serde_json::from_str(&self.kubectl_ok("admin", &all)).expect("kubectl's JSON")
    }

    /// Waits until `done` holds, checking every 200 ms, failing with `what` after `timeout`.
    pub fn wait_until(&self, what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
        let outcome =
            wait::poll_blocking(
                what,
                timeout,
                || if done() { Ok(()) } else { Err("not yet") },
            );
        if let Err(e) = outcome {
            panic!("{e}\n{}", self.logs());
        }
    }

    /// The events of wardle's audit log that `keep` selects, once there are `want` of them
    /// (the log is written as requests complete; after 10 s, what there is).
    pub fn audit_events(&self, want: usize, keep: impl Fn(&Value) -> bool) -> Vec<Value> {
        let read = || -> Vec<Value> {
            std::fs::read_to_string(self.dir().join("audit/audit.log"))
                .unwrap_or_default()
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .filter(|e: &Value| e["stage"] == "ResponseComplete" && keep(e))
                .collect()
        };
        let enough = wait::poll_blocking("the audit events", Duration::from_secs(10), || {
            let events = read();
            if events.len() >= want {
                Ok(events)
            } else {
                Err(format!("{} of {want}", events.len()))
            }
        });
        enough.unwrap_or_else(|_| read())
    }

    /// The `Available` condition of APIService `name`: (status, reason, message).
    pub fn apiservice_available(&self, name: &str) -> (String, String, String) {
        let service = self.get_json(&["apiservice", name]);
        let conditions = service["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let available = conditions
            .iter()
            .find(|c| c["type"] == "Available")
            .cloned()
            .unwrap_or_default();
        let text = |key: &str| available[key].as_str().unwrap_or_default().to_string();
        (text("status"), text("reason"), text("message"))
    }
}

impl Drop for RealCluster {
    fn drop(&mut self) {
        let out = Command::new(script())
            .arg("down")
            .arg(self.dir())
            .stdin(Stdio::null())
            .output();
        match out {
            Ok(out) if out.status.success() => {}
            Ok(out) => eprintln!(
                "scripts/real-cluster down failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ),
            Err(e) => eprintln!("scripts/real-cluster down: {e}"),
        }
    }
}

/// The stdout of kubectl `args` as `user`, which must have succeeded.
fn succeeded(out: Output, user: &str, args: &[&str]) -> String {
    assert!(
        out.status.success(),
        "kubectl {} as {user} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
