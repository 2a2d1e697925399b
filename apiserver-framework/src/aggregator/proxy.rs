//! Forwarding requests to backend API servers over TLS, as the front proxy.
//!
//! The aggregator authenticates to a backend with its front-proxy client certificate and
//! tells it who the caller is in `X-Remote-*` headers; bodies stream both ways.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Body;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::uri::{PathAndQuery, Scheme};
use http::{Request, Response, StatusCode, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use parking_lot::Mutex;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use tracing::Instrument;

use super::apiservice::APIService;
use crate::host_cluster::resolver::Endpoint;
use crate::storage::traced::TRACE_TARGET;
use crate::tls::parse_certs;
use crate::trace_context as propagation;
use crate::user::UserInfo;

/// The header naming the user a backend should act for.
pub(crate) const REMOTE_USER: &str = "x-remote-user";
/// The header carrying the user's uid.
pub(crate) const REMOTE_UID: &str = "x-remote-uid";
/// The header carrying one group of the user.
pub(crate) const REMOTE_GROUP: &str = "x-remote-group";
/// The prefix of the headers carrying the user's extra attributes.
pub(crate) const REMOTE_EXTRA_PREFIX: &str = "x-remote-extra-";

// The same names as header names made at compile time: a name given as a string is parsed and
// copied into an allocation of its own at every insert, three or more times a proxied request.
const REMOTE_USER_NAME: HeaderName = HeaderName::from_static(REMOTE_USER);
const REMOTE_UID_NAME: HeaderName = HeaderName::from_static(REMOTE_UID);
const REMOTE_GROUP_NAME: HeaderName = HeaderName::from_static(REMOTE_GROUP);

/// The body of a 503 for an unavailable group-version, as upstream.
pub(crate) const SERVICE_UNAVAILABLE: &str = "service unavailable\n";

/// A failure to set up a client for a backend.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// A PEM input (client certificate, key or CA bundle) is unusable.
    #[error("{0}")]
    Pem(String),
    /// The backend's TLS server name is not a valid DNS name or IP address.
    #[error("invalid TLS server name {0:?}")]
    ServerName(String),
    /// rustls refused the configuration.
    #[error("TLS configuration: {0}")]
    Tls(#[from] rustls::Error),
}

pub(crate) use super::pool::{BackendClient, SendError};
use super::retry::Fate;

/// The aggregator's HTTPS clients to its backends, each a pool of HTTP/2 connections
/// ([`super::pool`]). APIServices with the same TLS settings (the group-versions one backend
/// serves) share one client, as client-go's transport cache shares kube-aggregator's
/// transports; a client is rebuilt when an APIService's TLS settings or endpoint change.
pub(crate) struct Backends {
    cert_chain: Vec<CertificateDer<'static>>,
    key_pem: String,
    clients: Mutex<Clients>,
}

/// The clients by their TLS settings, and the settings and client each APIService uses.
#[derive(Default)]
struct Clients {
    by_key: HashMap<ClientKey, BackendClient>,
    by_service: HashMap<String, (ClientKey, BackendClient)>,
}

/// What a cached client depends on.
#[derive(Clone, PartialEq, Eq, Hash)]
struct ClientKey {
    server_name: String,
    ca_bundle: Vec<u8>,
    insecure: bool,
}

impl Backends {
    /// Clients presenting the front-proxy certificate `cert_pem` with key `key_pem`.
    pub(crate) fn new(cert_pem: &str, key_pem: &str) -> Result<Self, ProxyError> {
        let cert_chain = parse_certs(cert_pem).map_err(|e| ProxyError::Pem(e.to_string()))?;
        PrivateKeyDer::from_pem_slice(key_pem.as_bytes())
            .map_err(|e| ProxyError::Pem(format!("no private key found: {e}")))?;
        Ok(Backends {
            cert_chain,
            key_pem: key_pem.to_owned(),
            clients: Mutex::new(Clients::default()),
        })
    }

    /// The client for `service` at `endpoint`.
    pub(crate) fn client(
        &self,
        service: &APIService,
        endpoint: &Endpoint,
    ) -> Result<BackendClient, ProxyError> {
        let name = service.metadata.name.as_deref().unwrap_or_default();
        let mut clients = self.clients.lock();
        // Every proxied request asks: the APIService's own entry answers without copying or
        // hashing its CA bundle while its settings are unchanged.
        if let Some((key, client)) = clients.by_service.get(name)
            && key.server_name == endpoint.server_name
            && key.ca_bundle == service.spec.ca_bundle
            && key.insecure == service.spec.insecure_skip_tls_verify
        {
            return Ok(client.clone());
        }
        let key = ClientKey {
            server_name: endpoint.server_name.clone(),
            ca_bundle: service.spec.ca_bundle.clone(),
            insecure: service.spec.insecure_skip_tls_verify,
        };
        let client = match clients.by_key.get(&key) {
            Some(c) => c.clone(),
            None => {
                let c = self.build(&key)?;
                clients.by_key.insert(key.clone(), c.clone());
                c
            }
        };
        clients
            .by_service
            .insert(name.to_owned(), (key, client.clone()));
        clients.drop_unused();
        Ok(client)
    }

    /// Drops the clients of APIServices whose name `keep` rejects.
    pub(crate) fn retain(&self, keep: impl Fn(&str) -> bool) {
        let mut clients = self.clients.lock();
        clients.by_service.retain(|name, _| keep(name));
        clients.drop_unused();
    }

    /// An HTTP/1.1-only client for `service` at `endpoint`, for requests that upgrade the
    /// connection (HTTP/2 has no `Upgrade`); not pooled, as an upgraded connection is never
    /// reused.
    pub(crate) fn upgrade_client(
        &self,
        service: &APIService,
        endpoint: &Endpoint,
    ) -> Result<BackendClient, ProxyError> {
        let key = ClientKey {
            server_name: endpoint.server_name.clone(),
            ca_bundle: service.spec.ca_bundle.clone(),
            insecure: service.spec.insecure_skip_tls_verify,
        };
        let (config, server_name) = self.tls_config(&key)?;
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(config)
            .https_only()
            .with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(server_name))
            .enable_http1()
            .wrap_connector(http);
        Ok(BackendClient::http1_only(connector))
    }

    fn build(&self, key: &ClientKey) -> Result<BackendClient, ProxyError> {
        let (config, server_name) = self.tls_config(key)?;
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(config)
            .https_only()
            .with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(server_name))
            .enable_http1()
            .enable_http2()
            .wrap_connector(http);
        Ok(BackendClient::new(connector))
    }

    /// The TLS settings of a client: the front-proxy certificate, the APIService's trust.
    fn tls_config(
        &self,
        key: &ClientKey,
    ) -> Result<(rustls::ClientConfig, ServerName<'static>), ProxyError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()?;
        let builder = if key.insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(NoVerification(provider)))
        } else {
            let mut roots = rustls::RootCertStore::empty();
            if !key.ca_bundle.is_empty() {
                let text = String::from_utf8_lossy(&key.ca_bundle);
                let certs = parse_certs(&text).map_err(|e| ProxyError::Pem(e.to_string()))?;
                for cert in certs {
                    roots.add(cert)?;
                }
            }
            builder.with_root_certificates(roots)
        };
        let client_key = PrivateKeyDer::from_pem_slice(self.key_pem.as_bytes())
            .map_err(|e| ProxyError::Pem(format!("no private key found: {e}")))?;
        let config = builder.with_client_auth_cert(self.cert_chain.clone(), client_key)?;
        let server_name = ServerName::try_from(key.server_name.clone())
            .map_err(|_| ProxyError::ServerName(key.server_name.clone()))?;
        Ok((config, server_name))
    }
}

