//! The etcd backend (feature `etcd`): [`Storage`] on an etcd v3 cluster, as upstream's
//! `k8s.io/apiserver` stores its objects.
//!
//! # Key layout
//!
//! A storage key is stored in etcd as `<prefix><key>`, byte for byte. The framework's keys
//! are `/<group>/<plural>/<namespace>/<name>` (cluster-scoped: `/<group>/<plural>/<name>`),
//! so with the default prefix `/registry` a flunder lands at
//! `/registry/wardle.example.com/flunders/default/my-flunder` — the key upstream's
//! sample-apiserver writes with its etcd prefix `/registry/wardle.example.com`. Servers that
//! share one etcd keep apart by giving each a prefix that is not a string prefix of another's
//! (`/registry/a` and `/registry/b`, not `/registry/a` and `/registry/ab`).
//!
//! # Semantics
//!
//! Revisions are etcd's: global to the cluster and strictly increasing, so `resourceVersion`
//! is the etcd revision of an object's last change, and a list is read at one etcd revision.
//! Create-if-absent and compare-and-swap are etcd transactions on `create_revision` and
//! `mod_revision`. [`compact`](Storage::compact) compacts etcd itself (what upstream's
//! compactor does); a compaction by anyone else is reported all the same. Every request is
//! bounded by [`EtcdOptions::request_timeout`]: an unreachable etcd answers
//! [`StorageError::Unavailable`], it never hangs a request. A watch ends with an `Err` when
//! etcd cancels it or the connection breaks.
//!
//! # etcd configuration
//!
//! etcd refuses requests larger than its `--max-request-bytes` (1.5 MiB by default), which
//! caps the size of one object; the server accepts request bodies up to 3 MiB, so give etcd
//! `--max-request-bytes` of at least 4 MiB (`4194304`) to store any object the server admits.

mod error;
mod keys;
mod options;
mod watch;

use etcd_client::{
    Client, Compare, CompareOp, DeleteOptions, GetOptions, KvClient, Txn, TxnOp, TxnOpResponse,
    TxnResponse, WatchClient, WatchOptions,
};

pub use options::EtcdOptions;

use self::error::{Failure, bounded, bounded_retry};
use self::keys::{Keys, revision};
use super::{KeyValue, ListPage, ListRequest, Storage, StorageError, WatchStream};

/// A [`Storage`] on etcd. Cheap to share behind an `Arc`; requests run concurrently over one
/// HTTP/2 connection per etcd member.
pub struct EtcdStorage {
    kv: KvClient,
    watcher: WatchClient,
    keys: Keys,
    opts: EtcdOptions,
}

impl std::fmt::Debug for EtcdStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdStorage")
            .field("servers", &self.opts.servers)
            .field("prefix", &self.opts.prefix)
            .finish_non_exhaustive()
    }
}

impl EtcdStorage {
    /// A store on the etcd cluster at `opts.servers`.
    ///
    /// Reads the TLS files and sets up the connections, which are made on first use (and
    /// made again after etcd comes back): an etcd that is down at start is no error here;
    /// requests answer `Unavailable` until it is up, and [`check_health`](Self::check_health)
    /// tells. Fails for unreadable TLS files, a certificate without its key, no server, or a
    /// server URL that does not parse (or is `http://` while TLS files are given).
    pub async fn connect(opts: EtcdOptions) -> Result<Self, StorageError> {
        if opts.servers.is_empty() {
            return Err(StorageError::Unavailable("no etcd servers given".into()));
        }
        let client = Client::connect(&opts.servers, Some(opts.connect_options()?))
            .await
            .map_err(|e| StorageError::Unavailable(format!("etcd client: {e}")))?;
        Ok(EtcdStorage {
            kv: client
                .kv_client()
                .max_decoding_message_size(opts.max_response_bytes),
            watcher: client
                .watch_client()
                .max_decoding_message_size(opts.max_response_bytes),
            keys: Keys::new(opts.normalized_prefix()),
            opts,
        })
    }

    /// Whether etcd answers a read within [`EtcdOptions::health_timeout`]; the check behind
    /// the server's `etcd` health and `etcd-readiness` readiness checks. The error says why not.
    pub async fn check_health(&self) -> Result<(), String> {
        let get = || {
            let (mut kv, key) = (self.kv.clone(), self.keys.probe());
            async move { kv.get(key, Some(GetOptions::new().with_count_only())).await }
        };
        match bounded_retry(self.opts.health_timeout, "health check", get).await {
            Ok(_) => Ok(()),
            // As upstream: a user allowed only its own prefix still proves etcd is serving.
            Err(Failure::Other(e)) if e.to_string().contains("permission denied") => Ok(()),
            Err(e) => Err(e.into_storage("health check").to_string()),
        }
    }

