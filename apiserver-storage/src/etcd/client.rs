//! A client of etcd's v3 gRPC API: the calls the etcd backend makes (read, write, transaction,
//! compaction, watch) and a member's status, with `tonic`'s gRPC client and the messages of
//! [`proto`](super::proto), over the framework's own HTTP/2 channel to the members.
//!
//! Written by hand, with the messages declared by hand: the etcd clients on crates.io compile
//! etcd's `.proto` files in their build scripts, which needs `protoc` on every machine that
//! builds the framework. This one needs nothing but cargo. It covers what the backend uses;
//! leases, auth, cluster membership and the rest of etcd's API are left out.
//!
//! ```no_run
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! use apiserver_storage::etcd::{EtcdClient, EtcdOptions};
//! let client = EtcdClient::connect(&EtcdOptions::default()).await?;
//! let put = client.put("/greeting", "hello").await?;
//! let kv = client.get("/greeting").await?.expect("just written");
//! assert_eq!(kv.mod_revision, put.header.unwrap().revision);
//! # Ok(()) }
//! ```

use std::path::PathBuf;

use bytes::Bytes;
use http::uri::PathAndQuery;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::client::Grpc;
use tonic::metadata::AsciiMetadataValue;
use tonic::{Request, Status, Streaming};
use tonic_prost::ProstCodec;

use super::channel::{self, EtcdChannel};
use super::options::EtcdOptions;
use super::proto::{
    CompactionRequest, CompactionResponse, KeyValue, PutRequest, PutResponse, RangeRequest,
    RangeResponse, StatusRequest, StatusResponse, TxnRequest, TxnResponse, WatchCancelRequest,
    WatchCreateRequest, WatchProgressRequest, WatchRequest, WatchRequestKind, WatchResponse,
};

const RANGE: &str = "/etcdserverpb.KV/Range";
const PUT: &str = "/etcdserverpb.KV/Put";
const TXN: &str = "/etcdserverpb.KV/Txn";
const COMPACT: &str = "/etcdserverpb.KV/Compact";
const WATCH: &str = "/etcdserverpb.Watch/Watch";
const STATUS: &str = "/etcdserverpb.Maintenance/Status";

/// The metadata with which a request asks for a member that has a leader (etcd's
/// `rpctypes.MetadataRequireLeaderKey`): a member cut off from the leader fails it rather
/// than serve stale data, and ends such a watch.
const REQUIRE_LEADER: (&str, &str) = ("hasleader", "true");

/// Why an [`EtcdClient`] could not be made from its options.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// `servers` is empty.
    #[error("no etcd servers given")]
    NoServers,
    /// A server URL does not parse, or its scheme does not go with the TLS settings.
    #[error("etcd server {url:?}: {reason}")]
    BadServer {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A TLS file could not be read.
    #[error("reading etcd {what} file {}: {source}", path.display())]
    Read {
        /// Which file: `CA`, `certificate` or `key`.
        what: &'static str,
        /// Its path.
        path: PathBuf,
        /// Why it could not be read.
        source: std::io::Error,
    },
    /// A client certificate without its key, or a key without its certificate.
    #[error("etcd client certificate and key must be given together")]
    HalfIdentity,
    /// The TLS files do not make a TLS configuration (not PEM, a key that does not match).
    #[error("etcd TLS settings: {0}")]
    Tls(String),
}

/// A client of an etcd cluster: one HTTP/2 connection per member, made on first use (and
/// again once it breaks), calls sent to the members in turn, each straight from the calling
/// task to its member's connection. Cheap to clone; clones share the connections.
///
/// Every call answers etcd's gRPC [`Status`] on failure: a status from etcd itself (such as
/// `etcdserver: mvcc: required revision has been compacted`), or one the client made for a
/// connection that could not be made or broke. Calls are not bounded in time here: callers
/// bound them (the backend with [`EtcdOptions::request_timeout`]).
#[derive(Clone)]
pub struct EtcdClient {
    grpc: Grpc<EtcdChannel>,
    require_leader: bool,
}

impl std::fmt::Debug for EtcdClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdClient")
            .field("require_leader", &self.require_leader)
            .finish_non_exhaustive()
    }
}

impl EtcdClient {
    /// A client of the members at `opts.servers`, with `opts`' TLS files, dial timeout,
    /// keep-alive and response size limit (the key prefix and request timeouts are the
    /// backend's, not the client's).
    ///
    /// Reads the TLS files but connects to no member yet: connections are made on first use,
    /// so a cluster that is down now is no error here. Requests require a member with a leader
    /// (see [`require_leader`](Self::require_leader)).
    pub async fn connect(opts: &EtcdOptions) -> Result<Self, ConnectError> {
        let channel = channel::balanced(opts)?;
        Ok(EtcdClient {
            grpc: Grpc::new(channel).max_decoding_message_size(opts.max_response_bytes),
            require_leader: true,
        })
    }

