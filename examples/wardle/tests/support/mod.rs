//! Shared helpers of the wardle integration tests: the real `wardle local` binary started in a
//! temporary directory on a free port, `kubectl` pointed at it, and a `reqwest` client that
//! trusts its CA and sends its bearer token.

#![allow(dead_code)]

pub mod checks;
pub mod client_go;
pub mod encryption;
pub mod fixtures;
pub mod in_process;
pub mod jaeger;
pub mod kubectl_matrix;
pub mod process;
pub mod prometheus;
pub mod schema_types;

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::Duration;

use apiserver_framework::testing::tls;
use apiserver_framework::testing::wait;

/// How long the server may take to write its kubeconfig.
pub const START_TIMEOUT: Duration = Duration::from_secs(20);
/// How long one `kubectl` invocation may take before the test fails.
pub const KUBECTL_TIMEOUT: Duration = Duration::from_secs(60);
/// The namespaced Flunder collection, relative to the server URL.
pub const FLUNDERS: &str = "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders";

/// The warning kubectl prints for each request to Flunders in v1alpha1, which is deprecated
/// (sample-apiserver's prerelease lifecycle: deprecated in 1.3, removed in 1.10).
pub const V1ALPHA1_WARNING: &str =
    "Warning: wardle.example.com/v1alpha1 Flunder is deprecated in v1.3+, unavailable in v1.10+\n";
/// The cluster-scoped Fischer collection, relative to the server URL.
pub const FISCHERS: &str = "/apis/wardle.example.com/v1alpha1/fischers";

/// A running `wardle local` process. Killed (and reaped) on drop; its temporary directory
/// (certificates, kubeconfig, kubectl cache, log) is removed with it.
pub struct Wardle {
    child: Child,
    dir: tempfile::TempDir,
    /// `https://127.0.0.1:<port>`, as written in the kubeconfig.
    pub url: String,
    /// The bearer token from the kubeconfig.
    pub token: String,
    /// The CA certificate (PEM) from the kubeconfig's `certificate-authority-data`.
    pub ca_pem: String,
    /// Where the server wrote its kubeconfig.
    pub kubeconfig: PathBuf,
    /// Extra `wardle local` flags, as given (kept for restarts).
    args: Vec<String>,
}

impl Wardle {
    /// Starts `wardle local --secure-port 0` in a new temporary directory and waits (at most
    /// [`START_TIMEOUT`]) until it has written its kubeconfig, which it does once listening.
    pub fn start() -> Wardle {
        Self::start_with_args(&[])
    }

    /// Like [`Wardle::start`], with more `wardle local` flags (kept for restarts); `{dir}` in
    /// a flag stands for the server's temporary directory.
    pub fn start_with_args(args: &[&str]) -> Wardle {
        let args = args.iter().map(|a| a.to_string()).collect();
        Self::start_in(
            tempfile::tempdir().expect("create a temporary directory"),
            args,
        )
    }

    /// Kills the server with SIGKILL (no shutdown, nothing flushed) and starts it again in the
    /// same directory, so on the same data (and certificates); its port and token change.
    pub fn kill_and_restart(mut self) -> Wardle {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let dir = std::mem::replace(
            &mut self.dir,
            tempfile::tempdir().expect("create a temporary directory"),
        );
        let args = std::mem::take(&mut self.args);
        drop(self);
        let _ = std::fs::remove_file(dir.path().join("wardle.kubeconfig"));
        Self::start_in(dir, args)
    }

    /// Stops the server (SIGKILL), runs `between` with its directory while it is down (a
    /// `migrate-storage` of its embedded store, say), and starts it again there, as
    /// [`Wardle::kill_and_restart`] does.
    pub fn restart_after(mut self, between: impl FnOnce(&Path)) -> Wardle {
        let _ = self.child.kill();
        let _ = self.child.wait();
        between(self.dir.path());
        self.kill_and_restart()
    }

