//! The storage conformance suite on every backend of the crate, and the background compactor.

use std::sync::Arc;
use std::time::{Duration, Instant};

use apiserver_framework::storage::compactor::spawn_compactor;
use apiserver_framework::storage::conformance::{self, NewStore};
use apiserver_framework::storage::memory::MemoryStorage;
use apiserver_framework::storage::{ListRequest, Storage, StorageError};
use bytes::Bytes;

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
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

/// Polls until `done` holds, failing after 10 s.
async fn eventually<F, Fut>(what: &str, mut done: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    while !done().await {
        assert!(start.elapsed() < Duration::from_secs(10), "{what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
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
    // The first tick, at once, notes r2; the second compacts to it, not to r3.
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
