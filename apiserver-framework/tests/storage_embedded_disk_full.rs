//! The embedded store on a disk that fills up and then has room again: a real tmpfs of a few
//! MiB (mounting it needs root, which the test environment has; without it the test fails,
//! it does not skip), filled to the last byte by a file beside the store.
//!
//! Writes on the full disk fail with `Internal` ("No space left on device"), the store's
//! writable check fails, and once the filler is removed the store takes writes again by itself
//! (it reopens its database after the I/O error), its check passes, and its revisions carry on:
//! a watch sees every committed revision once, with no gap, across the failure.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use apiserver_framework::storage::embedded::EmbeddedStorage;
use apiserver_framework::storage::{EventKind, Storage, StorageError};
use apiserver_framework::testing::wait;
use bytes::Bytes;
use futures::StreamExt;

/// A tmpfs mounted on a directory; unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, bytes: u64) -> Tmpfs {
        std::fs::create_dir_all(dir).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(dir)
            .output()
            .expect("run mount");
        assert!(
            out.status.success(),
            "mounting a tmpfs (needs root): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Tmpfs(dir.to_path_buf())
    }

    fn filler(&self) -> PathBuf {
        self.0.join("filler")
    }

    /// Writes a file until the filesystem is full.
    fn fill(&self) {
        let mut f = std::fs::File::create(self.filler()).unwrap();
        let chunk = vec![0x5a_u8; 64 * 1024];
        loop {
            match f.write(&chunk) {
                Ok(0) => return,
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(28) => return,
                Err(e) => panic!("filling the tmpfs: {e}"),
            }
        }
    }

    fn free(&self) {
        std::fs::remove_file(self.filler()).unwrap();
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

fn value(i: usize) -> Bytes {
    // Large enough that a few commits need new pages, and so more file.
    Bytes::from(format!("{i:08}").repeat(16 * 1024))
}

async fn eventually<F, Fut>(what: &str, limit: Duration, f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    if let Err(e) = wait::poll(what, limit, f).await {
        panic!("{e}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_writes_again_once_its_full_disk_has_room() {
    let root = tempfile::tempdir().unwrap();
    let disk = Tmpfs::mount(&root.path().join("disk"), 8 * 1024 * 1024);
    let data = root.path().join("disk/data");
    let store = EmbeddedStorage::open(&data).unwrap();
    let health = store.health();
    let start = store.current_revision().await.unwrap();
    let mut watch = store.watch("/k/", start).await.unwrap();

    let mut acknowledged = Vec::new();
    for i in 0..3 {
        let key = format!("/k/{i}");
        acknowledged.push((key.clone(), store.create(&key, value(i)).await.unwrap()));
    }
    assert!(health.check_writable().is_ok());

    // Full: a write fails once the file needs room, answered as the store failing.
    disk.fill();
    let mut failed = None;
    for i in 3..200 {
        let key = format!("/k/{i}");
        match store.create(&key, value(i)).await {
            Ok(rev) => acknowledged.push((key, rev)),
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    let failed = failed.expect("a write fails on the full disk");
    assert!(
        matches!(&failed, StorageError::Internal(m) if m.contains("No space left on device")),
        "{failed:?}"
    );
    let why = health
        .check_writable()
        .expect_err("not writable while full");
    assert!(why.contains("No space left on device"), "{why}");
    // Still full: writes keep failing, as the store failing, not as a timeout.
    match store.create("/k/still-full", value(0)).await {
        Err(StorageError::Internal(_)) => {}
        other => panic!("a write on the still full disk: {other:?}"),
    }
    assert!(health.check_writable().is_err());
    // Reads go on meanwhile (the database reopened on the full disk), and the store's probes
    // keep finding no room.
    eventually(
        "reads while the disk is full",
        Duration::from_secs(10),
        || async {
            health.check_open()?;
            store.get("/k/0").await.map_err(|e| e.to_string())?;
            Ok(())
        },
    )
    .await;
    // Spaced on purpose: the store's probes run on for a second and a half, still full.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let why = health.check_writable().expect_err("probes find no room");
    assert!(why.contains("No space left on device"), "{why}");

    // Room again: the store notices by itself (no write needed), then takes writes.
    disk.free();
    eventually(
        "the writable check passes",
        Duration::from_secs(10),
        || async { health.check_writable() },
    )
    .await;
    assert!(health.check_open().is_ok());
    let rev = store.create("/k/after", value(1)).await.unwrap();
    acknowledged.push(("/k/after".into(), rev));

    // Every acknowledged write is there, at its revision.
    for (key, rev) in &acknowledged {
        let kv = store.get(key).await.unwrap().expect(key);
        assert_eq!(kv.mod_revision, *rev, "{key}");
    }
    assert_eq!(store.current_revision().await.unwrap(), rev);

    // The watch saw each revision once and in order, no gap, up to the write after recovery.
    let mut seen = Vec::new();
    while seen.last() != Some(&rev) {
        let event = tokio::time::timeout(Duration::from_secs(10), watch.next())
            .await
            .expect("the watch goes on after the recovery")
            .expect("the watch is not ended")
            .expect("no error in the watch");
        assert_eq!(event.kind, EventKind::Created);
        seen.push(event.kv.mod_revision);
    }
    let expected: Vec<u64> = (start + 1..=rev).collect();
    assert_eq!(seen, expected);

    // Closed and opened again, the file holds the same.
    drop(watch);
    drop(store);
    let store = EmbeddedStorage::open(&data).unwrap();
    assert_eq!(store.current_revision().await.unwrap(), rev);
    for (key, rev) in &acknowledged {
        assert_eq!(store.get(key).await.unwrap().expect(key).mod_revision, *rev);
    }
}

/// Many writers at once on a full disk: each gets an answer (none hangs), and revisions stay
/// dense: one per create that took effect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_on_a_filling_disk_each_get_an_answer() {
    let root = tempfile::tempdir().unwrap();
    let disk = Tmpfs::mount(&root.path().join("disk"), 8 * 1024 * 1024);
    let store = std::sync::Arc::new(EmbeddedStorage::open(&root.path().join("disk/data")).unwrap());
    let start = store.current_revision().await.unwrap();
    disk.fill();
    let writers: Vec<_> = (0..64)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                tokio::time::timeout(
                    Duration::from_secs(30),
                    store.create(&format!("/c/{i}"), value(i)),
                )
                .await
                .expect("every writer is answered")
            })
        })
        .collect();
    let mut ok = 0;
    for w in writers {
        match w.await.unwrap() {
            Ok(_) => ok += 1,
            Err(StorageError::Internal(_)) => {}
            Err(e) => panic!("{e:?}"),
        }
    }
    assert!(ok < 64, "the disk was full, yet every write succeeded");
    disk.free();
    let rev = wait::poll(
        "a write after the disk has room",
        Duration::from_secs(10),
        || store.create("/c/after", value(0)),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let listed = store
        .list(apiserver_framework::storage::ListRequest {
            prefix: "/c/".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    // One revision per create that took effect: the acknowledged ones, the one after, and any
    // whose commit reached the disk although it reported an error.
    assert_eq!(
        listed.items.len() as u64,
        rev - start,
        "revisions stay dense"
    );
    assert!(listed.items.len() as u64 > ok);
}
