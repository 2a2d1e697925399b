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
//! compactor does); a compaction by anyone else is reported all the same. Servers sharing one
//! etcd take turns compacting it ([`mod@compact`]), so that the cluster is compacted once per
//! interval however many servers run. Every request is
//! bounded by [`EtcdOptions::request_timeout`]: an unreachable etcd answers
//! [`StorageError::Unavailable`], it never hangs a request. A watch ends with an `Err` when
//! etcd cancels it or the connection breaks.
//!
//! # The client
//!
//! The backend talks to etcd through [`EtcdClient`], the framework's own client of etcd's v3
//! gRPC API ([`client`]), with etcd's messages written by hand ([`proto`]): the etcd clients
//! on crates.io need `protoc` at build time, this one builds with cargo alone. It sends its
//! calls over a channel of its own: one HTTP/2 connection per member of
//! [`EtcdOptions::servers`], made on first use and made again once it breaks, the members
//! taking calls in turn, each call opened on its member's connection by the task that makes it
//! (no worker task in between). A request that could not reach a member (connection refused)
//! is sent again, to another, and that member is left out of the turns for a second.
//!
//! # etcd configuration
//!
//! etcd refuses requests larger than its `--max-request-bytes` (1.5 MiB by default), which
//! caps the size of one object; the server accepts request bodies up to 3 MiB, so give etcd
//! `--max-request-bytes` of at least 4 MiB (`4194304`) to store any object the server admits.

mod channel;
pub mod client;
pub mod compact;
mod error;
mod keys;
mod options;
pub mod proto;
mod watch;

pub use client::{ConnectError, EtcdClient};
pub use options::EtcdOptions;

use self::error::{Failure, bounded, bounded_retry};
use self::keys::{Keys, revision};
use self::proto::{
    Compare, CompareResult, OpResult, RangeRequest, RequestOp, ResponseHeader, TxnRequest,
    TxnResponse, WatchCreateRequest,
};
use super::{KeyValue, ListPage, ListRequest, Storage, StorageError, WatchStream};

/// A [`Storage`] on etcd. Cheap to share behind an `Arc`; requests run concurrently over one
/// HTTP/2 connection per etcd member.
pub struct EtcdStorage {
    client: EtcdClient,
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
    /// tells. Fails for unreadable or invalid TLS files, a certificate without its key, no
    /// server, or a server URL that does not parse (or is `http://` while TLS files are given,
    /// or `https://` without a CA file).
    pub async fn connect(opts: EtcdOptions) -> Result<Self, StorageError> {
        // As upstream: requests require a member with a leader (the client's default), so a
        // member cut off from the leader fails requests and watches instead of serving stale
        // data.
        let client = EtcdClient::connect(&opts)
            .await
            .map_err(|e| StorageError::Unavailable(e.to_string()))?;
        Ok(EtcdStorage {
            client,
            keys: Keys::new(opts.normalized_prefix()),
            opts,
        })
    }

    /// Whether etcd answers a read within [`EtcdOptions::health_timeout`]; the check behind
    /// the server's `etcd` health and `etcd-readiness` readiness checks. The error says why not.
    pub async fn check_health(&self) -> Result<(), String> {
        let get = || self.client.range(count_only(self.keys.probe(), 0));
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
        request: impl Future<Output = Result<T, tonic::Status>>,
    ) -> Result<T, Failure> {
        bounded(self.opts.request_timeout, what, request).await
    }

    /// Runs the request `make` builds, bounded by the request timeout, sending it again when
    /// it could not reach a member (another endpoint takes it).
    async fn call<T, F, Fut>(&self, what: &str, make: F) -> Result<T, Failure>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, tonic::Status>>,
    {
        bounded_retry(self.opts.request_timeout, what, make).await
    }

    /// Runs a transaction; any failure is `Unavailable`.
    async fn txn(&self, what: &str, txn: TxnRequest) -> Result<TxnResponse, StorageError> {
        self.call(what, || self.client.txn(txn.clone()))
            .await
            .map_err(|e| e.into_storage(what))
    }

