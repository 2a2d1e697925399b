//! The aggregator: serves `APIService`s and fronts the backend API servers they register,
//! like upstream's kube-aggregator.
//!
//! An [`Aggregator`] is attached to the first [`GenericApiServer`] of a chain with
//! [`GenericApiServerBuilder::aggregator`](crate::server::generic::GenericApiServerBuilder::aggregator);
//! that server must also serve [`apiservice::group`]. Requests for a group-version that a
//! remote APIService registers are proxied to its backend ([`proxy`]), spread over the ready
//! endpoints of its Service, a request that failed before any response byte going to the next
//! endpoint when that is safe, by the rules of Go's HTTP clients;
//! discovery and OpenAPI documents include the backends' groups (`discovery`, `openapi`); the availability
//! controller (`available`), started with [`Aggregator::start`], probes backends and keeps
//! the `Available` conditions (and the merged documents) up to date.

pub mod apiservice;
pub(crate) mod available;
pub(crate) mod discovery;
mod endpoints;
mod long_running;
mod lookup;
pub(crate) mod openapi;
mod pool;
pub mod proxy;
mod replay;
mod replay_budget;
mod retry;
pub mod upgrade;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::body::Body;
use http::{Request, Response};
use parking_lot::RwLock;
use serde_json::Value;

use crate::endpoints::request_info::ApiPath;
use crate::host_cluster::resolver::ServiceResolver;
use crate::registry::scheme::Registry;
use crate::server::front::FrontHandler;
use crate::server::generic::GenericApiServer;
use crate::user::UserInfo;
use apiservice::APIService;
use proxy::{Backends, ProxyError};
pub use replay_budget::{DEFAULT_REPLAY_BUDGET, ReplayBudget};

/// How often backends are probed when not configured, as upstream (every 30 s).
pub const DEFAULT_CHECK_INTERVAL: Duration = Duration::from_secs(30);

/// What an [`Aggregator`] needs.
pub struct AggregatorOptions {
    /// The front-proxy client certificate (PEM chain) presented to backends.
    pub proxy_client_cert_pem: String,
    /// The key of the front-proxy client certificate (PEM).
    pub proxy_client_key_pem: String,
    /// Resolves APIService service references to backend addresses.
    pub resolver: Arc<dyn ServiceResolver>,
    /// How often backends are probed (and their discovery and OpenAPI fetched).
    pub check_interval: Duration,
    /// The most bytes that copies of request bodies kept to send them to another endpoint
    /// may hold together ([`DEFAULT_REPLAY_BUDGET`] is a sound choice): a body that finds no
    /// room is proxied all the same, only not sent twice once read.
    pub replay_budget_bytes: usize,
}

/// The aggregator state shared by the request path and the availability controller.
pub struct Aggregator {
    resolver: Arc<dyn ServiceResolver>,
    check_interval: Duration,
    backends: Backends,
    registry: OnceLock<Arc<Registry>>,
    state: RwLock<State>,
    generation: AtomicU64,
    endpoints: endpoints::EndpointHealth,
    lookup: lookup::ServiceLookup,
    replay_budget: ReplayBudget,
}

/// What the controller observed in its last pass.
#[derive(Clone, Default, PartialEq)]
pub(crate) struct State {
    /// Every APIService.
    pub(crate) services: Vec<APIService>,
    /// Per remote group-version (`<g>/<v>`): its `APIVersionDiscovery` document.
    pub(crate) discovery: HashMap<String, Value>,
    /// Per remote APIService name: the backend's `/openapi/v2` document.
    pub(crate) openapi_v2: HashMap<String, openapi::Downloaded<Value>>,
    /// Per remote group-version key (`apis/<g>/<v>`): the backend's OpenAPI v3 document.
    pub(crate) openapi_v3: HashMap<String, openapi::Downloaded<Vec<u8>>>,
}

impl Aggregator {
    /// An aggregator presenting the given front-proxy certificate to backends.
    pub fn new(options: AggregatorOptions) -> Result<Self, ProxyError> {
        Ok(Aggregator {
            resolver: options.resolver,
            check_interval: options.check_interval,
            backends: Backends::new(
                &options.proxy_client_cert_pem,
                &options.proxy_client_key_pem,
            )?,
            registry: OnceLock::new(),
            state: RwLock::new(State::default()),
            generation: AtomicU64::new(0),
            endpoints: endpoints::EndpointHealth::default(),
            lookup: lookup::ServiceLookup::default(),
            replay_budget: ReplayBudget::new(options.replay_budget_bytes),
        })
    }

    /// Starts the availability controller for the APIServices stored by `server` (which
    /// must serve [`apiservice::group`]); it runs until the returned task is aborted.
    pub fn start(self: &Arc<Self>, server: &Arc<GenericApiServer>) -> tokio::task::JoinHandle<()> {
        let _ = self.registry.set(server.registry().clone());
        let this = self.clone();
        tokio::spawn(async move { available::run(this).await })
    }

    /// The budget of the copies of request bodies kept for retries: its bound and what the
    /// copies held now reserve.
    pub fn replay_budget(&self) -> &ReplayBudget {
        &self.replay_budget
    }

