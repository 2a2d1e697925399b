//! Serving one accepted connection: the TLS handshake within its timeout, HTTP/1.1 or HTTP/2
//! (by ALPN) with the connection's deadlines, and each request through the handler.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use bytes::Bytes;
use http::{Request, Response};
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::TcpStream;
use tokio::sync::{Notify, watch};
use tokio_rustls::TlsAcceptor;

use super::activity::{Activity, InFlight, Registered};
use super::backlog::{Backlog, ConnectionBacklog, ReadGate};
use super::batched_writes::BatchedWrites;
use super::compression;
use super::drains::Drains;
use super::early_answer::EarlyAnswers;
use super::limits::ConnectionLimits;
use super::tracked_io::TrackedIo;
use super::unread_body::{Leftover, ReadBounds, Rest, UnreadBody};
use crate::authn::{PeerAddr, PeerCertificates};
use crate::authz::ParsedRequest;
use crate::server::filters;
use crate::server::until_stopped;

/// What answers the requests of a connection (the handler chain).
pub trait ServeRequest: Send + Sync + 'static {
    /// Answers `req`.
    fn serve(
        self: Arc<Self>,
        req: Request<Body>,
    ) -> impl Future<Output = Response<Body>> + Send + 'static;
}

/// How long a connection accepted just before the server stops may take to send its first
/// request.
pub(crate) const FIRST_REQUEST_GRACE: Duration = Duration::from_secs(1);

/// How long an idle HTTP/2 connection being closed may take to send its `GOAWAY`.
const GOAWAY_GRACE: Duration = Duration::from_secs(1);

/// Serves connections with one handler, TLS configuration and set of limits.
pub struct ConnectionServer<H> {
    acceptor: TlsAcceptor,
    handler: Arc<H>,
    limits: ConnectionLimits,
    /// How long requests in flight may take to finish once the server stops.
    drain: Duration,
    http: auto::Builder<TokioExecutor>,
    /// The bound on unread bodies read at once, over all connections.
    drains: Drains,
    /// The bound on requests accepted and not yet started, over all connections.
    backlog: Backlog,
}

impl<H: ServeRequest> ConnectionServer<H> {
    /// Serves `handler` over TLS `acceptor` within `limits`; when the server stops, requests
    /// in flight get `drain` to finish.
    pub fn new(
        acceptor: TlsAcceptor,
        handler: Arc<H>,
        limits: ConnectionLimits,
        drain: Duration,
    ) -> Self {
        let mut http = auto::Builder::new(TokioExecutor::new());
        http.http2()
            .max_concurrent_streams(limits.http2_streams())
            .timer(TokioTimer::new());
        if !limits.http2_read_idle_timeout.is_zero() && !limits.http2_ping_timeout.is_zero() {
            http.http2()
                .keep_alive_interval(limits.http2_read_idle_timeout)
                .keep_alive_timeout(limits.http2_ping_timeout);
        }
        if limits.disable_http2 {
            http = http.http1_only();
        }
        ConnectionServer {
            acceptor,
            handler,
            drains: Drains::new(&limits),
            backlog: Backlog::new(&limits),
            limits,
            drain,
            http,
        }
    }

    /// How long requests in flight may take to finish once the server stops.
    pub fn drain_timeout(&self) -> Duration {
        self.drain
    }

