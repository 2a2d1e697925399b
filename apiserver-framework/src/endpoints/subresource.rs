//! Serving custom subresources over HTTP: GET with options, POST actions, and connections
//! upgraded to WebSocket with Kubernetes' channel protocols (see
//! [`crate::registry::rest::subresource`] and [`crate::registry::rest::connect`]; the session itself runs
//! in [`crate::endpoints::connect_session`]).

use axum::body::Body;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header};

use crate::endpoints::connect_session;
use crate::endpoints::handlers::{decode_object, read_body};
use crate::endpoints::negotiation::{self, Output};
use crate::endpoints::query::Query;
use crate::endpoints::request_info::Verb;
use crate::endpoints::response;
use crate::error::ApiError;
use crate::registry::rest::RequestContext;
use crate::registry::rest::connect::StreamProtocol;
use crate::registry::rest::subresource::{
    CustomSubresource, SubresourceCall, SubresourceKind, SubresourceReply,
};

/// Serves one request to the custom subresource `sub` of the object `name`, doing what `verb`
/// (the authorized verb) says: `get` reads a getter or opens a GET connection, `create` runs an
/// action or opens a POST connection; anything else answers 405.
pub async fn serve(
    sub: &dyn CustomSubresource,
    ctx: &RequestContext,
    req: Request<Body>,
    name: &str,
    verb: Verb,
    output: &Output,
) -> Result<Response<Body>, ApiError> {
    let info = sub.info();
    let method = req.method().clone();
    let query = pairs(req.uri().query());
    match (info.kind, verb) {
        (SubresourceKind::GetWithOptions, Verb::Get) if method == Method::GET => {
            let reply = sub.call(ctx, name, SubresourceCall::Get { query }).await?;
            object_reply(StatusCode::OK, output, reply)
        }
        (SubresourceKind::Action, Verb::Create) if method == Method::POST => {
            let opts = Query::parse(req.uri().query()).write_options("CreateOptions")?;
            let format = negotiation::body_format(
                req.headers()
                    .get(header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok()),
            )?;
            let body = decode_object(format, &read_body(req).await?)?;
            let call = SubresourceCall::Create {
                body,
                dry_run: opts.dry_run,
            };
            let reply = sub.call(ctx, name, call).await?;
            object_reply(StatusCode::CREATED, output, reply)
        }
        (SubresourceKind::Connect, Verb::Get | Verb::Create)
            if method == Method::GET || method == Method::POST =>
        {
            connect(sub, ctx, req, name, query).await
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}

/// The decoded pairs of a raw query string.
fn pairs(raw: Option<&str>) -> Vec<(String, String)> {
    form_urlencoded::parse(raw.unwrap_or("").as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// An object answer as JSON or YAML (other forms of output are for resources, not for the
/// answers of subresources: they get JSON).
fn object_reply(
    code: StatusCode,
    output: &Output,
    reply: SubresourceReply,
) -> Result<Response<Body>, ApiError> {
    let SubresourceReply::Object(bytes) = reply else {
        return Err(ApiError::internal("a subresource answered with a session"));
    };
    Ok(match output {
        Output::Yaml => {
            let value: serde_json::Value =
                serde_json::from_slice(&bytes).map_err(ApiError::internal)?;
            let text = serde_yaml_ng::to_string(&value).map_err(ApiError::internal)?;
            response::raw(code, "application/yaml", text)
        }
        _ => response::raw(code, "application/json", bytes),
    })
}

/// Whether a comma-separated header (any of its occurrences) names `token`, case-insensitively.
fn header_has_token(headers: &HeaderMap, name: header::HeaderName, token: &str) -> bool {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim().eq_ignore_ascii_case(token))
}

/// Whether a request asks to upgrade to WebSocket (`Connection: Upgrade`, `Upgrade: websocket`).
pub fn is_websocket_upgrade(headers: &HeaderMap) -> bool {
    header_has_token(headers, header::CONNECTION, "upgrade")
        && header_has_token(headers, header::UPGRADE, "websocket")
}

/// The channel protocol to speak: the server's first preference the client offers, `Raw`
/// when it offers none, and a 400 when it offers only protocols this server does not speak.
fn negotiate_protocol(headers: &HeaderMap) -> Result<StreamProtocol, ApiError> {
    let offered: Vec<&str> = headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    if offered.is_empty() {
        return Ok(StreamProtocol::Raw);
    }
    StreamProtocol::CHANNEL_PROTOCOLS
        .iter()
        .find(|p| offered.contains(p))
        .and_then(|p| StreamProtocol::from_name(p))
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "requested protocol(s) are not supported: {:?}; supports {:?}",
                offered,
                StreamProtocol::CHANNEL_PROTOCOLS
            ))
        })
}