    /// Starts `wardle local` in `dir` (its working directory, where the data lives by default).
    fn start_in(dir: tempfile::TempDir, args: Vec<String>) -> Wardle {
        let dir_text = dir.path().display().to_string();
        let expanded: Vec<String> = args.iter().map(|a| a.replace("{dir}", &dir_text)).collect();
        let kubeconfig = dir.path().join("wardle.kubeconfig");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.path().join("wardle.log"))
            .expect("open the server log");
        let child = Command::new(env!("CARGO_BIN_EXE_wardle"))
            .arg("local")
            .args(["--secure-port", "0"])
            .arg("--write-kubeconfig")
            .arg(&kubeconfig)
            .arg("--cert-dir")
            .arg(dir.path().join("certificates"))
            .args(&expanded)
            .current_dir(dir.path())
            .env_remove("APISERVER_LOCAL_TOKEN")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone the log handle"))
            .stderr(log)
            .spawn()
            .expect("spawn the wardle binary");
        // From here on, a panic kills the child through Drop.
        let mut server = Wardle {
            child,
            dir,
            args,
            url: String::new(),
            token: String::new(),
            ca_pem: String::new(),
            kubeconfig,
        };
        let written = wait::poll_blocking("wardle to write its kubeconfig", START_TIMEOUT, || {
            if let Some(status) = server.child.try_wait().expect("poll the wardle process") {
                panic!(
                    "wardle exited before serving ({status}); its log:\n{}",
                    server.log()
                );
            }
            server
                .kubeconfig
                .exists()
                .then_some(())
                .ok_or("no kubeconfig yet")
        });
        if let Err(e) = written {
            panic!("{e}; its log:\n{}", server.log());
        }
        let text = std::fs::read_to_string(&server.kubeconfig).expect("read the kubeconfig");
        let doc: serde_yaml_ng::Value =
            serde_yaml_ng::from_str(&text).expect("the kubeconfig is YAML");
        let cluster = &doc["clusters"][0]["cluster"];
        server.url = cluster["server"]
            .as_str()
            .expect("clusters[0].cluster.server")
            .to_string();
        let ca_b64 = cluster["certificate-authority-data"]
            .as_str()
            .expect("clusters[0].cluster.certificate-authority-data");
        server.ca_pem = String::from_utf8(base64_decode(ca_b64)).expect("the CA PEM is UTF-8");
        server.token = doc["users"][0]["user"]["token"]
            .as_str()
            .expect("users[0].user.token")
            .to_string();
        assert!(
            server.url.starts_with("https://127.0.0.1:"),
            "unexpected server URL {:?}",
            server.url
        );
        assert!(
            server.ca_pem.contains("BEGIN CERTIFICATE"),
            "CA is not PEM: {:?}",
            server.ca_pem
        );
        assert!(!server.token.is_empty(), "the kubeconfig holds no token");
        server
    }

    /// The process id of the server (for reading `/proc/<pid>/status`).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The temporary directory of this server (scratch space for tests).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// What the server printed so far (stdout and stderr).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("wardle.log")).unwrap_or_default()
    }

    /// Writes `contents` to `<temp dir>/<name>` and returns the path.
    pub fn write_file(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, contents).expect("write a test file");
        path
    }

    /// A `kubectl` command for this server: its kubeconfig, a cache directory of its own and
    /// stdin closed.
    pub fn kubectl_command(&self, args: &[&str]) -> Command {
        self.kubectl_command_with_cache("kube-cache", args)
    }

    /// A `kubectl` command like [`Wardle::kubectl_command`] whose cache directory is
    /// `<temp dir>/<cache>`, for commands that must not see what earlier ones cached.
    pub fn kubectl_command_with_cache(&self, cache: &str, args: &[&str]) -> Command {
        self.kubectl_command_of(Path::new("kubectl"), cache, args)
    }

    /// A command of the kubectl binary `kubectl` (e.g. [`kubectl_binary`]) like
    /// [`Wardle::kubectl_command_with_cache`].
    pub fn kubectl_command_of(&self, kubectl: &Path, cache: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(kubectl);
        cmd.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(self.dir.path().join(cache))
            .args(args)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null());
        cmd
    }

    /// Runs `kubectl <args>` to completion (failing the test after [`KUBECTL_TIMEOUT`]).
    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_with_timeout(args, KUBECTL_TIMEOUT)
    }

    /// Runs `kubectl <args>`, failing the test if it takes longer than `timeout`.
    pub fn kubectl_with_timeout(&self, args: &[&str], timeout: Duration) -> Output {
        self.run_kubectl(self.kubectl_command(args), args, timeout)
    }

    /// Runs `kubectl <args>` with a cache directory of its own, `<temp dir>/<cache>`.
    pub fn kubectl_with_cache(&self, cache: &str, args: &[&str]) -> Output {
        self.run_kubectl(
            self.kubectl_command_with_cache(cache, args),
            args,
            KUBECTL_TIMEOUT,
        )
    }

    fn run_kubectl(&self, mut cmd: Command, args: &[&str], timeout: Duration) -> Output {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn kubectl");
        let stdout = drain(child.stdout.take().expect("kubectl stdout"));
        let stderr = drain(child.stderr.take().expect("kubectl stderr"));
        let status = wait_with_deadline(&mut child, timeout);
        let stdout = stdout.join().expect("stdout reader");
        let stderr = stderr.join().expect("stderr reader");
        match status {
            Some(status) => Output {
                status,
                stdout,
                stderr,
            },
            None => panic!(
                "kubectl {args:?} did not finish within {timeout:?}\nstdout:\n{}\nstderr:\n{}\nserver log:\n{}",
                String::from_utf8_lossy(&stdout),
                String::from_utf8_lossy(&stderr),
                self.log()
            ),
        }
    }

    /// Runs the kubectl binary `kubectl` with `args` to completion, with a cache directory of
    /// its own, `<temp dir>/<cache>` (failing the test after [`KUBECTL_TIMEOUT`]).
    pub fn kubectl_of(&self, kubectl: &Path, cache: &str, args: &[&str]) -> Output {
        self.run_kubectl(
            self.kubectl_command_of(kubectl, cache, args),
            args,
            KUBECTL_TIMEOUT,
        )
    }

    /// Runs `kubectl <args>` and fails the test unless it exits successfully; returns stdout.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            out.status.success(),
            "kubectl {args:?} failed ({})\nstdout:\n{}\nstderr:\n{}",
            out.status,
            stdout(&out),
            stderr(&out)
        );
        stdout(&out)
    }

    /// Runs `kubectl <args>` and fails the test unless kubectl fails; returns its stderr
    /// (without version-skew warnings).
    pub fn kubectl_err(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            !out.status.success(),
            "kubectl {args:?} succeeded\nstdout:\n{}",
            stdout(&out)
        );
        stderr(&out)
    }

    /// Starts `kubectl <args>` in the background, its output going to files in the temp dir.
    pub fn kubectl_background(&self, name: &str, args: &[&str]) -> Background {
        let out_path = self.dir.path().join(format!("{name}.stdout"));
        let err_path = self.dir.path().join(format!("{name}.stderr"));
        let child = self
            .kubectl_command(args)
            .stdout(File::create(&out_path).expect("create the stdout file"))
            .stderr(File::create(&err_path).expect("create the stderr file"))
            .spawn()
            .expect("spawn kubectl");
        Background {
            child,
            out_path,
            err_path,
        }
    }

    /// The watches the server has open (its `apiserver_registered_watchers` gauges), read
    /// with `kubectl get --raw /metrics`.
    pub fn registered_watchers(&self) -> f64 {
        wait::registered_watchers(&self.kubectl_ok(&["get", "--raw", "/metrics"]))
    }

    /// Waits until the server has at least `count` watches open: a watch started in the
    /// background (`kubectl get -w`, `kubectl wait`) is established once the server counts it.
    pub fn wait_for_watchers(&self, count: usize) {
        let what = format!("{count} watches to be open");
        wait::eventually_blocking(&what, START_TIMEOUT, || {
            self.registered_watchers() >= count as f64
        });
    }

    /// The requests of `request_kind` (`mutating`, `readOnly`) the server is serving now (its
    /// `apiserver_current_inflight_requests` gauge).
    pub async fn inflight(&self, request_kind: &str) -> f64 {
        let res = self.client().get(self.at("/metrics")).send().await;
        let metrics = res.expect("/metrics").text().await.expect("the metrics");
        let labels = [("request_kind", request_kind)];
        wait::metric_sum(&metrics, "apiserver_current_inflight_requests", &labels)
    }

    /// A client trusting the server's CA that sends the bearer token.
    pub fn client(&self) -> reqwest::Client {
        self.client_builder()
            .default_headers({
                let mut headers = reqwest::header::HeaderMap::new();
                let value = format!("Bearer {}", self.token);
                headers.insert(
                    reqwest::header::AUTHORIZATION,
                    reqwest::header::HeaderValue::from_str(&value).expect("token header"),
                );
                headers
            })
            .build()
            .expect("build the HTTPS client")
    }

    /// A client trusting the server's CA that sends no credentials.
    pub fn anonymous_client(&self) -> reqwest::Client {
        self.client_builder()
            .build()
            .expect("build the HTTPS client")
    }

    /// A client builder trusting only the server's CA, with a 30 s timeout.
    pub fn client_builder(&self) -> reqwest::ClientBuilder {
        reqwest::Client::builder()
            .use_preconfigured_tls(tls::http1_config(&self.ca_pem))
            .timeout(Duration::from_secs(30))
    }

    /// `<server url><path>`.
    pub fn at(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }

    /// Sends the server process `signal` (a `kill` signal name such as `TERM`).
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{signal} failed");
    }

    /// Waits up to `timeout` for the server to exit; `None` if it still runs.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        wait::poll_blocking("wardle to exit", timeout, || {
            let status = self.child.try_wait().expect("poll the wardle process");
            status.ok_or("still running")
        })
        .ok()
    }
}