impl Clients {
    /// Drops the clients no APIService uses any more.
    fn drop_unused(&mut self) {
        let used: Vec<&ClientKey> = self.by_service.values().map(|(key, _)| key).collect();
        self.by_key.retain(|key, _| used.contains(&key));
    }
}

/// Accepts any server certificate (`insecureSkipTLSVerify`), still checking signatures of
/// the handshake.
#[derive(Debug)]
struct NoVerification(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A user's name, uid, group or extra value that no HTTP header can carry (a control
/// character); the request is refused rather than sent with less of the user's identity.
#[derive(Debug, thiserror::Error)]
#[error("net/http: invalid header field value for {0:?}")]
pub(crate) struct InvalidIdentityHeader(pub String);

/// Replaces the caller-identity headers with `user`'s, as upstream's `SetAuthProxyHeaders`
/// (client-go `transport/round_trippers.go`): removes `Authorization` and every incoming
/// `X-Remote-*` identity header, then sets `X-Remote-User`, `X-Remote-Uid` (when non-empty),
/// one `X-Remote-Group` per group and one `X-Remote-Extra-<key>` per value.
///
/// Values go as they are, UTF-8 bytes included (`jürgen` is sent as its UTF-8 bytes, which
/// HTTP allows in a header value and the receiving authenticator reads back); only the extra
/// keys, which are part of a header name, are %-escaped ([`escape_extra_key`]). A value with a
/// control character cannot be sent: nothing is dropped, the whole call fails, as Go's
/// transport refuses such a header.
pub(crate) fn set_identity_headers(
    headers: &mut HeaderMap,
    user: &UserInfo,
) -> Result<(), InvalidIdentityHeader> {
    let value = |header: &str, text: &str| {
        HeaderValue::from_bytes(text.as_bytes())
            .map_err(|_| InvalidIdentityHeader(canonical(header)))
    };
    let user_value = value(REMOTE_USER, &user.username)?;
    let uid_value = match user.uid.is_empty() {
        true => None,
        false => Some(value(REMOTE_UID, &user.uid)?),
    };
    let group_values = user
        .groups
        .iter()
        .map(|g| value(REMOTE_GROUP, g))
        .collect::<Result<Vec<_>, _>>()?;
    let mut extra_values = Vec::new();
    for (key, values) in &user.extra {
        let name = format!("{REMOTE_EXTRA_PREFIX}{}", escape_extra_key(key));
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| InvalidIdentityHeader(canonical(&name)))?;
        for v in values {
            extra_values.push((header.clone(), value(&name, v)?));
        }
    }
    headers.remove(header::AUTHORIZATION);
    let forged: Vec<HeaderName> = headers
        .keys()
        .filter(|k| {
            let k = k.as_str();
            k == REMOTE_USER
                || k == REMOTE_UID
                || k == REMOTE_GROUP
                || k.starts_with(REMOTE_EXTRA_PREFIX)
        })
        .cloned()
        .collect();
    for name in forged {
        headers.remove(name);
    }
    headers.insert(REMOTE_USER_NAME, user_value);
    if let Some(v) = uid_value {
        headers.insert(REMOTE_UID_NAME, v);
    }
    for v in group_values {
        headers.append(REMOTE_GROUP_NAME, v);
    }
    for (name, v) in extra_values {
        headers.append(name, v);
    }
    Ok(())
}

