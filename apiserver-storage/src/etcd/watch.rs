//! An etcd watch as a [`WatchStream`]: events mapped to storage events, and every way the
//! watch can stop (compaction, cancellation, a lost connection) ending the stream with an
//! `Err`, never silently. The store's requests for progress are passed on to etcd, and its
//! progress responses become [`EventKind::Progress`] events.

use std::collections::VecDeque;

use bytes::Bytes;
use futures::StreamExt;
use tokio::sync::watch;

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
    /// Changes each time the store is asked for progress ([`Storage::request_progress`]);
    /// `None` once the store is gone.
    ///
    /// [`Storage::request_progress`]: crate::Storage::request_progress
    progress: Option<watch::Receiver<u64>>,
}

impl Feed {
    /// A feed of an etcd watch opened on `keys` for changes after revision `after`, which asks
    /// etcd for progress whenever `progress` changes.
    pub(super) fn new(
        watch: Watch,
        keys: Keys,
        after: u64,
        progress: watch::Receiver<u64>,
    ) -> Self {
        Feed {
            watch,
            keys,
            seen: after,
            pending: VecDeque::new(),
            progress: Some(progress),
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
            let message = match &mut self.progress {
                Some(progress) => tokio::select! {
                    message = self.watch.message() => message,
                    asked = progress.changed() => {
                        match asked {
                            // Coalesced: requests made while this one is sent make one.
                            Ok(()) => {
                                progress.borrow_and_update();
                                // A stream that is closing says so by its next message.
                                let _ = self.watch.request_progress().await;
                            }
                            Err(_) => self.progress = None,
                        }
                        continue;
                    }
                },
                None => self.watch.message().await,
            };
            let resp = match message {
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
            // A response without events is the watch's creation (whose header revision may be
            // ahead of events still to come) or a progress response: every change up to its
            // header revision was sent.
            if resp.events.is_empty() {
                let at = resp.header.as_ref().map_or(0, |h| revision(h.revision));
                if !resp.created && at > self.seen {
                    self.seen = at;
                    return Ok(StorageEvent::progress(at));
                }
                continue;
            }
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
