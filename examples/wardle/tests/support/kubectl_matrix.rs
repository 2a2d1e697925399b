//! The client matrix shared by the tests of every host: every kubectl from 1.27 to 1.33 running
//! the resource commands, kube-rs' two discovery algorithms, and the official Python client.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use kube::discovery::Discovery;
use serde_json::{Value, json};

use super::{KUBECTL_TIMEOUT, kubectl_binary, wait_with_deadline};

/// `kubectl explain` of v1alpha1 Flunders' spec.
pub const EXPLAIN_FLUNDERS_SPEC: [&str; 3] = [
    "explain",
    "flunders.spec",
    "--api-version=wardle.example.com/v1alpha1",
];

/// The kubectl minor versions every test drives the server with.
pub const KUBECTL_MINORS: std::ops::RangeInclusive<u32> = 27..=33;

/// Runs `kubectl --kubeconfig <kubeconfig> --cache-dir <cache> <args>` with stdin closed, `stdin`
/// (if any) fed from a file, failing the test after [`KUBECTL_TIMEOUT`].
pub fn run_kubectl(
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
    let status = wait_with_deadline(&mut child, KUBECTL_TIMEOUT).unwrap_or_else(|| {
        panic!(
            "{} {args:?} did not finish within {KUBECTL_TIMEOUT:?}",
            bin.display()
        )
    });
    Output {
        status,
        stdout: std::fs::read(&out_path).unwrap_or_default(),
        stderr: std::fs::read(&err_path).unwrap_or_default(),
    }
}

/// One kubectl version pointed at one server as one user.
pub struct Kubectl {
    pub minor: u32,
    bin: PathBuf,
    kubeconfig: PathBuf,
    cache: PathBuf,
}

impl Kubectl {
    /// Runs `kubectl auth can-i <args>` and fails the test unless the answer is `yes`.
    pub fn can(&self, args: &[&str]) {
        let answer = self.ok(&[&["auth", "can-i"], args].concat());
        assert_eq!(
            answer.trim(),
            "yes",
            "kubectl 1.{}: can-i {args:?}",
            self.minor
        );
    }

    /// Runs `kubectl auth can-i <args>` and fails the test unless the answer is `no` (exit 1).
    pub fn cannot(&self, args: &[&str]) {
        let out = self.run(&[&["auth", "can-i"], args].concat(), None);
        assert_eq!(
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stdout).trim()
            ),
            (Some(1), "no"),
            "kubectl 1.{}: can-i {args:?}; stderr: {}",
            self.minor,
            super::without_skew_warnings(&String::from_utf8_lossy(&out.stderr))
        );
    }

    pub fn new(minor: u32, kubeconfig: &Path, scratch: &Path) -> Kubectl {
        Kubectl {
            minor,
            bin: kubectl_binary(minor),
            kubeconfig: kubeconfig.to_path_buf(),
            cache: scratch.join(format!("kube-cache-1.{minor}")),
        }
    }

    pub fn run(&self, args: &[&str], stdin: Option<&Path>) -> Output {
        run_kubectl(&self.bin, &self.kubeconfig, &self.cache, args, stdin)
    }

    /// Runs `args` and fails the test unless it succeeds; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        self.ok_with(args, None)
    }

    pub fn ok_with(&self, args: &[&str], stdin: Option<&Path>) -> String {
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
pub fn flunder_manifest(dir: &Path, name: &str) -> PathBuf {
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
pub fn resource_commands_work(k: &Kubectl, scratch: &Path) {
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

    let explained = k.ok(&EXPLAIN_FLUNDERS_SPEC);
    assert!(
        explained.contains("referenceType") && explained.contains("Defaults to `Flunder`"),
        "kubectl 1.{minor} explain:\n{explained}"
    );
}

pub async fn kube_client(kubeconfig: &Path) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig).expect("read the kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("configure the client");
    kube::Client::try_from(config).expect("build the client")
}

/// Both discovery algorithms of kube-rs find wardle's group with its resources.
pub async fn discovery_finds_wardle(client: kube::Client) {
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

/// The Python interpreter with the `kubernetes` package: `APISERVER_TEST_PYTHON`, or the
/// virtual environment `scripts/install-test-deps` makes in the workspace's `target/`.
pub fn python() -> PathBuf {
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
