//! One keep-alive HTTP/1.1 connection over TLS to a server under test, and the requests the
//! scenarios send on it.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// A sender of requests on one connection.
pub type Sender = SendRequest<Full<Bytes>>;

/// What a request failed with.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// Where a server under test listens and how to reach it.
#[derive(Clone)]
pub struct Target {
    /// Its loopback address.
    pub addr: SocketAddr,
    /// TLS settings that trust its certificate.
    pub tls: Arc<ClientConfig>,
    /// The bearer token sent with every request (the baseline ignores it).
    pub token: Arc<str>,
}

impl Target {
    /// Opens a connection: TCP (no Nagle), TLS, HTTP/1.1.
    pub async fn connect(&self) -> Result<Sender, Error> {
        let tcp = TcpStream::connect(self.addr).await?;
        tcp.set_nodelay(true)?;
        let name = ServerName::IpAddress(self.addr.ip().into());
        let tls = TlsConnector::from(self.tls.clone())
            .connect(name, tcp)
            .await?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(sender)
    }

    /// A request with the headers a Kubernetes client sends: host, JSON accept and content
    /// type, the bearer token.
    pub fn request(&self, method: Method, path: &str, body: Bytes) -> Request<Full<Bytes>> {
        let mut builder = Request::builder()
            .method(method)
            .uri(path)
            .header(header::HOST, self.addr.to_string())
            .header(header::ACCEPT, "application/json")
            .header(header::USER_AGENT, "apiserver-bench")
            .header(header::AUTHORIZATION, format!("Bearer {}", self.token));
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
    let response = start(sender, request).await?;
    let status = response.status();
    let body = response.into_body().collect().await?.to_bytes();
    Ok((status, body))
}

/// Sends `request` and returns once the answer's head has arrived (a watch streams its body).
pub async fn start(
    sender: &mut Sender,
    request: Request<Full<Bytes>>,
) -> Result<http::Response<Incoming>, Error> {
    sender.ready().await?;
    Ok(sender.send_request(request).await?)
}