    /// Whether requests ask for a member that has a leader (the default, as upstream's
    /// storage does); without, a member cut off from its cluster still answers reads and
    /// status requests.
    pub fn require_leader(mut self, require: bool) -> Self {
        self.require_leader = require;
        self
    }

    /// Reads a key or a range of keys (`KV.Range`).
    pub async fn range(&self, request: RangeRequest) -> Result<RangeResponse, Status> {
        self.unary(RANGE, request).await
    }

    /// The current key-value of `key`, if it exists.
    pub async fn get(&self, key: impl Into<Vec<u8>>) -> Result<Option<KeyValue>, Status> {
        let resp = self
            .range(RangeRequest {
                key: key.into(),
                ..Default::default()
            })
            .await?;
        Ok(resp.kvs.into_iter().next())
    }

    /// Writes `value` to `key` (`KV.Put`); the response header holds the write's revision.
    pub async fn put(
        &self,
        key: impl Into<Vec<u8>>,
        value: impl Into<Bytes>,
    ) -> Result<PutResponse, Status> {
        let request = PutRequest {
            key: key.into(),
            value: value.into(),
        };
        self.unary(PUT, request).await
    }

    /// Runs a transaction (`KV.Txn`).
    pub async fn txn(&self, request: TxnRequest) -> Result<TxnResponse, Status> {
        self.unary(TXN, request).await
    }

    /// Compacts the history before `revision` (`KV.Compact`).
    pub async fn compact(&self, revision: i64) -> Result<CompactionResponse, Status> {
        self.unary(COMPACT, CompactionRequest { revision }).await
    }

    /// The status of the member that takes the request (`Maintenance.Status`): its id (in the
    /// header), version and the leader it knows.
    pub async fn status(&self) -> Result<StatusResponse, Status> {
        self.unary(STATUS, StatusRequest {}).await
    }

    /// Opens a watch stream (`Watch.Watch`) and creates the watch `create` on it. The stream's
    /// first response confirms the creation (or cancels it, for a compacted start revision).
    pub async fn watch(&self, create: WatchCreateRequest) -> Result<Watch, Status> {
        let (requests, outgoing) = mpsc::channel(4);
        requests
            .try_send(WatchRequest {
                request: Some(WatchRequestKind::Create(create)),
            })
            .map_err(|_| Status::internal("a new watch request queue is full"))?;
        let mut grpc = self.ready().await?;
        let responses = grpc
            .streaming(
                self.request(ReceiverStream::new(outgoing)),
                PathAndQuery::from_static(WATCH),
                ProstCodec::default(),
            )
            .await?
            .into_inner();
        Ok(Watch {
            requests,
            responses,
        })
    }

    async fn unary<Q, R>(&self, path: &'static str, message: Q) -> Result<R, Status>
    where
        Q: prost::Message + Send + Sync + 'static,
        R: prost::Message + Default + Send + Sync + 'static,
    {
        let mut grpc = self.ready().await?;
        let resp = grpc
            .unary(
                self.request(message),
                PathAndQuery::from_static(path),
                ProstCodec::default(),
            )
            .await?;
        Ok(resp.into_inner())
    }

    /// A handle on the channel, once it takes a request.
    async fn ready(&self) -> Result<Grpc<EtcdChannel>, Status> {
        let mut grpc = self.grpc.clone();
        grpc.ready().await?;
        Ok(grpc)
    }

    fn request<T>(&self, message: T) -> Request<T> {
        let mut request = Request::new(message);
        if self.require_leader {
            let (key, value) = REQUIRE_LEADER;
            request
                .metadata_mut()
                .insert(key, AsciiMetadataValue::from_static(value));
        }
        request
    }
}

/// An open watch stream: the responses etcd sends, and requests to send on the same stream.
/// Dropping it closes the stream (and so its watches).
#[derive(Debug)]
pub struct Watch {
    requests: mpsc::Sender<WatchRequest>,
    responses: Streaming<WatchResponse>,
}

impl Watch {
    /// The next response; `None` once etcd has closed the stream.
    pub async fn message(&mut self) -> Result<Option<WatchResponse>, Status> {
        self.responses.message().await
    }

    /// Asks etcd for a progress response: one without events (and watch id -1) whose header
    /// revision every later event of the stream is above (etcd 3.4 or newer).
    pub async fn request_progress(&self) -> Result<(), Status> {
        self.send(WatchRequestKind::Progress(WatchProgressRequest {}))
            .await
    }

    /// Cancels the watch `watch_id` (from its creation response); etcd confirms with a
    /// `canceled` response.
    pub async fn cancel(&self, watch_id: i64) -> Result<(), Status> {
        self.send(WatchRequestKind::Cancel(WatchCancelRequest { watch_id }))
            .await
    }

    async fn send(&self, request: WatchRequestKind) -> Result<(), Status> {
        self.requests
            .send(WatchRequest {
                request: Some(request),
            })
            .await
            .map_err(|_| Status::unavailable("the etcd watch stream is closed"))
    }
}
