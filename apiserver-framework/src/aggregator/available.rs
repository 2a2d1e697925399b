//! The availability controller: probes every remote APIService's backend and keeps its
//! `Available` condition current (available while any endpoint of its Service passes; each
//! endpoint's `/readyz` also decides whether requests go to it); each pass also refreshes the backends' discovery and
//! OpenAPI documents for the merged documents.

use std::sync::Arc;

use futures::{FutureExt as _, StreamExt as _};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::apiservice::{APIService, APIServiceCondition, APIServiceStatus, AVAILABLE};
use super::proxy::{self, BackendClient};
use super::{Aggregator, State, discovery, endpoints, openapi};
use crate::admission::AdmissionChain;
use crate::host_cluster::resolver::Endpoint;
use crate::registry::rest::options::{ListOptions, WriteOptions};
use crate::registry::rest::{RequestContext, RestStorage};
use crate::user::UserInfo;

/// The user the aggregator probes and reads discovery as.
pub(crate) const AGGREGATOR_USER: &str = "system:kube-aggregator";

/// The user and group of probes and discovery requests.
pub(crate) fn prober() -> UserInfo {
    UserInfo::new(AGGREGATOR_USER, &["system:masters"])
}

/// How long the controller waits after an APIService change before its next pass.
const CHANGE_DELAY: std::time::Duration = std::time::Duration::from_millis(100);

/// Runs passes every check interval, and right after an APIService changes.
pub(crate) async fn run(agg: Arc<Aggregator>) {
    let Some(registry) = agg.registry.get().cloned() else {
        return;
    };
    let Some(storage) = registry
        .find(super::apiservice::GROUP, "v1", "apiservices")
        .cloned()
    else {
        tracing::error!("the aggregator's server does not serve apiservices");
        return;
    };
    let ctx = RequestContext {
        namespace: None,
        user: prober(),
        admission: Arc::new(AdmissionChain::new(Vec::new())),
        registry: registry.clone(),
        request_resource: None,
        notes: Default::default(),
    };
    let mut watch = None;
    loop {
        pass(&agg, &storage, &ctx).await;
        if watch.is_none() {
            watch = storage.watch(&ctx, &ListOptions::default()).await.ok();
        }
        let sleep = tokio::time::sleep(agg.check_interval);
        match watch.as_mut() {
            Some(events) => {
                tokio::select! {
                    _ = sleep => {}
                    event = events.next() => {
                        if event.is_none() {
                            watch = None;
                        }
                        // One pass covers every change made meanwhile (this controller's own
                        // status writes included).
                        tokio::time::sleep(CHANGE_DELAY).await;
                        if let Some(events) = watch.as_mut() {
                            while let Some(Some(_)) = events.next().now_or_never() {}
                        }
                    }
                }
            }
            None => sleep.await,
        }
    }
}

