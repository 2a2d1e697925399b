//! The writer thread: the only place that writes. It takes requests from a channel, applies as
//! many as are waiting (up to a batch size) in one redb transaction, commits it durably (one
//! fsync for the whole batch), then publishes the events in revision order and answers each
//! request. Serializing writes here assigns revisions in commit order with no gaps. After an
//! I/O error it also reopens the database ([`super::recovery`]).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use bytes::Bytes;
use redb::{Durability, ReadableTable, Table, WriteTransaction};
use tokio::sync::oneshot;

use super::Shared;
use super::failure::Failure;
use super::recovery::{Opener, Recovery, Reopened};
use super::tables::{
    COMPACTED, LATEST, LOG, META, REVISION, VERSIONS, Version, decode, live_at, put_live,
    put_tombstone,
};
use crate::{EventKind, KeyValue, StorageError, StorageEvent};

/// Revisions of history removed per compaction transaction, so that a large compaction does not
/// hold writes back for long.
const COMPACTION_STEP: u64 = 10_000;

/// The value an event carries, which the watch cache keeps for as long as the object lives: a
/// copy of exactly its length, made here. The value as written is the request's buffer, which
/// a serializer grew by doubling (up to twice the object's size, and with a separate reference
/// count once shared) and which was allocated among the request's short-lived buffers. The
/// copy lets that buffer go with the request, and the copies the cache keeps lie together, in
/// the order they were written, on this thread's heap.
fn kept(value: &Bytes) -> Bytes {
    Bytes::copy_from_slice(value)
}

/// How often an idle writer looks whether the database needs reopening or probing.
const IDLE_CHECK: Duration = Duration::from_millis(250);

/// A write to make.
pub(super) enum Op {
    Create {
        key: String,
        value: Bytes,
    },
    Update {
        key: String,
        value: Bytes,
        expected: u64,
    },
    Delete {
        key: String,
        expected: Option<u64>,
    },
    Compact {
        revision: u64,
    },
}

/// What a successful write answers.
pub(super) enum Done {
    /// Created or updated at this revision.
    Written(u64),
    /// Deleted at this revision; the last value.
    Deleted(u64, KeyValue),
    /// Compacted.
    Compacted,
}

type Reply = oneshot::Sender<Result<Done, StorageError>>;

/// The outcome of each write of a batch, and the events of those that succeeded.
type Applied = (Vec<Result<Done, StorageError>>, Vec<StorageEvent>);

/// A write and where to send its answer.
pub(super) struct Request {
    pub(super) op: Op,
    pub(super) reply: Reply,
}

/// A compaction in progress: where it goes and who waits for it.
struct Compaction {
    target: u64,
    waiting: Vec<Reply>,
}

pub(super) struct Writer {
    shared: Arc<Shared>,
    requests: mpsc::Receiver<Request>,
    revision: u64,
    compacted: u64,
    max_batch: usize,
    compaction: Option<Compaction>,
    recovery: Recovery,
}

impl Writer {
    pub(super) fn new(
        shared: Arc<Shared>,
        requests: mpsc::Receiver<Request>,
        revision: u64,
        compacted: u64,
        max_batch: usize,
        opener: Opener,
    ) -> Self {
        Writer {
            shared,
            requests,
            revision,
            compacted,
            max_batch: max_batch.max(1),
            compaction: None,
            recovery: Recovery::new(opener),
        }
    }

