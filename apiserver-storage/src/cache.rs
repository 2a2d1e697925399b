//! A watch cache in front of any [`Storage`] backend.
//!
//! [`CachedStorage`] keeps the whole backend in memory, fed by one backend watch, and serves
//! watches and latest lists from memory, so that many clients watching or listing a resource
//! cost the backend one watch instead of one each.
//!
//! # What goes where
//!
//! | operation | served by |
//! |---|---|
//! | `create`, `update`, `delete`, `compact`, `current_revision` | the backend |
//! | `get` | memory, once the cache has caught up with the backend's current revision, when the backend knows that revision without a round trip ([`Storage::local_revision`]: the embedded and memory stores); the backend otherwise (for etcd a consistent read of one key costs as much as learning the current revision) |
//! | `list` with `revision: None` | memory, once the cache has caught up with the backend's current revision (consistent read); the backend if it does not within [`CacheOptions::consistency_timeout`] |
//! | `list` with `from_cache` | memory, once the cache has applied every write made through it (no round trip to the backend) |
//! | `list` at an explicit revision | memory when it is the cache's revision (the next page of a list the cache served, nothing written since); the backend otherwise (the cache keeps only the present) |
//! | `watch` | memory: the event window, then live events |
//!
//! # The event window
//!
//! The cache keeps the last [`CacheOptions::window`] events. A watch after revision `r` replays
//! the window's events newer than `r`, then follows live events, with no gap or duplicate
//! between the two (the replay is taken and the live feed subscribed under one lock). A watch
//! from before the window's start fails with [`StorageError::Compacted`] naming the window's
//! start (the registry answers `410 Gone`; the client relists). A `compact` through the cache
//! also moves the window's start up to the compacted revision, so that the cache answers like
//! its backend; compaction done directly on the backend does not shorten the window.
//!
//! # Resynchronization
//!
//! When the backend watch ends or fails, the cache first tries to watch again from the last
//! revision it applied; if the backend still has that history nothing is lost and watchers
//! notice nothing. If it does not (the backend answers `Compacted`, for instance because it
//! compacted past the cache while the cache was behind), the cache relists the backend,
//! replaces its contents, empties its window (which then starts at the new list's revision)
//! and ends every open watch with `Err(Compacted)`: events between the old and the new
//! revision are unknown, so their clients must relist, exactly as after a `410 Gone`. Failed
//! attempts are retried with a growing delay (up to one second).
//!
//! # Starting before the backend can be read
//!
//! When the first list fails (a KMS plugin that is down cannot decrypt what is stored; upstream's
//! cacher starts unready in the same case), the cache starts empty and not ready: reads and
//! watches go to the backend (and fail as it fails) while the cache lists it again, with the
//! same growing delay, until it can; from then on it serves as above.
//!
//! # Lifetime
//!
//! The background task that follows the backend is aborted when the last handle to the
//! [`CachedStorage`] is dropped; open watch streams then end.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use parking_lot::Mutex;
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;

use super::page_counts::PageCounts;
use super::{
    EventKind, KeyValue, ListPage, ListRequest, Storage, StorageError, StorageEvent, WatchStream,
};

/// How a [`CachedStorage`] is sized.
#[derive(Clone, Debug)]
pub struct CacheOptions {
    /// Events kept for watchers that resume from an older revision (default 10,000).
    pub window: usize,
    /// Live events buffered per watcher before it is cut off with `Compacted` (default 4,096).
    pub watcher_buffer: usize,
    /// How long a latest list waits for the cache to reach the backend's current revision
    /// before it asks the backend instead (default 3 s).
    pub consistency_timeout: Duration,
}

impl Default for CacheOptions {
    fn default() -> Self {
        CacheOptions {
            window: 10_000,
            watcher_buffer: 4096,
            consistency_timeout: Duration::from_secs(3),
        }
    }
}

/// What the background task tells watchers.
#[derive(Clone, Debug)]
enum Message {
    /// One change, applied to the cache (shared: a watcher copies it only when its prefix
    /// matches).
    Event(Arc<StorageEvent>),
    /// The cache relisted the backend; its window now starts at this revision.
    Reset(u64),
}

/// A key's value in the cache: a [`KeyValue`] without its key, which the map holds once.
struct Stored {
    value: Bytes,
    create_revision: u64,
    mod_revision: u64,
}

impl Stored {
    fn of(kv: &KeyValue) -> Self {
        Stored {
            value: kv.value.clone(),
            create_revision: kv.create_revision,
            mod_revision: kv.mod_revision,
        }
    }

