//! An embedded, durable [`Storage`] on [redb](https://docs.rs/redb): one file in a directory,
//! crash-safe, with history for lists at older revisions and watches that resume.
//!
//! Every acknowledged write is on disk: writes go to a single writer thread, which commits
//! whatever writes are waiting together in one redb transaction with immediate durability
//! (an fsync per batch, not per write) before answering. Revisions are assigned in commit order,
//! one per write, and continue across restarts; the compacted revision is kept too.
//!
//! History is an MVCC index, like etcd's: each write stores the key's new version under
//! (key, revision), once, and a change log maps each revision to its key. A list at an older
//! revision reads each key's newest version at or below it; a list at the latest revision goes
//! through an index of present keys. [`Storage::compact`] removes log entries and superseded
//! versions up to the revision; run [`spawn_compactor`](super::compactor::spawn_compactor) to
//! do it periodically.
//!
//! A watch replays the change log from disk, then follows a broadcast of committed events. It
//! subscribes to the broadcast before it reads where the log ends, and skips live events it has
//! already replayed, so none is lost or repeated where the two meet. A watcher that falls
//! behind the broadcast buffer ([`EmbeddedOptions::watch_buffer`]) is not cut off: it catches up
//! from the log on disk, and ends with `Compacted` (the client relists) only if compaction
//! removed history it still needs.
//!
//! Reads run on tokio's blocking pool, each in its own redb read transaction (a consistent
//! snapshot that does not block the writer).
//!
//! After an I/O error (a full disk), redb refuses every transaction until the database is
//! closed and opened again; the writer does that by itself, and the store takes writes again
//! once the disk has room, without a restart (see `recovery`). Until then, writes fail with
//! [`StorageError::Internal`] and [`EmbeddedHealth`] says why.

mod failure;
mod reads;
mod recovery;
mod tables;
mod watch;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak, mpsc};
use std::thread::JoinHandle;

use bytes::Bytes;
use parking_lot::{Mutex, RwLock};
use redb::{Database, ReadableTable};
use tokio::sync::{broadcast, oneshot};

use self::failure::Failure;
use self::reads::Snapshot;
use self::recovery::Opener;
use self::tables::{COMPACTED, FORMAT, FORMAT_VERSION, LATEST, LOG, META, REVISION, VERSIONS};
use self::writer::{Done, Op, Request, Writer};
use super::{KeyValue, ListPage, ListRequest, Storage, StorageError, StorageEvent, WatchStream};

/// The database file inside the storage directory.
pub const FILE_NAME: &str = "storage.redb";

/// The largest value stored (redb stores at most 3 GiB per entry).
pub(crate) const MAX_VALUE: usize = 1 << 30;

/// Tuning of an [`EmbeddedStorage`].
#[derive(Clone, Debug)]
pub struct EmbeddedOptions {
    /// Live events buffered for each watcher; a watcher further behind catches up from disk.
    /// Default 1024.
    pub watch_buffer: usize,
    /// Most writes committed together in one transaction. Default 256.
    pub max_batch: usize,
    /// Bytes of redb's page cache; `None` keeps redb's default (1 GiB). Default
    /// `DEFAULT_CACHE_SIZE`.
    pub cache_size: Option<usize>,
}

/// The default size of redb's page cache: 16 MiB. The store's pages stay in the operating
/// system's page cache either way; a page cache of redb's own as large as the file would hold
/// every object a second time in the process, beside the watch cache that serves reads of
/// the latest state. With 16 MiB the B-tree's inner pages and the recent writes stay cached.
pub(crate) const DEFAULT_CACHE_SIZE: usize = 16 << 20;

impl Default for EmbeddedOptions {
    fn default() -> Self {
        EmbeddedOptions {
            watch_buffer: 1024,
            max_batch: 256,
            cache_size: Some(DEFAULT_CACHE_SIZE),
        }
    }
}

