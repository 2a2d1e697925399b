//! The core-group (`v1`) resources of the development host: `Namespace` and `ConfigMap`,
//! served at their real paths so extension servers read and watch them as in a cluster.

use std::collections::BTreeMap;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::admission::lifecycle::{NamespaceLifecycle, NamespaceSource, NamespaceState};
use crate::admission::{AdmissionAttributes, AdmissionPlugin};
use crate::error::ApiError;
use crate::registry::store::Store;
use crate::registry::store::strategy::DefaultStrategy;
use crate::storage::Storage;

/// A namespace of the development host (`/api/v1/namespaces/<name>`).
#[derive(
    crate::ApiResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema,
)]
#[resource(
    group = "",
    version = "v1",
    kind = "Namespace",
    status = "NamespaceStatus",
    shortname = "ns",
    crate = "crate"
)]
pub struct NamespaceSpec {
    /// Finalizers that must be empty before the namespace is removed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub finalizers: Vec<String>,
}

/// The phase of a namespace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NamespaceStatus {
    /// `Active` or `Terminating`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
}

/// A config map of the development host (`/api/v1/namespaces/<ns>/configmaps/<name>`).
#[derive(
    crate::ApiResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema,
)]
#[resource(
    group = "",
    version = "v1",
    kind = "ConfigMap",
    namespaced,
    flat,
    shortname = "cm",
    crate = "crate"
)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMapSpec {
    /// Configuration data.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub data: BTreeMap<String, String>,
}

/// The namespaces a host stores itself (the development host's, the local host's), read from
/// its storage on each request: a namespace is there as soon as its create has answered.
pub(crate) struct StoredNamespaces {
    store: Store<Namespace>,
}

impl StoredNamespaces {
    /// The namespaces kept in `storage`.
    pub(crate) fn new(storage: Arc<dyn Storage>) -> Self {
        StoredNamespaces {
            store: Store::new(storage, Arc::new(DefaultStrategy)),
        }
    }
}

#[async_trait::async_trait]
impl NamespaceSource for StoredNamespaces {
    async fn state(
        &self,
        name: &str,
        _attrs: &AdmissionAttributes<'_>,
    ) -> Result<NamespaceState, ApiError> {
        match self.store.get_object(None, name).await {
            Ok(ns) => Ok(NamespaceState::of_phase(
                ns.status.as_ref().and_then(|s| s.phase.as_deref()),
            )),
            Err(e) if e.code == 404 => Ok(NamespaceState::Missing),
            Err(e) => Err(e),
        }
    }
}

/// `NamespaceLifecycle` over the namespaces kept in `storage`, as a cluster runs it: no content
/// in a namespace that does not exist or is terminating, no deleting `default`, `kube-system`
/// or `kube-public`.
pub(crate) fn namespace_lifecycle(storage: Arc<dyn Storage>) -> Arc<dyn AdmissionPlugin> {
    Arc::new(NamespaceLifecycle::reading(Arc::new(
        StoredNamespaces::new(storage),
    )))
}