    fn key_value(&self, key: &Arc<str>) -> KeyValue {
        KeyValue {
            key: key.clone(),
            value: self.value.clone(),
            create_revision: self.create_revision,
            mod_revision: self.mod_revision,
        }
    }
}

/// Every key and value of the backend, by key.
fn by_key(items: Vec<KeyValue>) -> BTreeMap<Arc<str>, Stored> {
    items
        .into_iter()
        .map(|kv| {
            let stored = Stored::of(&kv);
            (kv.key, stored)
        })
        .collect()
}

struct State {
    /// The last revision applied.
    revision: u64,
    /// Every event with a revision above this one (up to `revision`) is in `window`.
    start: u64,
    data: BTreeMap<Arc<str>, Stored>,
    window: VecDeque<StorageEvent>,
}

struct Shared {
    state: Mutex<State>,
    events: broadcast::Sender<Message>,
    applied: watch::Sender<u64>,
    window: usize,
    resyncs: AtomicU64,
    /// Whether the cache holds the backend's contents (its first list succeeded).
    ready: AtomicBool,
}

impl Shared {
    fn apply(&self, event: StorageEvent) {
        let mut st = self.state.lock();
        let rev = event.kv.mod_revision;
        if rev <= st.revision {
            // Already applied (a re-watch may repeat the revision it started from).
            return;
        }
        match event.kind {
            EventKind::Deleted => {
                st.data.remove(&*event.kv.key);
            }
            _ => {
                st.data.insert(event.kv.key.clone(), Stored::of(&event.kv));
            }
        }
        st.revision = rev;
        if rev > st.start {
            st.window.push_back(event.clone());
            while st.window.len() > self.window {
                if let Some(old) = st.window.pop_front() {
                    st.start = st.start.max(old.kv.mod_revision);
                }
            }
        }
        // Sent under the lock: a watcher subscribing under it sees each event exactly once.
        let _ = self.events.send(Message::Event(Arc::new(event)));
        drop(st);
        self.applied.send_replace(rev);
    }

    fn reset(&self, page: ListPage) {
        let mut st = self.state.lock();
        st.data = by_key(page.items);
        st.revision = page.revision;
        st.start = page.revision;
        st.window.clear();
        let _ = self.events.send(Message::Reset(page.revision));
        drop(st);
        self.resyncs.fetch_add(1, Ordering::Relaxed);
        self.applied.send_replace(page.revision);
        self.ready.store(true, Ordering::Release);
    }

    /// A list of what the cache holds; with `at`, only if the cache holds the state at that
    /// revision (it has applied it and nothing after). A page continuing one whose count of the
    /// keys after it is in `counts` walks only its own items.
    fn list(&self, req: &ListRequest, at: Option<u64>, counts: &PageCounts) -> Option<ListPage> {
        let st = self.state.lock();
        // Not the cache's revision, or one compacted through the cache while it was behind.
        if at.is_some_and(|rev| rev != st.revision || rev < st.start) {
            return None;
        }
        let start = match &req.start_after {
            Some(k) if k.as_str() >= req.prefix.as_str() => Bound::Excluded(k.as_str()),
            _ => Bound::Included(req.prefix.as_str()),
        };
        let known = match (&req.start_after, req.limit) {
            (Some(after), limit) if limit > 0 => counts.after(st.revision, &req.prefix, after),
            _ => None,
        };
        let mut items = match req.limit {
            0 => Vec::new(),
            limit => Vec::with_capacity(limit.min(st.data.len())),
        };
        let mut remaining = 0u64;
        for (k, v) in st.data.range::<str, _>((start, Bound::Unbounded)) {
            if !k.starts_with(&req.prefix) {
                break;
            }
            if req.limit > 0 && items.len() >= req.limit {
                remaining += 1;
                if known.is_some() {
                    break;
                }
                continue;
            }
            items.push(v.key_value(k));
        }
        if let Some(known) = known
            && remaining > 0
        {
            remaining = known.saturating_sub(items.len() as u64);
        }
        if remaining > 0
            && let Some(last) = items.last()
        {
            counts.remember(st.revision, &req.prefix, &last.key, remaining);
        }
        Some(ListPage {
            items,
            revision: st.revision,
            more: remaining > 0,
            remaining,
        })
    }
}

/// A [`Storage`] that serves watches and latest lists from memory, in front of a backend that
/// takes the writes. See the [module documentation](self) for what is served where.
pub struct CachedStorage {
    backend: Arc<dyn Storage>,
    shared: Arc<Shared>,
    consistency_timeout: Duration,
    /// The highest revision a write through this cache was acknowledged at.
    written: AtomicU64,
    /// What the last pages of lists counted after them.
    page_counts: PageCounts,
    task: JoinHandle<()>,
}