/// What readers, watchers and the writer share.
struct Shared {
    /// The open database. The writer replaces it when it reopens the file after an I/O error;
    /// `None` from closing the old one until the new one is open (or while that fails).
    db: RwLock<Option<Arc<Database>>>,
    /// Committed events, in revision order.
    events: broadcast::Sender<StorageEvent>,
    /// The revision of the last committed write, set by the writer after each commit and
    /// before it publishes the events and answers the writes.
    committed: AtomicU64,
    /// Why the store cannot write ("No space left on device…"), since a write failed on an
    /// I/O error and until one (or the writer's probe) succeeds again.
    fault: Mutex<Option<String>>,
    /// Set by a reader that met an I/O error of the open database: the writer reopens it.
    broken: AtomicBool,
    /// What the last pages of lists counted after them.
    page_counts: crate::page_counts::PageCounts,
}

impl Shared {
    /// The open database, or why there is none.
    fn database(&self) -> Result<Arc<Database>, Failure> {
        self.db.read().clone().ok_or_else(|| {
            Failure::internal(match self.fault.lock().as_deref() {
                Some(why) => format!("embedded storage: the database is not open: {why}"),
                None => "embedded storage: the database is being reopened".to_string(),
            })
        })
    }
}

/// A durable store in one redb file. See the [module documentation](self).
pub struct EmbeddedStorage {
    shared: Arc<Shared>,
    writes: Option<mpsc::Sender<Request>>,
    writer: Option<JoinHandle<()>>,
    path: PathBuf,
}

impl EmbeddedStorage {
    /// The latest revision: the writer's counter, without a read transaction (every
    /// acknowledged write is at or below it; a snapshot read racing with a commit may show the
    /// next revision a moment before the counter does).
    fn committed(&self) -> u64 {
        self.shared.committed.load(Ordering::Acquire)
    }

    /// Opens the store in `dir` (created if missing), with default options.
    pub fn open(dir: &Path) -> Result<Self, StorageError> {
        Self::open_with(dir, EmbeddedOptions::default())
    }

