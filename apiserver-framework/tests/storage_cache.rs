//! The watch cache: the storage conformance suite over a cached memory store, and what only
//! the cache promises: consistent latest lists, its event window, many watchers served from one
//! backend watch, resynchronization after its backend watch fails, and stopping when dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use apiserver_framework::storage::cache::{CacheOptions, CachedStorage};
use apiserver_framework::storage::conformance::{self, NewStore};
use apiserver_framework::storage::memory::MemoryStorage;
use apiserver_framework::storage::{
    KeyValue, ListPage, ListRequest, Storage, StorageError, StorageEvent, WatchStream,
};
use apiserver_framework::testing::wait;
use bytes::Bytes;
use futures::StreamExt;
use tokio::sync::watch;

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn latest(prefix: &str) -> ListRequest {
    ListRequest {
        prefix: prefix.into(),
        ..Default::default()
    }
}

/// The next item of a watch, failing the test after 10 s instead of hanging.
async fn next_item(w: &mut WatchStream) -> Option<Result<StorageEvent, StorageError>> {
    tokio::time::timeout(Duration::from_secs(10), w.next())
        .await
        .expect("no watch item within 10 s")
}

async fn next_event(w: &mut WatchStream) -> StorageEvent {
    match next_item(w).await {
        Some(Ok(ev)) => ev,
        other => panic!("expected an event, got {other:?}"),
    }
}

/// Polls until `done` holds, failing after 10 s.
async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    wait::eventually(what, Duration::from_secs(10), || std::future::ready(done())).await;
}

/// A memory store whose watches can be slowed down or cut, and which counts lists and watches.
struct Gated {
    inner: MemoryStorage,
    /// Each watch event is held this long before it is delivered.
    delay: Duration,
    /// While true, open watches end with `Unavailable` and new ones wait.
    down: watch::Sender<bool>,
    lists: AtomicUsize,
    watches: AtomicUsize,
    gets: AtomicUsize,
    revisions: AtomicUsize,
    /// Watches ended by `down`.
    cuts: Arc<AtomicUsize>,
    /// What `local_revision` answers: a local store (embedded, memory) or a remote one (etcd).
    local: bool,
}

impl Gated {
    fn new(inner: MemoryStorage, delay: Duration) -> Arc<Self> {
        Self::with_locality(inner, delay, false)
    }

    fn with_locality(inner: MemoryStorage, delay: Duration, local: bool) -> Arc<Self> {
        Arc::new(Gated {
            inner,
            delay,
            down: watch::channel(false).0,
            lists: AtomicUsize::new(0),
            watches: AtomicUsize::new(0),
            gets: AtomicUsize::new(0),
            revisions: AtomicUsize::new(0),
            cuts: Arc::default(),
            local,
        })
    }
}