/// One pass over every APIService.
async fn pass(agg: &Aggregator, storage: &Arc<dyn RestStorage>, ctx: &RequestContext) {
    let Some(store) = agg.registry.get().and_then(|r| r.store::<APIService>()) else {
        return;
    };
    let services = match store.list_objects(None).await {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, "listing APIServices");
            return;
        }
    };
    let previous = agg.state.read().clone();
    let checks = services
        .iter()
        .map(|service| check(agg, service, &previous));
    let results = futures::future::join_all(checks).await;
    let mut state = State::default();
    let mut observed = Vec::new();
    let metrics = crate::metrics::global();
    for (service, result) in services.into_iter().zip(results) {
        let mut service = service;
        let name = service.metadata.name.clone().unwrap_or_default();
        // As kube-aggregator: the gauge follows every check, the counter each change to
        // unavailable that was written.
        let available = result.condition.status == "True";
        metrics
            .unavailable_apiservices
            .with_label_values(&[name.as_str()])
            .set(i64::from(!available));
        let reason = result.condition.reason.clone();
        if let Some(updated) = with_condition(&service, result.condition) {
            match write_status(storage, ctx, &updated).await {
                Ok(()) => {
                    if service.is_available() && !available {
                        metrics
                            .apiservices_marked_unavailable
                            .with_label_values(&[name.as_str(), reason.as_str()])
                            .inc();
                    }
                    service = updated;
                }
                Err(e) => tracing::warn!(error = %e, "updating APIService status"),
            }
        }
        state.discovery.extend(result.discovery);
        state.openapi_v2.extend(result.openapi_v2);
        state.openapi_v3.extend(result.openapi_v3);
        observed.push(service);
    }
    let kept = |name: &str| {
        observed
            .iter()
            .any(|s| s.metadata.name.as_deref() == Some(name))
    };
    for gone in previous
        .services
        .iter()
        .filter_map(|s| s.metadata.name.as_deref())
    {
        if !kept(gone) {
            let _ = metrics.unavailable_apiservices.remove_label_values(&[gone]);
        }
    }
    agg.backends.retain(kept);
    agg.lookup.retain(kept);
    state.services = observed;
    agg.set_state(state);
}

/// The outcome of checking one APIService.
struct CheckResult {
    condition: APIServiceCondition,
    discovery: Option<(String, serde_json::Value)>,
    openapi_v2: Option<(String, openapi::Downloaded<serde_json::Value>)>,
    openapi_v3: Option<(String, openapi::Downloaded<Vec<u8>>)>,
}

/// A condition without a transition time.
fn condition(status: &str, reason: &str, message: impl Into<String>) -> APIServiceCondition {
    APIServiceCondition {
        type_: AVAILABLE.into(),
        status: status.into(),
        last_transition_time: None,
        reason: reason.into(),
        message: message.into(),
    }
}

async fn check(agg: &Aggregator, service: &APIService, previous: &State) -> CheckResult {
    let mut result = CheckResult {
        condition: condition("True", "Local", "Local APIServices are always available"),
        discovery: None,
        openapi_v2: None,
        openapi_v3: None,
    };
    let Some(reference) = &service.spec.service else {
        return result;
    };
    let all = match agg.resolver.resolve_all(
        &reference.namespace,
        &reference.name,
        reference.port_or_default(),
    ) {
        Ok(all) if !all.is_empty() => all,
        Ok(_) => {
            let e = crate::host_cluster::resolver::ResolveError::EndpointsNotFound {
                namespace: reference.namespace.clone(),
                name: reference.name.clone(),
            };
            result.condition = condition(e.condition_status(), e.reason(), e.to_string());
            return result;
        }
        Err(e) => {
            result.condition = condition(e.condition_status(), e.reason(), e.to_string());
            return result;
        }
    };
    let client = match agg.backends.client(service, &all[0]) {
        Ok(c) => c,
        Err(e) => {
            result.condition = condition("False", "FailedDiscoveryCheck", e.to_string());
            return result;
        }
    };
    let spec = &service.spec;
    let path = if spec.group.is_empty() {
        format!("/api/{}", spec.version)
    } else {
        format!("/apis/{}/{}", spec.group, spec.version)
    };
    // Every endpoint's readiness first (it steers requests), then the discovery check on the
    // ready ones before the others: the service is available while any endpoint passes.
    endpoints::probe_readiness(&agg.endpoints, &client, &all).await;
    let mut passed = None;
    let mut failure = String::new();
    for endpoint in agg.endpoints.order(all) {
        match probe(&client, &endpoint, &path).await {
            Ok(()) => {
                passed = Some(endpoint);
                break;
            }
            Err(message) => failure = message,
        }
    }
    let Some(endpoint) = passed else {
        result.condition = condition("False", "FailedDiscoveryCheck", failure);
        return result;
    };
    result.condition = condition("True", "Passed", "all checks passed");
    let gv = format!("{}/{}", spec.group, spec.version);
    let name = service.metadata.name.clone().unwrap_or_default();
    let cached = previous.discovery.get(&gv);
    result.discovery = Some((
        gv.clone(),
        discovery::fetch(&client, &endpoint, &spec.group, &spec.version, cached).await,
    ));
    // A document that could not be downloaded is kept as it was.
    let v2 = previous.openapi_v2.get(&name);
    let v2 = openapi::fetch_v2(&client, &endpoint, v2)
        .await
        .or_else(|| v2.cloned());
    result.openapi_v2 = v2.map(|doc| (name, doc));
    let key = format!("apis/{gv}");
    let v3 = previous.openapi_v3.get(&key);
    let v3 = openapi::fetch_v3(&client, &endpoint, &key, v3)
        .await
        .or_else(|| v3.cloned());
    result.openapi_v3 = v3.map(|doc| (key, doc));
    result
}

