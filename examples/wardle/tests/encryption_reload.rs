//! Issue 49: a key rotation under load, with `--encryption-provider-config-automatic-reload`,
//! on etcd 3.6: writers create and update Flunders the whole time while the configuration goes
//! aescbc `key1` → `key2, key1` (reloaded) → `wardle migrate-storage` beside the running server
//! → `key2` only (reloaded). No client request fails, every object reads at the end with its
//! last written content, and etcd (read with upstream's `etcdctl`) holds no value under `key1`.
//! The reloads show in upstream's metrics; a file that does not load is counted as a failure and
//! leaves the configuration in use as it was.

mod support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use apiserver_framework::testing::etcd::Etcd;
use apiserver_framework::testing::wait;
use serde_json::json;
use support::client_go::build_upstream;
use support::encryption::{
    KEY_32, OTHER_KEY_32, etcdctl_get_prefix, flunder_references, migrate_storage, occurrences,
    write_config,
};
use support::{FLUNDERS, Wardle};

const KEY1: (&str, &str) = ("key1", KEY_32);
const KEY2: (&str, &str) = ("key2", OTHER_KEY_32);
const RELOADS: &str = "apiserver_encryption_config_controller_automatic_reloads_total";
const WRITERS: usize = 3;

/// What the writers did: the last reference written to each Flunder, the requests that
/// succeeded, and every failure.
#[derive(Default)]
struct Load {
    written: Mutex<BTreeMap<String, String>>,
    done: AtomicUsize,
    failures: Mutex<Vec<String>>,
}

/// Writer `w`: creates a Flunder, then updates one it created before (a merge patch), over and
/// over until `stop`.
async fn writer(
    wardle_client: reqwest::Client,
    url: String,
    w: usize,
    load: Arc<Load>,
    stop: Arc<AtomicBool>,
) {
    let mut n = 0usize;
    while !stop.load(Ordering::Relaxed) {
        let name = format!("w{w}-{n}");
        let reference = format!("ref-{name}");
        let created = wardle_client
            .post(&url)
            .json(&json!({
                "apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
                "metadata": {"name": name},
                "spec": {"reference": reference},
            }))
            .send()
            .await;
        record(&load, &name, &reference, created, 201).await;
        if n > 0 {
            let target = format!("w{w}-{}", n / 2);
            let reference = format!("upd-{n}-{target}");
            let patched = wardle_client
                .patch(format!("{url}/{target}"))
                .header("Content-Type", "application/merge-patch+json")
                .body(json!({"spec": {"reference": reference}}).to_string())
                .send()
                .await;
            record(&load, &target, &reference, patched, 200).await;
        }
        n += 1;
    }
}

/// Records a write's outcome: `name` now refers to `reference` when it answered `expected`.
async fn record(
    load: &Load,
    name: &str,
    reference: &str,
    res: reqwest::Result<reqwest::Response>,
    expected: u16,
) {
    match res {
        Ok(res) if res.status().as_u16() == expected => {
            load.written
                .lock()
                .unwrap()
                .insert(name.to_string(), reference.to_string());
            load.done.fetch_add(1, Ordering::Relaxed);
        }
        Ok(res) => {
            let status = res.status();
            let body = res.text().await.unwrap_or_default();
            load.failures
                .lock()
                .unwrap()
                .push(format!("{name}: {status} {body}"));
        }
        Err(e) => load.failures.lock().unwrap().push(format!("{name}: {e}")),
    }
}

