//! Spreading requests over the endpoints of an APIService's Service, and failing over.
//!
//! A Service resolves to every address of its backend's replicas
//! ([`ServiceResolver::resolve_all`](crate::host::resolver::ServiceResolver::resolve_all)),
//! as kube-aggregator's endpoint routing picks among a Service's ready endpoints. The
//! aggregator keeps, per address, whether it is ready:
//!
//! * the availability controller asks every address `/readyz` once per pass (as the kubelet's
//!   readiness probe feeds a Service's endpoints): a replica that is shutting down fails it
//!   first, and stops getting requests while it finishes those it has;
//! * a request that could not connect to an address marks it not ready at once, and goes to
//!   the next address: a replica that died takes no request beyond those it had in flight;
//! * a later `/readyz` that passes puts the address back.
//!
//! Requests and watches go round-robin over the ready addresses; the others are tried last, so
//! that a Service whose every address looks down is still tried rather than refused.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use axum::body::Body;
use bytes::Bytes;
use http::{Request, Response};
use http_body::{Frame, SizeHint};
use parking_lot::Mutex;

use super::proxy::{self, BackendClient};
use crate::host::resolver::Endpoint;
use crate::user::UserInfo;

/// The readiness of every backend address the aggregator has seen, and the round-robin turn.
#[derive(Debug, Default)]
pub(crate) struct EndpointHealth {
    ready: Mutex<HashMap<String, bool>>,
    turn: AtomicUsize,
}

impl EndpointHealth {
    /// `endpoints` in the order to try them: the ready ones first, starting one further at
    /// every call (round-robin), then the others. An address never probed counts as ready.
    pub(crate) fn order(&self, endpoints: Vec<Endpoint>) -> Vec<Endpoint> {
        let ready = self.ready.lock();
        let (mut up, down): (Vec<Endpoint>, Vec<Endpoint>) = endpoints
            .into_iter()
            .partition(|e| ready.get(&e.authority).copied().unwrap_or(true));
        drop(ready);
        if !up.is_empty() {
            let start = self.turn.fetch_add(1, Ordering::Relaxed) % up.len();
            up.rotate_left(start);
        }
        up.extend(down);
        up
    }

    /// Records whether `authority` is ready.
    pub(crate) fn set_ready(&self, authority: &str, ready: bool) {
        let mut map = self.ready.lock();
        if map.get(authority) != Some(&ready) {
            tracing::info!(endpoint = authority, ready, "aggregator endpoint readiness");
        }
        map.insert(authority.to_string(), ready);
    }
}

/// Probes `/readyz` of every endpoint at once and records the answers: 2xx is ready,
/// anything else (an error status, no connection, no answer in time) is not.
pub(crate) async fn probe_readiness(
    health: &EndpointHealth,
    client: &BackendClient,
    endpoints: &[Endpoint],
) {
    let probes = endpoints.iter().map(|endpoint| async move {
        let fetched = proxy::get(
            client,
            endpoint,
            "/readyz",
            &super::available::prober(),
            "*/*",
            None,
        )
        .await;
        let ready = fetched.is_ok_and(|f| f.status.is_success());
        health.set_ready(&endpoint.authority, ready);
    });
    futures::future::join_all(probes).await;
}

/// Forwards `req` to the first of `endpoints` (in [`EndpointHealth::order`]) that takes it:
/// an endpoint that refuses the connection is marked not ready and the request, not sent yet,
/// goes to the next. Any answer of a backend, error statuses included, is the answer.
pub(crate) async fn forward(
    health: &EndpointHealth,
    client: &BackendClient,
    endpoints: Vec<Endpoint>,
    req: Request<Body>,
    user: &UserInfo,
) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let slot = Arc::new(Mutex::new(Some(body)));
    let mut last = None;
    for endpoint in health.order(endpoints) {
        // Headers, method and URI as received: `proxy::forward` rewrites its own copy.
        let Some(body) = slot
            .lock()
            .is_some()
            .then(|| Reclaimable::new(slot.clone()))
        else {
            break;
        };
        let mut attempt = Request::new(Body::new(body));
        *attempt.method_mut() = parts.method.clone();
        *attempt.uri_mut() = parts.uri.clone();
        *attempt.version_mut() = parts.version;
        *attempt.headers_mut() = parts.headers.clone();
        match proxy::forward(client, &endpoint, attempt, user).await {
            Ok(res) => return res,
            Err(not_connected) => {
                tracing::warn!(endpoint = %endpoint.authority, error = %not_connected,
                    "backend endpoint refused the connection; trying the next");
                health.set_ready(&endpoint.authority, false);
                last = Some(not_connected);
            }
        }
    }
    match last {
        // As kube-aggregator's proxy answers a transport failure.
        Some(e) => crate::endpoints::response::plain_text(
            http::StatusCode::SERVICE_UNAVAILABLE,
            format!("{e}\n"),
        ),
        None => proxy::unavailable(),
    }
}