    /// Serves requests until every sender is gone.
    pub(super) fn run(mut self) {
        loop {
            let mut batch = Vec::new();
            // With a compaction under way, only take what is already waiting.
            if self.compaction.is_none() {
                match self.requests.recv_timeout(IDLE_CHECK) {
                    Ok(request) => batch.push(request),
                    Err(RecvTimeoutError::Timeout) => {
                        self.idle();
                        continue;
                    }
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            }
            while batch.len() < self.max_batch {
                match self.requests.try_recv() {
                    Ok(request) => batch.push(request),
                    Err(_) => break,
                }
            }
            let mut writes = Vec::with_capacity(batch.len());
            for request in batch {
                match request.op {
                    Op::Compact { revision } => self.queue_compaction(revision, request.reply),
                    op => writes.push((op, request.reply)),
                }
            }
            if !writes.is_empty() {
                self.write(writes);
            }
            if self.compaction.is_some() {
                self.compaction_step();
            }
        }
    }

    fn queue_compaction(&mut self, revision: u64, reply: Reply) {
        if revision > self.revision {
            let _ = reply.send(Err(StorageError::FutureRevision {
                requested: revision,
                current: self.revision,
            }));
        } else if revision <= self.compacted {
            let _ = reply.send(Ok(Done::Compacted));
        } else {
            let compaction = self.compaction.get_or_insert(Compaction {
                target: revision,
                waiting: Vec::new(),
            });
            compaction.target = compaction.target.max(revision);
            compaction.waiting.push(reply);
        }
    }

    /// With nothing to do: reopens a broken database, or probes whether a failed one writes.
    fn idle(&mut self) {
        self.resume();
        if self.recovery.wants_probe(&self.shared) {
            match self
                .shared
                .database()
                .and_then(|db| super::recovery::probe(&db))
            {
                Ok(()) => self.recovery.committed(&self.shared),
                Err(failure) => {
                    self.recovery.failed(&self.shared, &failure);
                    self.resume();
                }
            }
        }
    }

    /// Reopens a broken database, if the back-off allows.
    fn resume(&mut self) {
        if let Ok(reopened) = self.recovery.reopen_if_broken(&self.shared, self.revision) {
            self.adopt(reopened);
        }
    }

    /// Continues from where a reopened database is.
    fn adopt(&mut self, reopened: Option<Reopened>) {
        if let Some(at) = reopened {
            self.revision = at.revision;
            self.compacted = self.compacted.max(at.compacted);
        }
    }

    /// Applies a batch of writes in one transaction, then publishes and answers.
    fn write(&mut self, writes: Vec<(Op, Reply)>) {
        match self.recovery.reopen_if_broken(&self.shared, self.revision) {
            Ok(reopened) => self.adopt(reopened),
            Err(error) => {
                for (_, reply) in writes {
                    let _ = reply.send(Err(error.clone()));
                }
                return;
            }
        }
        match self.apply(&writes) {
            Ok((outcomes, events)) => {
                if !events.is_empty() {
                    self.recovery.committed(&self.shared);
                }
                if let Some(last) = events.last() {
                    self.revision = last.kv.mod_revision;
                    self.shared
                        .committed
                        .store(self.revision, std::sync::atomic::Ordering::Release);
                }
                for event in events {
                    // No receiver is fine: nobody watches.
                    let _ = self.shared.events.send(event);
                }
                for ((_, reply), outcome) in writes.into_iter().zip(outcomes) {
                    let _ = reply.send(outcome);
                }
            }
            Err(failure) => {
                self.recovery.failed(&self.shared, &failure);
                for (_, reply) in writes {
                    let _ = reply.send(Err(failure.error.clone()));
                }
                self.resume();
            }
        }
    }

    /// The outcome of each write and the events of those that succeeded, once committed.
    fn apply(&self, writes: &[(Op, Reply)]) -> Result<Applied, Failure> {
        let txn = self.begin()?;
        let mut outcomes = Vec::with_capacity(writes.len());
        let mut events = Vec::new();
        {
            let mut tables = WriteTables::open(&txn)?;
            let mut revision = self.revision;
            for (op, _) in writes {
                match tables.apply(op, revision + 1)? {
                    Ok((done, event)) => {
                        revision += 1;
                        outcomes.push(Ok(done));
                        events.push(event);
                    }
                    Err(refused) => outcomes.push(Err(refused)),
                }
            }
            if revision != self.revision {
                tables.meta.insert(REVISION, revision)?;
            }
        }
        if events.is_empty() {
            txn.abort()?;
        } else {
            txn.commit()?;
        }
        Ok((outcomes, events))
    }

    /// Removes one step of history towards the compaction target, in its own transaction.
    fn compaction_step(&mut self) {
        if self.compaction.is_none() {
            return;
        }
        let prepared = self.recovery.reopen_if_broken(&self.shared, self.revision);
        let result = match prepared {
            Ok(reopened) => {
                self.adopt(reopened);
                self.compact_towards_target()
            }
            Err(error) => Err(Failure::from(error)),
        };
        if let Err(failure) = result {
            self.recovery.failed(&self.shared, &failure);
            if let Some(failed) = self.compaction.take() {
                for reply in failed.waiting {
                    let _ = reply.send(Err(failure.error.clone()));
                }
            }
            self.resume();
        }
    }

    /// One compaction transaction towards the target; answers the waiting callers once there.
    fn compact_towards_target(&mut self) -> Result<(), Failure> {
        let Some(target) = self.compaction.as_ref().map(|c| c.target) else {
            return Ok(());
        };
        if target > self.compacted {
            let to = target.min(self.compacted + COMPACTION_STEP);
            self.compact(to)?;
            self.compacted = to;
            self.recovery.committed(&self.shared);
        }
        if self.compacted >= target
            && let Some(done) = self.compaction.take()
        {
            for reply in done.waiting {
                let _ = reply.send(Ok(Done::Compacted));
            }
        }
        Ok(())
    }

    /// Forgets the history in `(compacted, to]`: log entries, and every version at or below
    /// `to` except each key's newest one, unless that is a tombstone.
    fn compact(&self, to: u64) -> Result<(), Failure> {
        let txn = self.begin()?;
        {
            let mut log = txn.open_table(LOG)?;
            let mut versions = txn.open_table(VERSIONS)?;
            let mut meta = txn.open_table(META)?;
            let mut keys = BTreeSet::new();
            for entry in log.range(self.compacted + 1..=to)? {
                keys.insert(entry?.1.value().to_string());
            }
            for key in &keys {
                let mut old = Vec::new();
                for entry in versions.range((key.as_str(), 0)..=(key.as_str(), to))? {
                    let (k, v) = entry?;
                    old.push((
                        k.value().1,
                        matches!(decode(v.value())?, Version::Live { .. }),
                    ));
                }
                if old.last().is_some_and(|&(_, live)| live) {
                    old.pop();
                }
                for (rev, _) in old {
                    versions.remove((key.as_str(), rev))?;
                }
            }
            log.retain_in(self.compacted + 1..=to, |_, _| false)?;
            meta.insert(COMPACTED, to)?;
        }
        txn.commit()?;
        Ok(())
    }

    fn begin(&self) -> Result<WriteTransaction, Failure> {
        let mut txn = self.shared.database()?.begin_write()?;
        // Acknowledged means on disk: commit fsyncs before returning.
        txn.set_durability(Durability::Immediate)?;
        Ok(txn)
    }
}

/// The tables a write touches, open in one transaction.
struct WriteTables<'txn> {
    meta: Table<'txn, &'static str, u64>,
    latest: Table<'txn, &'static str, (u64, u64)>,
    versions: Table<'txn, (&'static str, u64), &'static [u8]>,
    log: Table<'txn, u64, &'static str>,
}