/// How many probes run in parallel; one success is enough, as upstream.
const PROBE_ATTEMPTS: usize = 5;

/// Probes `path` on the backend with [`PROBE_ATTEMPTS`] parallel GETs: passes when any
/// answers 2xx, else fails with the last error in upstream's words.
///
/// After the first success the other GETs still run to their end (each bounded by the fetch
/// timeout), unwatched, as kube-aggregator's probe goroutines do
/// (`remote_available_controller.go`): dropping them would cancel requests the backend is
/// serving, which a Go backend logs as errors ("Timeout or abort while handling").
async fn probe(client: &BackendClient, endpoint: &Endpoint, path: &str) -> Result<(), String> {
    let mut attempts: futures::stream::FuturesUnordered<_> = (0..PROBE_ATTEMPTS)
        .map(|_| probe_once(client.clone(), endpoint.clone(), path.to_owned()))
        .collect();
    let mut last = Ok(());
    while let Some(result) = attempts.next().await {
        if result.is_ok() {
            if !attempts.is_empty() {
                tokio::spawn(async move { while attempts.next().await.is_some() {} });
            }
            return Ok(());
        }
        last = result;
    }
    last
}

async fn probe_once(client: BackendClient, endpoint: Endpoint, path: String) -> Result<(), String> {
    let path = path.as_str();
    let fetched = proxy::get(&client, &endpoint, path, &prober(), "*/*", None)
        .await
        .map_err(|e| e.to_string())?;
    if fetched.status.is_success() {
        Ok(())
    } else {
        let url = format!("https://{}{path}", endpoint.authority);
        Err(format!(
            "failing or missing response from {url}: bad status from {url}: {}",
            fetched.status.as_u16()
        ))
    }
}

/// `service` with its `Available` condition set to `new`, or `None` when nothing changes.
/// The transition time is kept unless the status changes.
fn with_condition(service: &APIService, mut new: APIServiceCondition) -> Option<APIService> {
    let old = service.available_condition();
    if let Some(old) = old
        && old.status == new.status
        && old.reason == new.reason
        && old.message == new.message
    {
        return None;
    }
    new.last_transition_time = match old {
        Some(old) if old.status == new.status => old.last_transition_time.clone(),
        _ => Some(Time(jiff::Timestamp::now())),
    };
    let mut updated = service.clone();
    let status = updated.status.get_or_insert_with(APIServiceStatus::default);
    status.conditions.retain(|c| c.type_ != AVAILABLE);
    status.conditions.push(new);
    Some(updated)
}

async fn write_status(
    storage: &Arc<dyn RestStorage>,
    ctx: &RequestContext,
    service: &APIService,
) -> Result<(), crate::error::ApiError> {
    let name = service.metadata.name.clone().unwrap_or_default();
    let body = serde_json::to_value(service)
        .map_err(|e| crate::error::ApiError::internal(e.to_string()))?;
    storage
        .update(ctx, &name, Some("status"), body, &WriteOptions::default())
        .await
        .map(|_| ())
}
