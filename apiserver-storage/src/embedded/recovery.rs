//! Recovery from I/O errors, run by the writer.
//!
//! When a write of redb's file fails (a full disk, a failed fsync), redb refuses every later
//! transaction, reads included, until the database is closed and opened again. The file itself
//! is fine: redb is crash-safe, so reopening finds the last commit intact. The writer therefore
//! records the failure as the store's fault (its writable check fails with the reason), closes
//! the database once the reads still using it are done, and opens the file again: at once after
//! the failure, then at most every [`REOPEN_BACKOFF`] while it fails. Writes in between fail
//! at once with the fault.
//!
//! Revisions stay consistent: the reopened file's revision is the writer's, or later if the
//! commit that reported the error reached the disk anyway; then its events are read from the
//! change log and published, so watchers see neither a gap nor a repeat (their callers were
//! answered an error, an unknown outcome). A file behind the writer's revision would have lost
//! acknowledged writes: it is refused, and the store stays failed.
//!
//! A reopened database may still have no room: the fault stays until a write commits, and the
//! writer, when idle, probes whether the disk takes a write ([`probe`]), so that the store
//! reports itself writable again even if nobody writes.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use redb::{Database, Durability, TableDefinition};

use super::Shared;
use super::failure::Failure;
use super::reads::Snapshot;
use crate::{StorageError, StorageEvent};

/// The least time between two attempts to reopen the database.
const REOPEN_BACKOFF: Duration = Duration::from_millis(500);

/// The least time between two probes of a database whose last write failed.
const PROBE_INTERVAL: Duration = Duration::from_millis(500);

/// What a probe writes: room for a few ordinary writes.
const PROBE_BYTES: usize = 1 << 20;

/// The table of the probe, empty but while it runs.
const PROBE: TableDefinition<&str, &[u8]> = TableDefinition::new("probe");

/// How long closing the database waits for the reads still using it.
const READERS_GRACE: Duration = Duration::from_secs(5);

/// Opens the database file.
pub(super) struct Opener {
    /// The file.
    pub(super) path: PathBuf,
    /// Bytes of redb's page cache; `None` keeps redb's default.
    pub(super) cache_size: Option<usize>,
}

impl Opener {
    /// Opens (or creates) the file: `Unavailable` if it is damaged, not a store, or open
    /// elsewhere.
    pub(super) fn open(&self) -> Result<Database, StorageError> {
        let opening = |e: &dyn std::fmt::Display| {
            StorageError::Unavailable(format!(
                "embedded storage: opening {}: {e}",
                self.path.display()
            ))
        };
        let file = apiserver_files::open_read_write(&self.path, apiserver_files::PRIVATE_FILE)
            .map_err(|e| opening(&e))?;
        let backend = redb::backends::FileBackend::new(file).map_err(|e| opening(&e))?;
        let mut builder = Database::builder();
        if let Some(bytes) = self.cache_size {
            builder.set_cache_size(bytes);
        }
        builder
            .create_with_backend(backend)
            .map_err(|e| opening(&e))
    }
}

/// Where a reopened database is.
pub(super) struct Reopened {
    /// Its current revision.
    pub(super) revision: u64,
    /// Its compacted revision.
    pub(super) compacted: u64,
}

/// The writer's part of recovery: whether the database must be reopened, and when that and the
/// probe were last tried.
pub(super) struct Recovery {
    opener: Opener,
    broken: bool,
    last_reopen: Option<Instant>,
    last_probe: Option<Instant>,
}

impl Recovery {
    pub(super) fn new(opener: Opener) -> Self {
        Recovery {
            opener,
            broken: false,
            last_reopen: None,
            last_probe: None,
        }
    }

    /// Before a transaction of the writer, whose revision is `at`: reopens a broken database
    /// if the back-off allows. An error is what the transaction's callers are answered.
    pub(super) fn reopen_if_broken(
        &mut self,
        shared: &Shared,
        at: u64,
    ) -> Result<Option<Reopened>, StorageError> {
        if !self.is_broken(shared) {
            return Ok(None);
        }
        if self
            .last_reopen
            .is_some_and(|t| t.elapsed() < REOPEN_BACKOFF)
        {
            return Err(fault(shared));
        }
        self.reopen(shared, at).map(Some).map_err(|f| f.error)
    }

    /// After a transaction failed: an I/O failure is the store's fault from now on (recorded
    /// before its callers are answered), and the database must be reopened.
    pub(super) fn failed(&mut self, shared: &Shared, failure: &Failure) {
        if !failure.broken {
            return;
        }
        let why = match &failure.error {
            StorageError::Internal(why) => why
                .strip_prefix("embedded storage: ")
                .unwrap_or(why)
                .to_string(),
            other => other.to_string(),
        };
        tracing::warn!(error = %why, "embedded storage: a write failed; reopening the database");
        *shared.fault.lock() = Some(why);
        self.broken = true;
    }

    /// After a transaction committed: the store takes writes.
    pub(super) fn committed(&self, shared: &Shared) {
        let mut fault = shared.fault.lock();
        if fault.take().is_some() {
            tracing::info!("embedded storage: writes succeed again");
        }
    }

    /// Whether the writer, idle, should probe: the database is open, the last write failed,
    /// and the last probe is [`PROBE_INTERVAL`] ago.
    pub(super) fn wants_probe(&mut self, shared: &Shared) -> bool {
        if self.is_broken(shared)
            || shared.fault.lock().is_none()
            || self
                .last_probe
                .is_some_and(|t| t.elapsed() < PROBE_INTERVAL)
        {
            return false;
        }
        self.last_probe = Some(Instant::now());
        true
    }

