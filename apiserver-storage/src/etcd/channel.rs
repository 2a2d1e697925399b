//! The HTTP/2 connections to etcd's members and the channel the gRPC client sends its calls
//! on.
//!
//! [`EtcdChannel`] holds one HTTP/2 connection (`h2`) per server URL, over TCP or, for
//! `https://` URLs, TLS (`tokio-rustls`), with keep-alive pings. A member's connection is
//! made by the first call that needs it and made again, by the next call, once it has broken
//! (a member that went away and came back). A connection's own task reads and writes its
//! socket; each call is opened on it straight from the task that makes the call, which also
//! writes the request's message and is woken with the response: no task sits between the
//! caller and the connection, and a call costs the connection one wake-up each way. Calls go
//! to the members in turn (round-robin).
//!
//! A call that never left the client (its member's connection could not be made: the member
//! refused it or did not answer in time; or the connection was gone before the call was
//! opened on it) fails with a [`Status`] whose source is [`Unreached`], so that the backend
//! sends it again; a member whose connection could not be made is left out of the rotation
//! for [`SKIP_UNREACHED`], so that the next calls go to the others.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::FutureExt as _;
use h2::client::SendRequest;
use h2::{RecvStream, SendStream};
use http::Uri;
use http::uri::{Authority, Scheme};
use http_body::Frame;
use http_body_util::BodyExt as _;
use parking_lot::Mutex;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tonic::Status;
use tonic::body::Body;

use super::client::ConnectError;
use super::options::EtcdOptions;

/// How long a member whose connection could not be made is left out of the rotation; the
/// first call after it tries the member again.
pub(super) const SKIP_UNREACHED: Duration = Duration::from_secs(1);

/// The HTTP/2 settings of a connection: hyper's client defaults (large windows, so that a
/// big list streams at full speed).
const STREAM_WINDOW: u32 = 2 * 1024 * 1024;
const CONNECTION_WINDOW: u32 = 5 * 1024 * 1024;
const MAX_FRAME: u32 = 16 * 1024;
const MAX_HEADER_LIST: u32 = 16 * 1024;
const MAX_SEND_BUFFER: usize = 1024 * 1024;

/// The channel to every member of `opts.servers`, made without connecting; fails for no
/// server, a URL that does not parse or whose scheme does not match the TLS settings, and
/// unreadable or invalid TLS files.
pub(super) fn balanced(opts: &EtcdOptions) -> Result<EtcdChannel, ConnectError> {
    if opts.servers.is_empty() {
        return Err(ConnectError::NoServers);
    }
    let tls = tls_config(opts)?.map(|config| tokio_rustls::TlsConnector::from(Arc::new(config)));
    let list = opts
        .servers
        .iter()
        .map(|url| Member::new(url, tls.as_ref(), opts))
        .collect::<Result<Box<[_]>, _>>()?;
    Ok(EtcdChannel {
        members: Arc::new(Members {
            list,
            next: AtomicUsize::new(0),
            epoch: Instant::now(),
            dial_timeout: opts.dial_timeout,
            keep_alive_interval: opts.keep_alive_interval,
            keep_alive_timeout: opts.keep_alive_timeout,
        }),
    })
}

/// Calls to etcd's members, each opened on the HTTP/2 connection of the member whose turn it
/// is. Cheap to clone; clones share the connections.
#[derive(Clone)]
pub(super) struct EtcdChannel {
    members: Arc<Members>,
}

struct Members {
    list: Box<[Member]>,
    /// The turn: the member of the next call is `next % list.len()`.
    next: AtomicUsize,
    /// The instant `Member::skip_until` counts from.
    epoch: Instant,
    dial_timeout: Duration,
    keep_alive_interval: Duration,
    keep_alive_timeout: Duration,
}

