//! An in-memory [`Storage`]: a sorted map, a bounded history of events and a broadcast of live
//! changes. Fast and non-durable; for tests and throw-away servers.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use parking_lot::Mutex;
use tokio::sync::broadcast;

use super::{
    EventKind, KeyValue, ListPage, ListRequest, Storage, StorageError, StorageEvent, WatchStream,
};

/// Events kept for watchers that resume from an older revision.
const DEFAULT_HISTORY: usize = 10_000;
/// Live events buffered per watcher before it is considered too slow.
const BROADCAST_CAPACITY: usize = 4096;

struct State {
    revision: u64,
    compacted: u64,
    data: BTreeMap<Arc<str>, KeyValue>,
    history: VecDeque<StorageEvent>,
    history_limit: usize,
}

/// A non-durable store kept in memory.
pub struct MemoryStorage {
    state: Mutex<State>,
    events: broadcast::Sender<StorageEvent>,
}

impl Default for MemoryStorage {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryStorage {
    /// The latest revision.
    fn revision(&self) -> u64 {
        self.state.lock().revision
    }

    /// An empty store at revision 1 keeping the last 10,000 events for watchers.
    pub fn new() -> Self {
        Self::with_history(DEFAULT_HISTORY)
    }

    /// An empty store keeping the last `history` events for watchers that resume.
    pub fn with_history(history: usize) -> Self {
        let (events, _) = broadcast::channel(BROADCAST_CAPACITY);
        MemoryStorage {
            state: Mutex::new(State {
                revision: 1,
                compacted: 0,
                data: BTreeMap::new(),
                history: VecDeque::new(),
                history_limit: history.max(1),
            }),
            events,
        }
    }

    fn record(&self, state: &mut State, event: StorageEvent) {
        if state.history.len() >= state.history_limit
            && let Some(old) = state.history.pop_front()
        {
            state.compacted = state.compacted.max(old.kv.mod_revision);
        }
        state.history.push_back(event.clone());
        // No receivers is fine: nobody watches.
        let _ = self.events.send(event);
    }
}

#[async_trait::async_trait]
impl Storage for MemoryStorage {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        Ok(self.state.lock().data.get(key).cloned())
    }