    /// Serves one accepted connection until it ends, is closed for its deadlines, is evicted
    /// to make room, or the server stops (`stop` turns true).
    pub async fn serve(
        self: Arc<Self>,
        tcp: TcpStream,
        peer: SocketAddr,
        place: Registered,
        mut stop: watch::Receiver<bool>,
    ) {
        let activity = place.activity.clone();
        let handshake = async {
            match self.limits.tls_handshake_timeout {
                t if t.is_zero() => self.acceptor.accept(tcp).await.ok(),
                t => tokio::time::timeout(t, self.acceptor.accept(tcp))
                    .await
                    .ok()
                    .and_then(Result::ok),
            }
        };
        tokio::pin!(handshake);
        let tls = tokio::select! {
            tls = &mut handshake => tls,
            _ = activity.evicted() => return,
            // Stopping: a handshake begun just before gets a moment to finish, so that its
            // first request can still be served.
            _ = stopped(&mut stop) => {
                tokio::time::timeout(FIRST_REQUEST_GRACE, &mut handshake).await.ok().flatten()
            }
        };
        let Some(tls) = tls else { return };
        activity.handshake_done();
        let tls_conn = tls.get_ref().1;
        let http2 = tls_conn.alpn_protocol() == Some(b"h2".as_slice());
        let certs = tls_conn
            .peer_certificates()
            .filter(|c| !c.is_empty())
            .map(|c| {
                PeerCertificates(Arc::new(c.iter().map(|c| c.clone().into_owned()).collect()))
            });
        let first_request = Arc::new(Notify::new());
        let backlog = http2.then(|| self.backlog.connection(&self.limits));
        let service = self.service(peer, certs, &backlog, &activity, &first_request, &stop);
        let gate = backlog.map(ReadGate::new);
        let io = TokioIo::new(BatchedWrites::new(
            TrackedIo::new(tls, activity.clone(), gate),
            http2,
        ));
        // Boxed, to be dropped when serving ends: hyper's hold on the connection is gone then.
        let mut conn = Box::pin(self.http.serve_connection_with_upgrades(io, service));

        let mut closing = false;
        let mut goaway_deadline = None;
        loop {
            let deadline = match closing {
                false => activity.deadline(&self.limits, http2),
                true if activity.in_flight() == 0 => {
                    Some(*goaway_deadline.get_or_insert_with(|| Instant::now() + GOAWAY_GRACE))
                }
                true => None,
            };
            // A response unsent past its deadline closes the connection, closing or not. A
            // response that begins later is due later than now plus the send timeout, so
            // waking by then at the latest finds every send deadline in time, without a
            // notice (or a timer) per response.
            let now = Instant::now();
            let send_timeout = self.limits.response_send_timeout;
            let deadline = match activity.send_deadline() {
                Some(send) => Some(deadline.map_or(send, |d| d.min(send))),
                None if send_timeout.is_zero() => deadline,
                None => Some(deadline.map_or(now + send_timeout, |d| d.min(now + send_timeout))),
            };
            let expired = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = conn.as_mut() => break,
                _ = stopped(&mut stop) => {
                    // A connection accepted just before the stop may not have sent its
                    // first request yet: give it a moment to, so that it is served rather
                    // than dropped.
                    tokio::select! {
                        _ = conn.as_mut() => break,
                        _ = first_request.notified() => {}
                        _ = tokio::time::sleep(FIRST_REQUEST_GRACE) => {}
                    }
                    conn.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(self.drain, conn.as_mut()).await;
                    break;
                }
                _ = activity.evicted(), if !closing => {
                    tracing::debug!(%peer, "closing an idle connection to make room for a new one");
                    // HTTP/1.1 without a request in flight is simply dropped; HTTP/2 gets a
                    // GOAWAY first, and a request that arrived meanwhile is answered.
                    if !http2 && activity.in_flight() == 0 {
                        break;
                    }
                    conn.as_mut().graceful_shutdown();
                    closing = true;
                }
                _ = expired => {
                    let now = Instant::now();
                    if activity.send_deadline().is_some_and(|d| d <= now) {
                        tracing::debug!(%peer, "closing a connection whose response stayed unsent past its deadline");
                        break;
                    }
                    if closing {
                        if goaway_deadline.is_some_and(|d| d <= now) {
                            break;
                        }
                        continue;
                    }
                    let due = activity.deadline(&self.limits, http2);
                    if due.is_some_and(|d| d <= now) {
                        tracing::debug!(%peer, "closing a connection past its header-read or idle timeout");
                        if !http2 && activity.in_flight() == 0 {
                            break;
                        }
                        conn.as_mut().graceful_shutdown();
                        closing = true;
                    }
                }
                _ = activity.idle() => {}
            }
        }
        drop(conn);
        // Answered 101: the stream now belongs to whoever took the upgrade, and the
        // connection stays open, and counted, until they drop it (see `upgraded`).
        if activity.upgrade.upgraded() {
            tokio::select! {
                _ = activity.upgrade.hold(self.limits.streaming_idle_timeout) => {}
                // Left to run until the process exits, as Go's server leaves the
                // connections it no longer serves.
                _ = stopped(&mut stop) => {}
            }
        }
        drop(place);
    }

    /// The hyper service of one connection.
    fn service(
        &self,
        peer: SocketAddr,
        certs: Option<PeerCertificates>,
        backlog: &Option<Arc<ConnectionBacklog>>,
        activity: &Arc<Activity>,
        first_request: &Arc<Notify>,
        stop: &watch::Receiver<bool>,
    ) -> impl hyper::service::Service<
        Request<Incoming>,
        Response = Response<Body>,
        Error = Infallible,
        Future = impl Future<Output = Result<Response<Body>, Infallible>> + Send + 'static,
    > + Send
    + 'static {
        let limits = self.limits;
        let http2 = backlog.is_some();
        let backlog = backlog.clone();
        let connection = Arc::new(PerConnection {
            handler: self.handler.clone(),
            limits,
            drains: self.drains.clone(),
            // HTTP/2: an answer given before the body was read is settled once known (see
            // `early_answer`).
            early: http2.then(|| EarlyAnswers::new(&limits, self.drains.connection(&limits))),
            activity: activity.clone(),
            peer,
            certs,
            // The connection's client certificate chain is verified once per trusted
            // authority.
            verified: crate::authn::VerifiedChains::default(),
            stopped: stop.clone(),
            http2,
        });
        let first_request = first_request.clone();
        let service = move |req: Request<Incoming>| {
            first_request.notify_one();
            let in_flight = connection.activity.request_started();
            let connection = connection.clone();
            let unstarted = backlog.as_ref().map(ConnectionBacklog::accepted);
            // Made, and boxed, only once the task first runs: HTTP/2 streams accepted faster
            // than they are served wait as their bare request, not as the handler chain's
            // future (a debug build's is 1.6 KB) with the request's parsed details.
            futures::FutureExt::flatten(futures::future::lazy(move |_| {
                drop(unstarted);
                connection.serve(req, in_flight)
            }))
        };
        hyper::service::service_fn(service)
    }
}