/// One member: where it is and its connection.
struct Member {
    scheme: Scheme,
    authority: Authority,
    /// The TLS connector and the name the member's certificate must have; `None` for TCP.
    tls: Option<(tokio_rustls::TlsConnector, ServerName<'static>)>,
    /// The connection, once made (and until a call finds it closed).
    connection: Mutex<Option<Connection>>,
    /// Held while a connection is made, so that concurrent calls make one.
    connecting: tokio::sync::Mutex<()>,
    /// Milliseconds after `Members::epoch` until which the member is left out of the
    /// rotation (its connection could not be made); 0 when it is in.
    skip_until: AtomicU64,
}

/// An HTTP/2 connection to a member.
#[derive(Clone)]
struct Connection {
    send: SendRequest<Bytes>,
    /// Set by the connection's task when it ends.
    closed: Arc<AtomicBool>,
}

impl Members {
    /// The index of the member that takes the next call: the next in turn that is not left
    /// out, or the next in turn when all are.
    fn pick(&self) -> usize {
        let n = self.list.len();
        if n == 1 {
            return 0;
        }
        let first = self.next.fetch_add(1, Ordering::Relaxed) % n;
        let mut now = None;
        for k in 0..n {
            let i = (first + k) % n;
            let skip = &self.list[i].skip_until;
            let until = skip.load(Ordering::Relaxed);
            if until == 0 {
                return i;
            }
            let now = *now.get_or_insert_with(|| self.millis());
            if now >= until {
                // Its time out is over: back in the rotation, tried again by this call.
                let _ = skip.compare_exchange(until, 0, Ordering::Relaxed, Ordering::Relaxed);
                return i;
            }
        }
        first
    }

    /// Leaves member `i` out of the rotation for [`SKIP_UNREACHED`].
    fn skip(&self, i: usize) {
        let until = self.millis() + SKIP_UNREACHED.as_millis() as u64;
        self.list[i]
            .skip_until
            .store(until.max(1), Ordering::Relaxed);
    }

    /// Milliseconds since `epoch`.
    fn millis(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Member `i`'s connection, made first if there is none or it has closed.
    async fn connection(&self, i: usize) -> Result<Connection, Status> {
        let member = &self.list[i];
        if let Some(connection) = member.open() {
            return Ok(connection);
        }
        let _connecting = member.connecting.lock().await;
        // Another call may have made it meanwhile.
        if let Some(connection) = member.open() {
            return Ok(connection);
        }
        match member.connect(self).await {
            Ok(connection) => {
                *member.connection.lock() = Some(connection.clone());
                Ok(connection)
            }
            Err(failure) => {
                if failure.unreached {
                    self.skip(i);
                }
                Err(member.status(failure.unreached, failure.text))
            }
        }
    }

    /// Sends `request` to member `i`.
    async fn call(
        self: Arc<Self>,
        i: usize,
        request: http::Request<Body>,
    ) -> Result<http::Response<ResponseBody>, Status> {
        let member = &self.list[i];
        let Connection { send, closed } = self.connection(i).await?;
        let (head, body) = request.into_parts();
        let mut head = http::Request::from_parts(head, ());
        // tonic gives the path; the member gives the scheme and authority.
        let mut uri = std::mem::take(head.uri_mut()).into_parts();
        uri.scheme = Some(member.scheme.clone());
        uri.authority = Some(member.authority.clone());
        *head.uri_mut() =
            Uri::from_parts(uri).map_err(|e| Status::internal(format!("etcd request URI: {e}")))?;
        // A connection that has gone away since (etcd restarted, or sent GOAWAY) has taken
        // no part of the call: it can be sent again, on a new connection.
        let gone = |e: h2::Error| {
            let lost = e.is_io() || e.is_go_away() || e.reason().is_some();
            if lost {
                member.forget(&closed);
            }
            member.status(lost, format!("opening the call: {}", error_chain(&e)))
        };
        let mut send = send.ready().await.map_err(gone)?;
        let (response, stream) = send.send_request(head, false).map_err(gone)?;
        send_body(body, stream)?;
        let response = response
            .await
            .map_err(|e| member.status(false, error_chain(&e)))?;
        Ok(response.map(ResponseBody::new))
    }
}

impl Member {
    /// The member at `url`, not connected. A URL without a scheme is `https://` when TLS
    /// files are given, `http://` otherwise.
    fn new(
        url: &str,
        tls: Option<&tokio_rustls::TlsConnector>,
        opts: &EtcdOptions,
    ) -> Result<Self, ConnectError> {
        let bad = |reason: &str| ConnectError::BadServer {
            url: url.to_string(),
            reason: reason.to_string(),
        };
        let full = match url.split_once("://") {
            Some(("http", _)) if tls.is_some() => {
                return Err(bad("TLS files are given, so the URL must be https://"));
            }
            Some(("https", _)) if opts.ca_file.is_none() => {
                return Err(bad("an https:// server needs a CA file (--etcd-cafile)"));
            }
            Some(("http" | "https", _)) => url.to_string(),
            Some(_) => return Err(bad("the scheme must be http:// or https://")),
            None if tls.is_some() => format!("https://{url}"),
            None => format!("http://{url}"),
        };
        let uri: Uri = full
            .parse()
            .map_err(|e: http::uri::InvalidUri| bad(&e.to_string()))?;
        let parts = uri.into_parts();
        let (Some(scheme), Some(authority)) = (parts.scheme, parts.authority) else {
            return Err(bad("the URL has no host"));
        };
        let tls = match tls {
            Some(connector) => {
                let host = authority
                    .host()
                    .trim_start_matches('[')
                    .trim_end_matches(']');
                let name = ServerName::try_from(host.to_string())
                    .map_err(|e| bad(&format!("not a TLS server name: {e}")))?;
                Some((connector.clone(), name))
            }
            None => None,
        };
        Ok(Member {
            scheme,
            authority,
            tls,
            connection: Mutex::new(None),
            connecting: tokio::sync::Mutex::new(()),
            skip_until: AtomicU64::new(0),
        })
    }