    /// Opens the store in `dir` (created if missing). Fails with `Unavailable` if the directory
    /// cannot be created, the file is damaged or not a store, or another store has it open.
    /// Opening blocks while redb checks the file.
    pub fn open_with(dir: &Path, options: EmbeddedOptions) -> Result<Self, StorageError> {
        // The directory and the file hold every object: private to the server's user,
        // created so rather than restricted afterwards.
        apiserver_files::create_private_dir_all(dir).map_err(|e| {
            StorageError::Unavailable(format!("embedded storage: creating {}: {e}", dir.display()))
        })?;
        let path = dir.join(FILE_NAME);
        let opener = Opener {
            path: path.clone(),
            cache_size: options.cache_size,
        };
        let db = opener.open()?;
        let (revision, compacted) = initialize(&db).map_err(|e| match e {
            // Not serving yet: the store cannot be opened.
            StorageError::Internal(why) => StorageError::Unavailable(why),
            e => e,
        })?;
        let (events, _) = broadcast::channel(options.watch_buffer.max(1));
        let shared = Arc::new(Shared {
            db: RwLock::new(Some(Arc::new(db))),
            events,
            committed: AtomicU64::new(revision),
            fault: Mutex::new(None),
            broken: AtomicBool::new(false),
            page_counts: Default::default(),
        });
        let (writes, requests) = mpsc::channel();
        let writer = Writer::new(
            Arc::clone(&shared),
            requests,
            revision,
            compacted,
            options.max_batch,
            opener,
        );
        let writer = std::thread::Builder::new()
            .name("embedded-storage-writer".into())
            .spawn(move || writer.run())
            .map_err(|e| {
                StorageError::Unavailable(format!("embedded storage: starting the writer: {e}"))
            })?;
        Ok(EmbeddedStorage {
            shared,
            writes: Some(writes),
            writer: Some(writer),
            path,
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The store's health, for `/livez` and `/readyz` checks; it does not keep the store open.
    pub fn health(&self) -> EmbeddedHealth {
        EmbeddedHealth(Arc::downgrade(&self.shared))
    }

    async fn write(&self, op: Op) -> Result<Done, StorageError> {
        if let Op::Create { value, .. } | Op::Update { value, .. } = &op
            && value.len() > MAX_VALUE
        {
            // Refused here: inside a batch it would fail the other writes too.
            return Err(StorageError::Unavailable(format!(
                "embedded storage: a value of {} bytes is over the limit of {MAX_VALUE}",
                value.len()
            )));
        }
        let (reply, answer) = oneshot::channel();
        let stopped = || StorageError::Unavailable("embedded storage: the writer stopped".into());
        self.writes
            .as_ref()
            .ok_or_else(stopped)?
            .send(Request { op, reply })
            .map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

impl Drop for EmbeddedStorage {
    /// Stops the writer after the writes already sent, so that the file is closed (and can be
    /// opened again) once the last reader is done.
    fn drop(&mut self) {
        drop(self.writes.take());
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

/// Whether an [`EmbeddedStorage`] can serve, as its health checks ask; see
/// [`EmbeddedStorage::health`].
#[derive(Clone, Debug)]
pub struct EmbeddedHealth(Weak<Shared>);

impl EmbeddedHealth {
    /// `Ok` while the store has its database open (reads are served); otherwise why not: it is
    /// reopening the file after an I/O error, or could not, or the store was closed.
    pub fn check_open(&self) -> Result<(), String> {
        let shared = self.0.upgrade().ok_or("embedded storage: closed")?;
        shared
            .database()
            .map(|_| ())
            .map_err(|f| StorageError::from(f).to_string())
    }

    /// `Ok` while the store takes writes; otherwise why not (e.g. "No space left on device"):
    /// from a write that failed on an I/O error until a write succeeds again.
    pub fn check_writable(&self) -> Result<(), String> {
        self.check_open()?;
        let shared = self.0.upgrade().ok_or("embedded storage: closed")?;
        match shared.fault.lock().as_deref() {
            Some(why) => Err(format!("embedded storage cannot write: {why}")),
            None => Ok(()),
        }
    }
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("committed", &self.committed)
            .field("fault", &*self.fault.lock())
            .finish_non_exhaustive()
    }
}

/// Creates the tables of a new file, checks the format of an existing one, and answers its
/// current and compacted revisions.
fn initialize(db: &Database) -> Result<(u64, u64), StorageError> {
    let init = || -> Result<(u64, u64), Failure> {
        let txn = db.begin_write()?;
        let revisions;
        {
            let mut meta = txn.open_table(META)?;
            txn.open_table(LATEST)?;
            txn.open_table(VERSIONS)?;
            txn.open_table(LOG)?;
            let format = meta.get(FORMAT)?.map(|g| g.value());
            match format {
                None => {
                    // A new store starts at revision 1, like etcd.
                    meta.insert(FORMAT, FORMAT_VERSION)?;
                    meta.insert(REVISION, 1)?;
                    meta.insert(COMPACTED, 0)?;
                }
                Some(FORMAT_VERSION) => {}
                Some(other) => {
                    return Err(Failure::from(StorageError::Unavailable(format!(
                        "embedded storage: unknown format version {other}"
                    ))));
                }
            }
            let read = |name| -> Result<u64, Failure> {
                Ok(meta.get(name)?.map(|g| g.value()).unwrap_or_default())
            };
            revisions = (read(REVISION)?, read(COMPACTED)?);
        }
        txn.commit()?;
        Ok(revisions)
    };
    init().map_err(StorageError::from)
}

/// Runs `f` on a fresh read snapshot, on tokio's blocking pool.
async fn read<T, F>(shared: &Arc<Shared>, f: F) -> Result<T, StorageError>
where
    T: Send + 'static,
    F: FnOnce(&Snapshot) -> Result<T, Failure> + Send + 'static,
{
    let shared = Arc::clone(shared);
    tokio::task::spawn_blocking(move || {
        let db = shared.database()?;
        let result = Snapshot::begin(&db).and_then(|snapshot| f(&snapshot));
        if let Err(failure) = &result
            && failure.broken
            && shared
                .db
                .read()
                .as_ref()
                .is_some_and(|open| Arc::ptr_eq(open, &db))
        {
            // The database open now is broken (not one already replaced): reopen it.
            shared.broken.store(true, Ordering::Release);
        }
        result
    })
    .await
    .map_err(|e| StorageError::Internal(format!("embedded storage: a read failed: {e}")))?
    .map_err(StorageError::from)
}

#[async_trait::async_trait]
impl Storage for EmbeddedStorage {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        let key = key.to_string();
        read(&self.shared, move |snapshot| snapshot.get(&key)).await
    }

    async fn list(&self, req: ListRequest) -> Result<ListPage, StorageError> {
        let shared = Arc::clone(&self.shared);
        read(&self.shared, move |snapshot| {
            snapshot.list(&req, &shared.page_counts)
        })
        .await
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<u64, StorageError> {
        let key = key.to_string();
        match self.write(Op::Create { key, value }).await? {
            Done::Written(rev) => Ok(rev),
            _ => unreachable!("a create answers its revision"),
        }
    }

    async fn update(&self, key: &str, value: Bytes, expected: u64) -> Result<u64, StorageError> {
        let key = key.to_string();
        match self
            .write(Op::Update {
                key,
                value,
                expected,
            })
            .await?
        {
            Done::Written(rev) => Ok(rev),
            _ => unreachable!("an update answers its revision"),
        }
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<u64>,
    ) -> Result<(u64, KeyValue), StorageError> {
        let key = key.to_string();
        match self.write(Op::Delete { key, expected }).await? {
            Done::Deleted(rev, last) => Ok((rev, last)),
            _ => unreachable!("a delete answers its revision and last value"),
        }
    }

    async fn watch(&self, prefix: &str, after: u64) -> Result<WatchStream, StorageError> {
        watch::watch(&self.shared, prefix, after).await
    }

    async fn current_revision(&self) -> Result<u64, StorageError> {
        Ok(self.committed())
    }

    fn local_revision(&self) -> Option<u64> {
        Some(self.committed())
    }

    async fn compact(&self, revision: u64) -> Result<(), StorageError> {
        self.write(Op::Compact { revision }).await.map(|_| ())
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn the_store_is_created_private() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("config/data");
        let store = EmbeddedStorage::open(&dir).unwrap();
        assert_eq!(
            mode(&root.path().join("config")),
            apiserver_files::PRIVATE_DIR
        );
        assert_eq!(mode(&dir), apiserver_files::PRIVATE_DIR);
        assert_eq!(mode(store.path()), apiserver_files::PRIVATE_FILE);
        drop(store);
        // Reopened, the store still works and keeps its mode.
        let store = EmbeddedStorage::open(&dir).unwrap();
        assert_eq!(mode(store.path()), apiserver_files::PRIVATE_FILE);
    }

    #[tokio::test]
    async fn events_carry_a_copy_of_the_value_not_the_writers_buffer() {
        use futures::StreamExt;
        let root = tempfile::tempdir().unwrap();
        let store = EmbeddedStorage::open(root.path()).unwrap();
        let mut events = store.watch("/k/", 0).await.unwrap();
        // A value in a buffer bigger than itself, as a serializer leaves it.
        let mut buffer = Vec::with_capacity(4096);
        buffer.extend_from_slice(br#"{"a":1}"#);
        let created = Bytes::from(buffer);
        let revision = store.create("/k/a", created.clone()).await.unwrap();
        let updated = Bytes::from_static(br#"{"a":2}"#);
        store
            .update("/k/a", updated.clone(), revision)
            .await
            .unwrap();
        for written in [created, updated] {
            let event = events.next().await.unwrap().unwrap();
            assert_eq!(event.kv.value, written);
            assert_ne!(event.kv.value.as_ptr(), written.as_ptr());
        }
    }
}
