//! The aggregator's connections to one backend: HTTP/2 connections that multiplex requests,
//! another one opened whenever every open one carries [`STREAMS_PER_CONNECTION`] requests;
//! HTTP/1.1 through a pooled client when the backend does not offer HTTP/2.
//!
//! One HTTP/2 connection carries at most as many streams at once as the backend allows
//! (`SETTINGS_MAX_CONCURRENT_STREAMS`); more requests wait on it, and watches, which hold a
//! stream for minutes, would make every later request wait. A client that reuses one
//! connection per backend (hyper's pooled client does) stalls once a backend's limit of
//! watches is open. This pool counts the streams it opened on each connection and opens
//! another connection when all are at the count, as Go's HTTP/2 transport does when a
//! server's streams run out. The count stays below the default limit of Go's HTTP/2 servers
//! (250), so that a backend built on k8s.io/apiserver never makes requests wait either.
//!
//! A connection leaves the pool as soon as it ends: a task drives each one and removes it when
//! it closes. When it ends with an error (the backend's socket closed or reset without a
//! `GOAWAY`, as when a replica is killed) the pool also reports its address as broken
//! ([`BackendClient::report_broken`]), so that the aggregator takes the endpoint out before
//! the next request would pick it.
//!
//! Written here because hyper's pooled client keeps one HTTP/2 connection per host and the
//! ecosystem has no HTTP/2 client pool that opens connections by stream count.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use axum::body::Body;
use bytes::Bytes;
use http::uri::Authority;
use http::{Request, Response, Uri};
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper::client::conn::http2;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::{Connection as _, HttpConnector};
use hyper_util::rt::{TokioExecutor, TokioTimer};
use parking_lot::Mutex;
use tower::ServiceExt as _;

use super::retry::Fate;

/// The most requests one HTTP/2 connection to a backend carries at once.
pub(crate) const STREAMS_PER_CONNECTION: usize = 250;

