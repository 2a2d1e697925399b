//! `NamespaceLifecycle`: no new content in a namespace the cluster does not have or is
//! terminating, and no deleting the namespaces every cluster keeps (upstream's
//! `plugin/pkg/admission/namespace/lifecycle`).
//!
//! It reads namespaces through a [`NamespaceSource`]: the host cluster's, watched through
//! its client ([`HostObjects`], production mode), or those a server stores itself (the local
//! host of `local` mode, the development host).

use std::sync::Arc;
use std::time::Duration;

use crate::admission::host::{HostObjects, wait_synced};
use crate::admission::{AdmissionAttributes, AdmissionPlugin, Operation, Phases};
use crate::error::{ApiError, StatusCause, StatusDetails};

/// The plugin's name.
pub const NAME: &str = "NamespaceLifecycle";

/// The namespaces that may not be deleted (upstream's `immortalNamespaces`: `default`,
/// `kube-system` and `kube-public`).
pub const IMMORTAL_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// How long a create waits for the cache to see a namespace it does not know yet.
const MISSING_NAMESPACE_WAIT: Duration = Duration::from_millis(50);

/// What the plugin needs to know of a namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NamespaceState {
    /// There is no such namespace.
    Missing,
    /// It exists and takes new content.
    Active,
    /// Its `status.phase` is `Terminating`: it takes no new content.
    Terminating,
}

impl NamespaceState {
    /// The state of a namespace that exists with `status.phase` `phase`.
    pub fn of_phase(phase: Option<&str>) -> Self {
        if phase == Some("Terminating") {
            NamespaceState::Terminating
        } else {
            NamespaceState::Active
        }
    }
}

/// Where the plugin reads namespaces.
#[async_trait::async_trait]
pub trait NamespaceSource: Send + Sync + 'static {
    /// The state of namespace `name`, asked for the request `attrs` (which a source may refuse,
    /// e.g. while its cache is not ready).
    async fn state(
        &self,
        name: &str,
        attrs: &AdmissionAttributes<'_>,
    ) -> Result<NamespaceState, ApiError>;
}

/// The host cluster's namespaces, from the watch cache (waiting for its first list), and read
/// from the host when the cache does not have them, as upstream's plugin reads them.
#[async_trait::async_trait]
impl NamespaceSource for HostObjects {
    async fn state(
        &self,
        name: &str,
        attrs: &AdmissionAttributes<'_>,
    ) -> Result<NamespaceState, ApiError> {
        wait_synced(&self.namespaces, attrs).await?;
        let mut cached = self.cached_namespace(name);
        if cached.is_none() && attrs.operation == Operation::Create {
            tokio::time::sleep(MISSING_NAMESPACE_WAIT).await;
            cached = self.cached_namespace(name);
        }
        let found = match cached {
            Some(ns) => Some((*ns).clone()),
            None => self.namespace(name).await?,
        };
        Ok(match found {
            None => NamespaceState::Missing,
            Some(ns) => {
                NamespaceState::of_phase(ns.status.as_ref().and_then(|s| s.phase.as_deref()))
            }
        })
    }
}

/// Refuses writes (other than deletes) in namespaces that do not exist, creates in
/// terminating ones, and deletes of the [`IMMORTAL_NAMESPACES`].
pub struct NamespaceLifecycle {
    namespaces: Arc<dyn NamespaceSource>,
}

impl NamespaceLifecycle {
    /// The plugin reading namespaces from the host cluster.
    pub fn new(host: HostObjects) -> Self {
        Self::reading(Arc::new(host))
    }

    /// The plugin reading namespaces from `namespaces`.
    pub fn reading(namespaces: Arc<dyn NamespaceSource>) -> Self {
        NamespaceLifecycle { namespaces }
    }
}

/// Upstream's 404 for a missing namespace: `namespaces "<name>" not found`.
pub fn namespace_not_found(name: &str) -> ApiError {
    ApiError::new(404, "NotFound", format!("namespaces {name:?} not found")).with_details(
        StatusDetails {
            name: name.to_string(),
            kind: "namespaces".to_string(),
            ..Default::default()
        },
    )
}

/// Upstream's 403 for a create in a terminating namespace.
pub fn namespace_terminating(attrs: &AdmissionAttributes<'_>, namespace: &str) -> ApiError {
    let mut err = attrs.forbidden(&format!(
        "unable to create new content in namespace {namespace} because it is being terminated"
    ));
    if let Some(details) = err.details.as_mut() {
        details.causes.push(StatusCause {
            reason: "NamespaceTerminating".to_string(),
            message: format!("namespace {namespace} is being terminated"),
            field: "metadata.namespace".to_string(),
        });
    }
    err
}

#[async_trait::async_trait]
impl AdmissionPlugin for NamespaceLifecycle {
    fn name(&self) -> &str {
        NAME
    }

    fn phases(&self) -> Phases {
        Phases::Mutate
    }

    async fn mutate(&self, attrs: &mut AdmissionAttributes<'_>) -> Result<(), ApiError> {
        if attrs.resource.group.is_empty() && attrs.resource.kind == "Namespace" {
            // Every operation on namespaces is allowed, but deleting an immortal one.
            if attrs.operation == Operation::Delete && IMMORTAL_NAMESPACES.contains(&attrs.name) {
                return Err(attrs.forbidden("this namespace may not be deleted"));
            }
            return Ok(());
        }
        let Some(namespace) = attrs.namespace.filter(|n| !n.is_empty()) else {
            return Ok(());
        };
        if attrs.operation == Operation::Delete {
            return Ok(());
        }
        match self.namespaces.state(namespace, attrs).await? {
            NamespaceState::Missing => Err(namespace_not_found(namespace)),
            NamespaceState::Terminating if attrs.operation == Operation::Create => {
                Err(namespace_terminating(attrs, namespace))
            }
            _ => Ok(()),
        }
    }
}
