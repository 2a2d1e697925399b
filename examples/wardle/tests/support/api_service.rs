//! `apiregistration.k8s.io/v1` APIService, which k8s-openapi lacks: the fields wardle's
//! manifests set, refusing unknown ones. Included alone: `#[path = "support/api_service.rs"]`.

#![allow(dead_code)]

use serde::Deserialize;

/// An APIService.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApiService {
    pub api_version: String,
    pub kind: String,
    pub metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    pub spec: ApiServiceSpec,
}

/// Its spec.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApiServiceSpec {
    pub group: String,
    pub version: String,
    pub service: ServiceReference,
    pub ca_bundle: String,
    pub group_priority_minimum: i32,
    pub version_priority: i32,
}

/// The service it names.
#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServiceReference {
    pub namespace: String,
    pub name: String,
    pub port: i32,
}
