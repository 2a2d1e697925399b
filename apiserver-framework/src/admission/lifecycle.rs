//! `NamespaceLifecycle`: no new content in a namespace the host cluster does not have or is
//! terminating (upstream's `plugin/pkg/admission/namespace/lifecycle`).

use std::time::Duration;

use crate::admission::host::{HostObjects, wait_synced};
use crate::error::{ApiError, StatusCause, StatusDetails};
use crate::registry::admission::{AdmissionAttributes, AdmissionPlugin, Operation};

/// The plugin's name.
pub const NAME: &str = "NamespaceLifecycle";

/// How long a create waits for the cache to see a namespace it does not know yet.
const MISSING_NAMESPACE_WAIT: Duration = Duration::from_millis(50);

/// Refuses writes (other than deletes) in namespaces missing on the host, and creates in
/// terminating ones.
pub struct NamespaceLifecycle {
    host: HostObjects,
}

impl NamespaceLifecycle {
    /// The plugin reading namespaces from `host`.
    pub fn new(host: HostObjects) -> Self {
        NamespaceLifecycle { host }
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

    async fn mutate(&self, attrs: &mut AdmissionAttributes<'_>) -> Result<(), ApiError> {
        let Some(namespace) = attrs.namespace.filter(|n| !n.is_empty()) else {
            return Ok(());
        };
        if attrs.operation == Operation::Delete
            || (attrs.resource.group.is_empty() && attrs.resource.kind == "Namespace")
        {
            return Ok(());
        }
        wait_synced(&self.host.namespaces, attrs).await?;
        let mut cached = self.host.cached_namespace(namespace);
        if cached.is_none() && attrs.operation == Operation::Create {
            tokio::time::sleep(MISSING_NAMESPACE_WAIT).await;
            cached = self.host.cached_namespace(namespace);
        }
        let found = match cached {
            Some(ns) => Some((*ns).clone()),
            None => self.host.namespace(namespace).await?,
        };
        let Some(found) = found else {
            return Err(namespace_not_found(namespace));
        };
        let terminating = found
            .status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .is_some_and(|p| p == "Terminating");
        if attrs.operation == Operation::Create && terminating {
            return Err(namespace_terminating(attrs, namespace));
        }
        Ok(())
    }
}
