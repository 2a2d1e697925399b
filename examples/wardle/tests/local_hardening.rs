//! `wardle local` against what an attacker or a careless setup could do to it: metric labels
//! that callers choose, a listening address off loopback, and the modes of the files and
//! directories it creates.

mod support;

use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{BuildHasher, Hasher};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use apiserver_framework::testing::wait;
use futures::StreamExt;
use reqwest::Method;
use support::{FLUNDERS, Wardle, base64_decode};

/// Random lower-case letters and digits (different on every call).
fn random_name() -> String {
    let mut h = RandomState::new().build_hasher();
    h.write_u8(0);
    format!("{:016x}", h.finish())
}

/// Sends every request, 16 at a time; returns how many got each status.
async fn send_all(requests: Vec<reqwest::RequestBuilder>) -> BTreeMap<u16, usize> {
    let codes: Vec<u16> = futures::stream::iter(requests)
        .map(|r| async move { r.send().await.map(|r| r.status().as_u16()).unwrap_or(0) })
        .buffer_unordered(16)
        .collect()
        .await;
    let mut by_code = BTreeMap::new();
    for c in codes {
        *by_code.entry(c).or_insert(0) += 1;
    }
    by_code
}

/// The values of label `label` over the series of `metric` in a text exposition.
fn label_values(text: &str, metric: &str, label: &str) -> BTreeSet<String> {
    let prefix = format!("{metric}{{");
    let key = format!("{label}=\"");
    text.lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .filter_map(|l| {
            let start = l.find(&key)? + key.len();
            let end = l[start..].find('"')? + start;
            Some(l[start..end].to_string())
        })
        .collect()
}

/// Callers choose paths, methods and query strings; the metrics must only name what the
/// server serves, whatever they send, or `/metrics` grows with every new name.
#[tokio::test]
async fn metric_labels_name_only_what_is_served() {
    let w = Wardle::start();
    let anonymous = w.anonymous_client();
    let client = w.client();
    const MARK: &str = "zq";
    let mut requests = Vec::new();
    for _ in 0..100 {
        let r = random_name();
        // Unauthenticated (401), each with a path of its own.
        let paths = [
            format!("/apis/wardle.example.com/v1alpha1/namespaces/default/{MARK}{r}"),
            format!("/apis/{MARK}{r}.example.com/v1/things"),
            format!("{FLUNDERS}/f/{MARK}{r}"),
            format!("/{MARK}{r}"),
            format!("/healthz/{MARK}{r}"),
        ];
        for p in &paths {
            requests.push(anonymous.get(w.at(p)));
        }
        // Authenticated: not found (404), or given up at once (504).
        for p in &paths {
            requests.push(client.get(w.at(p)));
        }
        requests.push(client.get(w.at(&format!("{}?timeout=1ns", paths[0]))));
        requests.push(client.get(w.at(&format!("/{MARK}{r}/x?timeout=1ns"))));
        let method =
            Method::from_bytes(format!("{}{r}", MARK.to_uppercase()).as_bytes()).expect("a method");
        requests.push(client.request(method, w.at(FLUNDERS)));
        requests.push(client.post(w.at(&format!("{FLUNDERS}?dryRun={MARK}{r}"))));
    }
    let codes = send_all(requests).await;
    assert!(!codes.contains_key(&0), "requests failed: {codes:?}");
    assert!(
        codes.contains_key(&401) && codes.contains_key(&404),
        "{codes:?}"
    );

    let text = client
        .get(w.at("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for metric in [
        "apiserver_request_total",
        "apiserver_request_duration_seconds_count",
    ] {
        let resources = label_values(&text, metric, "resource");
        assert!(
            resources
                .iter()
                .all(|r| ["", "flunders", "fischers"].contains(&r.as_str())),
            "{metric}: resource values {resources:?}"
        );
        for label in [
            "verb",
            "dry_run",
            "group",
            "version",
            "subresource",
            "scope",
        ] {
            let values = label_values(&text, metric, label);
            assert!(
                values.len() <= 16,
                "{metric}: {} values of {label}: {values:?}",
                values.len()
            );
        }
    }
    let marked: Vec<&str> = text
        .lines()
        .filter(|l| l.to_lowercase().contains(MARK))
        .take(5)
        .collect();
    assert!(
        marked.is_empty(),
        "caller-chosen names in /metrics: {marked:#?}"
    );
    assert!(
        text.len() < 400 * 1024,
        "/metrics is {} bytes after 1,200 requests",
        text.len()
    );
}

/// Runs `wardle local` with `args` in `dir` until it exits (at most 20 s); returns its exit
/// status and stderr, or `None` if it was still running (and was killed).
fn run_local(dir: &Path, args: &[&str]) -> Option<(std::process::ExitStatus, String)> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_wardle"))
        .arg("local")
        .args(args)
        .current_dir(dir)
        .env_remove("APISERVER_LOCAL_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn wardle");
    let exited = wait::poll_blocking("wardle to exit", Duration::from_secs(20), || {
        let status = child.try_wait().expect("poll wardle");
        status.ok_or("still running")
    });
    let Ok(status) = exited else {
        let _ = child.kill();
        let _ = child.wait();
        return None;
    };
    let mut err = String::new();
    use std::io::Read;
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .expect("read stderr");
    Some((status, err))
}