/// The server's `/metrics`.
async fn metrics(wardle: &Wardle) -> String {
    wardle
        .client()
        .get(wardle.at("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// Waits until the server counts `count` reloads of `status`.
async fn wait_for_reloads(wardle: &Wardle, status: &str, count: f64) {
    wait::eventually(
        &format!("{count} automatic reloads of status {status}"),
        Duration::from_secs(30),
        || async {
            wait::metric_sum(&metrics(wardle).await, RELOADS, &[("status", status)]) >= count
        },
    )
    .await;
}

/// Waits until the writers have done `more` writes beyond what they had done.
async fn wait_for_writes(load: &Load, more: usize) {
    let target = load.done.load(Ordering::Relaxed) + more;
    wait::eventually(
        &format!("{more} more writes"),
        Duration::from_secs(60),
        || async { load.done.load(Ordering::Relaxed) >= target },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotation_under_load_with_automatic_reload_fails_no_request() {
    let etcd = Etcd::start_binary(&build_upstream("etcd", "etcd")).expect("etcd 3.6 starts");
    let keys = tempfile::tempdir().unwrap();
    let config = keys.path().join("encryption.yaml");
    write_config(&config, "aescbc", &[KEY1]);
    let config_arg = config.display().to_string();
    let wardle = Wardle::start_with_args(&[
        "--etcd-servers",
        &etcd.url(),
        "--encryption-provider-config",
        &config_arg,
        "--encryption-provider-config-automatic-reload",
        "--encryption-provider-config-reload-interval",
        "200ms",
    ]);
    let info = metrics(&wardle).await;
    assert_eq!(
        wait::metric_sum(
            &info,
            "apiserver_encryption_config_controller_last_config_info",
            &[]
        ),
        1.0,
        "{info}"
    );

    let load = Arc::new(Load::default());
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            tokio::spawn(writer(
                wardle.client(),
                wardle.at(FLUNDERS),
                w,
                load.clone(),
                stop.clone(),
            ))
        })
        .collect();
    wait_for_writes(&load, 30).await;

    // The new key first: reloaded while the writers write.
    write_config(&config, "aescbc", &[KEY2, KEY1]);
    wait_for_reloads(&wardle, "success", 1.0).await;
    wait_for_writes(&load, 30).await;

    // The migration beside the running server and its writers.
    let url = etcd.url();
    let args = [
        "--etcd-servers",
        &url,
        "--encryption-provider-config",
        &config_arg,
    ];
    let report = tokio::task::block_in_place(|| migrate_storage(keys.path(), &args));
    assert!(
        report.contains("written again with the first provider"),
        "{report}"
    );
    wait_for_writes(&load, 30).await;

    // The old key removed: reloaded while the writers write.
    write_config(&config, "aescbc", &[KEY2]);
    wait_for_reloads(&wardle, "success", 2.0).await;
    wait_for_writes(&load, 30).await;

    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.expect("a writer");
    }
    let failures = load.failures.lock().unwrap().clone();
    assert!(failures.is_empty(), "failed requests: {failures:#?}");

    // Every object reads, with the last reference written to it.
    let read: BTreeMap<String, String> = flunder_references(&wardle).await.into_iter().collect();
    let written = load.written.lock().unwrap().clone();
    assert_eq!(read, written, "the objects differ from what was written");

    // In etcd, as an operator reads it: every Flunder under key2, none under key1.
    let stored = etcdctl_get_prefix(&etcd.url(), "/registry/wardle.example.com/flunders/");
    assert_eq!(occurrences(&stored, "k8s:enc:aescbc:v1:key1:"), 0);
    assert_eq!(
        occurrences(&stored, "k8s:enc:aescbc:v1:key2:"),
        written.len(),
        "{} objects",
        written.len()
    );

    // A file that does not load: a failure counted, the configuration in use kept.
    write_config(&config, "aescbc", &[("key3", "c2hvcnQ=")]);
    wait_for_reloads(&wardle, "failure", 1.0).await;
    let res = wardle
        .client()
        .post(wardle.at(FLUNDERS))
        .json(&json!({
            "apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
            "metadata": {"name": "after-failure"},
            "spec": {"reference": "kept"},
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 201);
    let stored = etcdctl_get_prefix(
        &etcd.url(),
        "/registry/wardle.example.com/flunders/default/after-failure",
    );
    assert_eq!(occurrences(&stored, "k8s:enc:aescbc:v1:key2:"), 1);
    let log = wardle.log();
    assert!(
        log.contains("error processing the encryption provider configuration")
            && log.contains("secret is not of the expected length"),
        "{log}"
    );
    assert!(!log.contains("c2hvcnQ="), "a secret is logged");
    assert!(
        !log.contains(KEY_32) && !log.contains(OTHER_KEY_32),
        "a secret is logged"
    );
}