/// A write that was refused (AlreadyExists, NotFound, Conflict): nothing was written.
type Refused = StorageError;

impl<'txn> WriteTables<'txn> {
    fn open(txn: &'txn WriteTransaction) -> Result<Self, Failure> {
        Ok(WriteTables {
            meta: txn.open_table(META)?,
            latest: txn.open_table(LATEST)?,
            versions: txn.open_table(VERSIONS)?,
            log: txn.open_table(LOG)?,
        })
    }

    /// Applies one write at revision `rev`, or refuses it.
    fn apply(
        &mut self,
        op: &Op,
        rev: u64,
    ) -> Result<Result<(Done, StorageEvent), Refused>, Failure> {
        match op {
            Op::Create { key, value } => {
                if self.latest.get(key.as_str())?.is_some() {
                    return Ok(Err(StorageError::AlreadyExists(key.clone())));
                }
                put_live(&mut self.versions, key, rev, rev, value)?;
                self.latest.insert(key.as_str(), (rev, rev))?;
                self.log.insert(rev, key.as_str())?;
                let kv = KeyValue {
                    key: key.as_str().into(),
                    value: kept(value),
                    create_revision: rev,
                    mod_revision: rev,
                };
                Ok(Ok((
                    Done::Written(rev),
                    StorageEvent {
                        kind: EventKind::Created,
                        kv,
                        prev: None,
                    },
                )))
            }
            Op::Update {
                key,
                value,
                expected,
            } => {
                let prev = match self.present(key, Some(*expected))? {
                    Ok(prev) => prev,
                    Err(refused) => return Ok(Err(refused)),
                };
                put_live(&mut self.versions, key, rev, prev.create_revision, value)?;
                self.latest
                    .insert(key.as_str(), (prev.create_revision, rev))?;
                self.log.insert(rev, key.as_str())?;
                let kv = KeyValue {
                    key: key.as_str().into(),
                    value: kept(value),
                    create_revision: prev.create_revision,
                    mod_revision: rev,
                };
                Ok(Ok((
                    Done::Written(rev),
                    StorageEvent {
                        kind: EventKind::Updated,
                        kv,
                        prev: Some(prev),
                    },
                )))
            }
            Op::Delete { key, expected } => {
                let prev = match self.present(key, *expected)? {
                    Ok(prev) => prev,
                    Err(refused) => return Ok(Err(refused)),
                };
                put_tombstone(&mut self.versions, key, rev)?;
                self.latest.remove(key.as_str())?;
                self.log.insert(rev, key.as_str())?;
                let mut kv = prev.clone();
                kv.mod_revision = rev;
                Ok(Ok((
                    Done::Deleted(rev, prev.clone()),
                    StorageEvent {
                        kind: EventKind::Deleted,
                        kv,
                        prev: Some(prev),
                    },
                )))
            }
            Op::Compact { .. } => unreachable!("compactions are not batched with writes"),
        }
    }

    /// The present value of `key`, checked against the expected mod revision.
    fn present(
        &self,
        key: &str,
        expected: Option<u64>,
    ) -> Result<Result<KeyValue, Refused>, Failure> {
        let Some((_, mod_revision)) = self.latest.get(key)?.map(|g| g.value()) else {
            return Ok(Err(StorageError::NotFound(key.to_string())));
        };
        if let Some(expected) = expected
            && expected != mod_revision
        {
            return Ok(Err(StorageError::Conflict {
                key: key.to_string(),
                expected,
                actual: mod_revision,
            }));
        }
        Ok(Ok(live_at(&self.versions, key, mod_revision)?))
    }
}