    async fn list(&self, req: ListRequest) -> Result<ListPage, StorageError> {
        let state = self.state.lock();
        if let Some(rev) = req.revision {
            if rev > state.revision {
                return Err(StorageError::FutureRevision {
                    requested: rev,
                    current: state.revision,
                });
            }
            if rev < state.revision {
                return list_at(&state, &req, rev);
            }
        }
        let start = match &req.start_after {
            Some(k) => Bound::Excluded(k.as_str()),
            None => Bound::Included(req.prefix.as_str()),
        };
        let mut items = Vec::new();
        let mut more = false;
        let mut remaining = 0u64;
        for (k, v) in state.data.range::<str, _>((start, Bound::Unbounded)) {
            if !k.starts_with(&req.prefix) {
                break;
            }
            if req.limit > 0 && items.len() >= req.limit {
                more = true;
                remaining += 1;
                continue;
            }
            items.push(v.clone());
        }
        Ok(ListPage {
            items,
            revision: state.revision,
            more,
            remaining,
        })
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<u64, StorageError> {
        let mut state = self.state.lock();
        if state.data.contains_key(key) {
            return Err(StorageError::AlreadyExists(key.to_string()));
        }
        state.revision += 1;
        let kv = KeyValue {
            key: key.into(),
            value,
            create_revision: state.revision,
            mod_revision: state.revision,
        };
        state.data.insert(kv.key.clone(), kv.clone());
        let rev = state.revision;
        self.record(
            &mut state,
            StorageEvent {
                kind: EventKind::Created,
                kv,
                prev: None,
            },
        );
        Ok(rev)
    }

    async fn update(&self, key: &str, value: Bytes, expected: u64) -> Result<u64, StorageError> {
        let mut state = self.state.lock();
        let Some(prev) = state.data.get(key).cloned() else {
            return Err(StorageError::NotFound(key.to_string()));
        };
        if prev.mod_revision != expected {
            return Err(StorageError::Conflict {
                key: key.into(),
                expected,
                actual: prev.mod_revision,
            });
        }
        state.revision += 1;
        let kv = KeyValue {
            key: key.into(),
            value,
            create_revision: prev.create_revision,
            mod_revision: state.revision,
        };
        state.data.insert(kv.key.clone(), kv.clone());
        let rev = state.revision;
        self.record(
            &mut state,
            StorageEvent {
                kind: EventKind::Updated,
                kv,
                prev: Some(prev),
            },
        );
        Ok(rev)
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<u64>,
    ) -> Result<(u64, KeyValue), StorageError> {
        let mut state = self.state.lock();
        let Some(prev) = state.data.get(key).cloned() else {
            return Err(StorageError::NotFound(key.to_string()));
        };
        if let Some(expected) = expected
            && prev.mod_revision != expected
        {
            return Err(StorageError::Conflict {
                key: key.into(),
                expected,
                actual: prev.mod_revision,
            });
        }
        state.data.remove(key);
        state.revision += 1;
        let rev = state.revision;
        let mut kv = prev.clone();
        kv.mod_revision = rev;
        self.record(
            &mut state,
            StorageEvent {
                kind: EventKind::Deleted,
                kv,
                prev: Some(prev.clone()),
            },
        );
        Ok((rev, prev))
    }

    async fn watch(&self, prefix: &str, after: u64) -> Result<WatchStream, StorageError> {
        let state = self.state.lock();
        let after = if after == 0 { state.revision } else { after };
        if after < state.compacted {
            return Err(StorageError::Compacted {
                requested: after,
                compacted: state.compacted,
            });
        }
        let prefix = prefix.to_string();
        let backlog: Vec<_> = state
            .history
            .iter()
            .filter(|e| e.kv.mod_revision > after && e.kv.key.starts_with(&prefix))
            .cloned()
            .map(Ok)
            .collect();
        // Live events at or below this were replayed above, or (for a watch from a future
        // revision) were not asked for.
        let last_replayed = state.revision.max(after);
        // Subscribing under the lock: no event can fall between the backlog and the live feed.
        let rx = self.events.subscribe();
        drop(state);
        let live = futures::stream::unfold(Some(rx), move |rx| {
            let prefix = prefix.clone();
            async move {
                let mut rx = rx?;
                loop {
                    match rx.recv().await {
                        Ok(ev) if ev.kv.mod_revision <= last_replayed => continue,
                        Ok(ev) if ev.kv.key.starts_with(&prefix) => {
                            return Some((Ok(ev), Some(rx)));
                        }
                        Ok(_) => continue,
                        Err(broadcast::error::RecvError::Lagged(_)) => {
                            return Some((
                                Err(StorageError::Compacted {
                                    requested: last_replayed,
                                    compacted: last_replayed,
                                }),
                                None,
                            ));
                        }
                        Err(broadcast::error::RecvError::Closed) => return None,
                    }
                }
            }
        });
        Ok(futures::stream::iter(backlog).chain(live).boxed())
    }

    async fn current_revision(&self) -> Result<u64, StorageError> {
        Ok(self.revision())
    }

    fn local_revision(&self) -> Option<u64> {
        Some(self.revision())
    }

    async fn compact(&self, revision: u64) -> Result<(), StorageError> {
        let mut state = self.state.lock();
        if revision > state.revision {
            return Err(StorageError::FutureRevision {
                requested: revision,
                current: state.revision,
            });
        }
        while state
            .history
            .front()
            .is_some_and(|e| e.kv.mod_revision <= revision)
        {
            state.history.pop_front();
        }
        state.compacted = state.compacted.max(revision);
        Ok(())
    }
}

/// A list at an older revision, rebuilt from the current data and the history.
fn list_at(state: &State, req: &ListRequest, rev: u64) -> Result<ListPage, StorageError> {
    if rev < state.compacted {
        return Err(StorageError::Compacted {
            requested: rev,
            compacted: state.compacted,
        });
    }
    let mut view: BTreeMap<Arc<str>, KeyValue> = state
        .data
        .range::<str, _>((Bound::Included(req.prefix.as_str()), Bound::Unbounded))
        .take_while(|(k, _)| k.starts_with(&req.prefix))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    // Undo, newest first, every change made after `rev`.
    for ev in state.history.iter().rev() {
        if ev.kv.mod_revision <= rev {
            break;
        }
        if !ev.kv.key.starts_with(&req.prefix) {
            continue;
        }
        match &ev.prev {
            Some(prev) => {
                view.insert(prev.key.clone(), prev.clone());
            }
            None => {
                view.remove(&*ev.kv.key);
            }
        }
    }
    let mut items = Vec::new();
    let mut more = false;
    let mut remaining = 0;
    for (k, v) in view {
        if req.start_after.as_ref().is_some_and(|s| *k <= **s) {
            continue;
        }
        if req.limit > 0 && items.len() >= req.limit {
            more = true;
            remaining += 1;
            continue;
        }
        items.push(v);
    }
    Ok(ListPage {
        items,
        revision: rev,
        more,
        remaining,
    })
}
