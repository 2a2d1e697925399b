//! Background compaction for any [`Storage`], the way kube-apiserver compacts etcd: at every
//! tick, compact to the revision that was current at the previous tick, so that history is kept
//! for at least one interval and watchers and paged lists that are at most that far behind can
//! go on.
//!
//! This compactor is for a store only this server writes (embedded, memory). etcd is shared:
//! the servers on it take turns instead, so that it is compacted once per interval however
//! many servers (or replicas) run — see `etcd::compact` (feature `etcd`).

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::MissedTickBehavior;

use super::{Storage, StorageError};

/// Spawns a task that every `interval` compacts `storage` to the revision that was current at
/// the previous tick. The task runs until its handle is aborted; it keeps `storage` alive until
/// then. Failures are logged and retried at the next tick.
pub fn spawn_compactor(storage: Arc<dyn Storage>, interval: Duration) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(interval);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        // The first tick completes at once: it only records where history starts.
        ticks.tick().await;
        let mut previous = current(&*storage).await;
        let mut compacted = 0;
        loop {
            ticks.tick().await;
            if let Some(rev) = previous.filter(|&rev| rev > compacted) {
                match storage.compact(rev).await {
                    // Someone else compacted further already: fine.
                    Ok(()) | Err(StorageError::Compacted { .. }) => compacted = rev,
                    Err(e) => tracing::warn!(revision = rev, error = %e, "compaction failed"),
                }
            }
            previous = current(&*storage).await;
        }
    })
}

async fn current(storage: &dyn Storage) -> Option<u64> {
    storage
        .current_revision()
        .await
        .inspect_err(|e| tracing::warn!(error = %e, "compactor: cannot read the current revision"))
        .ok()
}