    /// Runs `request` once, bounded by the request timeout.
    async fn call_once<T>(
        &self,
        what: &str,
        request: impl Future<Output = Result<T, etcd_client::Error>>,
    ) -> Result<T, Failure> {
        bounded(self.opts.request_timeout, what, request).await
    }

    /// Runs the request `make` builds, bounded by the request timeout, sending it again when
    /// it could not reach a member (another endpoint takes it).
    async fn call<T, F, Fut>(&self, what: &str, make: F) -> Result<T, Failure>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        bounded_retry(self.opts.request_timeout, what, make).await
    }

    /// Runs a transaction; any failure is `Unavailable`.
    async fn txn(&self, what: &str, txn: Txn) -> Result<TxnResponse, StorageError> {
        self.call(what, || {
            let (mut kv, txn) = (self.kv.clone(), txn.clone());
            async move { kv.txn(txn).await }
        })
        .await
        .map_err(|e| e.into_storage(what))
    }

    /// The oldest revision etcd still has, given that `requested` is older: etcd's read error
    /// does not carry it, a watch from `requested` is canceled with it. Falls back to
    /// `requested + 1` when etcd does not say in time.
    async fn compacted_revision(&self, requested: u64) -> u64 {
        let start = i64::try_from(requested.max(1)).unwrap_or(i64::MAX);
        let probe = async {
            let opts = WatchOptions::new().with_start_revision(start);
            let mut watch = self
                .watcher
                .clone()
                .watch(self.keys.probe(), Some(opts))
                .await?;
            while let Some(resp) = watch.message().await? {
                if resp.compact_revision() > 0 {
                    return Ok(revision(resp.compact_revision()));
                }
                if resp.canceled() {
                    break;
                }
            }
            Ok(0)
        };
        match self.call_once("watch (compaction probe)", probe).await {
            Ok(rev) if rev > requested => rev,
            _ => requested + 1,
        }
    }

    /// The error for a read at `requested` that etcd rejected as compacted or future.
    async fn revision_error(&self, requested: u64, failure: Failure) -> StorageError {
        match failure {
            Failure::Compacted => StorageError::Compacted {
                requested,
                compacted: self.compacted_revision(requested).await,
            },
            Failure::Future => match self.current_revision().await {
                Ok(current) => StorageError::FutureRevision { requested, current },
                Err(e) => e,
            },
            Failure::Other(e) => e,
        }
    }

    /// The current value of `key` from the `else` branch of a failed transaction: `NotFound`
    /// when absent, `Conflict` against `expected` when present.
    fn cas_failure(key: &str, expected: u64, resp: &TxnResponse) -> StorageError {
        let actual = resp.op_responses().into_iter().find_map(|op| match op {
            TxnOpResponse::Get(get) => Some(get.kvs().first().map(|kv| kv.mod_revision())),
            _ => None,
        });
        match actual.flatten() {
            Some(actual) => StorageError::Conflict {
                key: key.to_string(),
                expected,
                actual: revision(actual),
            },
            None => StorageError::NotFound(key.to_string()),
        }
    }
}

/// The revision a response was served at.
fn header_revision(header: Option<&etcd_client::ResponseHeader>) -> u64 {
    header.map(|h| revision(h.revision())).unwrap_or(0)
}

/// A storage revision as etcd's signed revision.
fn etcd_revision(rev: u64) -> i64 {
    i64::try_from(rev).unwrap_or(i64::MAX)
}