    /// The connection, if it is open.
    fn open(&self) -> Option<Connection> {
        let connection = self.connection.lock();
        match &*connection {
            Some(c) if !c.closed.load(Ordering::Acquire) => Some(c.clone()),
            _ => None,
        }
    }

    /// Drops the connection whose `closed` flag this is, if it is still the member's: the
    /// next call makes a new one.
    fn forget(&self, closed: &Arc<AtomicBool>) {
        let mut connection = self.connection.lock();
        if connection
            .as_ref()
            .is_some_and(|c| Arc::ptr_eq(&c.closed, closed))
        {
            *connection = None;
        }
    }

    /// A new connection to the member: TCP (and TLS) within the dial timeout, then the HTTP/2
    /// handshake; its task runs on the runtime until it breaks.
    async fn connect(&self, members: &Members) -> Result<Connection, ConnectFailure> {
        let tcp = tokio::time::timeout(members.dial_timeout, self.dial())
            .await
            .unwrap_or_else(|_| {
                Err(ConnectFailure::io(
                    "connect",
                    io::Error::new(io::ErrorKind::TimedOut, "timed out"),
                ))
            })?;
        match &self.tls {
            None => handshake(tcp, members).await,
            Some((connector, name)) => {
                let tls = tokio::time::timeout(
                    members.dial_timeout,
                    connector.connect(name.clone(), tcp),
                )
                .await
                .unwrap_or_else(|_| Err(io::Error::new(io::ErrorKind::TimedOut, "timed out")))
                .map_err(|e| ConnectFailure::io("TLS handshake", e))?;
                handshake(tls, members).await
            }
        }
    }

    /// A TCP connection to the first of the member's addresses that takes one.
    async fn dial(&self) -> Result<TcpStream, ConnectFailure> {
        let port = self.authority.port_u16().unwrap_or(match self.tls {
            Some(_) => 443,
            None => 80,
        });
        let host = self.authority.host();
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
            .await
            .map_err(|e| ConnectFailure {
                unreached: false,
                text: format!("resolving {host}: {e}"),
            })?
            .collect();
        let mut last = io::Error::new(io::ErrorKind::NotConnected, "no address");
        for addr in addrs {
            match TcpStream::connect(addr).await {
                Ok(tcp) => {
                    tcp.set_nodelay(true)
                        .map_err(|e| ConnectFailure::io("connect", e))?;
                    return Ok(tcp);
                }
                Err(e) => last = e,
            }
        }
        Err(ConnectFailure::io("connect", last))
    }

