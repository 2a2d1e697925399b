//! The storage conformance suite on every backend of the crate, and what only the embedded
//! backend promises: durability across reopen and crashes, persistent compaction, watchers that
//! catch up from disk, and the background compactor.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use apiserver_framework::storage::compactor::spawn_compactor;
use apiserver_framework::storage::conformance::{self, NewStore};
use apiserver_framework::storage::embedded::{EmbeddedOptions, EmbeddedStorage};
use apiserver_framework::storage::memory::MemoryStorage;
use apiserver_framework::storage::{
    EventKind, ListRequest, Storage, StorageError, StorageEvent, WatchStream,
};
use apiserver_framework::testing::wait;
use bytes::Bytes;
use futures::StreamExt;

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

/// The next item of a watch, failing the test after 10 s instead of hanging.
async fn next_item(w: &mut WatchStream) -> Option<Result<StorageEvent, StorageError>> {
    tokio::time::timeout(Duration::from_secs(10), w.next())
        .await
        .expect("no watch event within 10 s")
}

fn list_at(prefix: &str, revision: u64) -> ListRequest {
    ListRequest {
        prefix: prefix.into(),
        revision: Some(revision),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_conforms() {
    conformance::run_all(&|| -> NewStore {
        Box::pin(async { Arc::new(MemoryStorage::new()) as Arc<dyn Storage> })
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_conforms() {
    let root = tempfile::tempdir().unwrap();
    let parent = root.path().to_path_buf();
    let count = Arc::new(AtomicUsize::new(0));
    conformance::run_all(&move || -> NewStore {
        let dir = parent.join(count.fetch_add(1, Ordering::Relaxed).to_string());
        Box::pin(async move {
            Arc::new(EmbeddedStorage::open(&dir).expect("open a fresh store")) as Arc<dyn Storage>
        })
    })
    .await;
}

/// Objects, their revisions and the history survive closing and reopening; the next write
/// gets a revision above every earlier one.
#[tokio::test]
async fn embedded_reopen_keeps_objects_revisions_and_history() {
    let dir = tempfile::tempdir().unwrap();
    let (a1, a2, bd, last) = {
        let s = EmbeddedStorage::open(dir.path()).unwrap();
        let a1 = s.create("/r/a", b("a1")).await.unwrap();
        let a2 = s.update("/r/a", b("a2"), a1).await.unwrap();
        let b1 = s.create("/r/b", b("b1")).await.unwrap();
        let (bd, _) = s.delete("/r/b", Some(b1)).await.unwrap();
        let last = s.create("/r/c", b("c1")).await.unwrap();
        (a1, a2, bd, last)
    };
    let s = EmbeddedStorage::open(dir.path()).unwrap();
    assert_eq!(s.current_revision().await.unwrap(), last);
    let a = s.get("/r/a").await.unwrap().unwrap();
    assert_eq!(
        (a.value, a.create_revision, a.mod_revision),
        (b("a2"), a1, a2)
    );
    assert_eq!(s.get("/r/b").await.unwrap(), None);
    let old = s.list(list_at("/r/", a1)).await.unwrap();
    assert_eq!(old.items.len(), 1);
    assert_eq!(old.items[0].value, b("a1"));
    let mut w = s.watch("/r/", a2).await.unwrap();
    let ev = next_item(&mut w).await.unwrap().unwrap();
    assert_eq!((ev.kind, &*ev.kv.key), (EventKind::Created, "/r/b"));
    let ev = next_item(&mut w).await.unwrap().unwrap();
    assert_eq!((ev.kind, ev.kv.mod_revision), (EventKind::Deleted, bd));
    let next = s.create("/r/d", b("d1")).await.unwrap();
    assert_eq!(next, last + 1, "revisions go on from the last one");
    assert_eq!(&*next_item(&mut w).await.unwrap().unwrap().kv.key, "/r/c");
    assert_eq!(
        next_item(&mut w).await.unwrap().unwrap().kv.mod_revision,
        next
    );
}

/// The compacted revision survives reopening: older reads still answer `Compacted`.
#[tokio::test]
async fn embedded_compaction_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let (r1, r2, r3) = {
        let s = EmbeddedStorage::open(dir.path()).unwrap();
        let r1 = s.create("/k/a", b("1")).await.unwrap();
        let r2 = s.update("/k/a", b("2"), r1).await.unwrap();
        let r3 = s.update("/k/a", b("3"), r2).await.unwrap();
        s.compact(r2).await.unwrap();
        (r1, r2, r3)
    };
    let s = EmbeddedStorage::open(dir.path()).unwrap();
    assert!(matches!(
        s.list(list_at("/k/", r1)).await,
        Err(StorageError::Compacted { requested, compacted }) if requested == r1 && compacted == r2
    ));
    assert!(matches!(
        s.watch("/k/", r1).await,
        Err(StorageError::Compacted { .. })
    ));
    let at = s.list(list_at("/k/", r2)).await.unwrap();
    assert_eq!(at.items[0].value, b("2"));
    let mut w = s.watch("/k/", r2).await.unwrap();
    let ev = next_item(&mut w).await.unwrap().unwrap();
    assert_eq!(ev.kv.mod_revision, r3);
    assert_eq!(ev.prev.unwrap().value, b("2"));
}

/// A watcher far behind a small broadcast buffer catches up from disk and misses nothing;
/// once compaction removed what it still needs, it ends with `Compacted`.
#[tokio::test]
async fn embedded_slow_watcher_catches_up_from_disk() {
    let dir = tempfile::tempdir().unwrap();
    let s = EmbeddedStorage::open_with(
        dir.path(),
        EmbeddedOptions {
            watch_buffer: 4,
            ..Default::default()
        },
    )
    .unwrap();
    let mut slow = s.watch("/s/", 0).await.unwrap();
    let mut cut = s.watch("/s/", 0).await.unwrap();
    let mut steady = s.watch("/s/", 0).await.unwrap();
    let mut revs = Vec::new();
    for i in 0..40 {
        revs.push(s.create(&format!("/s/{i:02}"), b("v")).await.unwrap());
        s.create(&format!("/other/{i}"), b("v")).await.unwrap();
        // `steady` follows the first writes live, then stops reading.
        if i < 5 {
            let ev = next_item(&mut steady).await.unwrap().unwrap();
            assert_eq!(ev.kv.mod_revision, revs[i]);
        }
    }
    for (i, rev) in revs.iter().enumerate() {
        let ev = next_item(&mut slow).await.unwrap().unwrap();
        assert_eq!(ev.kv.mod_revision, *rev, "event {i} of the slow watcher");
    }
    for (i, rev) in revs.iter().enumerate().skip(5) {
        let ev = next_item(&mut steady).await.unwrap().unwrap();
        assert_eq!(
            ev.kv.mod_revision, *rev,
            "event {i} of the watcher that fell behind"
        );
    }
    // `cut` read nothing before a compaction removed what it needs.
    s.compact(revs[10]).await.unwrap();
    match next_item(&mut cut).await {
        Some(Err(StorageError::Compacted {
            requested,
            compacted,
        })) => {
            assert_eq!((requested, compacted), (revs[0] - 1, revs[10]));
        }
        other => panic!("a watcher behind the compaction must end with Compacted: {other:?}"),
    }
    assert!(
        next_item(&mut cut).await.is_none(),
        "the stream ends after its error"
    );
    // Live events still come through the small buffer to watchers that keep up.
    let r = s.create("/s/late", b("v")).await.unwrap();
    assert_eq!(
        next_item(&mut slow).await.unwrap().unwrap().kv.mod_revision,
        r
    );
    assert_eq!(
        next_item(&mut steady)
            .await
            .unwrap()
            .unwrap()
            .kv
            .mod_revision,
        r
    );
}

/// A store's file can be open in one store at a time; a second open fails cleanly.
#[tokio::test]
async fn embedded_second_open_is_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let _first = EmbeddedStorage::open(dir.path()).unwrap();
    assert!(matches!(
        EmbeddedStorage::open(dir.path()),
        Err(StorageError::Unavailable(_))
    ));
}

/// A file that is not a store is refused, not overwritten.
#[tokio::test]
async fn embedded_refuses_a_foreign_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir
        .path()
        .join(apiserver_framework::storage::embedded::FILE_NAME);
    std::fs::write(
        &file,
        b"not a database at all, and long enough to look like one",
    )
    .unwrap();
    assert!(matches!(
        EmbeddedStorage::open(dir.path()),
        Err(StorageError::Unavailable(_))
    ));
    assert_eq!(
        std::fs::read(&file).unwrap(),
        b"not a database at all, and long enough to look like one"
    );
}

/// Polls until `done` holds, failing after 10 s.
async fn eventually<F, Fut>(what: &str, done: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    wait::eventually(what, Duration::from_secs(10), done).await;
}

/// The compactor compacts, at each tick, to the revision that was current at the tick before.
async fn compactor_compacts(s: Arc<dyn Storage>) {
    let compacted = |rev| {
        let s = Arc::clone(&s);
        async move {
            matches!(
                s.list(list_at("/cp/", rev)).await,
                Err(StorageError::Compacted { .. })
            )
        }
    };
    let r1 = s.create("/cp/a", b("1")).await.unwrap();
    let r2 = s.update("/cp/a", b("2"), r1).await.unwrap();
    let compactor = spawn_compactor(Arc::clone(&s), Duration::from_millis(500));
    // The first tick, at once, notes r2; the second compacts to it, not to r3. Spaced on
    // purpose: r3 is written between the compactor's first and second ticks.
    tokio::time::sleep(Duration::from_millis(150)).await;
    let r3 = s.update("/cp/a", b("3"), r2).await.unwrap();
    eventually("the compactor did not compact", || compacted(r1)).await;
    assert!(
        !compacted(r2).await,
        "the compactor compacted past the revision of its previous tick"
    );
    eventually("the compactor stopped compacting", || compacted(r2)).await;
    assert!(!compacted(r3).await);
    assert_eq!(s.get("/cp/a").await.unwrap().unwrap().mod_revision, r3);
    compactor.abort();
    assert!(compactor.await.unwrap_err().is_cancelled());
}

#[tokio::test]
async fn compactor_compacts_memory() {
    compactor_compacts(Arc::new(MemoryStorage::new())).await;
}

#[tokio::test]
async fn compactor_compacts_embedded() {
    let dir = tempfile::tempdir().unwrap();
    compactor_compacts(Arc::new(EmbeddedStorage::open(dir.path()).unwrap())).await;
}

const CRASH_DIR: &str = "EMBEDDED_STORAGE_CRASH_DIR";

/// Kills a process that is writing with SIGKILL, then checks that every write it had
/// acknowledged is in the reopened store with its revision.
#[test]
fn embedded_keeps_acknowledged_writes_across_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "crash_child_writes_until_killed",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CRASH_DIR, dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut acked = Vec::new();
    for line in lines.by_ref() {
        acked.extend(parse_ack(&line.unwrap()));
        if acked.len() >= 300 {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // Lines printed before the kill were acknowledged too.
    for line in lines {
        acked.extend(parse_ack(&line.unwrap()));
    }
    assert!(
        acked.len() >= 300,
        "the child acknowledged only {} writes",
        acked.len()
    );

    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let s = EmbeddedStorage::open(dir.path()).unwrap();
        let max = acked.iter().map(|(_, rev)| *rev).max().unwrap();
        for (key, rev) in &acked {
            let kv = s.get(key).await.unwrap();
            assert_eq!(
                kv.map(|kv| kv.mod_revision),
                Some(*rev),
                "acknowledged write {key} at {rev} lost"
            );
        }
        assert!(s.current_revision().await.unwrap() >= max);
        let next = s.create("/after-crash", b("v")).await.unwrap();
        assert!(next > max);
        // The history of the acknowledged writes is intact too.
        let mut w = s.watch("/crash/", 1).await.unwrap();
        let mut seen = 0;
        while seen < acked.len() {
            let ev = next_item(&mut w).await.unwrap().unwrap();
            assert_eq!(ev.kind, EventKind::Created);
            seen += 1;
        }
    });
}

/// `acked KEY REVISION`, as the child prints it.
fn parse_ack(line: &str) -> Option<(String, u64)> {
    let (key, rev) = line.strip_prefix("acked ")?.split_once(' ')?;
    Some((key.to_string(), rev.parse().ok()?))
}

/// The child process of the crash test: writes with four concurrent writers until killed,
/// printing each acknowledged write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the child process of embedded_keeps_acknowledged_writes_across_a_crash"]
async fn crash_child_writes_until_killed() {
    let Some(dir) = std::env::var_os(CRASH_DIR) else {
        return;
    };
    let s = Arc::new(EmbeddedStorage::open(Path::new(&PathBuf::from(dir))).unwrap());
    let mut tasks = Vec::new();
    for t in 0..4 {
        let s = Arc::clone(&s);
        tasks.push(tokio::spawn(async move {
            for i in 0.. {
                let key = format!("/crash/{t}/{i}");
                let rev = s
                    .create(&key, Bytes::from(vec![t as u8; 2048]))
                    .await
                    .unwrap();
                println!("acked {key} {rev}");
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}
