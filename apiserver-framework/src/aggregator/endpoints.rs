//! Spreading requests over the endpoints of an APIService's Service, and failing over.
//!
//! A Service resolves to every address of its backend's replicas
//! ([`ServiceResolver::resolve_all`](crate::host_cluster::resolver::ServiceResolver::resolve_all)),
//! as kube-aggregator's endpoint routing picks among a Service's ready endpoints. The
//! aggregator keeps, per address, whether it is ready:
//!
//! * the availability controller asks every address `/readyz` once per pass (as the kubelet's
//!   readiness probe feeds a Service's endpoints): a replica that is shutting down fails it
//!   first, and stops getting requests while it finishes those it has;
//! * a request that could not connect to an address, or whose connection to it broke, marks
//!   it not ready at once; so does a pooled connection that breaks while idle (the pool reports
//!   it as soon as the socket closes): a replica that died takes no request beyond those it had
//!   in flight;
//! * a request that failed before any response byte goes to the next address when that is safe
//!   ([`super::retry`]): one sent after a replica died, or refused by a replica shutting down,
//!   is answered by another; so is a read that was in flight on it;
//! * a later `/readyz` that passes puts the address back.
//!
//! Requests and watches go round-robin over the ready addresses; the others are tried last, so
//! that a Service whose every address looks down is still tried rather than refused.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::body::Body;
use http::{Request, Response};
use parking_lot::Mutex;

use super::proxy::{self, BackendClient};
use super::replay::Replay;
use super::replay_budget::ReplayBudget;
use crate::host_cluster::resolver::Endpoint;
use crate::user::UserInfo;

/// The readiness of every backend address the aggregator has seen, and the round-robin turn.
#[derive(Debug, Default)]
pub(crate) struct EndpointHealth {
    ready: Arc<Mutex<HashMap<String, bool>>>,
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
        record(&self.ready, authority, ready);
    }

    /// Has `client`'s pool mark an address not ready as soon as a connection to it breaks.
    fn watch(&self, client: &BackendClient) {
        client.report_broken(|| {
            let ready = Arc::clone(&self.ready);
            Box::new(move |authority: &str| record(&ready, authority, false))
        });
    }
}

fn record(map: &Mutex<HashMap<String, bool>>, authority: &str, ready: bool) {
    let mut map = map.lock();
    if map.get(authority) != Some(&ready) {
        tracing::info!(endpoint = authority, ready, "aggregator endpoint readiness");
    }
    map.insert(authority.to_string(), ready);
}

/// Probes `/readyz` of every endpoint at once and records the answers: 2xx is ready,
/// anything else (an error status, no connection, no answer in time) is not.
pub(crate) async fn probe_readiness(
    health: &EndpointHealth,
    client: &BackendClient,
    endpoints: &[Endpoint],
) {
    health.watch(client);
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

/// Forwards `req` to the first of `endpoints` (in [`EndpointHealth::order`]) that answers. A
/// request that failed before any response byte goes to the next endpoint when the failure says
/// it is safe ([`super::retry`]); each endpoint is tried once, and the last one once more on a
/// fresh connection when its failure was on a reused one. An endpoint that could not be reached
/// or whose connection broke is marked not ready at once. Any answer of a backend, error
/// statuses included, is the answer.
///
/// A copy of the body is kept for the next attempts only when it is small, its request is not
/// long-running ([`super::long_running`]) and `budget` has room for it ([`super::replay`]).
pub(crate) async fn forward(
    health: &EndpointHealth,
    client: &BackendClient,
    endpoints: Vec<Endpoint>,
    req: Request<Body>,
    user: &UserInfo,
    budget: &ReplayBudget,
) -> Response<Body> {
    health.watch(client);
    let (parts, body) = req.into_parts();
    let budget = (!super::long_running::is_long_running(&parts)).then_some(budget);
    let body = Replay::new(body, budget);
    let mut attempts: VecDeque<(Endpoint, bool)> = health
        .order(endpoints)
        .into_iter()
        .map(|endpoint| (endpoint, false))
        .collect();
    let mut last = None;
    while let Some((endpoint, fresh)) = attempts.pop_front() {
        // Headers, method and URI as received: `proxy::forward_once` rewrites its own copy.
        let mut attempt = Request::new(Body::new(body.attempt()));
        *attempt.method_mut() = parts.method.clone();
        *attempt.uri_mut() = parts.uri.clone();
        *attempt.version_mut() = parts.version;
        *attempt.headers_mut() = parts.headers.clone();
        let failed = match proxy::forward_once(client, &endpoint, attempt, user, fresh).await {
            Ok(res) => {
                body.settle();
                return res;
            }
            Err(failed) => failed,
        };
        if failed.fate.marks_down() {
            health.set_ready(&endpoint.authority, false);
        }
        let retry = failed.fate.may_retry(
            &parts.method,
            &parts.headers,
            body.replayable(),
            failed.reused,
        );
        tracing::warn!(endpoint = %endpoint.authority, error = %failed, fate = ?failed.fate,
            method = %parts.method, retry, "request to a backend endpoint failed");
        if !retry {
            last = Some(failed);
            break;
        }
        if attempts.is_empty() && failed.reused && !fresh {
            attempts.push_back((endpoint, true));
        }
        last = Some(failed);
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
}
