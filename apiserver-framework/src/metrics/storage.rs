//! `InstrumentedStorage`: a [`Storage`] that records the latency, count and failures of
//! every call (`etcd_request_duration_seconds`, `etcd_requests_total`,
//! `etcd_request_errors_total`, labelled by operation, group and resource as upstream) and
//! keeps `apiserver_storage_objects` (objects per `<resource>.<group>`) up to date.
//!
//! The group and resource are read from the key: `/<group>/<resource>/…` when the first
//! segment holds a dot (API groups served through aggregation are DNS subdomains), else
//! `/<resource>/…` for the core group. An object count starts from one listing of the
//! resource's keys, started in the background the first time the resource is touched; creates
//! and deletes after that listing's revision move it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use parking_lot::Mutex;

use crate::metrics::{Metrics, global};
use crate::storage::{KeyValue, ListPage, ListRequest, Storage, StorageError, WatchStream};

/// A storage whose calls are recorded in the [`global`] metrics.
pub(crate) struct InstrumentedStorage {
    inner: Arc<dyn Storage>,
    metrics: &'static Metrics,
    counts: Mutex<HashMap<(String, String), Arc<ObjectCount>>>,
}

/// The object count of one resource.
struct ObjectCount {
    group: String,
    resource: String,
    /// The `resource` label of `apiserver_storage_objects`: `<resource>.<group>`.
    label: String,
    state: Mutex<CountState>,
}

#[derive(Default)]
struct CountState {
    /// The revision of the listing the count started from, once it is done.
    base: Option<u64>,
    count: i64,
    /// Creates (+1) and deletes (-1) seen before the listing was done, with their revisions.
    pending: Vec<(u64, i64)>,
    listing: bool,
}

impl InstrumentedStorage {
    /// `inner`, instrumented.
    pub fn wrap(inner: Arc<dyn Storage>) -> Arc<dyn Storage> {
        Arc::new(InstrumentedStorage {
            inner,
            metrics: global(),
            counts: Mutex::new(HashMap::new()),
        })
    }

    async fn timed<T>(
        &self,
        operation: &str,
        key: &str,
        call: impl Future<Output = Result<T, StorageError>>,
    ) -> Result<T, StorageError> {
        let (group, resource) = group_resource(key);
        timed(self.metrics, [operation, group, resource], call).await
    }

    /// The object count of `key`'s resource; the first time (and after a failed listing),
    /// starts listing the resource in the background to learn where the count starts.
    fn count_of(&self, key: &str) -> Option<Arc<ObjectCount>> {
        let (group, resource) = group_resource(key);
        if resource.is_empty() {
            return None;
        }
        let count = self
            .counts
            .lock()
            .entry((group.to_string(), resource.to_string()))
            .or_insert_with(|| {
                Arc::new(ObjectCount {
                    group: group.to_string(),
                    resource: resource.to_string(),
                    label: if group.is_empty() {
                        resource.to_string()
                    } else {
                        format!("{resource}.{group}")
                    },
                    state: Mutex::new(CountState::default()),
                })
            })
            .clone();
        let start = {
            let mut state = count.state.lock();
            let start = state.base.is_none() && !state.listing;
            state.listing |= start;
            start
        };
        if start {
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    runtime.spawn(list_count(self.inner.clone(), self.metrics, count.clone()));
                }
                Err(_) => count.state.lock().listing = false,
            }
        }
        Some(count)
    }

    /// Moves the count by `delta` for a change at `revision`.
    fn moved(&self, count: Option<Arc<ObjectCount>>, revision: u64, delta: i64) {
        let Some(count) = count else { return };
        let mut state = count.state.lock();
        match state.base {
            Some(base) if revision > base => {
                state.count += delta;
                self.metrics
                    .storage_objects
                    .with_label_values(&[&count.label])
                    .set(state.count);
            }
            Some(_) => {}
            None => state.pending.push((revision, delta)),
        }
    }
}

/// Runs `call`, recording its latency, and whether it failed, under `labels`.
async fn timed<T>(
    metrics: &Metrics,
    labels: [&str; 3],
    call: impl Future<Output = Result<T, StorageError>>,
) -> Result<T, StorageError> {
    let started = Instant::now();
    let result = call.await;
    metrics
        .storage_duration
        .with_label_values(&labels)
        .observe(started.elapsed().as_secs_f64());
    metrics.storage_requests.with_label_values(&labels).inc();
    if let Err(e) = &result
        && is_failure(e)
    {
        metrics.storage_errors.with_label_values(&labels).inc();
    }
    result
}