    /// The status of a call to this member that failed: `Unavailable`, with [`Unreached`] as
    /// its source when the call never left the client.
    fn status(&self, unreached: bool, text: String) -> Status {
        let text = format!("etcd member {}: {text}", self.authority);
        let mut status = Status::unavailable(text.clone());
        if unreached {
            status.set_source(Arc::new(Unreached(text)));
        }
        status
    }
}

/// Why a connection could not be made.
struct ConnectFailure {
    /// Whether the member could not be reached at all (rather than a TLS or HTTP/2 handshake
    /// that failed, or a host name that does not resolve: these fail the same way again).
    unreached: bool,
    text: String,
}

impl ConnectFailure {
    /// A failure of `step` with `e`; unreached for the errors of a member that is down or
    /// cut off.
    fn io(step: &str, e: io::Error) -> Self {
        use io::ErrorKind::*;
        let unreached = matches!(
            e.kind(),
            ConnectionRefused
                | ConnectionReset
                | ConnectionAborted
                | NotConnected
                | TimedOut
                | HostUnreachable
                | NetworkUnreachable
                | AddrNotAvailable
        );
        ConnectFailure {
            unreached,
            text: format!("{step}: {}", error_chain(&e)),
        }
    }
}

/// The HTTP/2 handshake on `io`, and the connection's task: it runs the connection, pings the
/// member every keep-alive interval (busy or idle), and ends the connection (failing its
/// calls) when a ping goes unanswered for the keep-alive timeout.
async fn handshake<T>(io: T, members: &Members) -> Result<Connection, ConnectFailure>
where
    T: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let (send, mut connection) = h2::client::Builder::new()
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .max_frame_size(MAX_FRAME)
        .max_header_list_size(MAX_HEADER_LIST)
        .max_send_buffer_size(MAX_SEND_BUFFER)
        .enable_push(false)
        .handshake::<_, Bytes>(io)
        .await
        .map_err(|e| ConnectFailure {
            unreached: false,
            text: format!("HTTP/2 handshake: {}", error_chain(&e)),
        })?;
    let closed = Arc::new(AtomicBool::new(false));
    let pings = connection.ping_pong();
    let (interval, timeout) = (members.keep_alive_interval, members.keep_alive_timeout);
    let ended = closed.clone();
    tokio::spawn(async move {
        let keep_alive = async move {
            // A zero interval or timeout turns the pings off (rather than pinging without pause).
            let Some(mut pings) = pings.filter(|_| !interval.is_zero() && !timeout.is_zero())
            else {
                return std::future::pending().await;
            };
            loop {
                tokio::time::sleep(interval).await;
                match tokio::time::timeout(timeout, pings.ping(h2::Ping::opaque())).await {
                    Ok(Ok(_)) => {}
                    // No answer in time, or the connection is gone.
                    _ => return,
                }
            }
        };
        tokio::select! {
            _ = &mut connection => {}
            () = keep_alive => {}
        }
        ended.store(true, Ordering::Release);
    });
    Ok(Connection { send, closed })
}

/// Writes the request's message on `stream`: at once what the body has ready (all of a unary
/// call's, its last data frame ending the stream), the rest (a watch's later requests) from a
/// task of its own. Fails only for a body that fails; a stream that takes no more data has
/// been answered or reset, which the response tells.
fn send_body(mut body: Body, mut stream: SendStream<Bytes>) -> Result<(), Status> {
    // The last data frame, held back until it is known whether the body ends after it.
    let mut held: Option<Bytes> = None;
    loop {
        let Some(frame) = body.frame().now_or_never() else {
            if let Some(data) = held.take()
                && stream.send_data(data, false).is_err()
            {
                return Ok(());
            }
            tokio::spawn(send_rest(body, stream));
            return Ok(());
        };
        let data = match frame {
            None => {
                let _ = stream.send_data(held.take().unwrap_or_default(), true);
                return Ok(());
            }
            Some(Err(status)) => {
                stream.send_reset(h2::Reason::CANCEL);
                return Err(status);
            }
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => data,
                Err(frame) => {
                    if let Ok(trailers) = frame.into_trailers() {
                        let sent = match held.take() {
                            Some(data) => stream.send_data(data, false),
                            None => Ok(()),
                        };
                        if sent.is_ok() {
                            let _ = stream.send_trailers(trailers);
                        }
                        return Ok(());
                    }
                    continue;
                }
            },
        };
        if let Some(data) = held.replace(data)
            && stream.send_data(data, false).is_err()
        {
            return Ok(());
        }
    }
}

