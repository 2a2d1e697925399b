//! [`GenericApiServerBuilder`]: what a [`GenericApiServer`] serves, its storage, checks,
//! delegate and layers.

use std::future::Future;
use std::sync::Arc;

use tower::Layer;

use super::GenericApiServer;
use crate::admission::{AdmissionChain, AdmissionPlugin};
use crate::registry::group::{Group, RegistrationError};
use crate::registry::scheme::Registry;
use crate::server::filters::filter::ChainInner;
use crate::server::filters::{ChainLayers, ChainPosition, ChainService};
use crate::server::front::FrontHandler;
use crate::server::health::{HealthCheck, HealthChecks};
use crate::server::lifecycle::Lifecycle;
use crate::server::version::VersionInfo;
use crate::storage::Storage;
use crate::storage::memory::MemoryStorage;

/// Builds a [`GenericApiServer`].
pub struct GenericApiServerBuilder {
    pub(super) name: String,
    pub(super) groups: Vec<Group>,
    pub(super) admission: Vec<Arc<dyn AdmissionPlugin>>,
    pub(super) storage: Option<Arc<dyn Storage>>,
    pub(super) delegate: Option<Arc<GenericApiServer>>,
    pub(super) health_checks: Vec<Arc<dyn HealthCheck>>,
    pub(super) healthz_checks: Vec<Arc<dyn HealthCheck>>,
    pub(super) readiness_checks: Vec<Arc<dyn HealthCheck>>,
    pub(super) version: VersionInfo,
    pub(super) aggregator: Option<Arc<dyn FrontHandler>>,
    pub(super) lifecycle: Lifecycle,
    pub(super) layers: ChainLayers,
}

impl GenericApiServerBuilder {
    /// Serves the resources of `group`.
    pub fn group(mut self, group: Group) -> Self {
        self.groups.push(group);
        self
    }

    /// Adds an admission plugin (plugins run in the order added).
    pub fn admission(self, plugin: impl AdmissionPlugin) -> Self {
        self.admission_arc(Arc::new(plugin))
    }

    /// Adds a shared admission plugin.
    pub fn admission_arc(mut self, plugin: Arc<dyn AdmissionPlugin>) -> Self {
        self.admission.push(plugin);
        self
    }

    /// Stores objects in `storage` (default: a new in-memory store).
    pub fn storage(mut self, storage: Arc<dyn Storage>) -> Self {
        self.storage = Some(storage);
        self
    }

    /// Hands every request this server does not serve to `delegate`.
    pub fn delegate_to(mut self, delegate: impl Into<Arc<GenericApiServer>>) -> Self {
        self.delegate = Some(delegate.into());
        self
    }

    /// Adds a check to `/healthz`, `/livez` and `/readyz`.
    pub fn health_check(mut self, check: Arc<dyn HealthCheck>) -> Self {
        self.health_checks.push(check);
        self
    }

    /// Adds a check to `/healthz` and `/readyz`, not `/livez` (as upstream adds the
    /// encryption providers' checks: a KMS plugin's outage must not restart the server).
    pub(crate) fn healthz_check(mut self, check: Arc<dyn HealthCheck>) -> Self {
        self.healthz_checks.push(check);
        self
    }

    /// Adds a check to `/readyz` only.
    pub fn readiness_check(mut self, check: Arc<dyn HealthCheck>) -> Self {
        self.readiness_checks.push(check);
        self
    }

    /// Sets what `/version` reports.
    pub fn version(mut self, version: VersionInfo) -> Self {
        self.version = version;
        self
    }