/// Why a request to a backend failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ClientError {
    /// Over HTTP/1.1.
    #[error(transparent)]
    Http1(#[from] hyper_util::client::legacy::Error),
    /// Over HTTP/2.
    #[error(transparent)]
    Http2(#[from] hyper::Error),
    /// Connecting (TCP or TLS) failed.
    #[error("client error (Connect)")]
    Connect(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// A request that failed, with what the failure tells about its fate.
#[derive(Debug)]
pub(crate) struct SendError {
    /// The failure.
    pub(crate) error: ClientError,
    /// Whether a backend may have acted on the request.
    pub(crate) fate: Fate,
    /// It went on a connection that had carried requests before.
    pub(crate) reused: bool,
}

/// The failure with its causes, `outer: inner: …`.
impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut written = self.error.to_string();
        f.write_str(&written)?;
        let mut source = std::error::Error::source(&self.error);
        while let Some(s) = source {
            let text = s.to_string();
            if !written.contains(&text) {
                write!(f, ": {text}")?;
                written.push_str(&text);
            }
            source = s.source();
        }
        Ok(())
    }
}

impl std::error::Error for SendError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// Called with a backend's address when one of its connections broke.
type BrokenHook = Box<dyn Fn(&str) + Send + Sync>;

/// An HTTPS client to one backend (cheap to clone: clones share the connections).
#[derive(Clone)]
pub(crate) struct BackendClient(Arc<Inner>);

struct Inner {
    /// The most requests one HTTP/2 connection carries at once.
    streams_per_connection: usize,
    connector: HttpsConnector<HttpConnector>,
    http1: Client<HttpsConnector<HttpConnector>, Body>,
    connections: Mutex<Vec<Arc<H2Connection>>>,
    /// Held while a connection is opened, so that a burst of requests opens one, not one each.
    opening: tokio::sync::Mutex<()>,
    /// The backend chose HTTP/1.1 when offered both.
    http1_only: AtomicBool,
    /// Told the address of every connection that broke.
    on_broken: OnceLock<BrokenHook>,
}

struct H2Connection {
    /// The backend address it is connected to.
    authority: Option<Authority>,
    send: http2::SendRequest<Body>,
    streams: Arc<AtomicUsize>,
}

impl H2Connection {
    fn usable(&self, streams: usize) -> bool {
        !self.send.is_closed() && self.streams.load(Ordering::Acquire) < streams
    }
}

impl BackendClient {
    /// A client connecting with `connector` (which offers `h2` and `http/1.1`).
    pub(crate) fn new(connector: HttpsConnector<HttpConnector>) -> Self {
        Self::with_streams(connector, STREAMS_PER_CONNECTION)
    }

    /// A client speaking HTTP/1.1 only, whatever the backend offers (requests that upgrade
    /// their connection: HTTP/2 has no `Upgrade`).
    pub(crate) fn http1_only(connector: HttpsConnector<HttpConnector>) -> Self {
        let client = Self::new(connector);
        client.0.http1_only.store(true, Ordering::Release);
        client
    }

    /// A client carrying at most `streams` requests on one HTTP/2 connection.
    fn with_streams(connector: HttpsConnector<HttpConnector>, streams: usize) -> Self {
        let http1 = Client::builder(TokioExecutor::new()).build(connector.clone());
        BackendClient(Arc::new(Inner {
            streams_per_connection: streams.max(1),
            connector,
            http1,
            connections: Mutex::new(Vec::new()),
            opening: tokio::sync::Mutex::new(()),
            http1_only: AtomicBool::new(false),
            on_broken: OnceLock::new(),
        }))
    }

    /// Has the pool call the hook `make` makes (made once per client) with a backend's address
    /// whenever one of its connections to it ends with an error.
    pub(crate) fn report_broken(&self, make: impl FnOnce() -> BrokenHook) {
        if self.0.on_broken.get().is_none() {
            let _ = self.0.on_broken.set(make());
        }
    }

    /// How many HTTP/2 connections are open.
    #[cfg(test)]
    pub(crate) fn connections(&self) -> usize {
        self.0.connections.lock().len()
    }

    /// Sends `req` (whose URI is absolute) and answers the response; its body holds the
    /// request's stream until it ends or is dropped.
    pub(crate) async fn request(
        &self,
        req: Request<Body>,
    ) -> Result<Response<BackendBody>, ClientError> {
        self.send(req, false).await.map_err(|e| e.error)
    }

    /// Sends `req` (whose URI is absolute), on a new connection when `fresh`, and answers the
    /// response; a failure says whether a backend may have acted on the request.
    pub(crate) async fn send(
        &self,
        mut req: Request<Body>,
        fresh: bool,
    ) -> Result<Response<BackendBody>, SendError> {
        if !self.0.http1_only.load(Ordering::Acquire) {
            let connection = self
                .h2_connection(req.uri(), fresh)
                .await
                .map_err(|error| SendError {
                    error,
                    fate: Fate::Unreachable,
                    reused: false,
                })?;
            match connection {
                Some((conn, reused)) => {
                    let streams = Arc::clone(&conn.streams);
                    streams.fetch_add(1, Ordering::AcqRel);
                    let guard = StreamGuard(streams);
                    *req.version_mut() = http::Version::HTTP_2;
                    let mut send = conn.send.clone();
                    drop(conn);
                    return match send.try_send_request(req).await {
                        Ok(res) => Ok(res.map(|body| BackendBody {
                            body,
                            stream: Some(guard),
                        })),
                        Err(failed) => {
                            // Handed back: the connection had closed before it went out.
                            let fate = match failed.message() {
                                Some(_) => Fate::Unsent,
                                None => Fate::of_http2(failed.error()),
                            };
                            Err(SendError {
                                error: ClientError::Http2(failed.into_error()),
                                fate,
                                reused,
                            })
                        }
                    };
                }
                None => self.0.http1_only.store(true, Ordering::Release),
            }
        }
        *req.version_mut() = http::Version::HTTP_11;
        match self.0.http1.request(req).await {
            Ok(res) => Ok(res.map(|body| BackendBody { body, stream: None })),
            // hyper-util's pool sends a request that found its pooled connection closed again
            // by itself; of the rest, only a failed connect is known not to have been sent.
            Err(e) => Err(SendError {
                fate: match e.is_connect() {
                    true => Fate::Unreachable,
                    false => Fate::Failed,
                },
                error: ClientError::Http1(e),
                reused: false,
            }),
        }
    }

    /// An open HTTP/2 connection with a free stream, opened if none has one (or if `fresh`),
    /// and whether it carried requests before; `None` when the backend does not speak HTTP/2.
    async fn h2_connection(
        &self,
        uri: &Uri,
        fresh: bool,
    ) -> Result<Option<(Arc<H2Connection>, bool)>, ClientError> {
        if !fresh && let Some(conn) = self.pick(uri.authority()) {
            return Ok(Some((conn, true)));
        }
        // Boxed: opening is rare, and its futures (TCP, TLS, the HTTP/2 handshake) would
        // otherwise be part of every request's future, which is moved whole at each boxing
        // up the handler chain (kilobytes copied per request).
        Box::pin(self.open_h2(uri, fresh)).await
    }

    /// Opens an HTTP/2 connection to `uri`'s authority, unless (when not `fresh`) another
    /// request opened one with a free stream meanwhile; `None` when the backend does not
    /// speak HTTP/2.
    async fn open_h2(
        &self,
        uri: &Uri,
        fresh: bool,
    ) -> Result<Option<(Arc<H2Connection>, bool)>, ClientError> {
        let authority = uri.authority();
        let _opening = self.0.opening.lock().await;
        // Another request may have opened one meanwhile.
        if !fresh && let Some(conn) = self.pick(authority) {
            return Ok(Some((conn, true)));
        }
        let io = self
            .0
            .connector
            .clone()
            .oneshot(uri.clone())
            .await
            .map_err(ClientError::Connect)?;
        if !io.connected().is_negotiated_h2() {
            return Ok(None);
        }
        let (send, connection) = http2::Builder::new(TokioExecutor::new())
            .timer(TokioTimer::new())
            .handshake(io)
            .await
            .map_err(|e| ClientError::Connect(Box::new(e)))?;
        let conn = Arc::new(H2Connection {
            authority: authority.cloned(),
            send,
            streams: Arc::new(AtomicUsize::new(0)),
        });
        self.0.connections.lock().push(Arc::clone(&conn));
        let pool = Arc::downgrade(&self.0);
        let watched = Arc::downgrade(&conn);
        let authority = authority.map(|a| a.to_string());
        tokio::spawn(async move {
            let ended = connection.await;
            let Some(pool) = pool.upgrade() else {
                return;
            };
            pool.connections
                .lock()
                .retain(|c| !std::ptr::eq(Arc::as_ptr(c), watched.as_ptr()));
            if let Err(e) = ended {
                tracing::debug!(error = %e, "a backend HTTP/2 connection broke");
                if let (Some(authority), Some(hook)) = (authority, pool.on_broken.get()) {
                    hook(&authority);
                }
            }
        });
        Ok(Some((conn, false)))
    }

    /// The open connection to `authority` with the fewest streams, if one has a free stream;
    /// closed connections are dropped.
    fn pick(&self, authority: Option<&Authority>) -> Option<Arc<H2Connection>> {
        let mut connections = self.0.connections.lock();
        connections.retain(|c| !c.send.is_closed());
        connections
            .iter()
            .filter(|c| {
                c.authority.as_ref() == authority && c.usable(self.0.streams_per_connection)
            })
            .min_by_key(|c| c.streams.load(Ordering::Acquire))
            .cloned()
    }
}

/// Counts one stream of an HTTP/2 connection until dropped.
struct StreamGuard(Arc<AtomicUsize>);

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A backend's response body, holding its HTTP/2 stream's place in the count until it ends or
/// is dropped.
pub(crate) struct BackendBody {
    body: Incoming,
    stream: Option<StreamGuard>,
}

impl http_body::Body for BackendBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        if let Poll::Ready(None) = polled {
            // The stream is over: its place is free before the body is dropped.
            self.stream = None;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use hyper_util::rt::TokioIo;
    use tokio::net::TcpListener;

    use super::*;

    /// A loopback listener with a TLS acceptor for a fresh self-signed `localhost` certificate,
    /// offering only `h2`; its address and the certificate (PEM).
    async fn h2_tls_listener() -> (
        TcpListener,
        std::net::SocketAddr,
        tokio_rustls::TlsAcceptor,
        String,
    ) {
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        let pem = cert.cert.pem();
        let key =
            rustls::pki_types::PrivateKeyDer::try_from(cert.signing_key.serialize_der()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.cert.der().clone()], key)
            .unwrap();
        config.alpn_protocols = vec![b"h2".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        (listener, addr, acceptor, pem)
    }

    /// An HTTPS server speaking only HTTP/2 and allowing `max_streams` streams per connection,
    /// whose answers send their headers and then hold the body open until the client drops it;
    /// its address and its certificate (PEM).
    async fn held_open_server(max_streams: u32) -> (std::net::SocketAddr, String) {
        let (listener, addr, acceptor, pem) = h2_tls_listener().await;
        tokio::spawn(async move {
            loop {
                let (tcp, _) = listener.accept().await.unwrap();
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(|_req| async {
                        // A body that never ends: the stream stays open until the client goes.
                        let body = http_body_util::StreamBody::new(futures::stream::pending::<
                            Result<Frame<Bytes>, Infallible>,
                        >());
                        Ok::<_, Infallible>(Response::new(body))
                    });
                    let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                        .max_concurrent_streams(max_streams)
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        (addr, pem)
    }

    /// How a [`closable_server`] ends its connections.
    #[derive(Clone, Copy)]
    enum Close {
        /// Drops the socket with nothing said, as a killed process's sockets close.
        Kill,
        /// Sends `GOAWAY` and closes, as a server shutting down.
        Graceful,
    }

    /// An HTTPS server speaking only HTTP/2, answering `200 ok`, whose connections end as the
    /// sender says; its address, certificate (PEM) and that sender.
    async fn closable_server() -> (
        std::net::SocketAddr,
        String,
        tokio::sync::watch::Sender<Option<Close>>,
    ) {
        let (listener, addr, acceptor, pem) = h2_tls_listener().await;
        let (close, closed) = tokio::sync::watch::channel(None);
        tokio::spawn(async move {
            loop {
                let (tcp, _) = listener.accept().await.unwrap();
                let acceptor = acceptor.clone();
                let mut closed = closed.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(|_req| async {
                        Ok::<_, Infallible>(Response::new(http_body_util::Full::new(
                            Bytes::from_static(b"ok"),
                        )))
                    });
                    let conn = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(tls), service);
                    let mut conn = std::pin::pin!(conn);
                    tokio::select! {
                        _ = conn.as_mut() => return,
                        _ = closed.wait_for(Option::is_some) => {}
                    }
                    let how = *closed.borrow();
                    if let Some(Close::Graceful) = how {
                        conn.as_mut().graceful_shutdown();
                        let _ = conn.await;
                    }
                    // Close::Kill: the connection and its socket are dropped here.
                });
            }
        });
        (addr, pem, close)
    }

    /// A pooled connection whose backend dies while it is idle leaves the pool, and its address
    /// is reported broken, with no request sent; one the backend closes with `GOAWAY` leaves
    /// the pool and is not reported.
    #[tokio::test]
    async fn a_connection_that_breaks_while_idle_leaves_the_pool_and_is_reported() {
        for (how, reported) in [(Close::Kill, true), (Close::Graceful, false)] {
            let (addr, ca, close) = closable_server().await;
            let client = BackendClient::new(connector(&ca));
            let broken: Arc<Mutex<Vec<String>>> = Arc::default();
            let seen = broken.clone();
            client.report_broken(|| Box::new(move |a: &str| seen.lock().push(a.to_string())));
            let res = client.request(get(addr)).await.unwrap();
            assert_eq!(res.status(), 200);
            drop(res);
            assert_eq!(client.connections(), 1);
            close.send(Some(how)).unwrap();
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while client.connections() > 0 {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the pool keeps a closed connection"
                );
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            // The report comes with the removal, from the same task.
            let broken = broken.lock().clone();
            match reported {
                true => assert_eq!(broken, [format!("localhost:{}", addr.port())]),
                false => assert!(broken.is_empty(), "{broken:?}"),
            }
        }
    }

    fn connector(ca_pem: &str) -> HttpsConnector<HttpConnector> {
        let mut roots = rustls::RootCertStore::empty();
        for cert in crate::tls::parse_certs(ca_pem).unwrap() {
            roots.add(cert).unwrap();
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(config)
            .https_only()
            .enable_http1()
            .enable_http2()
            .wrap_connector(http)
    }

    fn get(addr: std::net::SocketAddr) -> Request<Body> {
        Request::get(format!("https://localhost:{}/watch", addr.port()))
            .body(Body::empty())
            .unwrap()
    }

    /// More long-lived requests than a backend's connection carries all get their answers:
    /// the pool opens another connection when its connections' streams are taken.
    #[tokio::test]
    async fn opens_another_connection_when_streams_run_out() {
        let (addr, ca) = held_open_server(2).await;
        let client = BackendClient::with_streams(connector(&ca), 2);
        let mut open = Vec::new();
        for i in 0..5 {
            let res = tokio::time::timeout(
                std::time::Duration::from_secs(10),
                client.request(get(addr)),
            )
            .await
            .unwrap_or_else(|_| panic!("request {i} waits for a stream"))
            .unwrap();
            assert_eq!(res.status(), 200);
            open.push(res);
        }
        assert_eq!(client.connections(), 3, "two streams a connection");
        // Ended streams free their places: no new connection for the next two.
        open.truncate(1);
        for _ in 0..2 {
            open.push(client.request(get(addr)).await.unwrap());
        }
        assert_eq!(client.connections(), 3);
    }
}
