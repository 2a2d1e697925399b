//! An etcd watch as a [`WatchStream`]: events mapped to storage events, and every way the
//! watch can stop (compaction, cancellation, a lost connection) ending the stream with an
//! `Err`, never silently.

use std::collections::VecDeque;

use bytes::Bytes;
use futures::StreamExt;

use super::client::Watch;
use super::error::describe;
use super::keys::{Keys, revision};
use super::proto::{Event, EventType};
use crate::{EventKind, KeyValue, StorageError, StorageEvent, WatchStream};

/// An open etcd watch and the events received but not yet handed out.
pub(super) struct Feed {
    watch: Watch,
    keys: Keys,
    /// The revision of the last event received (at first: the one watched after); a watch
    /// that etcd cancels for compaction needed the events after it.
    seen: u64,
    pending: VecDeque<StorageEvent>,
}

impl Feed {
    /// A feed of an etcd watch opened on `keys` for changes after revision `after`.
    pub(super) fn new(watch: Watch, keys: Keys, after: u64) -> Self {
        Feed {
            watch,
            keys,
            seen: after,
            pending: VecDeque::new(),
        }
    }

    /// The feed as a stream that ends after its first `Err`.
    pub(super) fn into_stream(self) -> WatchStream {
        futures::stream::unfold(Some(self), |feed| async move {
            let mut feed = feed?;
            match feed.next().await {
                Ok(ev) => Some((Ok(ev), Some(feed))),
                Err(e) => Some((Err(e), None)),
            }
        })
        .boxed()
    }

    async fn next(&mut self) -> Result<StorageEvent, StorageError> {
        loop {
            if let Some(ev) = self.pending.pop_front() {
                return Ok(ev);
            }
            let resp = match self.watch.message().await {
                Ok(Some(resp)) => resp,
                Ok(None) => {
                    return Err(StorageError::Unavailable(
                        "etcd closed the watch stream".into(),
                    ));
                }
                Err(e) => {
                    return Err(StorageError::Unavailable(format!(
                        "etcd watch: {}",
                        describe(&e)
                    )));
                }
            };
            if resp.compact_revision > 0 {
                return Err(StorageError::Compacted {
                    requested: self.seen,
                    compacted: revision(resp.compact_revision),
                });
            }
            if resp.canceled {
                return Err(StorageError::Unavailable(format!(
                    "etcd canceled the watch: {}",
                    resp.cancel_reason
                )));
            }
            // Creation and progress responses carry no events.
            for ev in resp.events {
                if let Some(ev) = storage_event(&self.keys, ev) {
                    self.seen = self.seen.max(ev.kv.mod_revision);
                    self.pending.push_back(ev);
                }
            }
        }
    }
}

/// A storage event from an etcd event (watched with previous values).
fn storage_event(keys: &Keys, ev: Event) -> Option<StorageEvent> {
    let kind = ev.r#type();
    let kv = ev.kv?;
    let prev = ev.prev_kv.map(|p| keys.key_value(p));
    Some(match kind {
        EventType::Put => {
            let kv = keys.key_value(kv);
            if kv.create_revision == kv.mod_revision {
                StorageEvent {
                    kind: EventKind::Created,
                    kv,
                    prev: None,
                }
            } else {
                StorageEvent {
                    kind: EventKind::Updated,
                    kv,
                    prev,
                }
            }
        }
        EventType::Delete => {
            // etcd reports the key with the deletion revision; the last value comes from the
            // previous key-value (absent only when compaction already removed it).
            let deleted_at = revision(kv.mod_revision);
            let mut last = prev.clone().unwrap_or_else(|| KeyValue {
                key: keys.strip(&kv.key),
                value: Bytes::new(),
                create_revision: 0,
                mod_revision: deleted_at,
            });
            last.mod_revision = deleted_at;
            StorageEvent {
                kind: EventKind::Deleted,
                kv: last,
                prev,
            }
        }
    })
}