    /// Runs `hook` once the server listens; until it returns `Ok`, the `/readyz` check
    /// `poststarthook/<name>` fails. A second hook of the same name is ignored.
    pub fn post_start_hook<F, Fut>(mut self, name: &str, hook: F) -> Self
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), String>> + Send + 'static,
    {
        if let Some(check) = self.lifecycle.add_post_start_hook(name, hook) {
            self.readiness_checks.push(Arc::new(check));
        }
        self
    }

    /// Runs `hook` when shutdown begins, before the listener stops accepting.
    pub fn pre_shutdown_hook<F, Fut>(self, name: &str, hook: F) -> Self
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), String>> + Send + 'static,
    {
        self.lifecycle.add_pre_shutdown_hook(name, hook);
        self
    }

    /// Fronts the backends of `aggregator`'s APIServices (an `aggregator::Aggregator`; this
    /// server should also serve `aggregator::apiservice::group()`).
    pub fn aggregator(mut self, aggregator: Arc<dyn FrontHandler>) -> Self {
        self.aggregator = Some(aggregator);
        self
    }

    /// Runs `layer` at `position` of the handler chain in front of this server (the
    /// counterpart of upstream's `BuildHandlerChainFunc`); of several layers at one position,
    /// the one added first runs first. A layer is any tower layer whose service answers every
    /// request, e.g. `axum::middleware::from_fn`; see [`ChainPosition`] for what it sees
    /// where.
    ///
    /// ```no_run
    /// use apiserver_framework::server::GenericApiServer;
    /// use apiserver_framework::server::filters::ChainPosition;
    /// use apiserver_framework::user::UserInfo;
    /// use axum::{extract::Request, middleware::{self, Next}};
    ///
    /// let server = GenericApiServer::builder("example")
    ///     .layer(
    ///         ChainPosition::AfterAuthentication,
    ///         middleware::from_fn(|req: Request, next: Next| async move {
    ///             let user = req.extensions().get::<UserInfo>().map(|u| u.username.clone());
    ///             tracing::info!(?user, path = req.uri().path(), "request");
    ///             next.run(req).await
    ///         }),
    ///     )
    ///     .build();
    /// ```
    pub fn layer<L>(mut self, position: ChainPosition, layer: L) -> Self
    where
        L: Layer<ChainService> + Send + Sync + 'static,
        L::Service: ChainInner,
    {
        self.layers.add(position, layer);
        self
    }

    /// Adds the layers of `layers` ([`GenericApiServerBuilder::layer`]).
    pub fn layers(mut self, layers: &ChainLayers) -> Self {
        self.layers.extend(layers);
        self
    }

    /// Builds the server.
    ///
    /// # Panics
    /// When a group cannot serve what it registered ([`Group::check`]); [`Self::try_build`]
    /// reports that as an error instead.
    pub fn build(self) -> GenericApiServer {
        self.try_build().unwrap_or_else(|e| panic!("{e}"))
    }

    /// Builds the server, or reports the first [`RegistrationError`] of its groups (a resource
    /// registered in another group than its type's, a subresource of a resource not served…).
    pub fn try_build(self) -> Result<GenericApiServer, RegistrationError> {
        for g in &self.groups {
            g.check()?;
        }
        let storage = self
            .storage
            .unwrap_or_else(|| Arc::new(MemoryStorage::new()) as Arc<dyn Storage>);
        let resources = self
            .groups
            .into_iter()
            .flat_map(|g| g.build(&storage))
            .collect();
        let healthz = HealthChecks::new("healthz");
        let livez = HealthChecks::new("livez");
        let readyz = HealthChecks::new("readyz");
        for c in &self.health_checks {
            healthz.add(c.clone());
            livez.add(c.clone());
            readyz.add(c.clone());
        }
        for c in self.healthz_checks {
            healthz.add(c.clone());
            readyz.add(c);
        }
        for c in self.readiness_checks {
            readyz.add(c);
        }
        readyz.add(Arc::new(self.lifecycle.shutdown_check()));
        Ok(GenericApiServer {
            name: self.name,
            registry: Arc::new(Registry::new(resources)),
            admission: Arc::new(AdmissionChain::new(self.admission)),
            delegate: self.delegate,
            healthz,
            livez,
            readyz,
            version: self.version,
            aggregator: self.aggregator,
            lifecycle: self.lifecycle,
            layers: self.layers,
            documents: parking_lot::RwLock::new(None),
        })
    }
}
