//! The baseline: a bare hyper + rustls server that answers the same paths with the same bytes
//! wardle answered them with, and no framework in between. A POST answers the recorded create
//! response and sends `{"type":"ADDED","object":<the posted body>}` to every open watch, which is
//! the least any watch server must do. It speaks HTTP/1.1 and HTTP/2 (ALPN), with hyper's
//! defaults as wardle's server has them; a request accepting gzip gets the answer recorded for a
//! request accepting gzip (gzip-encoded if wardle encoded it) when there is one.

use std::collections::HashMap;
use std::convert::Infallible;
use std::path::Path;
use std::sync::Arc;

use apiserver_framework::server::connections::batched_writes::BatchedWrites;
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde::{Deserialize, Serialize};
use tokio::net::TcpListener;
use tokio::sync::broadcast;
use tokio_rustls::TlsAcceptor;

/// One recorded answer.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Recorded {
    /// Its status code.
    pub status: u16,
    /// Its `Content-Type`.
    pub content_type: String,
    /// Its `Content-Encoding`, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_encoding: Option<String>,
    /// Its body (base64 in the file: an encoded body is binary).
    #[serde(with = "base64_bytes")]
    pub body: Vec<u8>,
}

/// Recorded answers by `"<METHOD> <path and query>"` (`"POST <path>"` for creates), with
/// `" +gzip"` for the answer to a request that accepted gzip.
pub type Recordings = HashMap<String, Recorded>;

/// The key of a request in [`Recordings`].
pub fn key(method: &Method, path_and_query: &str) -> String {
    format!("{method} {path_and_query}")
}

/// The key of a request that accepts gzip.
pub fn gzip_key(method: &Method, path_and_query: &str) -> String {
    format!("{} +gzip", key(method, path_and_query))
}

mod base64_bytes {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        STANDARD.decode(text).map_err(serde::de::Error::custom)
    }
}

struct Answer {
    status: StatusCode,
    content_type: header::HeaderValue,
    content_encoding: Option<header::HeaderValue>,
    body: Bytes,
}

struct State {
    answers: HashMap<String, Answer>,
    events: broadcast::Sender<Bytes>,
}

type Body = BoxBody<Bytes, Infallible>;

/// Runs the baseline: `<port> <cert file> <key file> <recordings file>`.
pub fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [port, cert, key, recordings] = args.as_slice() else {
        eprintln!("baseline: expected <port> <cert file> <key file> <recordings file>");
        return std::process::ExitCode::FAILURE;
    };
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    match runtime.block_on(serve(
        port,
        Path::new(cert),
        Path::new(key),
        Path::new(recordings),
    )) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("baseline: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn serve(
    port: &str,
    cert: &Path,
    key: &Path,
    recordings: &Path,
) -> Result<(), Box<dyn std::error::Error>> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let _ = rustls::crypto::ring::default_provider().install_default();
    let certs = CertificateDer::pem_file_iter(cert)?.collect::<Result<Vec<_>, _>>()?;
    let key = PrivateKeyDer::from_pem_file(key)?;
    let mut tls = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = TlsAcceptor::from(Arc::new(tls));

    let recorded: Recordings = serde_json::from_slice(&std::fs::read(recordings)?)?;
    let answers = recorded
        .into_iter()
        .map(|(k, r)| {
            let answer = Answer {
                status: StatusCode::from_u16(r.status)?,
                content_type: header::HeaderValue::from_str(&r.content_type)?,
                content_encoding: r
                    .content_encoding
                    .as_deref()
                    .map(header::HeaderValue::from_str)
                    .transpose()?,
                body: Bytes::from(r.body),
            };
            Ok((k, answer))
        })
        .collect::<Result<_, Box<dyn std::error::Error>>>()?;
    let state = Arc::new(State {
        answers,
        events: broadcast::channel(16_384).0,
    });

    let batched = crate::process::baseline_batched();
    let listener = TcpListener::bind(("127.0.0.1", port.parse::<u16>()?)).await?;
    loop {
        let (tcp, _) = listener.accept().await?;
        let _ = tcp.set_nodelay(true);
        let (acceptor, state) = (acceptor.clone(), state.clone());
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(tcp).await else {
                return;
            };
            let service = service_fn(move |request| handle(state.clone(), request));
            let http2 = tls.get_ref().1.alpn_protocol() == Some(b"h2".as_slice());
            let io = BatchedWrites::new(tls, http2 && batched);
            // The same connection builder as wardle's server: HTTP/1.1 or HTTP/2 by ALPN.
            let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(io), service)
                .await;
        });
    }
}

async fn handle(
    state: Arc<State>,
    request: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let (parts, body) = request.into_parts();
    let posted = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let path_and_query = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    if parts.uri.path() == "/readyz" {
        return Ok(plain(StatusCode::OK, "ok"));
    }
    if parts.method == Method::GET && parts.uri.query().is_some_and(|q| q.contains("watch=true")) {
        return Ok(watch(&state));
    }
    let recorded_path = if parts.method == Method::POST {
        parts.uri.path()
    } else {
        path_and_query
    };
    let accepts_gzip = parts
        .headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .any(|v| v.to_str().is_ok_and(|v| v.contains("gzip")));
    let gzip = accepts_gzip
        .then(|| state.answers.get(&gzip_key(&parts.method, recorded_path)))
        .flatten();
    let Some(answer) = gzip.or_else(|| state.answers.get(&key(&parts.method, recorded_path)))
    else {
        return Ok(plain(StatusCode::NOT_FOUND, "not recorded"));
    };
    if parts.method == Method::POST {
        let mut event = Vec::with_capacity(posted.len() + 32);
        event.extend_from_slice(br#"{"type":"ADDED","object":"#);
        event.extend_from_slice(&posted);
        event.extend_from_slice(b"}\n");
        let _ = state.events.send(Bytes::from(event));
    }
    let mut response = Response::new(Full::new(answer.body.clone()).boxed());
    *response.status_mut() = answer.status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, answer.content_type.clone());
    if let Some(encoding) = &answer.content_encoding {
        headers.insert(header::CONTENT_ENCODING, encoding.clone());
    }
    Ok(response)
}

fn watch(state: &State) -> Response<Body> {
    let receiver = state.events.subscribe();
    let stream = futures::stream::unfold(receiver, |mut receiver| async move {
        loop {
            match receiver.recv().await {
                Ok(event) => return Some((Ok(Frame::data(event)), receiver)),
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    });
    let mut response = Response::new(BodyExt::boxed(StreamBody::new(stream)));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response
}