#[async_trait::async_trait]
impl Storage for EtcdStorage {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        let mut resp = self
            .call("get", || {
                let (mut kv, key) = (self.kv.clone(), self.keys.full(key));
                async move { kv.get(key, None).await }
            })
            .await
            .map_err(|e| e.into_storage("get"))?;
        Ok(resp
            .take_kvs()
            .into_iter()
            .next()
            .map(|kv| self.keys.key_value(kv)))
    }

    async fn list(&self, req: ListRequest) -> Result<ListPage, StorageError> {
        let (start, end) = self.keys.range(&req.prefix, req.start_after.as_deref());
        let mut opts = GetOptions::new().with_range(end);
        if req.limit > 0 {
            opts = opts.with_limit(i64::try_from(req.limit).unwrap_or(i64::MAX));
        }
        let at = req.revision.filter(|&r| r > 0);
        if let Some(rev) = at {
            opts = opts.with_revision(etcd_revision(rev));
        }
        let mut resp = match self
            .call("list", || {
                let (mut kv, start, opts) = (self.kv.clone(), start.clone(), opts.clone());
                async move { kv.get(start, Some(opts)).await }
            })
            .await
        {
            Ok(resp) => resp,
            Err(Failure::Other(e)) => return Err(e),
            Err(failure) => {
                let requested = at.unwrap_or(0);
                return Err(self.revision_error(requested, failure).await);
            }
        };
        let revision = at.unwrap_or_else(|| header_revision(resp.header()));
        let more = resp.more();
        let count = u64::try_from(resp.count()).unwrap_or(0);
        let items: Vec<KeyValue> = resp
            .take_kvs()
            .into_iter()
            .map(|kv| self.keys.key_value(kv))
            .collect();
        Ok(ListPage {
            remaining: count.saturating_sub(items.len() as u64),
            items,
            revision,
            more,
        })
    }

    async fn create(&self, key: &str, value: bytes::Bytes) -> Result<u64, StorageError> {
        let k = self.keys.full(key);
        let txn = Txn::new()
            .when([Compare::create_revision(k.clone(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(k, value.to_vec(), None)]);
        let resp = self.txn("create", txn).await?;
        if !resp.succeeded() {
            return Err(StorageError::AlreadyExists(key.to_string()));
        }
        Ok(header_revision(resp.header()))
    }

    async fn update(
        &self,
        key: &str,
        value: bytes::Bytes,
        expected: u64,
    ) -> Result<u64, StorageError> {
        let k = self.keys.full(key);
        let txn = Txn::new()
            .when([
                Compare::create_revision(k.clone(), CompareOp::Greater, 0),
                Compare::mod_revision(k.clone(), CompareOp::Equal, etcd_revision(expected)),
            ])
            .and_then([TxnOp::put(k.clone(), value.to_vec(), None)])
            .or_else([TxnOp::get(k, None)]);
        let resp = self.txn("update", txn).await?;
        if !resp.succeeded() {
            return Err(Self::cas_failure(key, expected, &resp));
        }
        Ok(header_revision(resp.header()))
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<u64>,
    ) -> Result<(u64, KeyValue), StorageError> {
        let k = self.keys.full(key);
        let mut when = vec![Compare::create_revision(k.clone(), CompareOp::Greater, 0)];
        if let Some(expected) = expected {
            when.push(Compare::mod_revision(
                k.clone(),
                CompareOp::Equal,
                etcd_revision(expected),
            ));
        }
        let txn = Txn::new()
            .when(when)
            .and_then([TxnOp::delete(
                k.clone(),
                Some(DeleteOptions::new().with_prev_key()),
            )])
            .or_else([TxnOp::get(k, None)]);
        let resp = self.txn("delete", txn).await?;
        if !resp.succeeded() {
            return Err(Self::cas_failure(key, expected.unwrap_or(0), &resp));
        }
        let last = resp.op_responses().into_iter().find_map(|op| match op {
            TxnOpResponse::Delete(mut del) => del.take_prev_kvs().into_iter().next(),
            _ => None,
        });
        match last {
            Some(last) => Ok((header_revision(resp.header()), self.keys.key_value(last))),
            None => Err(StorageError::NotFound(key.to_string())),
        }
    }

    async fn watch(&self, prefix: &str, after: u64) -> Result<WatchStream, StorageError> {
        let (start, end) = self.keys.range(prefix, None);
        let mut opts = WatchOptions::new().with_range(end).with_prev_key();
        if after > 0 {
            // A read at `after` fails when etcd no longer has it: the same rule as `list`,
            // answered at once (a watch would be canceled only by etcd's next sync).
            let check = GetOptions::new()
                .with_revision(etcd_revision(after))
                .with_count_only();
            match self
                .call("watch", || {
                    let (mut kv, key, check) = (self.kv.clone(), self.keys.probe(), check.clone());
                    async move { kv.get(key, Some(check)).await }
                })
                .await
            {
                Ok(_) | Err(Failure::Future) => {}
                Err(failure) => return Err(self.revision_error(after, failure).await),
            }
            opts = opts.with_start_revision(etcd_revision(after.saturating_add(1)));
        }
        let stream = self
            .call("watch", || {
                let (mut watcher, start, opts) =
                    (self.watcher.clone(), start.clone(), opts.clone());
                async move { watcher.watch(start, Some(opts)).await }
            })
            .await
            .map_err(|e| e.into_storage("watch"))?;
        let (requests, responses) = stream.split();
        Ok(watch::Feed::new(requests, responses, self.keys.clone(), after).into_stream())
    }

    async fn current_revision(&self) -> Result<u64, StorageError> {
        let opts = GetOptions::new().with_count_only();
        let resp = self
            .call("revision", || {
                let (mut kv, key, opts) = (self.kv.clone(), self.keys.probe(), opts.clone());
                async move { kv.get(key, Some(opts)).await }
            })
            .await
            .map_err(|e| e.into_storage("revision"))?;
        Ok(header_revision(resp.header()))
    }

    async fn compact(&self, revision: u64) -> Result<(), StorageError> {
        if revision == 0 {
            return Ok(());
        }
        match self
            .call("compact", || {
                let mut kv = self.kv.clone();
                async move { kv.compact(etcd_revision(revision), None).await }
            })
            .await
        {
            // Already compacted at or past `revision`: nothing to forget.
            Ok(_) | Err(Failure::Compacted) => Ok(()),
            Err(failure) => Err(self.revision_error(revision, failure).await),
        }
    }
}