#[async_trait::async_trait]
impl Storage for Gated {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        self.gets.fetch_add(1, Ordering::SeqCst);
        self.inner.get(key).await
    }
    async fn list(&self, req: ListRequest) -> Result<ListPage, StorageError> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        self.inner.list(req).await
    }
    async fn create(&self, key: &str, value: Bytes) -> Result<u64, StorageError> {
        self.inner.create(key, value).await
    }
    async fn update(&self, key: &str, value: Bytes, expected: u64) -> Result<u64, StorageError> {
        self.inner.update(key, value, expected).await
    }
    async fn delete(
        &self,
        key: &str,
        expected: Option<u64>,
    ) -> Result<(u64, KeyValue), StorageError> {
        self.inner.delete(key, expected).await
    }
    async fn watch(&self, prefix: &str, after: u64) -> Result<WatchStream, StorageError> {
        let mut down = self.down.subscribe();
        down.wait_for(|d| !*d).await.expect("sender alive");
        self.watches.fetch_add(1, Ordering::SeqCst);
        let delay = self.delay;
        let inner = self
            .inner
            .watch(prefix, after)
            .await?
            .then(move |item| async move {
                // A slow watch, on purpose: each event comes `delay` late.
                tokio::time::sleep(delay).await;
                item
            });
        let cuts = Arc::clone(&self.cuts);
        let stream = futures::stream::unfold(Some((inner.boxed(), down)), move |state| {
            let cuts = Arc::clone(&cuts);
            async move {
                let (mut inner, mut down) = state?;
                // A cut watch delivers nothing more, even if events are ready.
                let item = tokio::select! {
                    biased;
                    _ = down.wait_for(|d| *d) => None,
                    item = inner.next() => Some(item),
                };
                match item {
                    Some(item) => item.map(|item| (item, Some((inner, down)))),
                    None => {
                        cuts.fetch_add(1, Ordering::SeqCst);
                        Some((Err(StorageError::Unavailable("watch cut".into())), None))
                    }
                }
            }
        });
        Ok(stream.boxed())
    }
    async fn current_revision(&self) -> Result<u64, StorageError> {
        self.revisions.fetch_add(1, Ordering::SeqCst);
        self.inner.current_revision().await
    }
    fn local_revision(&self) -> Option<u64> {
        if !self.local {
            return None;
        }
        self.revisions.fetch_add(1, Ordering::SeqCst);
        self.inner.local_revision()
    }
    async fn compact(&self, revision: u64) -> Result<(), StorageError> {
        self.inner.compact(revision).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_memory_conforms() {
    conformance::run_all(&|| -> NewStore {
        Box::pin(async {
            CachedStorage::new(Arc::new(MemoryStorage::new()), CacheOptions::default())
                .await
                .expect("a cache over a fresh store") as Arc<dyn Storage>
        })
    })
    .await;
}

/// A latest list right after a write reflects it, even when the cache receives the backend's
/// events late; it is answered from memory (no backend list) at the backend's revision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_right_after_a_write_reflects_it() {
    let backend = Gated::new(MemoryStorage::new(), Duration::from_millis(30));
    let cache = CachedStorage::new(
        backend.clone(),
        CacheOptions {
            consistency_timeout: Duration::from_secs(30),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let lists = backend.lists.load(Ordering::SeqCst);
    let mut prev = None;
    for i in 0..10 {
        let key = format!("/c/{i}");
        let rev = match prev {
            None => cache.create(&key, b("v")).await.unwrap(),
            // Also writes that bypass the cache altogether.
            Some(_) => backend.create(&key, b("v")).await.unwrap(),
        };
        let page = cache.list(latest("/c/")).await.unwrap();
        assert_eq!(
            page.revision, rev,
            "the list is read at the write's revision"
        );
        assert_eq!(page.items.len(), i + 1, "the list after write {i}");
        assert_eq!(page.items.last().unwrap().mod_revision, rev);
        prev = Some(rev);
    }
    let (drev, _) = cache.delete("/c/0", None).await.unwrap();
    let page = cache.list(latest("/c/")).await.unwrap();
    assert_eq!((page.revision, page.items.len()), (drev, 9));
    assert_eq!(
        backend.lists.load(Ordering::SeqCst),
        lists,
        "latest lists must be served from the cache"
    );
    // Paging from memory: limit, more, remaining, start_after.
    let first = cache
        .list(ListRequest {
            limit: 4,
            ..latest("/c/")
        })
        .await
        .unwrap();
    assert_eq!(
        (first.items.len(), first.more, first.remaining),
        (4, true, 5)
    );
    let rest = cache
        .list(ListRequest {
            start_after: Some(first.items[3].key.to_string()),
            ..latest("/c/")
        })
        .await
        .unwrap();
    assert_eq!((rest.items.len(), rest.more, rest.remaining), (5, false, 0));
}

/// A watch from before the event window fails with `Compacted` naming the window's start;
/// from the window's start it replays everything after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_from_before_the_window_is_compacted() {
    let backend: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let cache = CachedStorage::new(
        Arc::clone(&backend),
        CacheOptions {
            window: 5,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let r0 = cache.current_revision().await.unwrap();
    let mut revs = Vec::new();
    for i in 0..20 {
        revs.push(cache.create(&format!("/win/{i:02}"), b("v")).await.unwrap());
    }
    let last = *revs.last().unwrap();
    eventually("the cache did not catch up", || cache.revision() == last).await;
    for old in [r0, revs[0], revs[13]] {
        match cache.watch("/win/", old).await {
            Err(StorageError::Compacted {
                requested,
                compacted,
            }) => assert_eq!((requested, compacted), (old, revs[14])),
            Err(e) => panic!("watch after {old}: {e:?}"),
            Ok(_) => panic!("watch after {old}, before the window, must fail"),
        }
    }
    // The backend still has that history: the cache answers from its window, not the backend.
    assert!(backend.watch("/win/", r0).await.is_ok());
    let mut w = cache.watch("/win/", revs[14]).await.unwrap();
    for rev in &revs[15..] {
        assert_eq!(next_event(&mut w).await.kv.mod_revision, *rev);
    }
    let next = cache.create("/win/next", b("v")).await.unwrap();
    assert_eq!(next_event(&mut w).await.kv.mod_revision, next);
}

/// 100 watchers of the cache see the same events in the same order, from one backend watch,
/// sharing the values' bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundred_watchers_see_the_same_events() {
    let backend = Gated::new(MemoryStorage::new(), Duration::ZERO);
    let cache = CachedStorage::new(backend.clone(), CacheOptions::default())
        .await
        .unwrap();
    let r0 = cache.current_revision().await.unwrap();
    let mut watchers = Vec::new();
    for i in 0..100 {
        // Half from now, half replaying from r0.
        let after = if i % 2 == 0 { 0 } else { r0 };
        watchers.push(cache.watch("/many/", after).await.unwrap());
    }
    let mut writers = Vec::new();
    for t in 0..2 {
        let cache = Arc::clone(&cache);
        writers.push(tokio::spawn(async move {
            let mut revs = Vec::new();
            for i in 0..100 {
                revs.push(
                    cache
                        .create(&format!("/many/{t}/{i}"), b("value"))
                        .await
                        .unwrap(),
                );
                cache
                    .create(&format!("/other/{t}/{i}"), b("v"))
                    .await
                    .unwrap();
            }
            revs
        }));
    }
    let mut written = Vec::new();
    for w in writers {
        written.extend(w.await.unwrap());
    }
    written.sort_unstable();
    let mut first: Option<Vec<StorageEvent>> = None;
    for (i, w) in watchers.iter_mut().enumerate() {
        let mut got = Vec::new();
        for _ in 0..written.len() {
            got.push(next_event(w).await);
        }
        let revs: Vec<u64> = got.iter().map(|e| e.kv.mod_revision).collect();
        assert_eq!(revs, written, "watcher {i}");
        match &first {
            None => first = Some(got),
            Some(first) => {
                assert_eq!(&got, first, "watcher {i} saw other events");
                assert_eq!(
                    got[0].kv.value.as_ptr(),
                    first[0].kv.value.as_ptr(),
                    "watchers share one copy of each value"
                );
            }
        }
    }
    assert_eq!(
        backend.watches.load(Ordering::SeqCst),
        1,
        "the cache follows its backend with a single watch"
    );
}

/// When the backend watch is cut but the backend still has the history, the cache watches again
/// from where it was: open watchers notice nothing and nothing is relisted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_rewatches_without_loss_when_history_remains() {
    let backend = Gated::new(MemoryStorage::new(), Duration::ZERO);
    let cache = CachedStorage::new(backend.clone(), CacheOptions::default())
        .await
        .unwrap();
    let mut w = cache.watch("/rw/", 0).await.unwrap();
    let r1 = cache.create("/rw/a", b("1")).await.unwrap();
    assert_eq!(next_event(&mut w).await.kv.mod_revision, r1);
    backend.down.send_replace(true);
    let cuts = &backend.cuts;
    eventually("the backend watch was not cut", || {
        cuts.load(Ordering::SeqCst) == 1
    })
    .await;
    let mut revs = Vec::new();
    for i in 0..20 {
        revs.push(cache.create(&format!("/rw/{i}"), b("v")).await.unwrap());
    }
    backend.down.send_replace(false);
    for rev in &revs {
        assert_eq!(next_event(&mut w).await.kv.mod_revision, *rev);
    }
    assert_eq!(cache.resyncs(), 0);
    assert_eq!(backend.watches.load(Ordering::SeqCst), 2);
}

/// When the backend compacts past the cache while its watch is down, the cache relists: open
/// watchers end with `Compacted` (their clients relist), and the cache goes on serving correct
/// lists and watches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_resynchronizes_after_its_backend_watch_fails() {
    let backend = Gated::new(MemoryStorage::with_history(5), Duration::ZERO);
    let cache = CachedStorage::new(backend.clone(), CacheOptions::default())
        .await
        .unwrap();
    let mut w = cache.watch("/rs/", 0).await.unwrap();
    let r1 = cache.create("/rs/keep", b("1")).await.unwrap();
    assert_eq!(next_event(&mut w).await.kv.mod_revision, r1);

    backend.down.send_replace(true);
    let cuts = &backend.cuts;
    eventually("the backend watch was not cut", || {
        cuts.load(Ordering::SeqCst) == 1
    })
    .await;
    for i in 0..50 {
        cache.create(&format!("/rs/{i:02}"), b("v")).await.unwrap();
    }
    let (_, _) = cache.delete("/rs/keep", None).await.unwrap();
    let now = cache.update("/rs/07", b("new"), r1 + 8).await.unwrap();
    backend.down.send_replace(false);

    match next_item(&mut w).await {
        Some(Err(StorageError::Compacted { requested, .. })) => assert_eq!(requested, r1),
        other => panic!("a watcher across a resync must end with Compacted: {other:?}"),
    }
    assert!(
        next_item(&mut w).await.is_none(),
        "the stream ends after its error"
    );
    eventually("the cache did not resynchronize", || {
        cache.resyncs() == 1 && cache.revision() == now
    })
    .await;

    let lists = backend.lists.load(Ordering::SeqCst);
    let page = cache.list(latest("/rs/")).await.unwrap();
    let want = backend.inner.list(latest("/rs/")).await.unwrap();
    assert_eq!(page.items, want.items, "the list after a resync");
    assert_eq!(page.revision, now);
    assert_eq!(page.items.len(), 50);
    assert_eq!(page.items[7].value, b("new"));
    assert_eq!(
        backend.lists.load(Ordering::SeqCst),
        lists,
        "served from memory"
    );

    // A watch from before the resync is compacted; new watches follow live writes.
    assert!(matches!(
        cache.watch("/rs/", r1).await,
        Err(StorageError::Compacted { .. })
    ));
    let mut w = cache.watch("/rs/", now).await.unwrap();
    let next = cache.create("/rs/after", b("v")).await.unwrap();
    assert_eq!(next_event(&mut w).await.kv.mod_revision, next);
    let page = cache.list(latest("/rs/")).await.unwrap();
    assert_eq!((page.revision, page.items.len()), (next, 51));
}

