//! The metrics server with real clients: `kubectl top node`, `kubectl get nodemetrics` (wide,
//! label selectors) and `kubectl delete` (405) against `metrics local`; and behind the dev
//! host's aggregator, `kubectl top node` as the host's admin and a 403 for a user the host's
//! rules give nothing in `metrics.k8s.io`.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use apiserver_framework::devhost::node::hostname;
use apiserver_framework::devhost::{DevHostOptions, files};
use apiserver_framework::duration::GoDuration;
use apiserver_framework::testing::wait;
use serde_json::Value;

const TIMEOUT: Duration = Duration::from_secs(30);
const NODES: &str = "/apis/metrics.k8s.io/v1beta1/nodes";

/// A child process killed on drop.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn kubectl(kubeconfig: &Path, cache: &Path, args: &[&str]) -> Output {
    Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .output()
        .expect("run kubectl")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "kubectl failed: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// The line of `kubectl top node` for this machine, split into its columns.
fn top_line(stdout: &str) -> Vec<String> {
    let mut lines = stdout.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split_whitespace().collect();
    assert_eq!(
        header,
        ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"],
        "{stdout}"
    );
    let line = lines
        .find(|l| l.split_whitespace().next() == Some(hostname().as_str()))
        .unwrap_or_else(|| panic!("no line for {} in {stdout}", hostname()));
    line.split_whitespace().map(str::to_string).collect()
}

/// Checks `kubectl top node`'s figures: millicores, a CPU percentage, MiB of memory in use
/// below the machine's total, and a memory percentage.
fn check_top(stdout: &str) {
    let cols = top_line(stdout);
    let millicores: u64 = cols[1]
        .strip_suffix('m')
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("CPU(cores) {:?}", cols[1]));
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    assert!(
        millicores <= cpus * 1000 + 100,
        "{millicores}m on {cpus} CPUs"
    );
    assert!(cols[2].ends_with('%'), "{cols:?}");
    let mib: u64 = cols[3]
        .strip_suffix("Mi")
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("MEMORY(bytes) {:?}", cols[3]));
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let total_kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(
        mib > 0 && mib * 1024 <= total_kib,
        "{mib}Mi of {total_kib}Ki"
    );
    let percent: u64 = cols[4].trim_end_matches('%').parse().unwrap();
    assert!(percent <= 100, "{cols:?}");
}

