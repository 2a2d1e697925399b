//! `TracedStorage`: a [`Storage`] whose calls are OpenTelemetry spans (the `--tracing-config-file`
//! of the server), children of the span current at the call (the request's).
//!
//! Installed only when tracing is configured, so a server without it pays nothing here. The
//! spans are `tracing` spans at level `TRACE` under [`TRACE_TARGET`]: the server's OpenTelemetry
//! layer exports that target and its log output does not show it below `-v=6`. Names follow
//! upstream's storage spans (`Create etcd3`, `GuaranteedUpdate etcd3`, `List(recursive=true)
//! etcd3`), named after the storage operation rather than the backend, which is one of several
//! here: `Get storage`, `List storage`, `Create storage`, `Update storage`, `Delete storage`,
//! `Watch storage`, each with the key (or prefix) it reads or writes
//! and, for a list, the `count` of items read.

use std::sync::Arc;

use bytes::Bytes;
use tracing::Instrument;

use crate::{KeyValue, ListPage, ListRequest, Storage, StorageError, WatchStream};

/// The `tracing` target of the spans meant for OpenTelemetry (the request, admission, webhook
/// calls, storage calls, conversion and the aggregator's proxy hop): the server's exporter
/// layer takes exactly this target.
pub const TRACE_TARGET: &str = "apiserver_trace";

/// A storage whose calls are spans (see the module documentation).
pub struct TracedStorage {
    inner: Arc<dyn Storage>,
}

impl TracedStorage {
    /// `inner`, its calls traced.
    pub fn wrap(inner: Arc<dyn Storage>) -> Arc<dyn Storage> {
        Arc::new(TracedStorage { inner })
    }
}

/// A storage call's span: `name` with the key it works on.
macro_rules! storage_span {
    ($name:literal, $key:expr) => {
        tracing::trace_span!(
            target: TRACE_TARGET,
            "storage",
            otel.name = $name,
            otel.kind = "internal",
            key = %$key,
            count = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
            error = tracing::field::Empty,
        )
    };
}

/// Marks `span` failed with `error` (OpenTelemetry's status `ERROR`).
fn record_error<T>(span: &tracing::Span, result: &Result<T, StorageError>) {
    if let Err(e) = result {
        span.record("otel.status_code", "error");
        span.record("error", tracing::field::display(e));
    }
}

#[async_trait::async_trait]
impl Storage for TracedStorage {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        let span = storage_span!("Get storage", key);
        let result = self.inner.get(key).instrument(span.clone()).await;
        record_error(&span, &result);
        result
    }

    async fn list(&self, req: ListRequest) -> Result<ListPage, StorageError> {
        let span = storage_span!("List storage", req.prefix);
        let result = self.inner.list(req).instrument(span.clone()).await;
        match &result {
            Ok(page) => {
                span.record("count", page.items.len());
            }
            Err(_) => record_error(&span, &result),
        }
        result
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<u64, StorageError> {
        let span = storage_span!("Create storage", key);
        let result = self.inner.create(key, value).instrument(span.clone()).await;
        record_error(&span, &result);
        result
    }

    async fn update(&self, key: &str, value: Bytes, expected: u64) -> Result<u64, StorageError> {
        let span = storage_span!("Update storage", key);
        let result = self
            .inner
            .update(key, value, expected)
            .instrument(span.clone())
            .await;
        record_error(&span, &result);
        result
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<u64>,
    ) -> Result<(u64, KeyValue), StorageError> {
        let span = storage_span!("Delete storage", key);
        let result = self
            .inner
            .delete(key, expected)
            .instrument(span.clone())
            .await;
        record_error(&span, &result);
        result
    }

    async fn watch(&self, prefix: &str, after: u64) -> Result<WatchStream, StorageError> {
        // The span covers starting the watch, not the events that follow.
        let span = storage_span!("Watch storage", prefix);
        let result = self
            .inner
            .watch(prefix, after)
            .instrument(span.clone())
            .await;
        record_error(&span, &result);
        result
    }

    async fn current_revision(&self) -> Result<u64, StorageError> {
        self.inner.current_revision().await
    }

    async fn compact(&self, revision: u64) -> Result<(), StorageError> {
        self.inner.compact(revision).await
    }

    fn local_revision(&self) -> Option<u64> {
        self.inner.local_revision()
    }

    fn request_progress(&self) {
        self.inner.request_progress();
    }
}