    /// The oldest revision etcd still has, given that `requested` is older: etcd's read error
    /// does not carry it, a watch from `requested` is canceled with it. Falls back to
    /// `requested + 1` when etcd does not say in time.
    async fn compacted_revision(&self, requested: u64) -> u64 {
        let start = i64::try_from(requested.max(1)).unwrap_or(i64::MAX);
        let probe = async {
            let create = WatchCreateRequest {
                key: self.keys.probe(),
                start_revision: start,
                ..Default::default()
            };
            let mut watch = self.client.watch(create).await?;
            while let Some(resp) = watch.message().await? {
                if resp.compact_revision > 0 {
                    return Ok(revision(resp.compact_revision));
                }
                if resp.canceled {
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
        let actual = resp.responses.iter().find_map(|op| match &op.response {
            Some(OpResult::Range(get)) => Some(get.kvs.first().map(|kv| kv.mod_revision)),
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
fn header_revision(header: Option<&ResponseHeader>) -> u64 {
    header.map(|h| revision(h.revision)).unwrap_or(0)
}

/// A read of `key` that only counts (its response header and errors are what matter), at
/// `revision` (0: the newest).
fn count_only(key: Vec<u8>, revision: i64) -> RangeRequest {
    RangeRequest {
        key,
        revision,
        count_only: true,
        ..Default::default()
    }
}

/// A storage revision as etcd's signed revision.
fn etcd_revision(rev: u64) -> i64 {
    i64::try_from(rev).unwrap_or(i64::MAX)
}

#[async_trait::async_trait]
impl Storage for EtcdStorage {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        let key = self.keys.full(key);
        let found = self
            .call("get", || self.client.get(key.clone()))
            .await
            .map_err(|e| e.into_storage("get"))?;
        Ok(found.map(|kv| self.keys.key_value(kv)))
    }

    async fn list(&self, req: ListRequest) -> Result<ListPage, StorageError> {
        let (start, end) = self.keys.range(&req.prefix, req.start_after.as_deref());
        let at = req.revision.filter(|&r| r > 0);
        let range = RangeRequest {
            key: start,
            range_end: end,
            limit: i64::try_from(req.limit).unwrap_or(i64::MAX),
            revision: at.map(etcd_revision).unwrap_or(0),
            count_only: false,
        };
        let resp = match self.call("list", || self.client.range(range.clone())).await {
            Ok(resp) => resp,
            Err(Failure::Other(e)) => return Err(e),
            Err(failure) => {
                let requested = at.unwrap_or(0);
                return Err(self.revision_error(requested, failure).await);
            }
        };
        let revision = at.unwrap_or_else(|| header_revision(resp.header.as_ref()));
        let more = resp.more;
        let count = u64::try_from(resp.count).unwrap_or(0);
        let items: Vec<KeyValue> = resp
            .kvs
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
        let txn = TxnRequest {
            compare: vec![Compare::create_revision(k.clone(), CompareResult::Equal, 0)],
            success: vec![RequestOp::put(k, value)],
            failure: vec![],
        };
        let resp = self.txn("create", txn).await?;
        if !resp.succeeded {
            return Err(StorageError::AlreadyExists(key.to_string()));
        }
        Ok(header_revision(resp.header.as_ref()))
    }

    async fn update(
        &self,
        key: &str,
        value: bytes::Bytes,
        expected: u64,
    ) -> Result<u64, StorageError> {
        let k = self.keys.full(key);
        let txn = TxnRequest {
            compare: vec![
                Compare::create_revision(k.clone(), CompareResult::Greater, 0),
                Compare::mod_revision(k.clone(), CompareResult::Equal, etcd_revision(expected)),
            ],
            success: vec![RequestOp::put(k.clone(), value)],
            failure: vec![RequestOp::get(k)],
        };
        let resp = self.txn("update", txn).await?;
        if !resp.succeeded {
            return Err(Self::cas_failure(key, expected, &resp));
        }
        Ok(header_revision(resp.header.as_ref()))
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<u64>,
    ) -> Result<(u64, KeyValue), StorageError> {
        let k = self.keys.full(key);
        let mut compare = vec![Compare::create_revision(
            k.clone(),
            CompareResult::Greater,
            0,
        )];
        if let Some(expected) = expected {
            compare.push(Compare::mod_revision(
                k.clone(),
                CompareResult::Equal,
                etcd_revision(expected),
            ));
        }
        let txn = TxnRequest {
            compare,
            success: vec![RequestOp::delete_returning(k.clone())],
            failure: vec![RequestOp::get(k)],
        };
        let resp = self.txn("delete", txn).await?;
        if !resp.succeeded {
            return Err(Self::cas_failure(key, expected.unwrap_or(0), &resp));
        }
        let at = header_revision(resp.header.as_ref());
        let last = resp.responses.into_iter().find_map(|op| match op.response {
            Some(OpResult::DeleteRange(del)) => del.prev_kvs.into_iter().next(),
            _ => None,
        });
        match last {
            Some(last) => Ok((at, self.keys.key_value(last))),
            None => Err(StorageError::NotFound(key.to_string())),
        }
    }

    async fn watch(&self, prefix: &str, after: u64) -> Result<WatchStream, StorageError> {
        let (key, range_end) = self.keys.range(prefix, None);
        let mut create = WatchCreateRequest {
            key,
            range_end,
            prev_kv: true,
            ..Default::default()
        };
        if after > 0 {
            // A read at `after` fails when etcd no longer has it: the same rule as `list`,
            // answered at once (a watch would be canceled only by etcd's next sync).
            let check = count_only(self.keys.probe(), etcd_revision(after));
            match self
                .call("watch", || self.client.range(check.clone()))
                .await
            {
                Ok(_) | Err(Failure::Future) => {}
                Err(failure) => return Err(self.revision_error(after, failure).await),
            }
            create.start_revision = etcd_revision(after.saturating_add(1));
        }
        let watch = self
            .call("watch", || self.client.watch(create.clone()))
            .await
            .map_err(|e| e.into_storage("watch"))?;
        Ok(watch::Feed::new(watch, self.keys.clone(), after).into_stream())
    }

    async fn current_revision(&self) -> Result<u64, StorageError> {
        let probe = count_only(self.keys.probe(), 0);
        let resp = self
            .call("revision", || self.client.range(probe.clone()))
            .await
            .map_err(|e| e.into_storage("revision"))?;
        Ok(header_revision(resp.header.as_ref()))
    }

    async fn compact(&self, revision: u64) -> Result<(), StorageError> {
        if revision == 0 {
            return Ok(());
        }
        match self
            .call("compact", || self.client.compact(etcd_revision(revision)))
            .await
        {
            // Already compacted at or past `revision`: nothing to forget.
            Ok(_) | Err(Failure::Compacted) => Ok(()),
            Err(failure) => Err(self.revision_error(revision, failure).await),
        }
    }
}