/// Dropping the last handle stops the background task: the backend watch is released and open
/// watch streams end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_cache_stops_it() {
    let backend = Gated::new(MemoryStorage::new(), Duration::ZERO);
    let cache = CachedStorage::new(backend.clone(), CacheOptions::default())
        .await
        .unwrap();
    let mut w = cache.watch("/d/", 0).await.unwrap();
    drop(cache);
    assert!(next_item(&mut w).await.is_none(), "open watches end");
    // The backend's store is no longer referenced by the cache's task.
    eventually("the cache's task still holds the backend", || {
        Arc::strong_count(&backend) == 1
    })
    .await;
}

/// In front of a local store (whose current revision costs nothing), a get is served from
/// memory, after the cache has caught up with the store: a write is seen by the next get even
/// while the cache's watch lags.
#[tokio::test]
async fn gets_of_a_local_store_come_from_memory_once_caught_up() {
    let backend = Gated::with_locality(MemoryStorage::new(), Duration::from_millis(100), true);
    let cache = CachedStorage::new(backend.clone(), CacheOptions::default())
        .await
        .unwrap();
    let rev = cache.create("/g/a", b("one")).await.unwrap();
    let got = cache
        .get("/g/a")
        .await
        .unwrap()
        .expect("the write is visible");
    assert_eq!((got.value, got.mod_revision), (b("one"), rev));
    assert!(cache.get("/g/missing").await.unwrap().is_none());
    assert_eq!(backend.gets.load(Ordering::SeqCst), 0, "served from memory");
}

