//! Real clients against wardle, in `local` mode and through the dev host's aggregator: kube-rs'
//! discovery (legacy and aggregated), every kubectl from 1.27 to 1.33 (`api-resources`, `create`,
//! `get`, `explain`, `auth whoami`, `auth can-i`), and the official Python client's dynamic
//! client. Also sample-apiserver's Flunder defaulting and validation, over HTTPS.

mod support;

#[allow(dead_code)]
#[path = "production/stack.rs"]
mod stack;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use apiserver_framework::devhost::files::users;
use kube::discovery::Discovery;
use serde_json::{Value, json};
use stack::Stack;
use support::{FLUNDERS, KUBECTL_TIMEOUT, Wardle, kubectl_binary, without_skew_warnings};

/// The kubectl minor versions every test drives the server with.
const KUBECTL_MINORS: std::ops::RangeInclusive<u32> = 27..=33;

// ---------------------------------------------------------------------------------------------
// helpers

/// Runs `kubectl --kubeconfig <kubeconfig> --cache-dir <cache> <args>` with stdin closed, `stdin`
/// (if any) fed from a file, failing the test after [`KUBECTL_TIMEOUT`].
fn run_kubectl(
    bin: &Path,
    kubeconfig: &Path,
    cache: &Path,
    args: &[&str],
    stdin: Option<&Path>,
) -> Output {
    let input = match stdin {
        Some(p) => Stdio::from(std::fs::File::open(p).expect("open the manifest")),
        None => Stdio::null(),
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (out_path, err_path) = (dir.path().join("out"), dir.path().join("err"));
    let mut child = Command::new(bin)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .env_remove("KUBECONFIG")
        .stdin(input)
        .stdout(std::fs::File::create(&out_path).expect("create the stdout file"))
        .stderr(std::fs::File::create(&err_path).expect("create the stderr file"))
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {}: {e}", bin.display()));
    let deadline = Instant::now() + KUBECTL_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("poll kubectl") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{} {args:?} did not finish within {KUBECTL_TIMEOUT:?}",
                bin.display()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: std::fs::read(&out_path).unwrap_or_default(),
        stderr: std::fs::read(&err_path).unwrap_or_default(),
    }
}

/// One kubectl version pointed at one server as one user.
struct Kubectl {
    minor: u32,
    bin: PathBuf,
    kubeconfig: PathBuf,
    cache: PathBuf,
}

impl Kubectl {
    fn new(minor: u32, kubeconfig: &Path, scratch: &Path) -> Kubectl {
        Kubectl {
            minor,
            bin: kubectl_binary(minor),
            kubeconfig: kubeconfig.to_path_buf(),
            cache: scratch.join(format!("kube-cache-1.{minor}")),
        }
    }

    fn run(&self, args: &[&str], stdin: Option<&Path>) -> Output {
        run_kubectl(&self.bin, &self.kubeconfig, &self.cache, args, stdin)
    }

    /// Runs `args` and fails the test unless it succeeds; returns stdout.
    fn ok(&self, args: &[&str]) -> String {
        self.ok_with(args, None)
    }

