//! The in-memory storage backend: revisions, create-if-absent, compare-and-swap, delete,
//! paged lists at a revision, watch replay and compaction.

mod support_storage;

use apiserver_framework::storage::memory::MemoryStorage;
use apiserver_framework::storage::{EventKind, ListRequest, Storage, StorageError};
use futures::StreamExt;
use support_storage::{after, b, first_page};

#[tokio::test]
async fn revisions_cas_and_delete() {
    let s = MemoryStorage::new();
    let r0 = s.current_revision().await.unwrap();
    let r1 = s.create("/a/1", b("one")).await.unwrap();
    assert!(r1 > r0);
    assert_eq!(
        s.create("/a/1", b("again")).await,
        Err(StorageError::AlreadyExists("/a/1".into()))
    );
    let r2 = s.update("/a/1", b("two"), r1).await.unwrap();
    assert!(r2 > r1);
    assert!(matches!(
        s.update("/a/1", b("stale"), r1).await,
        Err(StorageError::Conflict { .. })
    ));
    let kv = s.get("/a/1").await.unwrap().unwrap();
    assert_eq!(
        (kv.value, kv.create_revision, kv.mod_revision),
        (b("two"), r1, r2)
    );
    assert!(matches!(
        s.delete("/a/1", Some(r1)).await,
        Err(StorageError::Conflict { .. })
    ));
    let (r3, last) = s.delete("/a/1", Some(r2)).await.unwrap();
    assert!(r3 > r2);
    assert_eq!(last.value, b("two"));
    assert_eq!(s.get("/a/1").await.unwrap(), None);
    assert!(matches!(
        s.update("/a/1", b("x"), r3).await,
        Err(StorageError::NotFound(_))
    ));
}

#[tokio::test]
async fn paged_lists_at_a_fixed_revision() {
    let s = MemoryStorage::new();
    for i in 0..5 {
        s.create(&format!("/p/{i}"), b(&i.to_string()))
            .await
            .unwrap();
    }
    s.create("/q/x", b("other prefix")).await.unwrap();
    let first = s.list(first_page("/p/", 2)).await.unwrap();
    assert_eq!(first.items.len(), 2);
    assert!(first.more);
    assert_eq!(first.remaining, 3);
    // A write after the first page is not visible in later pages at the same revision.
    s.create("/p/9", b("late")).await.unwrap();
    s.delete("/p/3", None).await.unwrap();
    let rest = s.list(after(&first, "/p/")).await.unwrap();
    let keys: Vec<_> = rest.items.iter().map(|kv| &*kv.key).collect();
    assert_eq!(keys, ["/p/2", "/p/3", "/p/4"]);
    assert!(!rest.more);
    let now = s
        .list(ListRequest {
            prefix: "/p/".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(now.items.len(), 5);
}

#[tokio::test]
async fn watch_replays_history_then_follows_live() {
    let s = std::sync::Arc::new(MemoryStorage::new());
    let r1 = s.create("/w/a", b("a")).await.unwrap();
    let r2 = s.update("/w/a", b("a2"), r1).await.unwrap();
    s.create("/other/x", b("x")).await.unwrap();
    let mut w = s.watch("/w/", r1).await.unwrap();
    let ev = w.next().await.unwrap().unwrap();
    assert_eq!((ev.kind, ev.kv.mod_revision), (EventKind::Updated, r2));
    assert_eq!(ev.prev.unwrap().value, b("a"));
    s.delete("/w/a", None).await.unwrap();
    let ev = w.next().await.unwrap().unwrap();
    assert_eq!(ev.kind, EventKind::Deleted);
    assert_eq!(ev.kv.value, b("a2"));
    let r = s.create("/w/b", b("b")).await.unwrap();
    let ev = w.next().await.unwrap().unwrap();
    assert_eq!(
        (ev.kind, &*ev.kv.key, ev.kv.mod_revision),
        (EventKind::Created, "/w/b", r)
    );
}

#[tokio::test]
async fn compaction_expires_old_revisions() {
    let s = MemoryStorage::new();
    let r1 = s.create("/c/a", b("a")).await.unwrap();
    let r2 = s.update("/c/a", b("b"), r1).await.unwrap();
    s.update("/c/a", b("c"), r2).await.unwrap();
    s.compact(r2).await.unwrap();
    assert!(matches!(
        s.watch("/c/", r1).await,
        Err(StorageError::Compacted { .. })
    ));
    assert!(matches!(
        s.list(ListRequest {
            prefix: "/c/".into(),
            revision: Some(r1),
            ..Default::default()
        })
        .await,
        Err(StorageError::Compacted { .. })
    ));
    // Watching from the compaction point still works.
    assert!(s.watch("/c/", r2).await.is_ok());
}

#[tokio::test]
async fn concurrent_writers_get_distinct_increasing_revisions() {
    let s = std::sync::Arc::new(MemoryStorage::new());
    support_storage::concurrent_writers_get_distinct_increasing_revisions(s).await;
}