/// `metrics local` and kubectl: top, get (wide, selectors, Table), raw JSON, discovery, and a
/// delete refused with upstream's 405.
#[test]
fn kubectl_against_local_mode() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("metrics.kubeconfig");
    let log = std::fs::File::create(dir.path().join("log")).unwrap();
    let _server = Server(
        Command::new(env!("CARGO_BIN_EXE_metrics"))
            .args(["local", "--secure-port", "0", "--write-kubeconfig"])
            .arg(&kubeconfig)
            .arg("--cert-dir")
            .arg(dir.path().join("certs"))
            .current_dir(dir.path())
            .env_remove("APISERVER_LOCAL_TOKEN")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("spawn metrics"),
    );
    let written = wait::poll_blocking("a kubeconfig", TIMEOUT, || {
        kubeconfig.exists().then_some(()).ok_or("not yet")
    });
    if let Err(e) = written {
        panic!(
            "{e}: {}",
            std::fs::read_to_string(dir.path().join("log")).unwrap_or_default()
        );
    }
    let cache = dir.path().join("cache");
    let k = |args: &[&str]| kubectl(&kubeconfig, &cache, args);
    let host = hostname();

    check_top(&ok(&k(&["top", "node"])));
    check_top(&ok(&k(&["top", "node", "-l", "kubernetes.io/os=linux"])));
    check_top(&ok(&k(&["top", "node", &host])));

    let out = ok(&k(&["get", "nodemetrics"]));
    let header: Vec<&str> = out.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "CPU", "MEMORY", "AGE"], "{out}");
    assert!(out.lines().nth(1).unwrap().starts_with(&host), "{out}");
    let out = ok(&k(&["get", "nodemetrics", "-o", "wide"]));
    let header: Vec<&str> = out.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "CPU", "MEMORY", "WINDOW", "AGE"], "{out}");
    let selected = format!("kubernetes.io/hostname={host}");
    assert!(ok(&k(&["get", "nodemetrics", "-l", &selected])).contains(&host));
    let none = k(&["get", "nodemetrics", "-l", "kubernetes.io/os=windows"]);
    assert!(none.status.success());
    assert_eq!(text(&none.stdout), "");
    assert!(
        text(&none.stderr).contains("No resources found"),
        "{}",
        text(&none.stderr)
    );

    // metrics-server's shape.
    let m: Value =
        serde_json::from_str(&ok(&k(&["get", "--raw", &format!("{NODES}/{host}")]))).unwrap();
    assert_eq!(m["kind"], "NodeMetrics");
    assert_eq!(m["apiVersion"], "metrics.k8s.io/v1beta1");
    assert_eq!(m["metadata"]["name"], host.as_str());
    assert_eq!(m["metadata"]["labels"]["kubernetes.io/os"], "linux");
    let cpu = m["usage"]["cpu"].as_str().unwrap();
    assert!(
        cpu.strip_suffix('n').unwrap().parse::<u64>().is_ok(),
        "{cpu}"
    );
    let memory = m["usage"]["memory"].as_str().unwrap();
    assert!(
        memory.strip_suffix("Ki").unwrap().parse::<u64>().unwrap() > 0,
        "{memory}"
    );
    let window: GoDuration = m["window"].as_str().unwrap().parse().unwrap();
    assert!(window.0 > Duration::ZERO);
    assert!(m["timestamp"].as_str().unwrap().ends_with('Z'));
    // Paging: one object, one page.
    let page: Value =
        serde_json::from_str(&ok(&k(&["get", "--raw", &format!("{NODES}?limit=1")]))).unwrap();
    assert_eq!(page["items"].as_array().unwrap().len(), 1);
    assert!(page["metadata"].get("continue").is_none(), "{page}");
    // A missing node is a 404; an unknown field selector a 400.
    let out = k(&["get", "nodemetrics", "nope"]);
    assert!(
        text(&out.stderr).contains("Error from server (NotFound)"),
        "{}",
        text(&out.stderr)
    );
    let out = k(&["get", "nodemetrics", "--field-selector", "usage.cpu=1"]);
    assert!(
        text(&out.stderr).contains("field label not supported: usage.cpu"),
        "{}",
        text(&out.stderr)
    );

    // Read-only: every write is upstream's 405 for a route that does not exist.
    let out = k(&["delete", "nodemetrics", &host]);
    assert!(!out.status.success());
    assert_eq!(
        text(&out.stderr).trim(),
        "Error from server (MethodNotAllowed): the server does not allow this method on the requested resource"
    );

    // Discovery: get and list only.
    let list: Value =
        serde_json::from_str(&ok(&k(&["get", "--raw", "/apis/metrics.k8s.io/v1beta1"]))).unwrap();
    let nodes = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "nodes")
        .cloned()
        .unwrap();
    assert_eq!(nodes["verbs"], serde_json::json!(["get", "list"]));
    assert_eq!(nodes["kind"], "NodeMetrics");
    assert_eq!(nodes["namespaced"], false);
}