impl Drop for Wardle {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `kubectl` running in the background (e.g. `get -w`). Killed on drop.
pub struct Background {
    child: Child,
    out_path: PathBuf,
    err_path: PathBuf,
}

impl Background {
    /// What it wrote to stdout so far.
    pub fn stdout(&self) -> String {
        std::fs::read_to_string(&self.out_path).unwrap_or_default()
    }

    /// What it wrote to stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.err_path).unwrap_or_default()
    }

    /// Polls stdout until `done` holds; `false` if it did not within `timeout` or the process
    /// exited first.
    pub fn wait_for(&mut self, timeout: Duration, done: impl Fn(&str) -> bool) -> bool {
        // Ok(false): the process exited without the output.
        let outcome = wait::poll_blocking("kubectl's output", timeout, || {
            if done(&self.stdout()) {
                return Ok(true);
            }
            if let Ok(Some(_)) = self.child.try_wait() {
                // One last look: the output may have landed just before the exit.
                return Ok(done(&self.stdout()));
            }
            Err("not yet")
        });
        outcome.unwrap_or(false)
    }

    /// Whether the process is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Kills the process and returns (stdout, stderr).
    pub fn stop(mut self) -> (String, String) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        (self.stdout(), self.stderr())
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// GETs `url` with `client` and reads the answer as JSON (whatever its status).
pub async fn get_json(client: &reqwest::Client, url: impl reqwest::IntoUrl) -> serde_json::Value {
    let res = client.get(url).send().await.expect("an answer");
    res.json().await.expect("a JSON body")
}

/// kubectl's stdout as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The real kubectl 1.`minor`: `kubectl.1.<minor>` on `PATH`, beside the `kubectl` found on
/// `PATH` (following links, as the dispatcher installed on some machines keeps them), or in
/// `target/upstream/kubectl` (`scripts/build-upstream kubectl <minor>`). Fails
/// the test, naming what is missing, when there is none.
pub fn kubectl_binary(minor: u32) -> PathBuf {
    let name = format!("kubectl.1.{minor}");
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    if let Some(found) = dirs.iter().map(|d| d.join(&name)).find(|p| p.is_file()) {
        return found;
    }
    let beside = dirs
        .iter()
        .map(|d| d.join("kubectl"))
        .find(|p| p.is_file())
        .and_then(|k| std::fs::canonicalize(k).ok())
        .and_then(|k| k.parent().map(|d| d.join(&name)))
        .filter(|p| p.is_file());
    // Or as scripts/build-upstream builds it.
    let built = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/upstream/kubectl")
        .join(&name);
    beside.or_else(|| built.is_file().then_some(built)).unwrap_or_else(|| {
        panic!(
            "{name} is not installed: these tests run every kubectl from 1.27 to 1.33, each as \
             kubectl.1.<minor> on PATH or beside kubectl; ./scripts/build-upstream kubectl {minor} builds it"
        )
    })
}

/// kubectl's stderr as text, without the version-skew warnings the kubectl dispatcher on this
/// machine may add.
pub fn stderr(out: &Output) -> String {
    without_skew_warnings(&String::from_utf8_lossy(&out.stderr))
}

/// `text` without lines that are kubectl version-skew warnings.
pub fn without_skew_warnings(text: &str) -> String {
    text.lines()
        .filter(|line| {
            let l = line.to_ascii_lowercase();
            !(l.contains("version") && (l.contains("skew") || l.contains("difference")))
        })
        .map(|line| format!("{line}\n"))
        .collect()
}

fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        buf
    })
}

/// Waits for `child` until `timeout`; on timeout kills it and returns `None`.
fn wait_with_deadline(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let exited = wait::poll_blocking("a child process to exit", timeout, || {
        let status = child.try_wait().expect("poll a child process");
        status.ok_or("still running")
    });
    if exited.is_err() {
        let _ = child.kill();
        let _ = child.wait();
    }
    exited.ok()
}

/// Standard base64 (RFC 4648, with or without padding; whitespace ignored).
pub fn base64_decode(text: &str) -> Vec<u8> {
    fn value(c: u8) -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not a base64 character: {:?}", c as char),
        }
    }
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text
        .bytes()
        .filter(|c| !c.is_ascii_whitespace() && *c != b'=')
    {
        acc = (acc << 6) | value(c);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}

#[test]
fn base64_decodes_padded_and_unpadded_input() {
    assert_eq!(base64_decode("aGVsbG8="), b"hello");
    assert_eq!(base64_decode("aGVsbG8"), b"hello");
    assert_eq!(base64_decode("aGVs\nbG8h"), b"hello!");
    assert_eq!(base64_decode(""), b"");
}