/// Lists the keys of `count`'s resource and starts the count from them (and the changes seen
/// meanwhile that the listing did not include).
async fn list_count(inner: Arc<dyn Storage>, metrics: &'static Metrics, count: Arc<ObjectCount>) {
    let prefix = if count.group.is_empty() {
        format!("/{}/", count.resource)
    } else {
        format!("/{}/{}/", count.group, count.resource)
    };
    let labels = ["list", count.group.as_str(), count.resource.as_str()];
    let listed = timed(
        metrics,
        labels,
        inner.list(ListRequest {
            prefix,
            ..Default::default()
        }),
    )
    .await;
    let mut state = count.state.lock();
    state.listing = false;
    let Ok(page) = listed else { return };
    let later: i64 = state
        .pending
        .iter()
        .filter(|(revision, _)| *revision > page.revision)
        .map(|(_, delta)| delta)
        .sum();
    state.pending.clear();
    state.base = Some(page.revision);
    state.count = page.items.len() as i64 + later;
    metrics
        .storage_objects
        .with_label_values(&[&count.label])
        .set(state.count);
}

/// Whether a storage error is a failure of the store (not an answer such as "not found" or
/// "conflict").
fn is_failure(e: &StorageError) -> bool {
    matches!(e, StorageError::Unavailable(_) | StorageError::Internal(_))
}

/// The API group and resource a key or key prefix belongs to (see the module docs).
pub use crate::storage::keys::group_resource;

#[async_trait::async_trait]
impl Storage for InstrumentedStorage {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        self.timed("get", key, self.inner.get(key)).await
    }

    async fn list(&self, req: ListRequest) -> Result<ListPage, StorageError> {
        let prefix = req.prefix.clone();
        self.timed("list", &prefix, self.inner.list(req)).await
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<u64, StorageError> {
        let counted = self.count_of(key);
        let revision = self
            .timed("create", key, self.inner.create(key, value))
            .await?;
        self.moved(counted, revision, 1);
        Ok(revision)
    }

    async fn update(&self, key: &str, value: Bytes, expected: u64) -> Result<u64, StorageError> {
        self.timed("update", key, self.inner.update(key, value, expected))
            .await
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<u64>,
    ) -> Result<(u64, KeyValue), StorageError> {
        let counted = self.count_of(key);
        let (revision, kv) = self
            .timed("delete", key, self.inner.delete(key, expected))
            .await?;
        self.moved(counted, revision, -1);
        Ok((revision, kv))
    }

    async fn watch(&self, prefix: &str, after: u64) -> Result<WatchStream, StorageError> {
        // Touching a resource starts its object count, so that it is known before any write.
        let _ = self.count_of(prefix);
        self.timed("watch", prefix, self.inner.watch(prefix, after))
            .await
    }

    fn local_revision(&self) -> Option<u64> {
        self.inner.local_revision()
    }

    async fn current_revision(&self) -> Result<u64, StorageError> {
        // A local store answers from a counter: nothing worth a storage metric (the watch cache
        // asks before every consistent read).
        if let Some(revision) = self.inner.local_revision() {
            return Ok(revision);
        }
        self.timed(
            "getCurrentResourceVersion",
            "",
            self.inner.current_revision(),
        )
        .await
    }

    async fn compact(&self, revision: u64) -> Result<(), StorageError> {
        self.timed("compact", "", self.inner.compact(revision))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::memory::MemoryStorage;

    #[test]
    fn keys_name_their_group_and_resource() {
        assert_eq!(
            group_resource("/wardle.example.com/flunders/ns/f1"),
            ("wardle.example.com", "flunders")
        );
        assert_eq!(
            group_resource("/wardle.example.com/fischers/"),
            ("wardle.example.com", "fischers")
        );
        assert_eq!(group_resource("/configmaps/ns/c"), ("", "configmaps"));
        assert_eq!(group_resource("/configmaps/"), ("", "configmaps"));
        assert_eq!(group_resource(""), ("", ""));
    }

    #[tokio::test]
    async fn calls_and_objects_are_counted() {
        let m = global();
        let inner: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
        inner
            .create(
                "/counting.example.com/widgets/ns/pre",
                Bytes::from_static(b"{}"),
            )
            .await
            .unwrap();
        let s = InstrumentedStorage::wrap(inner);
        let objects = || {
            m.storage_objects
                .with_label_values(&["widgets.counting.example.com"])
                .get()
        };
        let creates = || {
            m.storage_requests
                .with_label_values(&["create", "counting.example.com", "widgets"])
                .get()
        };
        s.create(
            "/counting.example.com/widgets/ns/a",
            Bytes::from_static(b"{}"),
        )
        .await
        .unwrap();
        // The count starts from a listing in the background.
        for _ in 0..100 {
            if objects() == 2 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(objects(), 2);
        assert_eq!(creates(), 1);
        assert!(
            s.create(
                "/counting.example.com/widgets/ns/a",
                Bytes::from_static(b"{}")
            )
            .await
            .is_err()
        );
        assert_eq!(objects(), 2);
        assert_eq!(creates(), 2);
        s.delete("/counting.example.com/widgets/ns/a", None)
            .await
            .unwrap();
        assert_eq!(objects(), 1);
        let hist =
            m.storage_duration
                .with_label_values(&["delete", "counting.example.com", "widgets"]);
        assert_eq!(hist.get_sample_count(), 1);
        assert_eq!(
            m.storage_errors
                .with_label_values(&["create", "counting.example.com", "widgets"])
                .get(),
            0
        );
    }
}