/// In front of a remote store (etcd), where learning the current revision is a round trip, a
/// get goes to the store.
#[tokio::test]
async fn gets_of_a_remote_store_pass_through() {
    let backend = Gated::new(MemoryStorage::new(), Duration::ZERO);
    let cache = CachedStorage::new(backend.clone(), CacheOptions::default())
        .await
        .unwrap();
    cache.create("/g/a", b("one")).await.unwrap();
    assert!(cache.get("/g/a").await.unwrap().is_some());
    assert_eq!(backend.gets.load(Ordering::SeqCst), 1);
}

/// A `from_cache` list asks the backend nothing, and still sees every write made through the
/// cache, even while the cache's watch lags behind.
#[tokio::test]
async fn cached_lists_ask_the_backend_nothing_and_see_their_own_writes() {
    let backend = Gated::new(MemoryStorage::new(), Duration::from_millis(100));
    let cache = CachedStorage::new(backend.clone(), CacheOptions::default())
        .await
        .unwrap();
    let (lists, revisions) = (
        backend.lists.load(Ordering::SeqCst),
        backend.revisions.load(Ordering::SeqCst),
    );
    cache.create("/c/a", b("one")).await.unwrap();
    let rev = cache.create("/c/b", b("two")).await.unwrap();
    let page = cache
        .list(ListRequest {
            prefix: "/c/".into(),
            from_cache: true,
            ..Default::default()
        })
        .await
        .unwrap();
    let keys: Vec<&str> = page.items.iter().map(|kv| &*kv.key).collect();
    assert_eq!(keys, ["/c/a", "/c/b"]);
    assert!(page.revision >= rev);
    assert_eq!(
        backend.lists.load(Ordering::SeqCst),
        lists,
        "no backend list"
    );
    assert_eq!(
        backend.revisions.load(Ordering::SeqCst),
        revisions,
        "no current-revision round trip"
    );
    // A latest list without `from_cache` asks for the current revision.
    cache.list(latest("/c/")).await.unwrap();
    assert_eq!(backend.revisions.load(Ordering::SeqCst), revisions + 1);
}