/// A non-loopback address of this machine (the one its default route would use), or a
/// documentation address when there is none.
fn lan_address() -> String {
    std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| s.connect("192.0.2.1:9").map(|_| s))
        .and_then(|s| s.local_addr())
        .map(|a| a.ip())
        .ok()
        .filter(|ip| !ip.is_loopback() && !ip.is_unspecified())
        .map(|ip| ip.to_string())
        .unwrap_or_else(|| "192.0.2.10".into())
}

/// `local` mode lets a `system:masters` token do anything, so it must not listen beyond this
/// machine.
#[test]
fn local_mode_refuses_non_loopback_addresses() {
    let lan = lan_address();
    for address in ["0.0.0.0", "::", lan.as_str()] {
        let dir = tempfile::tempdir().unwrap();
        let outcome = run_local(
            dir.path(),
            &["--bind-address", address, "--secure-port", "0"],
        );
        let Some((status, stderr)) = outcome else {
            panic!("wardle local --bind-address {address} kept running");
        };
        assert!(!status.success(), "--bind-address {address}: {status}");
        assert!(
            stderr.contains("loopback") && stderr.contains(address),
            "--bind-address {address}: {stderr}"
        );
        // Refused before anything was created.
        assert!(
            !dir.path().join("wardle.kubeconfig").exists(),
            "--bind-address {address} wrote a kubeconfig"
        );
    }
}

/// Loopback addresses, IPv4 and IPv6, still serve.
#[tokio::test]
async fn local_mode_serves_on_loopback_addresses() {
    for (address, host) in [("127.0.0.1", "127.0.0.1"), ("::1", "[::1]")] {
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("k.kubeconfig");
        let mut child = Command::new(env!("CARGO_BIN_EXE_wardle"))
            .arg("local")
            .args(["--bind-address", address, "--secure-port", "0"])
            .arg("--write-kubeconfig")
            .arg(&kubeconfig)
            .current_dir(dir.path())
            .env_remove("APISERVER_LOCAL_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn wardle");
        let what = format!("a kubeconfig for {address}");
        wait::eventually_blocking(&what, Duration::from_secs(20), || {
            if let Some(status) = child.try_wait().unwrap() {
                panic!("wardle local --bind-address {address} exited: {status}");
            }
            kubeconfig.exists()
        });
        let doc: serde_yaml_ng::Value =
            serde_yaml_ng::from_str(&std::fs::read_to_string(&kubeconfig).unwrap()).unwrap();
        let cluster = &doc["clusters"][0]["cluster"];
        let url = cluster["server"].as_str().unwrap().to_string();
        let ca = base64_decode(cluster["certificate-authority-data"].as_str().unwrap());
        assert!(url.starts_with(&format!("https://{host}:")), "{url}");
        let ca = String::from_utf8(ca).unwrap();
        let client = reqwest::Client::builder()
            .use_preconfigured_tls(apiserver_framework::testing::tls::http1_config(&ca))
            .build()
            .unwrap();
        let res = client.get(format!("{url}/healthz")).send().await;
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(res.expect("healthz answers").status(), 200, "{address}");
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o7777
}

/// What `wardle local` creates holds a credential (the kubeconfig's token, the serving key),
/// the stored objects or the audit trail: readable by the owner only.
#[test]
fn local_mode_creates_private_files() {
    let policy = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n";
    let probe = tempfile::tempdir().unwrap();
    let policy_path = probe.path().join("policy.yaml");
    std::fs::write(&policy_path, policy).unwrap();
    let w = Wardle::start_with_args(&[
        "--audit-policy-file",
        policy_path.to_str().unwrap(),
        "--audit-log-path",
        "{dir}/audit/logs/audit.log",
    ]);
    let dir = w.dir();
    let private_dirs = [
        dir.join("certificates"),
        dir.join("apiserver.local.config"),
        dir.join("apiserver.local.config/data"),
        dir.join("audit"),
        dir.join("audit/logs"),
    ];
    for d in &private_dirs {
        assert_eq!(mode(d), 0o700, "{}", d.display());
    }
    let private_files = [
        dir.join("certificates/apiserver.key"),
        dir.join("wardle.kubeconfig"),
        dir.join("apiserver.local.config/data/storage.redb"),
        dir.join("audit/logs/audit.log"),
    ];
    // The audit log is created with the first event.
    wait::eventually_blocking("the audit log", Duration::from_secs(10), || {
        private_files[3].exists()
    });
    for f in &private_files {
        assert_eq!(mode(f), 0o600, "{}", f.display());
    }
    // The certificate is public, but nobody else may change it.
    let cert = mode(&dir.join("certificates/apiserver.crt"));
    assert_eq!(cert & 0o022, 0, "apiserver.crt is {cert:o}");
    // No temporary file is left behind.
    let leftovers: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .chain(std::fs::read_dir(dir.join("certificates")).unwrap())
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