/// Whether `error` says the request never reached the backend: its connection was refused
/// (nothing listens at the address, e.g. a replica that just died).
pub(crate) fn never_connected(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(e) = current {
        if let Some(legacy) = e.downcast_ref::<hyper_util::client::legacy::Error>()
            && legacy.is_connect()
        {
            return true;
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return true;
        }
        current = e.source();
    }
    false
}

/// A request body that goes back to its slot if the request is never sent: the first poll
/// takes the body out of the slot; until then the caller can hand it to another attempt.
struct Reclaimable {
    slot: Arc<Mutex<Option<Body>>>,
    taken: Option<Body>,
}

impl Reclaimable {
    fn new(slot: Arc<Mutex<Option<Body>>>) -> Self {
        Reclaimable { slot, taken: None }
    }
}

impl http_body::Body for Reclaimable {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        if this.taken.is_none() {
            this.taken = this.slot.lock().take();
        }
        match this.taken.as_mut() {
            Some(body) => Pin::new(body).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.taken {
            Some(body) => body.is_end_stream(),
            None => self.slot.lock().as_ref().is_none_or(|b| b.is_end_stream()),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.taken {
            Some(body) => body.size_hint(),
            None => self
                .slot
                .lock()
                .as_ref()
                .map(|b| b.size_hint())
                .unwrap_or_else(|| SizeHint::with_exact(0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(port: u16) -> Endpoint {
        Endpoint {
            authority: format!("127.0.0.1:{port}"),
            server_name: "api.x.svc".into(),
        }
    }

    fn authorities(list: &[Endpoint]) -> Vec<&str> {
        list.iter().map(|e| e.authority.as_str()).collect()
    }

    #[test]
    fn ready_endpoints_take_turns_and_the_others_come_last() {
        let health = EndpointHealth::default();
        let all = vec![endpoint(1), endpoint(2), endpoint(3)];
        let firsts: Vec<String> = (0..3)
            .map(|_| health.order(all.clone())[0].authority.clone())
            .collect();
        assert_eq!(firsts, ["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"]);
        health.set_ready("127.0.0.1:2", false);
        for _ in 0..4 {
            let order = health.order(all.clone());
            assert_eq!(authorities(&order)[2], "127.0.0.1:2", "{order:?}");
        }
        health.set_ready("127.0.0.1:2", true);
        let firsts: std::collections::BTreeSet<String> = (0..3)
            .map(|_| health.order(all.clone())[0].authority.clone())
            .collect();
        assert_eq!(firsts.len(), 3);
    }

    #[tokio::test]
    async fn an_unpolled_body_goes_back_to_its_slot() {
        use http_body::Body as _;
        use http_body_util::BodyExt as _;
        let slot = Arc::new(Mutex::new(Some(Body::from("payload"))));
        let first = Reclaimable::new(slot.clone());
        assert_eq!(first.size_hint().exact(), Some(7));
        drop(first);
        let second = Reclaimable::new(slot.clone());
        let bytes = second.collect().await.unwrap().to_bytes();
        assert_eq!(&bytes[..], b"payload");
        assert!(slot.lock().is_none(), "a sent body cannot be sent again");
    }

    #[test]
    fn a_refused_connection_is_never_connected() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert!(never_connected(&refused));
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        assert!(!never_connected(&reset));
    }
}
