//! Issue 49: the `kms` provider (KMS v2) against a real plugin process: upstream's KMS v2 gRPC
//! service (`k8s.io/kms/pkg/service`) on a unix socket, over a test key store
//! (`tests/kms_plugin`, built by `scripts/build-upstream kms-plugin`), with wardle on etcd 3.6:
//!
//! 1. Flunders are stored under `k8s:enc:kms:v2:<name>:` (read with `etcdctl`), never in plain
//!    text, and one DEK serves every write: the plugin encrypted one DEK for ten Flunders.
//! 2. The plugin's key ID changes: the server sees it through `Status` and makes a new DEK;
//!    new values carry the new key ID, old ones still read.
//! 3. The plugin is killed: values of cached DEKs still read, writes coast on the current DEK,
//!    `/healthz` fails its `kms-providers` check with upstream's message; a second server
//!    started meanwhile can make no DEK: it starts (its watch cache not ready) and fails
//!    writes, reads and lists with upstream's error.
//! 4. The plugin is back: both servers recover, the second decrypting the DEKs through it.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use apiserver_framework::testing::etcd::Etcd;
use apiserver_framework::testing::wait;
use support::client_go::build_upstream;
use support::encryption::{
    create_flunder as create, etcdctl_get_prefix, flunder_references as references, occurrences,
};
use support::{FLUNDERS, Wardle};

const NAME: &str = "testkms";
const PREFIX: &str = "k8s:enc:kms:v2:testkms:";

/// The KMS plugin process, its socket and its current key ID (a file it reads on every call).
struct Plugin {
    child: Option<Child>,
    dir: PathBuf,
}

impl Plugin {
    fn start(dir: &Path, key_id: &str) -> Plugin {
        let mut plugin = Plugin {
            child: None,
            dir: dir.to_path_buf(),
        };
        plugin.set_key_id(key_id);
        plugin.spawn();
        plugin
    }

    fn socket(&self) -> PathBuf {
        self.dir.join("kms.sock")
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join("kms.log")
    }