/// A header name as Go writes it in messages (`X-Remote-User`).
fn canonical(name: &str) -> String {
    name.split('-')
        .map(|part| {
            let mut chars = part.chars();
            match chars.next() {
                Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join("-")
}

/// Escapes an extra key for a header name as upstream's `headerKeyEscape`: bytes outside the
/// RFC 7230 token set, and `%`, become upper-case `%XX`.
pub(crate) fn escape_extra_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for b in key.bytes() {
        let token = b.is_ascii_alphanumeric() || b"!#$&'*+-.^_`|~".contains(&b);
        if token {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Headers meaningful only for one connection, never forwarded: Go's reverse proxy's list
/// (RFC 7230 section 6.1 and the common non-standard `Proxy-Connection`).
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Removes the hop-by-hop headers, as Go's reverse proxy does: first every header the
/// `Connection` headers name, then `HOP_BY_HOP`.
pub(crate) fn remove_hop_by_hop(headers: &mut HeaderMap) {
    // Most requests and responses carry none: one look at each header name (a few dozen
    // bytes compared) instead of a hashed removal per listed name.
    if !headers.keys().any(|k| HOP_BY_HOP.contains(&k.as_str())) {
        return;
    }
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for h in HOP_BY_HOP {
        headers.remove(*h);
    }
}

/// Whether the `TE` headers name `trailers`.
fn accepts_trailers(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::TE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| {
            t.split(';')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("trailers"))
        })
}

/// Forwards `req` to `endpoint` as `user`, streaming both bodies; a transport failure is a
/// plain-text 503 with the error, as kube-aggregator's proxy answers, except when no
/// connection could be opened to the endpoint (the caller may try another endpoint).
pub(crate) async fn forward(
    client: &BackendClient,
    endpoint: &Endpoint,
    req: Request<Body>,
    user: &UserInfo,
) -> Result<Response<Body>, SendError> {
    match forward_once(client, endpoint, req, user, false).await {
        Err(e) if e.fate != Fate::Unreachable => {
            tracing::warn!(error = %e, "error while proxying request to {}", endpoint.authority);
            Ok(plain(StatusCode::SERVICE_UNAVAILABLE, format!("{e}\n")))
        }
        other => other,
    }
}

/// Forwards `req` to `endpoint` as `user` (on a new connection when `fresh`), streaming both
/// bodies; a transport failure before any response byte is the caller's to answer or retry
/// ([`SendError::fate`]).
pub(crate) async fn forward_once(
    client: &BackendClient,
    endpoint: &Endpoint,
    req: Request<Body>,
    user: &UserInfo,
    fresh: bool,
) -> Result<Response<Body>, SendError> {
    let (mut parts, body) = req.into_parts();
    let path = parts
        .uri
        .path_and_query()
        .cloned()
        .unwrap_or_else(|| PathAndQuery::from_static("/"));
    // Built from its parts: the path is the request's, already read, shared rather than
    // written out and read again.
    let uri = Uri::builder()
        .scheme(Scheme::HTTPS)
        .authority(endpoint.authority.as_str())
        .path_and_query(path)
        .build();
    let Ok(uri) = uri else {
        return Ok(unavailable());
    };
    parts.uri = uri;
    parts.version = http::Version::HTTP_11;
    let upgrade = super::upgrade::take(&mut parts);
    let trailers = accepts_trailers(&parts.headers);
    remove_hop_by_hop(&mut parts.headers);
    parts.headers.remove(header::HOST);
    if trailers {
        // As Go's reverse proxy: the backend may know that trailers are understood.
        parts
            .headers
            .insert(header::TE, HeaderValue::from_static("trailers"));
    }
    if let Err(e) = set_identity_headers(&mut parts.headers, user) {
        tracing::warn!(error = %e, "cannot tell {} who the caller is", endpoint.authority);
        return Ok(plain(StatusCode::SERVICE_UNAVAILABLE, format!("{e}\n")));
    }
    let upgrade = upgrade.map(|(protocol, on_upgrade)| {
        // As Go's reverse proxy: the upgrade goes on to the backend, hop by hop.
        parts
            .headers
            .insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
        parts.headers.insert(header::UPGRADE, protocol);
        on_upgrade
    });
    parts.extensions = http::Extensions::new();
    // The proxy hop's span (`--tracing-config-file`; nothing when off), named as upstream's
    // `otelhttp` transport names it; the backend gets its context in `traceparent`.
    let span = tracing::trace_span!(
        target: TRACE_TARGET,
        "proxy",
        otel.name = %format_args!("HTTP {}", parts.method),
        otel.kind = "client",
        otel.status_code = tracing::field::Empty,
        http.method = %parts.method,
        http.url = %parts.uri,
        http.status_code = tracing::field::Empty,
    );
    propagation::inject(&span, &mut parts.headers);
    let sent = client
        .send(Request::from_parts(parts, body), fresh)
        .instrument(span.clone())
        .await;
    match &sent {
        Ok(res) => {
            span.record("http.status_code", res.status().as_u16());
            if res.status().is_server_error() {
                span.record("otel.status_code", "error");
            }
        }
        Err(_) => {
            span.record("otel.status_code", "error");
        }
    }
    match sent {
        Ok(res) if res.status() == StatusCode::SWITCHING_PROTOCOLS && upgrade.is_some() => {
            Ok(super::upgrade::splice(upgrade, res, endpoint))
        }
        Ok(res) => {
            let (mut parts, body) = res.into_parts();
            remove_hop_by_hop(&mut parts.headers);
            Ok(Response::from_parts(parts, Body::new(body)))
        }
        Err(e) => Err(e),
    }
}

/// What a backend answered to a GET.
pub(crate) struct Fetched {
    /// The status code.
    pub(crate) status: StatusCode,
    /// The response headers.
    pub(crate) headers: HeaderMap,
    /// The whole body.
    pub(crate) body: bytes::Bytes,
}

/// Why a GET to a backend failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FetchError {
    /// No answer within the timeout.
    #[error("timed out waiting for {0}")]
    Timeout(String),
    /// The request failed.
    #[error("failing or missing response from {url}: {error}")]
    Transport {
        /// The URL.
        url: String,
        /// The error.
        error: String,
    },
}

/// How long the aggregator waits for a backend's probe, discovery or OpenAPI answer.
pub(crate) const FETCH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// GETs `path` from `endpoint` as `user` (with `accept`), reading the whole body, within
/// [`FETCH_TIMEOUT`]; redirects are not followed.
pub(crate) async fn get(
    client: &BackendClient,
    endpoint: &Endpoint,
    path: &str,
    user: &UserInfo,
    accept: &str,
    if_none_match: Option<&str>,
) -> Result<Fetched, FetchError> {
    use http_body_util::BodyExt as _;
    let url = format!("https://{}{path}", endpoint.authority);
    let mut req = Request::get(&url);
    if let Some(h) = req.headers_mut() {
        set_identity_headers(h, user).map_err(|e| FetchError::Transport {
            url: url.clone(),
            error: e.to_string(),
        })?;
        if let Ok(v) = HeaderValue::from_str(accept) {
            h.insert(header::ACCEPT, v);
        }
        if let Some(etag) = if_none_match
            && let Ok(v) = HeaderValue::from_str(etag)
        {
            h.insert(header::IF_NONE_MATCH, v);
        }
    }
    let req = req.body(Body::empty()).map_err(|e| FetchError::Transport {
        url: url.clone(),
        error: e.to_string(),
    })?;
    let work = async {
        let res = client
            .request(req)
            .await
            .map_err(|e| FetchError::Transport {
                url: url.clone(),
                error: error_chain(&e),
            })?;
        let (parts, body) = res.into_parts();
        let body = body
            .collect()
            .await
            .map_err(|e| FetchError::Transport {
                url: url.clone(),
                error: e.to_string(),
            })?
            .to_bytes();
        Ok(Fetched {
            status: parts.status,
            headers: parts.headers,
            body,
        })
    };
    match tokio::time::timeout(FETCH_TIMEOUT, work).await {
        Ok(r) => r,
        Err(_) => Err(FetchError::Timeout(url)),
    }
}

/// An error with its sources, `outer: inner: ...`.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

/// The 503 `service unavailable` of an unavailable or unresolvable group-version.
pub(crate) fn unavailable() -> Response<Body> {
    plain(StatusCode::SERVICE_UNAVAILABLE, SERVICE_UNAVAILABLE.into())
}

/// A plain-text response, as Go's `http.Error` writes it.
fn plain(code: StatusCode, body: String) -> Response<Body> {
    crate::endpoints::response::plain_text(code, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_headers_replace_forged_ones() {
        let mut h = HeaderMap::new();
        h.insert("x-remote-user", HeaderValue::from_static("mallory"));
        h.append("X-Remote-Group", HeaderValue::from_static("system:masters"));
        h.insert("x-remote-extra-foo", HeaderValue::from_static("bar"));
        h.insert("authorization", HeaderValue::from_static("Bearer x"));
        let mut user = UserInfo::new("alice", &["dev", "system:authenticated"]);
        user.extra
            .insert("example.com/scopes".into(), vec!["a".into(), "b".into()]);
        set_identity_headers(&mut h, &user).unwrap();
        assert_eq!(h.get("x-remote-user").unwrap(), "alice");
        let groups: Vec<_> = h.get_all("x-remote-group").iter().collect();
        assert_eq!(groups, ["dev", "system:authenticated"]);
        assert!(h.get("x-remote-extra-foo").is_none());
        assert!(h.get("authorization").is_none());
        assert!(h.get("x-remote-uid").is_none());
        let extra: Vec<_> = h
            .get_all("x-remote-extra-example.com%2fscopes")
            .iter()
            .collect();
        assert_eq!(extra, ["a", "b"]);
    }

    #[test]
    fn non_ascii_identities_are_sent_as_utf8_and_read_back() {
        let mut h = HeaderMap::new();
        let mut user = UserInfo::new("jürgen", &["équipe", "system:authenticated"]);
        user.uid = "ユーザー-1".into();
        user.extra
            .insert("example.com/rôle".into(), vec!["chef ✓".into()]);
        set_identity_headers(&mut h, &user).unwrap();
        assert_eq!(
            h.get("x-remote-user").unwrap().as_bytes(),
            "jürgen".as_bytes()
        );
        assert_eq!(
            h.get("x-remote-extra-example.com%2fr%c3%b4le")
                .unwrap()
                .as_bytes(),
            "chef ✓".as_bytes()
        );
        // The front-proxy authenticator reads exactly this user back.
        let settings = crate::authn::delegated::RequestHeaderConfig {
            uid_headers: vec![HeaderName::from_static("x-remote-uid")],
            ..Default::default()
        };
        let seen = crate::authn::request_header::user_from_headers(&h, &settings)
            .unwrap()
            .unwrap();
        assert_eq!(seen, user);
    }

    #[test]
    fn an_identity_no_header_can_carry_fails_whole() {
        for user in [
            UserInfo::new("eve\nX-Remote-Group: system:masters", &[]),
            UserInfo::new("eve", &["ok", "bad\r"]),
        ] {
            let mut h = HeaderMap::new();
            h.insert("x-remote-user", HeaderValue::from_static("mallory"));
            h.insert("authorization", HeaderValue::from_static("Bearer x"));
            let e = set_identity_headers(&mut h, &user).unwrap_err();
            assert!(
                e.to_string()
                    .starts_with("net/http: invalid header field value for \"X-Remote-"),
                "{e}"
            );
            // Nothing was half-written.
            assert_eq!(h.get("x-remote-user").unwrap(), "mallory");
            assert!(h.get("x-remote-group").is_none());
        }
        let mut user = UserInfo::new("eve", &[]);
        user.extra.insert("k".into(), vec!["\u{7f}".into()]);
        let e = set_identity_headers(&mut HeaderMap::new(), &user).unwrap_err();
        assert_eq!(
            e.to_string(),
            "net/http: invalid header field value for \"X-Remote-Extra-K\""
        );
    }

    #[test]
    fn hop_by_hop_headers_are_removed_like_go_reverse_proxy() {
        let mut h = HeaderMap::new();
        h.append(
            "connection",
            HeaderValue::from_static("keep-alive, X-Secret"),
        );
        h.append("connection", HeaderValue::from_static(" x-other ,close"));
        for name in [
            "x-secret",
            "x-other",
            "keep-alive",
            "proxy-connection",
            "proxy-authenticate",
            "proxy-authorization",
            "te",
            "trailer",
            "transfer-encoding",
            "upgrade",
            "accept",
            "x-kept",
        ] {
            h.insert(name, HeaderValue::from_static("v"));
        }
        remove_hop_by_hop(&mut h);
        let mut left: Vec<_> = h.keys().map(|k| k.as_str()).collect();
        left.sort();
        assert_eq!(left, ["accept", "x-kept"]);
        // One listed header alone is removed too; headers without any stay as they are.
        for name in HOP_BY_HOP {
            let mut one = HeaderMap::new();
            one.insert("accept", HeaderValue::from_static("v"));
            one.insert(*name, HeaderValue::from_static("v"));
            remove_hop_by_hop(&mut one);
            assert_eq!(
                one.keys().map(|k| k.as_str()).collect::<Vec<_>>(),
                ["accept"]
            );
        }
        let mut plain = HeaderMap::new();
        plain.insert("accept", HeaderValue::from_static("v"));
        plain.append("x-kept", HeaderValue::from_static("1"));
        plain.append("x-kept", HeaderValue::from_static("2"));
        let before = plain.clone();
        remove_hop_by_hop(&mut plain);
        assert_eq!(plain, before);
        let mut te = HeaderMap::new();
        te.insert("te", HeaderValue::from_static("gzip, Trailers;q=1"));
        assert!(accepts_trailers(&te));
        te.insert("te", HeaderValue::from_static("gzip"));
        assert!(!accepts_trailers(&te));
    }

    #[test]
    fn extra_keys_are_escaped_like_upstream() {
        assert_eq!(
            escape_extra_key("example.com/scopes"),
            "example.com%2Fscopes"
        );
        assert_eq!(escape_extra_key("a%b c"), "a%25b%20c");
    }
}