/// `metrics serve` behind the dev host: `kubectl top node` through the aggregator (the host
/// serves this machine's Node), and a 403 for a user without rules in `metrics.k8s.io`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_the_dev_hosts_aggregator() {
    let dir = tempfile::tempdir().unwrap();
    let backend_port = apiserver_framework::testing::free_port().unwrap();
    let opts = DevHostOptions {
        secure_port: 0,
        dir: dir.path().join("dev-host"),
        backend_address: ([127, 0, 0, 1], backend_port).into(),
        availability_check_interval: GoDuration(Duration::from_millis(500)),
        ..Default::default()
    };
    // The host's token users, and carol, whom no rule names.
    std::fs::create_dir_all(&opts.dir).unwrap();
    let identity_user = files::server_identity("metrics");
    std::fs::write(
        opts.dir.join("tokens.csv"),
        format!(
            "admin-token-0123456789,admin,1,\"system:masters\"\n\
             identity-token-0123456789,{identity_user},4,\"system:serviceaccounts\"\n\
             carol-token-0123456789,carol,5\n"
        ),
    )
    .unwrap();
    let host = metrics::app()
        .start_dev_host(&opts)
        .await
        .expect("the dev host starts");
    let f = &host.files;
    let identity = f.kubeconfig_path(&files::server_identity("metrics"));
    let log = std::fs::File::create(dir.path().join("metrics.log")).unwrap();
    let _server = Server(
        Command::new(env!("CARGO_BIN_EXE_metrics"))
            .args(["serve", "--bind-address", "127.0.0.1", "--secure-port"])
            .arg(backend_port.to_string())
            .arg("--tls-cert-file")
            .arg(&f.backend_cert.cert_path)
            .arg("--tls-private-key-file")
            .arg(&f.backend_cert.key_path)
            .arg("--authentication-kubeconfig")
            .arg(&identity)
            .arg("--authorization-kubeconfig")
            .arg(&identity)
            .arg("--kubeconfig")
            .arg(&identity)
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("spawn metrics"),
    );
    let client = || {
        reqwest::Client::builder()
            .use_preconfigured_tls(apiserver_framework::testing::tls::http1_config(&f.ca_pem))
            .timeout(Duration::from_secs(20))
            .build()
            .unwrap()
    };
    let admin_token = "admin-token-0123456789";
    // Wait until the aggregator proxies the group (its APIService is available).
    let url = format!("{}{NODES}", host.url);
    let served = wait::poll("metrics served through the host", TIMEOUT, || async {
        match client().get(&url).bearer_auth(admin_token).send().await {
            Ok(res) if res.status() == 200 => Ok(()),
            Ok(res) => Err(res.status().to_string()),
            Err(e) => Err(e.to_string()),
        }
    })
    .await;
    if let Err(e) = served {
        panic!(
            "{e}; its log:\n{}",
            std::fs::read_to_string(dir.path().join("metrics.log")).unwrap_or_default()
        );
    }

    let admin = f.kubeconfig_path("admin");
    let cache = dir.path().join("cache");
    let k = |args: &[&str]| kubectl(&admin, &cache, args);
    check_top(&ok(&k(&["top", "node"])));
    let out = ok(&k(&["get", "nodemetrics"]));
    assert!(out.contains(&hostname()), "{out}");

    // carol, a user of the host without rules in metrics.k8s.io, is refused.
    let carol = dir.path().join("carol.kubeconfig");
    let admin_text = std::fs::read_to_string(f.kubeconfig_path("admin")).unwrap();
    assert!(admin_text.contains(admin_token));
    std::fs::write(
        &carol,
        admin_text.replace(admin_token, "carol-token-0123456789"),
    )
    .unwrap();
    let out = kubectl(
        &carol,
        &dir.path().join("cache-carol"),
        &["get", "nodemetrics"],
    );
    assert!(!out.status.success());
    assert_eq!(
        text(&out.stderr).trim(),
        "Error from server (Forbidden): nodes.metrics.k8s.io is forbidden: User \"carol\" cannot list resource \"nodes\" in API group \"metrics.k8s.io\" at the cluster scope"
    );
    let out = kubectl(&carol, &dir.path().join("cache-carol"), &["top", "node"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("Forbidden"),
        "{}",
        text(&out.stderr)
    );
    let res = client()
        .get(&url)
        .bearer_auth("carol-token-0123456789")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 403);
    let status: Value = res.json().await.unwrap();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "Forbidden");
    drop(host);
}
