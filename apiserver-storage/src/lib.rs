//! The storage seam: a key-value store with global revisions and watch.
//!
//! Every backend (in-memory, embedded, etcd) implements [`Storage`]. Revisions are global and
//! strictly increasing per store; an object's `resourceVersion` is the revision of its last
//! change, as a decimal string that clients treat as opaque.
//!
//! This is the storage layer of `apiserver-framework`, which re-exports it as
//! `apiserver_framework::storage`: a crate that writes a backend needs only this one (and Cargo
//! keeps it from importing anything of the layers above). Features: `etcd`, the etcd backend
//! and its client; `testing`, the suite of backends' conformance (`conformance`).

pub mod cache;
pub mod compactor;
#[cfg(any(test, feature = "testing"))]
pub mod conformance;
pub mod embedded;
pub mod encryption;
#[cfg(feature = "etcd")]
pub mod etcd;
pub mod keys;
pub mod memory;
pub(crate) mod page_counts;
pub mod traced;

use std::sync::Arc;

use bytes::Bytes;
use futures::stream::BoxStream;

/// One stored value with its revisions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyValue {
    /// The full key, e.g. `/flunders/default/f1`. Shared, not copied: the watch cache lists
    /// its keys without a copy of each (`String::into` or `Arc::from` make one).
    pub key: Arc<str>,
    /// The value: the object serialized as JSON.
    pub value: Bytes,
    /// Revision at which the key was created.
    pub create_revision: u64,
    /// Revision of the last change.
    pub mod_revision: u64,
}

/// What happened to a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// The key was created.
    Created,
    /// The key was updated.
    Updated,
    /// The key was deleted; the event carries the last value.
    Deleted,
}

/// One change, as seen by a watcher.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StorageEvent {
    /// What happened.
    pub kind: EventKind,
    /// The new value (for deletes: the last value, with `mod_revision` = the deletion revision).
    pub kv: KeyValue,
    /// The value before the change, if any.
    pub prev: Option<KeyValue>,
}

/// A page of a list.
#[derive(Clone, Debug, Default)]
pub struct ListPage {
    /// The items, in key order.
    pub items: Vec<KeyValue>,
    /// The revision the list was read at.
    pub revision: u64,
    /// Whether more items follow the last one.
    pub more: bool,
    /// How many items follow the last one (when known).
    pub remaining: u64,
}

/// How to list.
#[derive(Clone, Debug, Default)]
pub struct ListRequest {
    /// Only keys starting with this prefix.
    pub prefix: String,
    /// Only keys strictly after this key (for continuing a paged list).
    pub start_after: Option<String>,
    /// At most this many items (0 = all).
    pub limit: usize,
    /// Read at this revision (None = the latest). Older than the compacted revision → `Compacted`.
    pub revision: Option<u64>,
    /// With `revision: None`: what a watch cache holds once it has applied every write made
    /// through it, without asking the backend for its current revision (upstream's
    /// `resourceVersion=0` and informer listers). It may miss other servers' latest writes,
    /// never this server's. Stores without a cache read the latest regardless.
    pub from_cache: bool,
}

/// Errors of a storage backend.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StorageError {
    /// The key does not exist.
    #[error("key not found: {0}")]
    NotFound(String),
    /// Create-if-absent found the key present.
    #[error("key exists: {0}")]
    AlreadyExists(String),
    /// Compare-and-swap found another revision.
    #[error("revision mismatch on {key}: expected {expected}, found {actual}")]
    Conflict {
        /// The key.
        key: String,
        /// The revision the caller expected.
        expected: u64,
        /// The revision found.
        actual: u64,
    },
    /// The requested revision has been compacted away.
    #[error("required revision {requested} has been compacted (compacted revision {compacted})")]
    Compacted {
        /// The requested revision.
        requested: u64,
        /// The oldest revision still available.
        compacted: u64,
    },
    /// The requested revision is in the future.
    #[error("required revision {requested} is a future revision (current {current})")]
    FutureRevision {
        /// The requested revision.
        requested: u64,
        /// The current revision.
        current: u64,
    },
    /// The backend cannot be reached, or timed out (upstream's "unreachable": answered
    /// `500 ServerTimeout`, try again).
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// The backend failed, e.g. a write could not reach a full disk (upstream's storage
    /// "internal error": answered `500 InternalError` with the reason).
    #[error("storage failed: {0}")]
    Internal(String),
    /// Stored values that do not decode as their kind's type: each with its key and why. A
    /// read that meets one fails (upstream's corrupt-object error); the value stays stored, for
    /// an unsafe delete to remove.
    #[error("stored values do not decode: {}", corrupt_keys(.0))]
    Corrupt(Vec<CorruptValue>),
}

