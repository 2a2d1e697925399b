//! Keep-alive connections over TLS to a server under test, HTTP/1.1 or HTTP/2 (chosen by ALPN),
//! and the requests the scenarios send on them.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderValue, Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// What a request failed with.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// The HTTP version a target is spoken to in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP/1.1 (ALPN `http/1.1`): one request at a time on a connection.
    Http1,
    /// HTTP/2 (ALPN `h2`): streams multiplexed on a connection.
    Http2,
}

impl Protocol {
    /// The ALPN identifier.
    fn alpn(self) -> &'static [u8] {
        match self {
            Protocol::Http1 => b"http/1.1",
            Protocol::Http2 => b"h2",
        }
    }
}

/// TLS client settings trusting one CA, one per protocol (each offers only its own ALPN
/// identifier, so the server cannot pick the other).
#[derive(Clone)]
pub struct Trust {
    http1: Arc<ClientConfig>,
    http2: Arc<ClientConfig>,
}

impl Trust {
    /// Settings that trust only `roots`.
    pub fn new(roots: rustls::RootCertStore) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let config = |protocol: Protocol| {
            let mut config = ClientConfig::builder()
                .with_root_certificates(roots.clone())
                .with_no_client_auth();
            config.alpn_protocols = vec![protocol.alpn().to_vec()];
            Arc::new(config)
        };
        Trust {
            http1: config(Protocol::Http1),
            http2: config(Protocol::Http2),
        }
    }

    /// Settings that trust only the CA certificate(s) in `pem`.
    pub fn from_pem(pem: &[u8]) -> Result<Self, Error> {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject;
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(pem) {
            roots.add(cert?)?;
        }
        Ok(Trust::new(roots))
    }

    fn config(&self, protocol: Protocol) -> Arc<ClientConfig> {
        match protocol {
            Protocol::Http1 => self.http1.clone(),
            Protocol::Http2 => self.http2.clone(),
        }
    }
}

/// A sender of requests on one connection. An HTTP/2 sender can be shared by several clients
/// (each request is a stream of the same connection).
pub enum Sender {
    /// HTTP/1.1.
    Http1(http1::SendRequest<Full<Bytes>>),
    /// HTTP/2.
    Http2(http2::SendRequest<Full<Bytes>>),
}

impl Sender {
    /// Another sender on the same connection, where the protocol multiplexes (HTTP/2).
    pub fn share(&self) -> Option<Sender> {
        match self {
            Sender::Http1(_) => None,
            Sender::Http2(s) => Some(Sender::Http2(s.clone())),
        }
    }
}

/// Where a server under test listens and how to reach it.
#[derive(Clone)]
pub struct Target {
    /// Its loopback address.
    pub addr: SocketAddr,
    /// TLS settings that trust its certificate.
    pub trust: Trust,
    /// The bearer token sent with every request (the baseline ignores it).
    pub token: Arc<str>,
    /// The HTTP version spoken.
    pub protocol: Protocol,
    /// Clients per connection: over HTTP/2, this many closed-loop clients (or watchers) share
    /// one connection, as Kubernetes clients share one per server; always 1 over HTTP/1.1.
    pub streams: usize,
    /// Extra headers of every request (e.g. `Accept-Encoding`).
    pub headers: Vec<(header::HeaderName, HeaderValue)>,
}

impl Target {
    /// A target at `addr`, over HTTP/1.1.
    pub fn new(addr: SocketAddr, trust: Trust, token: &str) -> Self {
        Target {
            addr,
            trust,
            token: token.into(),
            protocol: Protocol::Http1,
            streams: 1,
            headers: Vec::new(),
        }
    }

    /// The same server over HTTP/2, `streams` clients to a connection.
    pub fn http2(&self, streams: usize) -> Self {
        Target {
            protocol: Protocol::Http2,
            streams: streams.max(1),
            ..self.clone()
        }
    }

    /// The same server with a header added to every request.
    pub fn with_header(&self, name: header::HeaderName, value: &'static str) -> Self {
        let mut target = self.clone();
        target.headers.push((name, HeaderValue::from_static(value)));
        target
    }

    /// Opens a connection: TCP (no Nagle), TLS with the protocol's ALPN, then HTTP/1.1 or
    /// HTTP/2 (refused if the server did not agree to it).
    pub async fn connect(&self) -> Result<Sender, Error> {
        let tcp = TcpStream::connect(self.addr).await?;
        tcp.set_nodelay(true)?;
        let name = ServerName::IpAddress(self.addr.ip().into());
        let tls = TlsConnector::from(self.trust.config(self.protocol))
            .connect(name, tcp)
            .await?;
        let negotiated = tls.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
        match self.protocol {
            Protocol::Http1 => {
                let (sender, connection) = http1::handshake(TokioIo::new(tls)).await?;
                tokio::spawn(async move {
                    let _ = connection.await;
                });
                Ok(Sender::Http1(sender))
            }
            Protocol::Http2 => {
                if negotiated.as_deref() != Some(b"h2".as_slice()) {
                    return Err(format!("{} did not negotiate h2 (ALPN)", self.addr).into());
                }
                let (sender, connection) =
                    http2::handshake(TokioExecutor::new(), TokioIo::new(tls)).await?;
                tokio::spawn(async move {
                    let _ = connection.await;
                });
                Ok(Sender::Http2(sender))
            }
        }
    }

    /// A request with the headers a Kubernetes client sends: JSON accept and content type,
    /// the bearer token, the authority (`Host` over HTTP/1.1, `:authority` over HTTP/2).
    pub fn request(&self, method: Method, path: &str, body: Bytes) -> Request<Full<Bytes>> {
        let mut builder = Request::builder().method(method);
        builder = match self.protocol {
            Protocol::Http1 => builder
                .uri(path)
                .header(header::HOST, self.addr.to_string()),
            Protocol::Http2 => builder.uri(format!("https://{}{path}", self.addr)),
        };
        builder = builder
            .header(header::ACCEPT, "application/json")
            .header(header::USER_AGENT, "apiserver-bench")
            .header(header::AUTHORIZATION, format!("Bearer {}", self.token));
        for (name, value) in &self.headers {
            builder = builder.header(name, value);
        }
        if !body.is_empty() {
            builder = builder.header(header::CONTENT_TYPE, "application/json");
        }
        builder.body(Full::new(body)).expect("a valid request")
    }
}

/// Sends `request` and reads the whole answer.
pub async fn send(
    sender: &mut Sender,
    request: Request<Full<Bytes>>,
) -> Result<(StatusCode, Bytes), Error> {
    let (status, _, body) = send_full(sender, request).await?;
    Ok((status, body))
}

/// Sends `request` and reads the whole answer, with its headers.
pub async fn send_full(
    sender: &mut Sender,
    request: Request<Full<Bytes>>,
) -> Result<(StatusCode, http::HeaderMap, Bytes), Error> {
    let response = start(sender, request).await?;
    let (parts, body) = response.into_parts();
    let body = body.collect().await?.to_bytes();
    Ok((parts.status, parts.headers, body))
}

/// Sends `request` and returns once the answer's head has arrived (a watch streams its body).
pub async fn start(
    sender: &mut Sender,
    request: Request<Full<Bytes>>,
) -> Result<http::Response<Incoming>, Error> {
    match sender {
        Sender::Http1(s) => {
            s.ready().await?;
            Ok(s.send_request(request).await?)
        }
        Sender::Http2(s) => {
            s.ready().await?;
            Ok(s.send_request(request).await?)
        }
    }
}