    /// A counter that changes whenever the documents the aggregator contributes change.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Serves `req` if it is for a group-version registered by a remote APIService (proxied,
    /// or 503 when unavailable) or for a group only remote APIServices serve; otherwise hands
    /// the request back.
    ///
    /// The path is read as the router and the authorizer read it
    /// (read once on arrival, `ParsedRequest::api_path`), and a group-version is the APIService's only when both its
    /// group and its version are the path's: `/apis/example.com/v1alpha1.wardle/…` is not
    /// `v1alpha1.wardle.example.com`'s, though the names join alike.
    pub async fn handle(
        &self,
        req: Request<Body>,
        user: &UserInfo,
    ) -> Result<Response<Body>, Request<Body>> {
        let parsed = crate::authz::ParsedRequest::of_request(&req);
        let (group, version) = match parsed.api_path().cloned() {
            Some(ApiPath::Group(group)) => {
                return match discovery::api_group(&self.state.read().services, &group) {
                    Some(doc) => Ok(discovery::json(&doc)),
                    None => Err(req),
                };
            }
            Some(ApiPath::GroupVersion(g, v) | ApiPath::Unknown(g, v)) => (g, v),
            Some(ApiPath::Resource(r)) => (r.group, r.version),
            _ => return Err(req),
        };
        if group.is_empty() {
            // The core group is never aggregated.
            return Err(req);
        }
        match self.current(&group, &version).await {
            Some(service) if service.is_remote() => Ok(self.proxy(&service, req, user).await),
            _ => Err(req),
        }
    }

    /// The stored APIService of `group` and `version`.
    async fn current(&self, group: &str, version: &str) -> Option<Arc<APIService>> {
        let registry = self.registry.get()?;
        let service = self
            .lookup
            .get(registry, &format!("{version}.{group}"))
            .await?;
        (service.spec.group == group && service.spec.version == version).then_some(service)
    }

    async fn proxy(
        &self,
        service: &APIService,
        req: Request<Body>,
        user: &UserInfo,
    ) -> Response<Body> {
        if !service.is_available() {
            return proxy::unavailable();
        }
        let Some(reference) = &service.spec.service else {
            return proxy::unavailable();
        };
        let Ok(all) = self.resolver.resolve_all(
            &reference.namespace,
            &reference.name,
            reference.port_or_default(),
        ) else {
            return proxy::unavailable();
        };
        let Some(first) = all.first() else {
            return proxy::unavailable();
        };
        if upgrade::is_upgrade(req.headers()) {
            // An upgraded connection stays with one endpoint: the first in order, not retried
            // (the request's upgrade handle cannot be handed to a second attempt).
            let Some(endpoint) = self.endpoints.order(all).into_iter().next() else {
                return proxy::unavailable();
            };
            return match self.backends.upgrade_client(service, &endpoint) {
                Ok(client) => match proxy::forward(&client, &endpoint, req, user).await {
                    Ok(res) => res,
                    Err(e) => {
                        self.endpoints.set_ready(&endpoint.authority, false);
                        crate::endpoints::response::plain_text(
                            http::StatusCode::SERVICE_UNAVAILABLE,
                            format!(
                                "{e}
"
                            ),
                        )
                    }
                },
                Err(e) => {
                    tracing::warn!(error = %e, "no client for APIService");
                    proxy::unavailable()
                }
            };
        }
        // One client for every endpoint: they share the service's TLS name and CA.
        match self.backends.client(service, first) {
            Ok(client) => {
                endpoints::forward(
                    &self.endpoints,
                    &client,
                    all,
                    req,
                    user,
                    &self.replay_budget,
                )
                .await
            }
            Err(e) => {
                tracing::warn!(error = %e, "no client for APIService");
                proxy::unavailable()
            }
        }
    }

    /// Adds the available remote group-versions to a legacy `APIGroupList`.
    pub fn merge_group_list(&self, list: &mut Value) {
        discovery::merge_group_list(&self.state.read(), list);
    }

    /// Adds the available remote group-versions to an aggregated `APIGroupDiscoveryList`.
    pub fn merge_aggregated(&self, list: &mut Value) {
        discovery::merge_aggregated(&self.state.read(), list);
    }

    /// Adds the backends' paths and definitions to a Swagger 2.0 document.
    pub fn merge_openapi_v2(&self, doc: &mut Value) {
        openapi::merge_v2(&self.state.read(), doc);
    }

    /// The backends' OpenAPI v3 documents, as `(apis/<g>/<v>, document)`.
    pub fn openapi_v3_documents(&self) -> Vec<(String, Vec<u8>)> {
        openapi::v3_documents(&self.state.read())
    }

    /// Replaces the observed state, bumping the generation when it changed.
    pub(crate) fn set_state(&self, state: State) {
        let mut current = self.state.write();
        if *current != state {
            *current = state;
            self.generation.fetch_add(1, Ordering::AcqRel);
        }
    }
}

/// The server hands an aggregator every request before its own routes, and asks it for the
/// remote group-versions of its documents.
#[async_trait::async_trait]
impl FrontHandler for Aggregator {
    async fn handle(
        &self,
        req: Request<Body>,
        user: &UserInfo,
    ) -> Result<Response<Body>, Request<Body>> {
        Aggregator::handle(self, req, user).await
    }

    fn generation(&self) -> u64 {
        Aggregator::generation(self)
    }

    fn merge_group_list(&self, list: &mut Value) {
        Aggregator::merge_group_list(self, list)
    }

    fn merge_aggregated(&self, list: &mut Value) {
        Aggregator::merge_aggregated(self, list)
    }

    fn merge_openapi_v2(&self, doc: &mut Value) {
        Aggregator::merge_openapi_v2(self, doc)
    }

    fn openapi_v3_documents(&self) -> Vec<(String, Vec<u8>)> {
        Aggregator::openapi_v3_documents(self)
    }
}