impl Drop for CachedStorage {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl CachedStorage {
    /// Lists the whole backend, then follows it with a watch from the list's revision in a
    /// background task. When the first list fails, the cache starts not ready and keeps
    /// listing in the background (see [Starting before the backend can be read](self)); a
    /// watch that fails after a good list fails the call.
    pub async fn new(
        backend: Arc<dyn Storage>,
        options: CacheOptions,
    ) -> Result<Arc<Self>, StorageError> {
        let first = match backend
            .list(ListRequest {
                prefix: String::new(),
                ..Default::default()
            })
            .await
        {
            Ok(page) => {
                let stream = backend.watch("", page.revision).await?;
                Some((page, stream))
            }
            Err(e) => {
                tracing::warn!(error = %e, "the watch cache cannot list its backend yet; it serves from the backend until it can");
                None
            }
        };
        let revision = first.as_ref().map_or(0, |(page, _)| page.revision);
        let (events, _) = broadcast::channel(options.watcher_buffer.max(1));
        let (applied, _) = watch::channel(revision);
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                revision,
                start: revision,
                data: BTreeMap::new(),
                window: VecDeque::new(),
            }),
            events,
            applied,
            window: options.window.max(1),
            resyncs: AtomicU64::new(0),
            ready: AtomicBool::new(first.is_some()),
        });
        let stream = first.map(|(page, stream)| {
            shared.state.lock().data = by_key(page.items);
            stream
        });
        let task = tokio::spawn(follow(Arc::clone(&backend), Arc::clone(&shared), stream));
        Ok(Arc::new(CachedStorage {
            backend,
            shared,
            consistency_timeout: options.consistency_timeout,
            written: AtomicU64::new(0),
            page_counts: PageCounts::default(),
            task,
        }))
    }

    /// The last backend revision the cache has applied.
    pub fn revision(&self) -> u64 {
        self.shared.state.lock().revision
    }

    /// Whether the cache holds its backend's contents (its first list succeeded).
    pub fn is_ready(&self) -> bool {
        self.shared.ready.load(Ordering::Acquire)
    }

    /// How many times the cache has relisted its backend since it was created.
    pub fn resyncs(&self) -> u64 {
        self.shared.resyncs.load(Ordering::Relaxed)
    }

    /// Waits until the cache has applied `revision`, at most `timeout`; whether it did.
    async fn wait_for(&self, revision: u64, timeout: Duration) -> bool {
        if *self.shared.applied.borrow() >= revision {
            return true;
        }
        let mut rx = self.shared.applied.subscribe();
        matches!(
            tokio::time::timeout(timeout, rx.wait_for(|r| *r >= revision)).await,
            Ok(Ok(_))
        )
    }
}

/// A list of the whole backend and a watch from its revision.
async fn list_and_watch(backend: &dyn Storage) -> Result<(ListPage, WatchStream), StorageError> {
    let page = backend
        .list(ListRequest {
            prefix: String::new(),
            ..Default::default()
        })
        .await?;
    let stream = backend.watch("", page.revision).await?;
    Ok((page, stream))
}

/// The background task: applies the backend's events, and resynchronizes when its watch ends;
/// without a first `stream` (the first list failed), it lists the backend until it can.
async fn follow(backend: Arc<dyn Storage>, shared: Arc<Shared>, stream: Option<WatchStream>) {
    let mut stream = match stream {
        Some(stream) => stream,
        // Nothing to continue from: as after a compaction past the cache, a relist.
        None => {
            let nothing = StorageError::Compacted {
                requested: 0,
                compacted: 0,
            };
            resync(&*backend, &shared, Some(nothing)).await
        }
    };
    loop {
        let err = loop {
            match stream.next().await {
                Some(Ok(event)) => shared.apply(event),
                Some(Err(e)) => break Some(e),
                None => break None,
            }
        };
        stream = resync(&*backend, &shared, err).await;
    }
}

/// A new backend watch that continues where the cache is: from the last applied revision if
/// the backend still has it, else after a relist. Retries until it succeeds.
async fn resync(
    backend: &dyn Storage,
    shared: &Shared,
    mut err: Option<StorageError>,
) -> WatchStream {
    let mut delay = Duration::from_millis(20);
    loop {
        if !matches!(err, Some(StorageError::Compacted { .. })) {
            let from = shared.state.lock().revision;
            match backend.watch("", from).await {
                Ok(stream) => return stream,
                Err(e) => err = Some(e),
            }
        }
        if matches!(err, Some(StorageError::Compacted { .. })) {
            match list_and_watch(backend).await {
                Ok((page, stream)) => {
                    shared.reset(page);
                    return stream;
                }
                Err(e) => err = Some(e),
            }
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(1));
    }
}

