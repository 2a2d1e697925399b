//! Compaction shared by every server on one etcd cluster, as upstream's `storage/etcd3`
//! compactor does it.
//!
//! etcd's history is one for the whole cluster, so N servers (replicas of one server, or
//! different servers sharing etcd, kube-apiserver included) that each compacted on their own
//! would compact N times per interval, each time cutting history to *its* previous tick —
//! possibly only a fraction of an interval ago for another server's watchers.
//!
//! Instead, the servers take turns through the key `COMPACT_REV_KEY` (upstream's name, at
//! the root of etcd, outside any server's prefix, so that every server on the cluster agrees
//! on it). Each server remembers the key's version it last saw. At every tick it runs one
//! transaction: *if the key's version is still the one I saw, write it (its version goes up
//! by one), else tell me its version*. Exactly one server's transaction succeeds per version,
//! and only that server compacts — to the revision it read at its own previous tick, one full
//! interval earlier. The others learn the new version and the current revision and try again
//! one interval later. So the cluster is compacted once per interval between them, and history
//! always reaches back at least one interval from the moment of any compaction.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use super::proto::{Compare, CompareResult, OpResult, RequestOp, TxnRequest};
use super::{EtcdStorage, header_revision};
use crate::{Storage as _, StorageError};

/// The etcd key the servers of one cluster take turns on (upstream's `compact_rev_key`). Its
/// value is the revision last compacted to, its version counts the turns taken.
pub(crate) const COMPACT_REV_KEY: &[u8] = b"compact_rev_key";

/// Where one server stands in the turn-taking: the version of `COMPACT_REV_KEY` it last saw
/// and the revision it read at its last step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompactionTurn {
    /// The version of the key this server last saw (0: none yet).
    pub version: i64,
    /// The cluster's revision at this server's last step (0: none yet).
    pub revision: u64,
}

/// What one step did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepOutcome {
    /// This server took the turn and compacted to this revision.
    Compacted(u64),
    /// This server took the turn but had no revision to compact to yet (its first step).
    Claimed,
    /// Another server took the turn since this one's last step.
    Lost,
    /// This server took the turn, but etcd refused or did not answer the compaction (the next
    /// turn compacts further).
    Failed,
}

impl EtcdStorage {
    /// One step of the shared compaction: takes the turn if no other server took it since
    /// `turn`, and then compacts to `turn.revision`. Returns where this server stands now and
    /// what it did.
    ///
    /// An error (the turn-taking transaction failed) leaves the turn as it was: the caller
    /// keeps `turn` and tries again at its next tick.
    pub async fn compaction_step(
        &self,
        turn: CompactionTurn,
    ) -> Result<(CompactionTurn, StepOutcome), StorageError> {
        let key = COMPACT_REV_KEY.to_vec();
        let txn = TxnRequest {
            compare: vec![Compare::version(
                key.clone(),
                CompareResult::Equal,
                turn.version,
            )],
            success: vec![RequestOp::put(
                key.clone(),
                bytes::Bytes::from(turn.revision.to_string()),
            )],
            failure: vec![RequestOp::get(key)],
        };
        let resp = self.txn("compaction turn", txn).await?;
        let now = header_revision(resp.header.as_ref());
        if !resp.succeeded {
            let version = resp
                .responses
                .iter()
                .find_map(|op| match &op.response {
                    Some(OpResult::Range(get)) => get.kvs.first().map(|kv| kv.version),
                    _ => None,
                })
                .unwrap_or(0);
            let next = CompactionTurn {
                version,
                revision: now,
            };
            return Ok((next, StepOutcome::Lost));
        }
        let next = CompactionTurn {
            version: turn.version + 1,
            revision: now,
        };
        if turn.revision == 0 {
            // Nothing read one interval ago: the first turn only starts the clock.
            return Ok((next, StepOutcome::Claimed));
        }
        // As upstream, the turn is taken even if the compaction fails.
        match self.compact(turn.revision).await {
            Ok(()) => {
                tracing::debug!(revision = turn.revision, "compacted etcd");
                Ok((next, StepOutcome::Compacted(turn.revision)))
            }
            Err(e) => {
                tracing::warn!(revision = turn.revision, error = %e, "etcd compaction failed");
                Ok((next, StepOutcome::Failed))
            }
        }
    }
}

/// Spawns this server's part of the shared compaction of `etcd`: a step every `interval`
/// (counted from the end of the previous step, as upstream), the first one `interval` after
/// the start. Failures are logged and retried at the next tick. The task runs until its handle
/// is aborted.
pub fn spawn_compactor(etcd: Arc<EtcdStorage>, interval: Duration) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut turn = CompactionTurn::default();
        loop {
            tokio::time::sleep(interval).await;
            match etcd.compaction_step(turn).await {
                Ok((next, _)) => turn = next,
                Err(e) => tracing::warn!(error = %e, "etcd compaction turn failed"),
            }
        }
    })
}