/// What every request of one connection is served with.
struct PerConnection<H> {
    handler: Arc<H>,
    limits: ConnectionLimits,
    drains: Drains,
    early: Option<EarlyAnswers>,
    activity: Arc<Activity>,
    peer: SocketAddr,
    certs: Option<PeerCertificates>,
    verified: crate::authn::VerifiedChains,
    stopped: watch::Receiver<bool>,
    http2: bool,
}

impl<H: ServeRequest> PerConnection<H> {
    /// Serves `req`, in flight as `in_flight`.
    ///
    /// Boxed: hyper keeps an HTTP/2 stream's task, sized for this future, for as long as the
    /// response body is sent (a watch's whole life); the handler chain's future is large, and
    /// a box is freed once the response has started.
    fn serve(
        self: Arc<Self>,
        req: Request<Incoming>,
        in_flight: InFlight,
    ) -> Pin<Box<impl Future<Output = Result<Response<Body>, Infallible>> + Send + 'static>> {
        let limits = self.limits;
        // HTTP/2 leaves a body let go of unread to `early` (unless the client waits for the
        // answer to send it); HTTP/1.1 reads its rest at once (see `unread_body`).
        let leftover = self
            .early
            .as_ref()
            .filter(|_| !expects_continue(req.headers()))
            .map(|_| Leftover::new());
        let rest = match (&leftover, self.http2) {
            (Some(leftover), _) => leftover.rest(),
            (None, true) => Rest::Drop,
            (None, false) => Rest::Read(
                ReadBounds {
                    max_bytes: limits.unread_body_drain_bytes,
                    timeout: limits.unread_body_drain_timeout,
                },
                self.drains.clone(),
            ),
        };
        let mut req = req.map(|incoming| Body::new(UnreadBody::new(incoming, rest)));
        req.extensions_mut().insert(PeerAddr(self.peer));
        if let Some(certs) = &self.certs {
            req.extensions_mut().insert(certs.clone());
            req.extensions_mut().insert(self.verified.clone());
        }
        // Read once here (to tell watches apart) for the whole handler chain.
        filters::request_info::read(&mut req);
        let long_running = req
            .extensions()
            .get::<ParsedRequest>()
            .is_some_and(filters::long_running::is_long_running);
        // Watches are never compressed.
        let gzip = !long_running && compression::accepts_gzip(req.headers());
        Box::pin(async move {
            let handler = self.handler.clone();
            let res = match gzip {
                true => compression::compressed(req, move |req| handler.serve(req)).await,
                false => handler.serve(req).await,
            };
            let (res, in_flight) = match (&self.early, leftover.as_ref().and_then(Leftover::take)) {
                (Some(early), Some(rest)) => {
                    early.settle(res, rest, in_flight, &self.activity).await
                }
                _ => (res, in_flight),
            };
            // HTTP/1.1 can be upgraded (HTTP/2 has no 101).
            if !self.http2 && res.status() == http::StatusCode::SWITCHING_PROTOCOLS {
                self.activity.upgrade.begin();
            }
            // Watches end cleanly when the server stops.
            let res = match long_running {
                true => res.map(|b| until_stopped::until_stopped(b, self.stopped.clone())),
                false => res,
            };
            let mut in_flight = in_flight;
            if !long_running && !limits.response_send_timeout.is_zero() {
                in_flight.send_by(Instant::now() + limits.response_send_timeout);
            }
            Ok::<_, Infallible>(res.map(|body| {
                Body::new(InFlightBody {
                    body,
                    _in_flight: in_flight,
                })
            }))
        })
    }
}

/// Whether the request asks for `100 Continue` before its body is sent.
fn expects_continue(headers: &http::HeaderMap) -> bool {
    headers
        .get(http::header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"))
}

/// Resolves once `stop` is (or already was) true, or its sender is gone.
pub async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|stopped| *stopped).await;
}

/// A response body holding its request in flight (and so its send deadline, if it has one)
/// until it is sent (or dropped).
struct InFlightBody {
    body: Body,
    _in_flight: InFlight,
}

impl http_body::Body for InFlightBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
