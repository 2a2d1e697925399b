//! Helpers shared by the checks: writes and reads that panic with context, and watch reads
//! with a timeout so that a missing event fails instead of hanging.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;

use crate::{KeyValue, ListPage, ListRequest, Storage, StorageError, StorageEvent, WatchStream};

/// How long a check waits for a watch event before failing.
pub(super) const EVENT_TIMEOUT: Duration = Duration::from_secs(20);

/// How long a check waits to be reasonably sure that no event is coming.
pub(super) const QUIET: Duration = Duration::from_millis(150);

pub(super) fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

pub(super) async fn create(s: &dyn Storage, key: &str, value: &str) -> u64 {
    s.create(key, b(value))
        .await
        .unwrap_or_else(|e| panic!("create {key}: unexpected error {e:?}"))
}

pub(super) async fn update(s: &dyn Storage, key: &str, value: &str, expected: u64) -> u64 {
    s.update(key, b(value), expected)
        .await
        .unwrap_or_else(|e| panic!("update {key} at {expected}: unexpected error {e:?}"))
}

pub(super) async fn delete(s: &dyn Storage, key: &str) -> (u64, KeyValue) {
    s.delete(key, None)
        .await
        .unwrap_or_else(|e| panic!("delete {key}: unexpected error {e:?}"))
}

pub(super) async fn get(s: &dyn Storage, key: &str) -> Option<KeyValue> {
    s.get(key)
        .await
        .unwrap_or_else(|e| panic!("get {key}: unexpected error {e:?}"))
}

/// The store's current revision; a store that also knows it without a round trip
/// (`local_revision`) must answer the same: read just before and just after, the local
/// revision brackets it (other tasks of a test may write in between).
pub(super) async fn current(s: &dyn Storage) -> u64 {
    let before = s.local_revision();
    let current = s
        .current_revision()
        .await
        .unwrap_or_else(|e| panic!("current_revision: unexpected error {e:?}"));
    if let (Some(before), Some(after)) = (before, s.local_revision()) {
        assert!(
            before <= current && current <= after,
            "local_revision ({before}, then {after}) is not what current_revision ({current}) answers"
        );
    }
    current
}

pub(super) async fn list(s: &dyn Storage, req: ListRequest) -> ListPage {
    let what = format!("{req:?}");
    s.list(req)
        .await
        .unwrap_or_else(|e| panic!("list {what}: unexpected error {e:?}"))
}

/// Lists a whole prefix at `revision` (None = latest) in one request.
pub(super) async fn list_all(s: &dyn Storage, prefix: &str, revision: Option<u64>) -> ListPage {
    list(
        s,
        ListRequest {
            prefix: prefix.into(),
            revision,
            ..Default::default()
        },
    )
    .await
}

pub(super) fn keys(page: &ListPage) -> Vec<&str> {
    page.items.iter().map(|kv| &*kv.key).collect()
}

pub(super) async fn watch(s: &dyn Storage, prefix: &str, after: u64) -> WatchStream {
    s.watch(prefix, after)
        .await
        .unwrap_or_else(|e| panic!("watch {prefix} after {after}: unexpected error {e:?}"))
}

/// The next event of a watch; panics on an error, the end of the stream or a timeout.
pub(super) async fn next_event(w: &mut WatchStream, what: &str) -> StorageEvent {
    match tokio::time::timeout(EVENT_TIMEOUT, w.next()).await {
        Ok(Some(Ok(ev))) => ev,
        Ok(Some(Err(e))) => panic!("{what}: the watch failed with {e:?}"),
        Ok(None) => panic!("{what}: the watch ended"),
        Err(_) => panic!("{what}: no event within {EVENT_TIMEOUT:?}"),
    }
}

/// Panics if the watch yields anything within a short while.
pub(super) async fn expect_quiet(w: &mut WatchStream, what: &str) {
    if let Ok(item) = tokio::time::timeout(QUIET, w.next()).await {
        panic!("{what}: expected no event, got {item:?}");
    }
}

/// Expects a watch that cannot start because `requested` is compacted: either `watch` itself
/// fails with `Compacted`, or the stream's first item is that error and the stream then ends.
pub(super) async fn expect_compacted_watch(s: &dyn Storage, prefix: &str, requested: u64) {
    let what = format!("watch {prefix} after compacted revision {requested}");
    let mut w = match s.watch(prefix, requested).await {
        Err(StorageError::Compacted { requested: r, .. }) => {
            assert_eq!(r, requested, "{what}: Compacted names another revision");
            return;
        }
        Err(e) => panic!("{what}: expected Compacted, got {e:?}"),
        Ok(w) => w,
    };
    match tokio::time::timeout(EVENT_TIMEOUT, w.next()).await {
        Ok(Some(Err(StorageError::Compacted { .. }))) => {}
        other => panic!("{what}: expected a Compacted error, got {other:?}"),
    }
    expect_end(&mut w, &what).await;
}

/// Panics unless the stream ends (after an error, a watch must end).
pub(super) async fn expect_end(w: &mut WatchStream, what: &str) {
    match tokio::time::timeout(EVENT_TIMEOUT, w.next()).await {
        Ok(None) => {}
        Ok(Some(item)) => panic!("{what}: expected the watch to end after its error, got {item:?}"),
        Err(_) => panic!("{what}: the watch did not end after its error"),
    }
}

/// The expected contents of a store: key → (value, create revision, mod revision).
#[derive(Clone, Default)]
pub(super) struct Model {
    pub(super) data: BTreeMap<String, KeyValue>,
}

impl Model {
    pub(super) fn created(&mut self, key: &str, value: &str, rev: u64) {
        self.data.insert(
            key.into(),
            KeyValue {
                key: key.into(),
                value: b(value),
                create_revision: rev,
                mod_revision: rev,
            },
        );
    }

    pub(super) fn updated(&mut self, key: &str, value: &str, rev: u64) {
        let kv = self
            .data
            .get_mut(key)
            .unwrap_or_else(|| panic!("model: update of absent {key}"));
        kv.value = b(value);
        kv.mod_revision = rev;
    }

    pub(super) fn deleted(&mut self, key: &str) {
        self.data.remove(key);
    }

    /// The items under `prefix`, in key order.
    pub(super) fn items(&self, prefix: &str) -> Vec<KeyValue> {
        self.data
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(_, v)| v.clone())
            .collect()
    }
}
