//! Upgraded connections through the aggregator (WebSocket connect subresources and the like),
//! as kube-aggregator's upgrade-aware proxy: the upgrade request goes to the backend over
//! HTTP/1.1 with the front-proxy identity, and once the backend switches protocols the two
//! connections are spliced, bytes flowing both ways until either side closes.

use axum::body::Body;
use http::header::{self, HeaderMap, HeaderValue};
use http::request::Parts;
use http::{Response, StatusCode};
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;

use crate::host_cluster::resolver::Endpoint;

/// Whether a request asks to upgrade its connection: a `Connection` header naming `upgrade`
/// and an `Upgrade` header.
pub(crate) fn is_upgrade(headers: &HeaderMap) -> bool {
    headers.contains_key(header::UPGRADE)
        && headers
            .get_all(header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
}

/// Takes the upgrade out of a request to forward: its `Upgrade` protocol and the client
/// connection's pending upgrade. `None` when the request asks for none, or its connection
/// cannot be upgraded (HTTP/2): it is then forwarded as a plain request.
pub(crate) fn take(parts: &mut Parts) -> Option<(HeaderValue, OnUpgrade)> {
    if !is_upgrade(&parts.headers) {
        return None;
    }
    let protocol = parts.headers.get(header::UPGRADE)?.clone();
    let on_upgrade = parts.extensions.remove::<OnUpgrade>()?;
    Some((protocol, on_upgrade))
}

/// Answers the client with the backend's `101 Switching Protocols` (its headers as they are:
/// the handshake's `Upgrade`, `Connection` and `Sec-WebSocket-*`) and splices the two upgraded
/// connections in a task of their own.
pub(crate) fn splice(
    client: Option<OnUpgrade>,
    mut backend: Response<super::pool::BackendBody>,
    endpoint: &Endpoint,
) -> Response<Body> {
    let backend_upgrade = hyper::upgrade::on(&mut backend);
    let (parts, _) = backend.into_parts();
    let mut res = Response::new(Body::empty());
    *res.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    *res.headers_mut() = parts.headers;
    let authority = endpoint.authority.clone();
    if let Some(client) = client {
        tokio::spawn(async move {
            let (client, backend) = tokio::join!(client, backend_upgrade);
            match (client, backend) {
                (Ok(client), Ok(backend)) => {
                    let (mut client, mut backend) = (TokioIo::new(client), TokioIo::new(backend));
                    if let Err(e) = tokio::io::copy_bidirectional(&mut client, &mut backend).await {
                        tracing::debug!(error = %e, "upgraded connection to {authority} ended");
                    }
                }
                (Err(e), _) | (_, Err(e)) => {
                    tracing::debug!(error = %e, "upgrade through the aggregator to {authority} failed");
                }
            }
        });
    }
    res
}
