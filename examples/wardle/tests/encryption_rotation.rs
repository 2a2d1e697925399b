//! Issue 49: a key rotation as the book documents it, on the embedded store, with restarts:
//! aescbc `key1` → `key2, key1` (a restart; every object still reads, new writes use `key2`)
//! → `wardle migrate-storage` while the server is down (every object `key1` wrote is written
//! again, unchanged, with `key2`) → `key2` only (a restart): every object reads, with its
//! content, and the store holds no value under `key1`.

mod support;

use std::time::Duration;

use apiserver_framework::storage::embedded::EmbeddedStorage;
use apiserver_framework::storage::{ListRequest, Storage as _};
use support::Wardle;
use support::encryption::{
    KEY_32, OTHER_KEY_32, create_flunder, flunder_references as references, migrate_storage,
    write_config,
};

const KEY1: (&str, &str) = ("key1", KEY_32);
const KEY2: (&str, &str) = ("key2", OTHER_KEY_32);

/// Creates the Flunders `names`.
async fn create(wardle: &Wardle, names: impl Iterator<Item = String>) {
    for name in names {
        assert_eq!(create_flunder(wardle, &name).await.0, 201, "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotation_with_restarts_and_the_migration_leaves_nothing_under_the_old_key() {
    let keys = tempfile::tempdir().unwrap();
    let config = keys.path().join("encryption.yaml");
    write_config(&config, "aescbc", &[KEY1]);
    let config_arg = config.display().to_string();
    let wardle = Wardle::start_with_args(&["--encryption-provider-config", &config_arg]);
    create(&wardle, (0..20).map(|i| format!("old-{i}"))).await;

    // The new key first, the old one after it: the old values read, new ones use key2.
    write_config(&config, "aescbc", &[KEY2, KEY1]);
    let wardle = wardle.kill_and_restart();
    create(&wardle, (0..5).map(|i| format!("new-{i}"))).await;
    assert_eq!(references(&wardle).await.len(), 25);

    // The migration, while the server is down (it holds the embedded store's lock), then
    // the old key removed.
    let mut report = String::new();
    let wardle = wardle.restart_after(|dir| {
        report = migrate_storage(dir, &["--encryption-provider-config", &config_arg]);
        write_config(&config, "aescbc", &[KEY2]);
    });
    assert!(
        report.contains(
            "encryption: 25 objects of the encrypted resources, 20 written again with the first provider"
        ),
        "{report}"
    );
    let mut read = references(&wardle).await;
    read.sort();
    let mut expected: Vec<(String, String)> = (0..20)
        .map(|i| format!("old-{i}"))
        .chain((0..5).map(|i| format!("new-{i}")))
        .map(|name| (name.clone(), format!("ref-{name}")))
        .collect();
    expected.sort();
    assert_eq!(read, expected, "every object reads, with its content");

    // The store's current values, read below the server: all under key2.
    let mut wardle = wardle;
    wardle.signal("KILL");
    assert!(wardle.wait_exit(Duration::from_secs(20)).is_some());
    let store = EmbeddedStorage::open(&wardle.dir().join("apiserver.local.config/data")).unwrap();
    let stored = store
        .list(ListRequest {
            prefix: "/wardle.example.com/flunders/".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(stored.items.len(), 25);
    for kv in &stored.items {
        assert!(
            kv.value.starts_with(b"k8s:enc:aescbc:v1:key2:"),
            "{}: {:?}",
            kv.key,
            String::from_utf8_lossy(&kv.value[..30.min(kv.value.len())])
        );
    }
}