    fn spawn(&mut self) {
        let _ = std::fs::remove_file(self.socket());
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .expect("the plugin's log");
        let child = Command::new(build_upstream("kms-plugin", "kms-plugin"))
            .arg("--socket")
            .arg(self.socket())
            .args(["--secret", "kms-test-secret", "--key-id-file"])
            .arg(self.dir.join("key-id"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start the KMS plugin");
        self.child = Some(child);
        let socket = self.socket();
        wait::eventually_blocking("the KMS plugin to listen", Duration::from_secs(20), || {
            std::os::unix::net::UnixStream::connect(&socket).is_ok()
        });
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn set_key_id(&self, key_id: &str) {
        std::fs::write(self.dir.join("key-id"), key_id).expect("write the key ID");
    }

    /// How many DEK sources the plugin encrypted, and decrypted.
    fn calls(&self) -> (usize, usize) {
        let log = std::fs::read(self.log_path()).unwrap_or_default();
        (
            occurrences(&log, "encrypt keyID="),
            occurrences(&log, "decrypt keyID="),
        )
    }
}

impl Drop for Plugin {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Writes an `EncryptionConfiguration` encrypting Flunders with the plugin at `socket`.
fn write_config(path: &Path, socket: &Path) {
    let text = format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n\
         - resources: [flunders.wardle.example.com]\n  providers:\n  - kms:\n      \
         apiVersion: v2\n      name: {NAME}\n      endpoint: unix://{}\n      timeout: 3s\n  \
         - identity: {{}}\n",
        socket.display()
    );
    std::fs::write(path, text).expect("write the configuration");
}

/// GETs `path`: the status and body.
async fn get(wardle: &Wardle, path: &str) -> (u16, String) {
    let res = wardle.client().get(wardle.at(path)).send().await.unwrap();
    (res.status().as_u16(), res.text().await.unwrap())
}

fn expected(names: &[String]) -> Vec<(String, String)> {
    let mut all: Vec<_> = names
        .iter()
        .map(|n| (n.clone(), format!("ref-{n}")))
        .collect();
    all.sort();
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kms_v2_with_a_real_plugin_survives_its_death_and_recovers() {
    let etcd = Etcd::start_binary(&build_upstream("etcd", "etcd")).expect("etcd 3.6 starts");
    let dir = tempfile::tempdir().unwrap();
    let mut plugin = Plugin::start(dir.path(), "key-1");
    let config = dir.path().join("encryption.yaml");
    write_config(&config, &plugin.socket());
    let args = [
        "--etcd-servers".to_string(),
        etcd.url(),
        "--encryption-provider-config".to_string(),
        config.display().to_string(),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let a = Wardle::start_with_args(&args);

    // 1. Encrypted, one DEK for every write.
    let mut names: Vec<String> = (0..10).map(|i| format!("first-{i}")).collect();
    for name in &names {
        assert_eq!(create(&a, name).await.0, 201);
    }
    let mut read = references(&a).await;
    read.sort();
    assert_eq!(read, expected(&names));
    let stored = etcdctl_get_prefix(&etcd.url(), "/registry/wardle.example.com/flunders/");
    assert_eq!(occurrences(&stored, PREFIX), 10);
    assert_eq!(occurrences(&stored, "ref-first-"), 0, "plain text in etcd");
    assert_eq!(
        occurrences(&stored, "key-1"),
        10,
        "the key ID in each envelope"
    );
    assert_eq!(plugin.calls().0, 1, "one DEK encrypted for ten writes");
    let (status, body) = get(&a, "/healthz/kms-providers").await;
    assert_eq!((status, body.as_str()), (200, "ok"));

    // 2. A new key ID: a new DEK, seen through Status (a check at most 20 s old is reused).
    plugin.set_key_id("key-2");
    let mut n = 0;
    wait::eventually(
        "a write under the plugin's new key ID",
        Duration::from_secs(60),
        || {
            n += 1;
            let name = format!("rotated-{n}");
            names.push(name.clone());
            let a = &a;
            let url = etcd.url();
            async move {
                let _ = get(a, "/healthz").await;
                assert_eq!(create(a, &name).await.0, 201);
                let stored = etcdctl_get_prefix(
                    &url,
                    &format!("/registry/wardle.example.com/flunders/default/{name}"),
                );
                occurrences(&stored, "key-2") == 1
            }
        },
    )
    .await;
    assert_eq!(plugin.calls().0, 2, "a second DEK for the new key ID");
    let mut read = references(&a).await;
    read.sort();
    assert_eq!(read, expected(&names), "old and new values read");

    // 3. The plugin killed.
    plugin.kill();
    let mut read = references(&a).await;
    read.sort();
    assert_eq!(read, expected(&names), "values of cached DEKs read");
    wait::eventually(
        "/healthz to fail the kms-providers check",
        Duration::from_secs(60),
        || async { get(&a, "/healthz").await.0 == 500 },
    )
    .await;
    let (status, body) = get(&a, "/healthz/kms-providers").await;
    assert_eq!(status, 500);
    assert!(
        body.contains(&format!(
            "failed to perform status section of the healthz check for KMS Provider {NAME}"
        )),
        "{body}"
    );
    let (status, body) = get(&a, "/healthz?verbose").await;
    assert!(
        status == 500 && body.contains("[-]kms-providers failed"),
        "{body}"
    );
    // Writes coast on the current DEK (for 3 minutes past the last good status).
    assert_eq!(create(&a, "coasting").await.0, 201);
    names.push("coasting".into());
    // A server started now can make no DEK: it starts (its watch cache not ready, as
    // upstream's cacher) and fails writes and reads with upstream's error.
    let b = Wardle::start_with_args(&args);
    let (status, body) = create(&b, "never").await;
    assert_eq!(status, 500, "{body}");
    assert!(body.contains("got unexpected nil transformer"), "{body}");
    let (status, body) = get(&b, &format!("{FLUNDERS}/first-0")).await;
    assert_eq!(status, 500, "{body}");
    assert!(body.contains("got unexpected nil transformer"), "{body}");
    let (status, body) = get(&b, FLUNDERS).await;
    assert_eq!(status, 500, "{body}");
    assert!(body.contains("got unexpected nil transformer"), "{body}");

    // 4. The plugin back: both recover.
    let decrypted_before = plugin.calls().1;
    plugin.spawn();
    wait::eventually(
        "the first server's /healthz to pass",
        Duration::from_secs(60),
        || async { get(&a, "/healthz").await.0 == 200 },
    )
    .await;
    wait::eventually(
        "the second server to write",
        Duration::from_secs(60),
        || async { create(&b, "after").await.0 == 201 },
    )
    .await;
    names.push("after".into());
    let mut read = references(&b).await;
    read.sort();
    assert_eq!(read, expected(&names), "the second server reads everything");
    assert!(
        plugin.calls().1 > decrypted_before,
        "the second server decrypted the DEKs through the plugin"
    );
    let mut read = references(&a).await;
    read.sort();
    assert_eq!(read, expected(&names));
}