/// Writes the rest of a request's body as it comes, until it ends or the stream takes no
/// more (reset, or the connection gone).
async fn send_rest(mut body: Body, mut stream: SendStream<Bytes>) {
    loop {
        let reset = std::future::poll_fn(|cx| stream.poll_reset(cx));
        let frame = tokio::select! {
            frame = body.frame() => frame,
            _ = reset => return,
        };
        let more = match frame {
            None => {
                let _ = stream.send_data(Bytes::new(), true);
                false
            }
            Some(Err(_)) => {
                stream.send_reset(h2::Reason::CANCEL);
                false
            }
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => stream.send_data(data, false).is_ok(),
                Err(frame) => match frame.into_trailers() {
                    Ok(trailers) => {
                        let _ = stream.send_trailers(trailers);
                        false
                    }
                    Err(_) => true,
                },
            },
        };
        if !more {
            return;
        }
    }
}

/// The body of a response: its data, then its trailers (where gRPC puts the call's status).
/// Received data is given back to the connection's flow control as it is read.
pub(super) struct ResponseBody {
    recv: RecvStream,
    state: BodyState,
}

#[derive(PartialEq)]
enum BodyState {
    Data,
    Trailers,
    Done,
}

impl ResponseBody {
    fn new(recv: RecvStream) -> Self {
        ResponseBody {
            recv,
            state: BodyState::Data,
        }
    }
}

impl http_body::Body for ResponseBody {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let this = &mut *self;
        let broken =
            |e: h2::Error| Status::unavailable(format!("etcd response: {}", error_chain(&e)));
        if this.state == BodyState::Data {
            match ready!(this.recv.poll_data(cx)) {
                Some(Ok(data)) => {
                    let _ = this.recv.flow_control().release_capacity(data.len());
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Some(Err(e)) => {
                    this.state = BodyState::Done;
                    return Poll::Ready(Some(Err(broken(e))));
                }
                None => this.state = BodyState::Trailers,
            }
        }
        if this.state == BodyState::Trailers {
            let trailers = ready!(this.recv.poll_trailers(cx));
            this.state = BodyState::Done;
            return Poll::Ready(match trailers {
                Ok(Some(trailers)) => Some(Ok(Frame::trailers(trailers))),
                Ok(None) => None,
                Err(e) => Some(Err(broken(e))),
            });
        }
        Poll::Ready(None)
    }

    fn is_end_stream(&self) -> bool {
        self.state == BodyState::Done
    }
}

impl tower::Service<http::Request<Body>> for EtcdChannel {
    type Response = http::Response<ResponseBody>;
    type Error = Status;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Status>> + Send>>;

    /// Always ready: each call finds (or makes) its member's connection itself.
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Status>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let i = self.members.pick();
        Box::pin(self.members.clone().call(i, request))
    }
}

/// The source of the [`Status`] of a call that never left the client: its member could not
/// be reached. Such a call is safe to send again, even a transaction.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(super) struct Unreached(String);