#[async_trait::async_trait]
impl Storage for CachedStorage {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        let Some(target) = self.backend.local_revision().filter(|_| self.is_ready()) else {
            return self.backend.get(key).await;
        };
        if self.wait_for(target, self.consistency_timeout).await {
            Ok(self
                .shared
                .state
                .lock()
                .data
                .get_key_value(key)
                .map(|(k, v)| v.key_value(k)))
        } else {
            self.backend.get(key).await
        }
    }

    async fn list(&self, req: ListRequest) -> Result<ListPage, StorageError> {
        if !self.is_ready() {
            return self.backend.list(req).await;
        }
        if let Some(rev) = req.revision {
            // The next page of a list read at the cache's revision (nothing written since).
            if let Some(page) = self.shared.list(&req, Some(rev), &self.page_counts) {
                return Ok(page);
            }
            return self.backend.list(req).await;
        }
        let target = if req.from_cache {
            self.written.load(Ordering::Acquire)
        } else if let Some(revision) = self.backend.local_revision() {
            revision
        } else {
            self.backend.current_revision().await?
        };
        if self.wait_for(target, self.consistency_timeout).await {
            Ok(self
                .shared
                .list(&req, None, &self.page_counts)
                .unwrap_or_default())
        } else {
            self.backend.list(req).await
        }
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<u64, StorageError> {
        let revision = self.backend.create(key, value).await?;
        self.written.fetch_max(revision, Ordering::AcqRel);
        Ok(revision)
    }

    async fn update(&self, key: &str, value: Bytes, expected: u64) -> Result<u64, StorageError> {
        let revision = self.backend.update(key, value, expected).await?;
        self.written.fetch_max(revision, Ordering::AcqRel);
        Ok(revision)
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<u64>,
    ) -> Result<(u64, KeyValue), StorageError> {
        let (revision, last) = self.backend.delete(key, expected).await?;
        self.written.fetch_max(revision, Ordering::AcqRel);
        Ok((revision, last))
    }

    async fn watch(&self, prefix: &str, after: u64) -> Result<WatchStream, StorageError> {
        if !self.is_ready() {
            return self.backend.watch(prefix, after).await;
        }
        // "From now" is the backend's now: a write acknowledged before this call is not sent
        // even if the cache has not applied it yet.
        let after = if after == 0 {
            self.backend.current_revision().await?
        } else {
            after
        };
        let st = self.shared.state.lock();
        if after < st.start {
            return Err(StorageError::Compacted {
                requested: after,
                compacted: st.start,
            });
        }
        let prefix = prefix.to_string();
        let backlog: Vec<_> = st
            .window
            .iter()
            .filter(|e| e.kv.mod_revision > after && e.kv.key.starts_with(&prefix))
            .cloned()
            .map(Ok)
            .collect();
        // Live events at or below this were replayed, or are before `after`.
        let last = st.revision.max(after);
        let rx = self.shared.events.subscribe();
        drop(st);
        // The prefix travels in the state: nothing is allocated per event but the event.
        let live = futures::stream::unfold(Some((rx, last, prefix)), |state| async move {
            let (mut rx, mut last, prefix) = state?;
            loop {
                match rx.recv().await {
                    Ok(Message::Event(ev)) => {
                        if ev.kv.mod_revision <= last {
                            continue;
                        }
                        last = ev.kv.mod_revision;
                        if ev.kv.key.starts_with(&prefix) {
                            return Some((Ok(StorageEvent::clone(&ev)), Some((rx, last, prefix))));
                        }
                    }
                    Ok(Message::Reset(start)) => {
                        return Some((
                            Err(StorageError::Compacted {
                                requested: last,
                                compacted: start,
                            }),
                            None,
                        ));
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        return Some((
                            Err(StorageError::Compacted {
                                requested: last,
                                compacted: last,
                            }),
                            None,
                        ));
                    }
                    Err(broadcast::error::RecvError::Closed) => return None,
                }
            }
        });
        Ok(futures::stream::iter(backlog).chain(live).boxed())
    }

    async fn current_revision(&self) -> Result<u64, StorageError> {
        self.backend.current_revision().await
    }

    fn local_revision(&self) -> Option<u64> {
        self.backend.local_revision()
    }

    async fn compact(&self, revision: u64) -> Result<(), StorageError> {
        self.backend.compact(revision).await?;
        let mut st = self.shared.state.lock();
        st.start = st.start.max(revision);
        let start = st.start;
        while st
            .window
            .front()
            .is_some_and(|e| e.kv.mod_revision <= start)
        {
            st.window.pop_front();
        }
        Ok(())
    }
}
