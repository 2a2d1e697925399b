//! A framework server over real HTTPS on loopback for the connection tests, and raw clients
//! for it: TCP, TLS with a chosen ALPN protocol, hyper HTTP/1.1 and HTTP/2 connections.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use apiserver_framework::authn::StaticTokenAuthenticator;
use apiserver_framework::authz::{
    Attributes, AuthorizationError, Authorizer, Decision, Request as AuthzRequest,
};
use apiserver_framework::prelude::*;
use apiserver_framework::registry::rest::options::{ListOptions, WriteOptions};
use apiserver_framework::registry::rest::{EventStream, ObjectList, RequestContext, RestStorage};
use apiserver_framework::registry::store::Store;
use apiserver_framework::registry::store::strategy::DefaultStrategy;
use apiserver_framework::server::filters::RequestLimits;
use apiserver_framework::server::serve::{HandlerChain, RunningServer};
use apiserver_framework::server::{GenericApiServer, GenericApiServerBuilder};
use apiserver_framework::storage::memory::MemoryStorage;
use apiserver_framework::testing::tls;
use apiserver_framework::user::UserInfo;
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// A snail.
#[derive(ApiResource, Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[resource(group = "slow.example.com", version = "v1", kind = "Snail", namespaced)]
pub struct SnailSpec {
    /// Pace.
    pub pace: String,
}

/// The snails of namespace `default`.
pub const SNAILS: &str = "/apis/slow.example.com/v1/namespaces/default/snails";
/// The bearer token of the test user (not in `system:masters`, so the in-flight limit
/// applies to it).
pub const TOKEN: &str = "secret-token";

/// The user [`TOKEN`] authenticates.
pub const USER: &str = "tester";
/// Creating in this namespace is forbidden.
pub const LOCKED: &str = "locked";
/// Unsafe deletes (`unsafe-delete-ignore-read-errors`) in this namespace are forbidden.
pub const GUARDED: &str = "guarded";

/// The generic store of snails, reads (get, list) and creates delayed.
struct Sleepy {
    inner: Store<Snail>,
    read_delay: Duration,
    create_delay: Duration,
    /// The reads and creates under way.
    busy: Arc<AtomicUsize>,
}

/// Counts one call under way in [`Sleepy::busy`] while it lives.
struct Busy(Arc<AtomicUsize>);

impl Busy {
    fn new(count: &Arc<AtomicUsize>) -> Busy {
        count.fetch_add(1, Ordering::SeqCst);
        Busy(count.clone())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[async_trait::async_trait]
impl RestStorage for Sleepy {
    fn info(&self) -> &ResourceInfo {
        self.inner.info()
    }
    fn verbs(&self) -> Vec<&'static str> {
        self.inner.verbs()
    }
    async fn get(&self, ctx: &RequestContext, name: &str) -> Result<Bytes, ApiError> {
        let _busy = Busy::new(&self.busy);
        // A slow store, on purpose: the subject is what the server does meanwhile.
        tokio::time::sleep(self.read_delay).await;
        self.inner.get(ctx, name).await
    }
    async fn list(&self, ctx: &RequestContext, opts: &ListOptions) -> Result<ObjectList, ApiError> {
        let _busy = Busy::new(&self.busy);
        // A slow store, on purpose (as above).
        tokio::time::sleep(self.read_delay).await;
        self.inner.list(ctx, opts).await
    }
    async fn watch(
        &self,
        ctx: &RequestContext,
        opts: &ListOptions,
    ) -> Result<EventStream, ApiError> {
        self.inner.watch(ctx, opts).await
    }
    async fn create(
        &self,
        ctx: &RequestContext,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        let _busy = Busy::new(&self.busy);
        // A slow store, on purpose (as above).
        tokio::time::sleep(self.create_delay).await;
        self.inner.create(ctx, body, opts).await
    }
}

/// Allows everything but creating in namespace [`LOCKED`], unsafe deletes in [`GUARDED`], and
/// unsafe deletes by anyone but [`USER`].
pub struct LockedNamespace;

#[async_trait::async_trait]
impl Authorizer for LockedNamespace {
    async fn authorize(&self, attrs: &Attributes) -> Result<Decision, AuthorizationError> {
        Ok(match &attrs.request {
            AuthzRequest::Resource(r) if r.verb == "create" && r.namespace == LOCKED => {
                Decision::Deny("the namespace is locked".into())
            }
            AuthzRequest::Resource(r)
                if r.verb == "unsafe-delete-ignore-read-errors" && r.namespace == GUARDED =>
            {
                Decision::Deny("unsafe deletes are not allowed here".into())
            }
            // Asked of the user the request authenticated as, not of anyone else.
            AuthzRequest::Resource(r)
                if r.verb == "unsafe-delete-ignore-read-errors" && attrs.user.username != USER =>
            {
                Decision::Deny(format!("{:?} may not delete unsafely", attrs.user.username))
            }
            _ => Decision::Allow,
        })
    }
}

/// A running server and how to reach it.
pub struct Served {
    /// The listener.
    pub running: RunningServer,
    /// Its address.
    pub addr: SocketAddr,
    /// `https://127.0.0.1:<port>`.
    pub url: String,
    /// The CA certificate (PEM).
    pub ca_pem: String,
    /// Where the CA certificate is written (for curl).
    pub ca_path: std::path::PathBuf,
    /// An HTTP/1.1 client trusting the CA.
    pub http: reqwest::Client,
    /// The temporary directory (certificates, request bodies).
    pub dir: tempfile::TempDir,
    /// The reads and creates under way in the snail store of [`serve`] (none for the chains
    /// of [`serve_chain`]).
    pub in_store: Arc<AtomicUsize>,
}

/// A server named `name` of snails whose reads (get, list) take `read_delay` and whose creates
/// take `create_delay`.
pub fn snail_server(
    name: &str,
    read_delay: Duration,
    create_delay: Duration,
) -> GenericApiServerBuilder {
    snail_server_counted(name, read_delay, create_delay).0
}

/// [`snail_server`], with the count of the reads and creates under way in its store (for a
/// test to wait until its slow requests have reached the store).
pub fn snail_server_counted(
    name: &str,
    read_delay: Duration,
    create_delay: Duration,
) -> (GenericApiServerBuilder, Arc<AtomicUsize>) {
    let store = Store::<Snail>::new(Arc::new(MemoryStorage::new()), Arc::new(DefaultStrategy));
    let busy = Arc::new(AtomicUsize::new(0));
    let storage = Arc::new(Sleepy {
        inner: store,
        read_delay,
        create_delay,
        busy: busy.clone(),
    });
    let builder =
        GenericApiServer::builder(name).group(Group::new("slow.example.com").storage(storage));
    (builder, busy)
}

/// The handler chain of `server`: [`TOKEN`] authenticates the test user (not in
/// `system:masters`, which the in-flight limit never refuses), `authorizer` decides.
pub fn chain(server: GenericApiServer, authorizer: Arc<dyn Authorizer>) -> HandlerChain {
    let user = UserInfo::new(USER, &["system:authenticated"]);
    HandlerChain::new(
        Arc::new(server),
        Arc::new(StaticTokenAuthenticator::new(TOKEN, user)),
        authorizer,
    )
}

/// Serves snails (creates taking `create_delay`) within `limits`, authorized by
/// [`LockedNamespace`].
pub async fn serve(limits: RequestLimits, create_delay: Duration) -> Served {
    let (server, in_store) = snail_server_counted("connections", Duration::ZERO, create_delay);
    let chain = chain(server.build(), Arc::new(LockedNamespace)).with_limits(limits);
    Served {
        in_store,
        ..serve_chain(chain).await
    }
}

/// Serves `chain` over HTTPS on a free loopback port, with a fresh self-signed certificate.
pub async fn serve_chain(chain: HandlerChain) -> Served {
    let served = crate::support_chain::serve_chain(chain).await.unwrap();
    let ca_path = served.dir.path().join("ca.pem");
    std::fs::write(&ca_path, &served.ca_pem).unwrap();
    let http = crate::support_chain::https(&served)
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    Served {
        addr: served.running.addr,
        running: served.running,
        url: served.url,
        ca_pem: served.ca_pem,
        ca_path,
        http,
        dir: served.dir,
        in_store: Arc::default(),
    }
}

impl Served {
    /// A GET of `path` with the test user's token.
    pub fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.http
            .get(format!("{}{path}", self.url))
            .bearer_auth(TOKEN)
    }