/// The TLS settings from the CA, certificate and key files; `None` when none is given.
fn tls_config(opts: &EtcdOptions) -> Result<Option<rustls::ClientConfig>, ConnectError> {
    let mut roots = rustls::RootCertStore::empty();
    let mut any = false;
    if let Some(ca) = &opts.ca_file {
        let certs = parse_certs(&read(ca, "CA")?, "CA")?;
        roots.add_parsable_certificates(certs);
        any = true;
    }
    let identity = match (&opts.cert_file, &opts.key_file) {
        (Some(cert), Some(key)) => {
            let chain = parse_certs(&read(cert, "certificate")?, "certificate")?;
            let key = PrivateKeyDer::from_pem_slice(&read(key, "key")?)
                .map_err(|e| ConnectError::Tls(format!("key file: {e}")))?;
            any = true;
            Some((chain, key))
        }
        (None, None) => None,
        _ => return Err(ConnectError::HalfIdentity),
    };
    if !any {
        return Ok(None);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ConnectError::Tls(error_chain(&e)))?
        .with_root_certificates(roots);
    let mut config = match identity {
        Some((chain, key)) => builder
            .with_client_auth_cert(chain, key)
            .map_err(|e| ConnectError::Tls(error_chain(&e)))?,
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Some(config))
}

/// The certificates of a PEM file (the reading of PEM bundles the framework shares: an error when
/// there is none).
fn parse_certs(pem: &[u8], what: &str) -> Result<Vec<CertificateDer<'static>>, ConnectError> {
    apiserver_files::pem::parse_certs(&String::from_utf8_lossy(pem))
        .map_err(|e| ConnectError::Tls(format!("{what} file: {e}")))
}

fn read(path: &Path, what: &'static str) -> Result<Vec<u8>, ConnectError> {
    std::fs::read(path).map_err(|source| ConnectError::Read {
        what,
        path: path.to_path_buf(),
        source,
    })
}

/// An error with its sources, `a: b: c`.
pub(super) fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(e) = source {
        let next = e.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = e.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use bytes::{BufMut as _, Bytes, BytesMut};
    use prost::Message as _;

    use crate::etcd::proto::StatusResponse;
    use crate::etcd::{EtcdClient, EtcdOptions};

    /// An HTTP/2 server standing in for an etcd member: it answers every call with the
    /// status `version`, and reports for each request whether its stream ended with its one
    /// data frame.
    async fn member(version: &'static str) -> (SocketAddr, tokio::sync::mpsc::Receiver<bool>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (ended, requests) = tokio::sync::mpsc::channel(16);
        tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            let mut connection = h2::server::handshake(tcp).await.unwrap();
            while let Some(call) = connection.accept().await {
                let (request, mut respond) = call.unwrap();
                let ended = ended.clone();
                tokio::spawn(async move {
                    let mut body = request.into_body();
                    let _message = body.data().await.unwrap().unwrap();
                    ended.send(body.is_end_stream()).await.unwrap();
                    let answer = StatusResponse {
                        version: version.into(),
                        ..Default::default()
                    }
                    .encode_to_vec();
                    let mut frame = BytesMut::new();
                    frame.put_u8(0);
                    frame.put_u32(answer.len() as u32);
                    frame.put_slice(&answer);
                    let head = http::Response::builder()
                        .header("content-type", "application/grpc")
                        .body(())
                        .unwrap();
                    let mut send = respond.send_response(head, false).unwrap();
                    send.send_data(Bytes::from(frame), false).unwrap();
                    let mut trailers = http::HeaderMap::new();
                    trailers.insert("grpc-status", "0".parse().unwrap());
                    send.send_trailers(trailers).unwrap();
                });
            }
        });
        (addr, requests)
    }

    /// A unary call's message ends its stream: a member that answers as soon as it has the
    /// message (and resets the stream, as etcd's gRPC server does) finds nothing more to come.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_unary_call_ends_its_stream_with_its_message() {
        let (addr, mut ended) = member("3.6.0-test").await;
        let opts = EtcdOptions {
            servers: vec![format!("http://{addr}")],
            ..Default::default()
        };
        let client = EtcdClient::connect(&opts).await.unwrap();
        for _ in 0..20 {
            let status = client.status().await.unwrap();
            assert_eq!(status.version, "3.6.0-test");
            assert!(
                ended.recv().await.unwrap(),
                "the message did not end the stream"
            );
        }
    }
}