    fn ok_with(&self, args: &[&str], stdin: Option<&Path>) -> String {
        let out = self.run(args, stdin);
        assert!(
            out.status.success(),
            "kubectl 1.{} {args:?} failed ({})\nstdout:\n{}\nstderr:\n{}",
            self.minor,
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// A Flunder manifest with a reference and no `referenceType`.
fn flunder_manifest(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &path,
        format!(
            "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n  reference: the-other\n"
        ),
    )
    .expect("write the manifest");
    path
}

/// `api-resources`, `create` (of a Flunder without `referenceType`), `get` (table and JSON,
/// where the type was defaulted) and `explain` with one kubectl.
fn resource_commands_work(k: &Kubectl, scratch: &Path) {
    let minor = k.minor;
    let resources = k.ok(&["api-resources"]);
    let line = resources
        .lines()
        .find(|l| l.starts_with("flunders "))
        .unwrap_or_else(|| {
            panic!("kubectl 1.{minor} api-resources lists no flunders:\n{resources}")
        });
    assert!(
        line.contains("wardle.example.com/v1beta1") && line.contains("Flunder"),
        "kubectl 1.{minor}: {line}"
    );

    let name = format!("made-by-1-{minor}");
    let created = k.ok_with(
        &["create", "-f", "-"],
        Some(&flunder_manifest(scratch, &name)),
    );
    assert_eq!(
        created.trim(),
        format!("flunder.wardle.example.com/{name} created"),
        "kubectl 1.{minor}"
    );
    let table = k.ok(&["get", "flunders"]);
    let row = table
        .lines()
        .find(|l| l.starts_with(&format!("{name} ")))
        .unwrap_or_else(|| panic!("kubectl 1.{minor} get lists no {name}:\n{table}"));
    assert!(row.contains("the-other"), "kubectl 1.{minor}: {row}");
    let obj: Value = serde_json::from_str(&k.ok(&["get", "flunder", &name, "-o", "json"]))
        .expect("get -o json prints JSON");
    // Read through the preferred version, v1beta1.
    assert_eq!(
        obj["spec"],
        json!({"flunderReference": "the-other", "referenceType": "Flunder"}),
        "kubectl 1.{minor}: the stored Flunder"
    );

    let explained = k.ok(&[
        "explain",
        "flunders.spec",
        "--api-version=wardle.example.com/v1alpha1",
    ]);
    assert!(
        explained.contains("referenceType") && explained.contains("Defaults to `Flunder`"),
        "kubectl 1.{minor} explain:\n{explained}"
    );
}

// ---------------------------------------------------------------------------------------------
// kube-rs

async fn kube_client(kubeconfig: &Path) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig).expect("read the kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("configure the client");
    kube::Client::try_from(config).expect("build the client")
}

/// Both discovery algorithms of kube-rs find wardle's group with its resources.
async fn discovery_finds_wardle(client: kube::Client) {
    let legacy = Discovery::new(client.clone())
        .run()
        .await
        .expect("Discovery::run");
    let aggregated = Discovery::new(client)
        .run_aggregated()
        .await
        .expect("Discovery::run_aggregated");
    for (how, discovery) in [("run", legacy), ("run_aggregated", aggregated)] {
        let group = discovery
            .get("wardle.example.com")
            .unwrap_or_else(|| panic!("{how} found no wardle.example.com"));
        // The preferred version, v1beta1, has Flunder; Fischer is in v1alpha1 only.
        let kinds = |resources: Vec<(kube::discovery::ApiResource, _)>| -> Vec<String> {
            resources.into_iter().map(|(r, _)| r.kind).collect()
        };
        assert_eq!(group.preferred_version(), Some("v1beta1"), "{how}");
        assert_eq!(kinds(group.recommended_resources()), ["Flunder"], "{how}");
        let alpha = kinds(group.versioned_resources("v1alpha1"));
        assert!(
            alpha.iter().any(|k| k == "Flunder") && alpha.iter().any(|k| k == "Fischer"),
            "{how}: {alpha:?}"
        );
        // The cluster's core group is there too (kube-rs' legacy discovery needs it).
        assert!(discovery.has_group(""), "{how} found no core group");
    }
}

#[tokio::test]
async fn kube_rs_discovery_finds_wardle_in_local_mode() {
    let w = Wardle::start();
    discovery_finds_wardle(kube_client(&w.kubeconfig).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_discovery_finds_wardle_through_the_dev_host() {
    let stack = Stack::start(&[]).await;
    let admin = stack.host.files.kubeconfig_path(users::ADMIN);
    discovery_finds_wardle(kube_client(&admin).await).await;
}

// ---------------------------------------------------------------------------------------------
// kubectl

/// Every kubectl from 1.27 to 1.33, one after another against one `wardle local`: the resource
/// commands, `auth whoami` (the local user) and `auth can-i` (local mode allows everything).
#[test]
fn every_kubectl_works_in_local_mode() {
    let w = Wardle::start();
    for minor in KUBECTL_MINORS {
        let k = Kubectl::new(minor, &w.kubeconfig, w.dir());
        resource_commands_work(&k, w.dir());

        let whoami = k.ok(&["auth", "whoami"]);
        let username = whoami
            .lines()
            .find(|l| l.starts_with("Username"))
            .unwrap_or_else(|| panic!("kubectl 1.{minor} auth whoami:\n{whoami}"));
        assert_eq!(
            username.split_whitespace().collect::<Vec<_>>(),
            ["Username", "local-admin"],
            "kubectl 1.{minor}"
        );
        assert_eq!(
            k.ok(&["auth", "can-i", "create", "flunders"]).trim(),
            "yes",
            "kubectl 1.{minor}"
        );
        let rules = k.ok(&["auth", "can-i", "--list"]);
        assert!(
            rules
                .lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["*.*", "[]", "[]", "[*]"]),
            "kubectl 1.{minor} auth can-i --list:\n{rules}"
        );
    }
    // Every create landed.
    let names: Vec<String> = String::from_utf8_lossy(
        &run_kubectl(
            &kubectl_binary(33),
            &w.kubeconfig,
            &w.dir().join("kube-cache-final"),
            &["get", "flunders", "-o", "name"],
            None,
        )
        .stdout,
    )
    .lines()
    .map(str::to_string)
    .collect();
    let expected: Vec<String> = KUBECTL_MINORS
        .map(|m| format!("flunder.wardle.example.com/made-by-1-{m}"))
        .collect();
    assert_eq!(names, expected);
}

/// Every kubectl from 1.27 to 1.33 through the dev host's aggregator to `wardle serve`: the
/// resource commands as the host's admin, and the host's own answers to `auth whoami` and
/// `auth can-i` for its users (alice edits, bob only reads).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kubectl_works_through_the_dev_host() {
    let stack = Stack::start(&[]).await;
    let kubeconfig = |user: &str| stack.host.files.kubeconfig_path(user);
    let (admin, alice, bob) = (
        kubeconfig(users::ADMIN),
        kubeconfig(users::ALICE),
        kubeconfig(users::BOB),
    );
    let scratch = stack.path("kubectl");
    std::fs::create_dir_all(&scratch).unwrap();
    // kubectl blocks; the host runs on this runtime's other worker meanwhile.
    tokio::task::spawn_blocking(move || {
        for minor in KUBECTL_MINORS {
            let admin = Kubectl::new(minor, &admin, &scratch);
            resource_commands_work(&admin, &scratch);
            let whoami = admin.ok(&["auth", "whoami"]);
            assert!(
                whoami
                    .lines()
                    .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["Username", users::ADMIN]),
                "kubectl 1.{minor} auth whoami:\n{whoami}"
            );
            let alice = Kubectl::new(minor, &alice, &scratch);
            assert_eq!(
                alice.ok(&["auth", "can-i", "create", "flunders"]).trim(),
                "yes",
                "kubectl 1.{minor}: alice"
            );
            let bob = Kubectl::new(minor, &bob, &scratch);
            let out = bob.run(&["auth", "can-i", "create", "flunders"], None);
            assert_eq!(
                (
                    out.status.code(),
                    String::from_utf8_lossy(&out.stdout).trim()
                ),
                (Some(1), "no"),
                "kubectl 1.{minor}: bob; stderr: {}",
                without_skew_warnings(&String::from_utf8_lossy(&out.stderr))
            );
        }
    })
    .await
    .expect("the kubectl runs");
}