/// The first few keys of `values` and how many there are: a message stays short however many
/// stored values are corrupt.
fn corrupt_keys(values: &[CorruptValue]) -> String {
    const SHOWN: usize = 3;
    let keys: Vec<&str> = values.iter().take(SHOWN).map(|v| v.key.as_str()).collect();
    match values.len() {
        n if n > SHOWN => format!("{} and {} more", keys.join(", "), n - SHOWN),
        _ => keys.join(", "),
    }
}

/// A stored value that does not decode (see [`StorageError::Corrupt`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CorruptValue {
    /// The value's key.
    pub key: String,
    /// Why it does not decode.
    pub message: String,
}

/// A stream of watch events, in revision order. An `Err` ends the stream (e.g. the watcher fell
/// too far behind and must relist: `Compacted`).
pub type WatchStream = BoxStream<'static, Result<StorageEvent, StorageError>>;

/// A key-value store with revisions and watch.
#[async_trait::async_trait]
pub trait Storage: Send + Sync + 'static {
    /// Reads one key at the latest revision.
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError>;
    /// Lists keys under a prefix.
    async fn list(&self, req: ListRequest) -> Result<ListPage, StorageError>;
    /// Creates a key that must not exist; returns the new revision.
    async fn create(&self, key: &str, value: Bytes) -> Result<u64, StorageError>;
    /// Replaces a key whose `mod_revision` must equal `expected`; returns the new revision.
    async fn update(&self, key: &str, value: Bytes, expected: u64) -> Result<u64, StorageError>;
    /// Deletes a key, optionally only at `expected` revision; returns the deletion revision
    /// and the last value.
    async fn delete(
        &self,
        key: &str,
        expected: Option<u64>,
    ) -> Result<(u64, KeyValue), StorageError>;
    /// Watches keys under `prefix` for changes after revision `after` (0 = from now).
    async fn watch(&self, prefix: &str, after: u64) -> Result<WatchStream, StorageError>;
    /// The latest revision.
    async fn current_revision(&self) -> Result<u64, StorageError>;
    /// Forgets history up to and including `revision`.
    async fn compact(&self, revision: u64) -> Result<(), StorageError>;
    /// The latest revision, when this store knows it in this process without a round trip
    /// (what [`current_revision`](Storage::current_revision) would answer); `None` for a remote
    /// store. A watch cache in front of a store that knows it serves consistent reads of single
    /// keys from memory; in front of a remote one (etcd) it passes them through, since learning
    /// the current revision costs as much as the read.
    fn local_revision(&self) -> Option<u64> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_corrupt_value_error_names_a_few_keys_and_counts_the_rest() {
        let values = |n: usize| {
            StorageError::Corrupt(
                (0..n)
                    .map(|i| CorruptValue {
                        key: format!("/k{i}"),
                        message: "bad".into(),
                    })
                    .collect(),
            )
        };
        assert_eq!(
            values(2).to_string(),
            "stored values do not decode: /k0, /k1"
        );
        assert_eq!(
            values(100_000).to_string(),
            "stored values do not decode: /k0, /k1, /k2 and 99997 more"
        );
    }
}
