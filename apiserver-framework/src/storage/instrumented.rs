//! [`InstrumentedStorage`]: a [`Storage`] that records the latency, count and failures of
//! every call (`etcd_request_duration_seconds`, `etcd_requests_total`,
//! `etcd_request_errors_total`, labelled by operation, group and resource as upstream) and
//! keeps `apiserver_storage_objects` (objects per `<resource>.<group>`) up to date.
//!
//! The group and resource are read from the key: `/<group>/<resource>/…` when the first
//! segment holds a dot (API groups served through aggregation are DNS subdomains), else
//! `/<resource>/…` for the core group. An object count starts from one listing of the
//! resource's keys, the first time the resource is touched; creates and deletes after that
//! listing's revision move it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::sync::OnceCell;

use crate::metrics::{Metrics, global};
use crate::storage::{KeyValue, ListPage, ListRequest, Storage, StorageError, WatchStream};

/// A storage whose calls are recorded in the [`global`] metrics.
pub struct InstrumentedStorage {
    inner: Arc<dyn Storage>,
    metrics: &'static Metrics,
    counts: Mutex<HashMap<(String, String), Arc<ObjectCount>>>,
}

/// The objects of one resource, counted from a listing at `base` revision.
#[derive(Default)]
struct ObjectCount {
    /// The revision of the initial listing, once it is done.
    base: OnceCell<u64>,
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
        let labels = [operation, group, resource];
        let started = Instant::now();
        let result = call.await;
        self.metrics
            .storage_duration
            .with_label_values(&labels)
            .observe(started.elapsed().as_secs_f64());
        self.metrics
            .storage_requests
            .with_label_values(&labels)
            .inc();
        if let Err(e) = &result
            && is_failure(e)
        {
            self.metrics.storage_errors.with_label_values(&labels).inc();
        }
        result
    }

    /// Makes sure the object count of `key`'s resource has been initialized; returns the
    /// label value and the revision the count starts from.
    async fn count_of(&self, key: &str) -> Option<(String, u64)> {
        let (group, resource) = group_resource(key);
        if resource.is_empty() {
            return None;
        }
        let entry = self
            .counts
            .lock()
            .entry((group.to_string(), resource.to_string()))
            .or_default()
            .clone();
        let label = if group.is_empty() {
            resource.to_string()
        } else {
            format!("{resource}.{group}")
        };
        let prefix = if group.is_empty() {
            format!("/{resource}/")
        } else {
            format!("/{group}/{resource}/")
        };
        let base = entry
            .base
            .get_or_try_init(|| async {
                let page = self
                    .timed(
                        "list",
                        &prefix,
                        self.inner.list(ListRequest {
                            prefix: prefix.clone(),
                            ..Default::default()
                        }),
                    )
                    .await?;
                self.metrics
                    .storage_objects
                    .with_label_values(&[&label])
                    .set(page.items.len() as i64);
                Ok::<_, StorageError>(page.revision)
            })
            .await
            .ok()?;
        Some((label, *base))
    }

    fn moved(&self, counted: Option<(String, u64)>, revision: u64, delta: i64) {
        if let Some((label, base)) = counted
            && revision > base
        {
            self.metrics
                .storage_objects
                .with_label_values(&[&label])
                .add(delta);
        }
    }
}

/// Whether a storage error is a failure of the store (not an answer such as "not found" or
/// "conflict").
fn is_failure(e: &StorageError) -> bool {
    matches!(e, StorageError::Unavailable(_))
}

/// The API group and resource a key or key prefix belongs to (see the module docs).
pub fn group_resource(key: &str) -> (&str, &str) {
    let mut parts = key.split('/').filter(|p| !p.is_empty());
    match (parts.next(), parts.next()) {
        (Some(first), Some(second)) if first.contains('.') => (first, second),
        (Some(first), _) if first.contains('.') => (first, ""),
        (Some(first), _) => ("", first),
        (None, _) => ("", ""),
    }
}

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
        let counted = self.count_of(key).await;
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
        let counted = self.count_of(key).await;
        let (revision, kv) = self
            .timed("delete", key, self.inner.delete(key, expected))
            .await?;
        self.moved(counted, revision, -1);
        Ok((revision, kv))
    }

    async fn watch(&self, prefix: &str, after: u64) -> Result<WatchStream, StorageError> {
        // Touching a resource starts its object count, so that it is known before any write.
        let _ = self.count_of(prefix).await;
        self.timed("watch", prefix, self.inner.watch(prefix, after))
            .await
    }

    async fn current_revision(&self) -> Result<u64, StorageError> {
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
