//! What the encryption-at-rest tests share: `EncryptionConfiguration` files, and what a backend
//! holds read as an operator reads it (etcd with upstream's `etcdctl`, the embedded store's
//! files byte by byte).

use std::path::Path;
use std::process::{Command, Stdio};

use super::client_go::build_upstream;
use super::{FLUNDERS, Wardle};

/// A 32-byte key, base64 (a size every provider takes).
pub const KEY_32: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

/// Another 32-byte key, base64.
pub const OTHER_KEY_32: &str = "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=";

/// Writes an `EncryptionConfiguration` for Flunders to `path` (replacing it at once, by a
/// rename, as a configuration manager would): `provider` with `keys` (name, base64 secret) in
/// order, then `identity`.
pub fn write_config(path: &Path, provider: &str, keys: &[(&str, &str)]) {
    let keys: String = keys
        .iter()
        .map(|(name, secret)| format!("      - name: {name}\n        secret: {secret}\n"))
        .collect();
    let text = format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n\
         - resources: [flunders.wardle.example.com]\n  providers:\n  - {provider}:\n      \
         keys:\n{keys}  - identity: {{}}\n"
    );
    let new = path.with_extension("new");
    std::fs::write(&new, text).expect("write the configuration");
    std::fs::rename(&new, path).expect("move the configuration in place");
}

/// Every key and value under `prefix` in the etcd at `url`, as `etcdctl get --prefix` prints
/// them (values as their bytes).
pub fn etcdctl_get_prefix(url: &str, prefix: &str) -> Vec<u8> {
    let out = std::process::Command::new(build_upstream("etcdctl", "etcdctl"))
        .args(["--endpoints", url, "get", "--prefix", prefix])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run etcdctl");
    assert!(
        out.status.success(),
        "etcdctl: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// How many times `needle` occurs in `haystack`.
pub fn occurrences(haystack: &[u8], needle: &str) -> usize {
    haystack
        .windows(needle.len())
        .filter(|w| *w == needle.as_bytes())
        .count()
}

/// Whether `needle` occurs in `haystack`.
pub fn contains(haystack: &[u8], needle: &str) -> bool {
    occurrences(haystack, needle) > 0
}

/// Creates the Flunder `name` referring to `ref-<name>`: the response's status and body.
pub async fn create_flunder(wardle: &Wardle, name: &str) -> (u16, String) {
    let res = wardle
        .client()
        .post(wardle.at(FLUNDERS))
        .json(&serde_json::json!({
            "apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
            "metadata": {"name": name},
            "spec": {"reference": format!("ref-{name}")},
        }))
        .send()
        .await
        .unwrap();
    (res.status().as_u16(), res.text().await.unwrap())
}

/// `wardle migrate-storage` with `args`, run in `dir`: its standard output (it must succeed).
pub fn migrate_storage(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_wardle"))
        .arg("migrate-storage")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("run wardle migrate-storage");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every Flunder's name and `spec.reference` (empty when unset), listed through the API; the
/// list must be served.
pub async fn flunder_references(wardle: &Wardle) -> Vec<(String, String)> {
    let res = wardle
        .client()
        .get(wardle.at(FLUNDERS))
        .send()
        .await
        .unwrap();
    let status = res.status();
    let body = res.text().await.unwrap();
    assert_eq!(status, 200, "the list is served: {body}");
    let list: serde_json::Value = serde_json::from_str(&body).unwrap();
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|o| {
            (
                o["metadata"]["name"].as_str().unwrap().to_string(),
                o["spec"]["reference"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}