// ---------------------------------------------------------------------------------------------
// the Python client

/// The Python interpreter with the `kubernetes` package: `APISERVER_TEST_PYTHON`, or the
/// virtual environment `scripts/install-test-deps` makes in the workspace's `target/`.
fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("APISERVER_TEST_PYTHON") {
        return PathBuf::from(p);
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/python-venv/bin/python");
    assert!(
        venv.is_file(),
        "{} is missing: run ./scripts/install-test-deps (it installs the Python client `kubernetes` there)",
        venv.display()
    );
    venv
}

#[tokio::test]
async fn python_dynamic_client_lists_flunders_in_local_mode() {
    let w = Wardle::start();
    let client = w.client();
    for name in ["py-one", "py-two"] {
        let res = client
            .post(w.at(FLUNDERS))
            .json(
                &json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
                          "metadata": {"name": name}, "spec": {"reference": "x"}}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 201, "{}", res.text().await.unwrap());
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/list_flunders.py");
    let out = tokio::process::Command::new(python())
        .arg(&script)
        .arg(&w.kubeconfig)
        .arg("default")
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .output();
    let out = tokio::time::timeout(KUBECTL_TIMEOUT, out)
        .await
        .expect("the Python client finishes in time")
        .expect("run python");
    assert!(
        out.status.success(),
        "the Python client failed ({})\nstdout:\n{}\nstderr:\n{}\nserver log:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        w.log()
    );
    let answer: Value = serde_json::from_slice(&out.stdout).expect("the script prints JSON");
    assert_eq!(
        answer,
        json!({"version": "v1.33.0", "kind": "Flunder", "namespaced": true,
               "names": ["py-one", "py-two"]})
    );
}

// ---------------------------------------------------------------------------------------------
// sample-apiserver's defaulting and validation

#[tokio::test]
async fn flunders_are_defaulted_and_validated_as_sample_apiserver_does() {
    let w = Wardle::start();
    let client = w.client();
    let post = |spec: Value, name: &str| {
        client
            .post(w.at(FLUNDERS))
            .json(
                &json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
                          "metadata": {"name": name}, "spec": spec}),
            )
            .send()
    };
    // A reference without a type refers to a Flunder.
    let res = post(json!({"reference": "other"}), "defaulted")
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let created: Value = res.json().await.unwrap();
    assert_eq!(
        created["spec"],
        json!({"reference": "other", "referenceType": "Flunder"})
    );
    // A type without a reference is invalid, in upstream's words.
    for (kind, field) in [
        ("Flunder", "flunderReference"),
        ("Fischer", "fischerReference"),
    ] {
        let res = post(json!({"referenceType": kind}), "typed").await.unwrap();
        assert_eq!(res.status(), 422);
        let status: Value = res.json().await.unwrap();
        assert_eq!(status["reason"], "Invalid");
        assert_eq!(
            status["message"],
            format!(
                "Flunder.wardle.example.com \"typed\" is invalid: spec.{field}: Invalid value: \"\": cannot be empty if referenceType is {kind}"
            )
        );
        assert_eq!(
            status["details"]["causes"],
            json!([{"reason": "FieldValueInvalid", "field": format!("spec.{field}"),
                    "message": format!("Invalid value: \"\": cannot be empty if referenceType is {kind}")}])
        );
    }
    // Upstream's strategy validates no update: the same spec is accepted by a replace.
    let mut replaced = created.clone();
    replaced["spec"] = json!({"referenceType": "Fischer"});
    let res = client
        .put(w.at(&format!("{FLUNDERS}/defaulted")))
        .json(&replaced)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let after: Value = res.json().await.unwrap();
    assert_eq!(after["spec"], json!({"referenceType": "Fischer"}));
}