    /// Whether the database must be reopened (the writer's transaction or a read failed on an
    /// I/O error).
    fn is_broken(&mut self, shared: &Shared) -> bool {
        if shared.broken.swap(false, Ordering::AcqRel) {
            self.broken = true;
        }
        self.broken
    }

    /// Closes the database and opens the file again, with the writer's revision `at`.
    fn reopen(&mut self, shared: &Shared, at: u64) -> Result<Reopened, Failure> {
        self.last_reopen = Some(Instant::now());
        let old = shared.db.write().take();
        if let Some(old) = old {
            close(old);
        }
        match self.open_at(at) {
            Ok((db, reopened, missed)) => {
                *shared.db.write() = Some(Arc::new(db));
                if reopened.revision > at {
                    tracing::warn!(
                        from = at + 1,
                        to = reopened.revision,
                        "embedded storage: a failed commit reached the disk; publishing its events"
                    );
                }
                shared.committed.store(reopened.revision, Ordering::Release);
                for event in missed {
                    let _ = shared.events.send(event);
                }
                self.broken = false;
                tracing::info!(
                    revision = reopened.revision,
                    "embedded storage: the database is open again"
                );
                Ok(reopened)
            }
            Err(failure) => {
                tracing::warn!(
                    error = %failure.error,
                    "embedded storage: reopening the database after an I/O error failed"
                );
                // The details (with the file's path) go to the log, not to clients.
                *shared.fault.lock() = Some(
                    "the database could not be reopened after an I/O error (see the server log)"
                        .into(),
                );
                Err(failure)
            }
        }
    }

    /// Opens the file and reads where it is: its revisions and the events after `at`.
    fn open_at(&self, at: u64) -> Result<(Database, Reopened, Vec<StorageEvent>), Failure> {
        let db = self.opener.open()?;
        let snapshot = Snapshot::begin(&db)?;
        let (revision, compacted) = snapshot.revisions()?;
        if revision < at {
            return Err(Failure::internal(format!(
                "embedded storage: the file is at revision {revision}, behind revision {at} already written; refusing it"
            )));
        }
        let missed = if revision > at {
            snapshot.log("", at, usize::MAX, usize::MAX)?.events
        } else {
            Vec::new()
        };
        drop(snapshot);
        Ok((
            db,
            Reopened {
                revision,
                compacted,
            },
            missed,
        ))
    }
}

/// Whether the disk takes a write again: [`PROBE_BYTES`] committed, then removed, in a table
/// of their own that nothing else reads (the revisions do not change). The space it took is
/// free inside the file afterwards, for the writes that follow.
pub(super) fn probe(db: &Database) -> Result<(), Failure> {
    let commit = |fill: bool| -> Result<(), Failure> {
        let mut txn = db.begin_write()?;
        txn.set_durability(Durability::Immediate)?;
        if fill {
            txn.open_table(PROBE)?
                .insert("probe", vec![0u8; PROBE_BYTES].as_slice())?;
        } else {
            txn.delete_table(PROBE)?;
        }
        txn.commit()?;
        Ok(())
    };
    commit(true)?;
    commit(false)
}

/// The error of a write while the database is broken and not reopened yet.
fn fault(shared: &Shared) -> StorageError {
    StorageError::Internal(match shared.fault.lock().as_deref() {
        Some(why) => format!("embedded storage cannot write: {why}"),
        None => "embedded storage cannot write: the database is being reopened".into(),
    })
}

/// Closes `db` once the reads still using it are done (they hold the other references). If one
/// takes longer than [`READERS_GRACE`], the database closes when it ends, and opening the file
/// fails until then.
fn close(mut db: Arc<Database>) {
    let deadline = Instant::now() + READERS_GRACE;
    loop {
        match Arc::try_unwrap(db) {
            Ok(db) => {
                // A broken database may fail to record a clean close; opening repairs that.
                if let Err(e) = db.close() {
                    tracing::debug!(error = %e, "embedded storage: closing the broken database");
                }
                return;
            }
            Err(still_used) if Instant::now() < deadline => {
                db = still_used;
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(_) => {
                tracing::warn!(
                    "embedded storage: a read still uses the broken database; it closes when that read ends"
                );
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embedded::{EmbeddedStorage, FILE_NAME};
    use crate::{EventKind, Storage};

    /// A file with three creates (revisions 2, 3, 4), closed.
    async fn file_at_revision_4() -> (tempfile::TempDir, Opener) {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStorage::open(dir.path()).unwrap();
        for key in ["/a", "/b", "/c"] {
            store.create(key, "v".into()).await.unwrap();
        }
        assert_eq!(store.current_revision().await.unwrap(), 4);
        drop(store);
        let opener = Opener {
            path: dir.path().join(FILE_NAME),
            cache_size: None,
        };
        (dir, opener)
    }

    #[tokio::test]
    async fn commits_the_writer_did_not_acknowledge_are_read_back_as_events() {
        let (_dir, opener) = file_at_revision_4().await;
        let (_, at, missed) = Recovery::new(opener).open_at(2).unwrap();
        assert_eq!((at.revision, at.compacted), (4, 0));
        let missed: Vec<_> = missed
            .iter()
            .map(|e| (e.kind, &*e.kv.key, e.kv.mod_revision))
            .collect();
        assert_eq!(
            missed,
            [(EventKind::Created, "/b", 3), (EventKind::Created, "/c", 4)]
        );
    }

    #[tokio::test]
    async fn a_file_behind_the_writer_is_refused() {
        let (_dir, opener) = file_at_revision_4().await;
        let recovery = Recovery::new(opener);
        assert!(recovery.open_at(4).unwrap().2.is_empty());
        let refused = recovery.open_at(5).err().expect("behind");
        assert!(
            matches!(&refused.error, StorageError::Internal(m) if m.contains("behind revision 5")),
            "{:?}",
            refused.error
        );
    }
}
