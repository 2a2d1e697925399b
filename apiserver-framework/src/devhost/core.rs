//! The core-group (`v1`) resources of the development host: `Namespace` and `ConfigMap`,
//! served at their real paths so extension servers read and watch them as in a cluster.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
