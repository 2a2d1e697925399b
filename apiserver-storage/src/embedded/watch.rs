//! Watches: replay from the change log on disk, then live events from the writer's broadcast.
//!
//! A watcher subscribes to the broadcast *before* it reads where the log ends, so every event
//! committed after that point reaches its receiver; live events at or below the last revision
//! it has handled are skipped, so none is delivered twice. Revisions are dense, so a live event
//! that is not the next revision reveals a gap, and the watcher reads the missing part from the
//! log instead. A watcher too slow for the broadcast buffer (`Lagged`) does the same: it
//! catches up from the log, and only if compaction removed the part it needs does it end with
//! `Compacted` (the client relists). Events are never skipped silently.

use std::collections::VecDeque;
use std::sync::{Arc, Weak};

use futures::StreamExt;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;

use super::{Shared, read};
use crate::{StorageError, StorageEvent, WatchStream};

/// Events read from the log per read transaction, at most.
const LOG_BATCH_EVENTS: usize = 512;
/// Bytes of values read from the log per read transaction, about at most.
const LOG_BATCH_BYTES: usize = 16 << 20;

/// Starts a watch of `prefix` after revision `after` (0 = from now).
pub(super) async fn watch(
    shared: &Arc<Shared>,
    prefix: &str,
    after: u64,
) -> Result<WatchStream, StorageError> {
    let live = shared.events.subscribe();
    let (current, compacted) = read(shared, |snapshot| snapshot.revisions()).await?;
    let cursor = match after {
        0 => current,
        after if after < compacted => {
            return Err(StorageError::Compacted {
                requested: after,
                compacted,
            });
        }
        after => after,
    };
    let watcher = Watcher {
        shared: Arc::downgrade(shared),
        prefix: prefix.to_string(),
        cursor,
        from_log: cursor < current,
        pending: VecDeque::new(),
        live,
    };
    Ok(
        futures::stream::unfold(Some(watcher), |watcher| async move {
            let mut watcher = watcher?;
            let item = watcher.next().await?;
            // An error ends the stream.
            let watcher = item.is_ok().then_some(watcher);
            Some((item, watcher))
        })
        .boxed(),
    )
}

struct Watcher {
    /// Weak, so that a forgotten watch does not keep the database open.
    shared: Weak<Shared>,
    prefix: String,
    /// Every revision up to this one has been delivered or was not wanted.
    cursor: u64,
    /// Whether the next events come from the log rather than the broadcast.
    from_log: bool,
    /// Events read from the log, not yet delivered.
    pending: VecDeque<StorageEvent>,
    live: broadcast::Receiver<StorageEvent>,
}

impl Watcher {
    /// The next event, an error (after which the stream ends), or the end (the store is gone).
    async fn next(&mut self) -> Option<Result<StorageEvent, StorageError>> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some(Ok(event));
            }
            if self.from_log {
                let shared = self.shared.upgrade()?;
                let (prefix, after) = (self.prefix.clone(), self.cursor);
                let batch = read(&shared, move |snapshot| {
                    snapshot.log(&prefix, after, LOG_BATCH_EVENTS, LOG_BATCH_BYTES)
                })
                .await;
                match batch {
                    Ok(batch) => {
                        self.cursor = batch.scanned;
                        self.from_log = !batch.reached_end;
                        self.pending.extend(batch.events);
                    }
                    Err(e) => return Some(Err(e)),
                }
                continue;
            }
            match self.live.recv().await {
                Ok(event) => {
                    let rev = event.kv.mod_revision;
                    if rev <= self.cursor {
                        continue;
                    }
                    if rev != self.cursor + 1 {
                        // A gap: the log has it all.
                        self.from_log = true;
                        continue;
                    }
                    self.cursor = rev;
                    if event.kv.key.starts_with(&self.prefix) {
                        return Some(Ok(event));
                    }
                }
                Err(RecvError::Lagged(_)) => self.from_log = true,
                Err(RecvError::Closed) => return None,
            }
        }
    }
}