    /// A POST of `body` (JSON) to `path` with the test user's token.
    pub fn post(&self, path: &str, body: &Value) -> reqwest::RequestBuilder {
        self.http
            .post(format!("{}{path}", self.url))
            .bearer_auth(TOKEN)
            .json(body)
    }

    /// A GET of `/readyz` with no credentials: the answer.
    pub async fn readyz(&self) -> reqwest::Response {
        answer(self.http.get(format!("{}/readyz", self.url))).await
    }

    /// A TLS connection offering `alpn` (e.g. `h2`, `http/1.1`).
    pub async fn tls(&self, alpn: &[&[u8]]) -> TlsStream<TcpStream> {
        let config = tls::client_config(&self.ca_pem, alpn);
        tls::connect(self.addr, "127.0.0.1", config).await.unwrap()
    }

    /// An HTTP/2 connection (ALPN `h2`); the returned task ends when the connection does.
    pub async fn h2(
        &self,
    ) -> (
        hyper::client::conn::http2::SendRequest<Full<Bytes>>,
        tokio::task::JoinHandle<()>,
    ) {
        let tls = self.tls(&[b"h2"]).await;
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
        let (send, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
                .await
                .unwrap();
        let task = tokio::spawn(async move {
            let _ = conn.await;
        });
        (send, task)
    }

    /// An HTTP/1.1 connection; the returned task ends when the connection does.
    pub async fn h1(
        &self,
    ) -> (
        hyper::client::conn::http1::SendRequest<Full<Bytes>>,
        tokio::task::JoinHandle<()>,
    ) {
        let tls = self.tls(&[b"http/1.1"]).await;
        let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .unwrap();
        let task = tokio::spawn(async move {
            let _ = conn.await;
        });
        (send, task)
    }

    /// A request to `path` with the test user's token (HTTP/2 needs the full URI).
    pub fn request(&self, method: &str, path: &str, body: Bytes) -> http::Request<Full<Bytes>> {
        http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.url))
            .header("authorization", format!("Bearer {TOKEN}"))
            .header("content-type", "application/json")
            .body(Full::new(body))
            .unwrap()
    }
}

/// Sends `request` and returns the answer, failing the test when none comes.
pub async fn answer(request: reqwest::RequestBuilder) -> reqwest::Response {
    request.send().await.expect("an answer")
}

/// A snail named `name` whose JSON is about `size` bytes.
pub fn snail_of_size(name: &str, size: usize) -> Bytes {
    let pace = "x".repeat(size.saturating_sub(120));
    Bytes::from(
        serde_json::to_vec(&serde_json::json!({
            "apiVersion": "slow.example.com/v1", "kind": "Snail",
            "metadata": {"name": name}, "spec": {"pace": pace},
        }))
        .unwrap(),
    )
}
