//! Issue 49: encryption at rest. `wardle local --encryption-provider-config` with upstream's
//! `EncryptionConfiguration`, with each provider (`aesgcm`, `aescbc`, `secretbox`) and each
//! durable backend: a Flunder created through the API is absent as plain text from what the
//! backend holds, which is read as an operator would read it (the embedded store's files byte
//! by byte, etcd with upstream's `etcdctl`) and holds it under the provider's prefix instead; it
//! reads back intact, after a restart too; Fischers, which the configuration does not name,
//! stay plain. A key of the wrong size, or an unknown provider, refuses to start, naming the
//! field.

mod support;

use std::path::Path;

use apiserver_framework::testing::etcd::Etcd;
use support::Wardle;
use support::client_go::build_upstream;
use support::encryption::{KEY_32, contains, etcdctl_get_prefix, write_config};
use support::fixtures::flunder_to;

/// The providers that take keys.
const PROVIDERS: [&str; 3] = ["aesgcm", "aescbc", "secretbox"];

/// An `EncryptionConfiguration` for Flunders with `provider` (its one key `key1` holding
/// `secret`), written in `dir`.
fn config(dir: &Path, provider: &str, secret: &str) -> String {
    let path = dir.join("encryption.yaml");
    write_config(&path, provider, &[("key1", secret)]);
    path.display().to_string()
}

/// Every byte of the embedded store's files under `dir`.
fn stored_bytes(dir: &Path) -> Vec<u8> {
    let mut bytes = Vec::new();
    let mut pending = vec![dir.join("apiserver.local.config")];
    while let Some(at) = pending.pop() {
        for entry in std::fs::read_dir(&at).expect("the data directory") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                pending.push(path);
            } else {
                bytes.extend(std::fs::read(&path).expect("a data file"));
            }
        }
    }
    bytes
}

/// Creates a Flunder (its reference `marker`) and a Fischer through kubectl.
fn create_objects(wardle: &Wardle, marker: &str) {
    let file = wardle.write_file(
        "flunder.json",
        &flunder_to("hidden", marker, "Flunder").to_string(),
    );
    wardle.kubectl_ok(&["create", "-f", &file.display().to_string()]);
    let fischer = wardle.write_file(
        "fischer.yaml",
        "apiVersion: wardle.example.com/v1alpha1\nkind: Fischer\nmetadata:\n  name: open\n\
         disallowedFlunders: [fischer-plain-marker]\n",
    );
    wardle.kubectl_ok(&["create", "-f", &fischer.display().to_string()]);
}

/// The Flunder's reference, read through kubectl.
fn reference(wardle: &Wardle) -> String {
    wardle.kubectl_ok(&[
        "get",
        "flunders.v1alpha1.wardle.example.com",
        "hidden",
        "-o",
        "jsonpath={.spec.reference}",
    ])
}

/// What the backend holds (`stored`) has the Flunder under `provider`'s prefix and not its
/// `marker`, and the Fischer in plain text.
fn assert_encrypted(stored: &[u8], provider: &str, marker: &str, backend: &str) {
    assert!(
        !contains(stored, marker),
        "{backend}, {provider}: the Flunder is stored in plain text"
    );
    assert!(
        contains(stored, &format!("k8s:enc:{provider}:v1:key1:")),
        "{backend}, {provider}: no value under the provider's prefix"
    );
    assert!(
        contains(stored, "fischer-plain-marker"),
        "{backend}, {provider}: Fischers are not named by the configuration, and stay plain"
    );
}

#[test]
fn flunders_are_stored_encrypted_by_each_provider_in_the_embedded_store() {
    for provider in PROVIDERS {
        let keys = tempfile::tempdir().unwrap();
        let path = config(keys.path(), provider, KEY_32);
        let wardle = Wardle::start_with_args(&["--encryption-provider-config", &path]);
        let marker = format!("flunder-secret-{provider}");
        create_objects(&wardle, &marker);
        assert_eq!(reference(&wardle), marker);
        assert_encrypted(&stored_bytes(wardle.dir()), provider, &marker, "embedded");

        let wardle = wardle.kill_and_restart();
        assert_eq!(reference(&wardle), marker, "{provider}: after a restart");
    }
}

#[test]
fn flunders_are_stored_encrypted_by_each_provider_in_etcd() {
    let etcd = Etcd::start_binary(&build_upstream("etcd", "etcd")).expect("etcd 3.6 starts");
    for provider in PROVIDERS {
        let keys = tempfile::tempdir().unwrap();
        let path = config(keys.path(), provider, KEY_32);
        let prefix = format!("/registry-{provider}");
        let wardle = Wardle::start_with_args(&[
            "--etcd-servers",
            &etcd.url(),
            "--etcd-prefix",
            &prefix,
            "--encryption-provider-config",
            &path,
        ]);
        let marker = format!("flunder-secret-{provider}");
        create_objects(&wardle, &marker);
        assert_eq!(reference(&wardle), marker);
        let stored = etcdctl_get_prefix(&etcd.url(), &prefix);
        assert!(
            contains(&stored, &format!("{prefix}/wardle.example.com/flunders/")),
            "{provider}: etcdctl lists no Flunder under {prefix}"
        );
        assert_encrypted(&stored, provider, &marker, "etcd");

        let wardle = wardle.kill_and_restart();
        assert_eq!(reference(&wardle), marker, "{provider}: after a restart");
    }
}

/// `wardle local` with the configuration at `path`, expected to refuse to start: its stderr.
fn refused(dir: &Path, path: &str) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wardle"))
        .args([
            "local",
            "--secure-port",
            "0",
            "--encryption-provider-config",
            path,
        ])
        .current_dir(dir)
        .env_remove("APISERVER_LOCAL_TOKEN")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run wardle");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{stderr}");
    stderr
}

#[test]
fn a_key_of_the_wrong_size_refuses_to_start() {
    let keys = tempfile::tempdir().unwrap();
    let path = config(keys.path(), "aesgcm", "c2hvcnQ=");
    let stderr = refused(keys.path(), &path);
    assert!(
        stderr.contains(
            "resources[0].providers[0].aesgcm.keys[0].secret: Invalid value: \"REDACTED\": \
             secret is not of the expected length, got 5, expected one of [16 24 32]"
        ),
        "{stderr}"
    );
    assert!(
        !stderr.contains("c2hvcnQ="),
        "the secret is shown: {stderr}"
    );
}

#[test]
fn a_secretbox_key_of_an_aes_size_refuses_to_start() {
    let keys = tempfile::tempdir().unwrap();
    let path = config(keys.path(), "secretbox", "AAECAwQFBgcICQoLDA0ODw==");
    let stderr = refused(keys.path(), &path);
    assert!(
        stderr.contains(
            "resources[0].providers[0].secretbox.keys[0].secret: Invalid value: \"REDACTED\": \
             secret is not of the expected length, got 16, expected one of [32]"
        ),
        "{stderr}"
    );
}

#[test]
fn an_unknown_provider_refuses_to_start() {
    let keys = tempfile::tempdir().unwrap();
    let path = config(keys.path(), "rot13", KEY_32);
    let stderr = refused(keys.path(), &path);
    assert!(
        stderr.contains("resources[0].providers[0]: unknown field `rot13`"),
        "{stderr}"
    );
    assert!(!stderr.contains(KEY_32), "the secret is shown: {stderr}");
}