/// Opens a connect subresource: checks the WebSocket handshake, asks the subresource for its
/// session (its errors answer as a Status, before anything is upgraded), answers 101 and runs
/// the session on the upgraded connection.
async fn connect(
    sub: &dyn CustomSubresource,
    ctx: &RequestContext,
    mut req: Request<Body>,
    name: &str,
    query: Vec<(String, String)>,
) -> Result<Response<Body>, ApiError> {
    let headers = req.headers();
    if !is_websocket_upgrade(headers) {
        return Err(ApiError::bad_request("Upgrade request required"));
    }
    if headers
        .get(header::SEC_WEBSOCKET_VERSION)
        .is_none_or(|v| v.as_bytes() != b"13")
    {
        return Err(ApiError::bad_request(
            "unsupported WebSocket version: only version 13 is served",
        ));
    }
    let Some(key) = headers.get(header::SEC_WEBSOCKET_KEY).cloned() else {
        return Err(ApiError::bad_request("missing Sec-WebSocket-Key"));
    };
    let protocol = negotiate_protocol(headers)?;
    let Some(on_upgrade) = req.extensions_mut().remove::<hyper::upgrade::OnUpgrade>() else {
        // HTTP/2 has no Upgrade; the client must use HTTP/1.1.
        return Err(ApiError::bad_request(
            "Upgrade request required: the connection cannot be upgraded (use HTTP/1.1)",
        ));
    };
    let session = match sub
        .call(ctx, name, SubresourceCall::Connect { query })
        .await?
    {
        SubresourceReply::Session(s) => s,
        SubresourceReply::Object(_) => {
            return Err(ApiError::internal(
                "a connect subresource answered an object",
            ));
        }
    };
    let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes());
    let mut res = Response::new(Body::empty());
    *res.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = res.headers_mut();
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    if let Ok(v) = HeaderValue::from_str(&accept) {
        h.insert(header::SEC_WEBSOCKET_ACCEPT, v);
    }
    if let Some(p) = protocol.name() {
        h.insert(header::SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_static(p));
    }
    tokio::spawn(async move {
        match on_upgrade.await {
            Ok(upgraded) => connect_session::run(upgraded, protocol, session).await,
            Err(e) => tracing::debug!(error = %e, "a connect subresource's upgrade failed"),
        }
    });
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn upgrade_requests_are_recognized() {
        assert!(is_websocket_upgrade(&headers(&[
            ("connection", "keep-alive, Upgrade"),
            ("upgrade", "WebSocket"),
        ])));
        assert!(!is_websocket_upgrade(&headers(&[("upgrade", "websocket")])));
        assert!(!is_websocket_upgrade(&headers(&[
            ("connection", "upgrade"),
            ("upgrade", "SPDY/3.1"),
        ])));
    }

    #[test]
    fn channel_protocols_are_negotiated_by_the_servers_preference() {
        let p = |v: &str| negotiate_protocol(&headers(&[("sec-websocket-protocol", v)]));
        assert_eq!(
            p("v4.channel.k8s.io, v5.channel.k8s.io").unwrap(),
            StreamProtocol::V5Channel
        );
        assert_eq!(
            p("base64.channel.k8s.io,v4.channel.k8s.io").unwrap(),
            StreamProtocol::V4Channel
        );
        assert_eq!(
            negotiate_protocol(&HeaderMap::new()).unwrap(),
            StreamProtocol::Raw
        );
        let e = p("channel.k8s.io").unwrap_err();
        assert_eq!(e.code, 400);
    }
}
