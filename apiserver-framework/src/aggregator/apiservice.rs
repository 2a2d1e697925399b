//! The `apiregistration.k8s.io/v1` `APIService`: registers a group-version served by a
//! backend API server (or locally), and reports whether it is available.

use base64::Engine as _;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::FieldError;
use crate::registry::group::Group;
use crate::registry::store::strategy::Strategy;

/// The API group of [`APIService`].
pub const GROUP: &str = "apiregistration.k8s.io";

/// The only condition type of an APIService.
pub const AVAILABLE: &str = "Available";

/// Where and how to reach the API server that serves one group-version.
#[derive(
    crate::ApiResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema,
)]
#[resource(
    group = "apiregistration.k8s.io",
    version = "v1",
    kind = "APIService",
    status = "APIServiceStatus",
    crate = "crate",
    derive = "PartialEq",
    printcolumn(
        name = "Service",
        json_path = ".spec.service.name",
        description = "The service fronting the backend API server; empty for a local APIService"
    ),
    printcolumn(
        name = "Available",
        json_path = ".status.conditions[0].status",
        description = "Whether the group-version is available"
    ),
    printcolumn(
        name = "Age",
        type = "date",
        json_path = ".metadata.creationTimestamp",
        description = "Time since the APIService was created"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct APIServiceSpec {
    /// The service of the backend API server; absent means the group-version is served
    /// locally.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<ServiceReference>,
    /// The API group name this APIService is for.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// The API version this APIService is for.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// Disables TLS certificate verification of the backend (strongly discouraged).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure_skip_tls_verify: bool,
    /// PEM CA bundle that validates the backend's serving certificate (base64 on the wire).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        serialize_with = "base64_bytes",
        deserialize_with = "from_base64_bytes"
    )]
    #[schemars(with = "Option<String>")]
    pub ca_bundle: Vec<u8>,
    /// Priority of the group: groups with a higher minimum come first in discovery.
    pub group_priority_minimum: i32,
    /// Priority of this version within its group: the highest is preferred.
    pub version_priority: i32,
}

/// A reference to a Service.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ServiceReference {
    /// The namespace of the service.
    #[serde(default)]
    pub namespace: String,
    /// The name of the service.
    #[serde(default)]
    pub name: String,
    /// The port of the service (default 443).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
}

impl ServiceReference {
    /// The port, 443 when not given.
    pub fn port_or_default(&self) -> u16 {
        self.port
            .and_then(|p| u16::try_from(p).ok())
            .filter(|p| *p != 0)
            .unwrap_or(443)
    }
}

/// The observed state of an APIService.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct APIServiceStatus {
    /// The current conditions (only `Available`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<APIServiceCondition>,
}

/// One condition of an APIService.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct APIServiceCondition {
    /// The condition type (`Available`).
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// When the status last changed (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    /// A CamelCase reason for the last transition.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// A human-readable explanation.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

impl APIService {
    /// The `Available` condition, if reported.
    pub fn available_condition(&self) -> Option<&APIServiceCondition> {
        self.status
            .as_ref()?
            .conditions
            .iter()
            .find(|c| c.type_ == AVAILABLE)
    }

    /// Whether the `Available` condition is `True`.
    pub fn is_available(&self) -> bool {
        self.available_condition()
            .is_some_and(|c| c.status == "True")
    }

    /// Whether a backend serves the group-version (rather than this server).
    pub fn is_remote(&self) -> bool {
        self.spec.service.is_some()
    }
}

/// The group holding [`APIService`], for the aggregator's own server.
pub fn group() -> Group {
    Group::new(GROUP).resource_with::<APIService>(APIServiceStrategy)
}

/// Validates APIServices as upstream does: the name is `<version>.<group>`, group and
/// version are set, priorities are in range.
pub(crate) struct APIServiceStrategy;

impl Strategy<APIService> for APIServiceStrategy {
    fn validate(&self, obj: &APIService) -> Vec<FieldError> {
        validate(obj)
    }
}

fn validate(obj: &APIService) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = &obj.spec;
    let name = obj.metadata.name.clone().unwrap_or_default();
    let expected = format!("{}.{}", spec.version, spec.group);
    if name != expected {
        errs.push(FieldError::invalid(
            "metadata.name",
            name.as_str(),
            format!("must be `spec.version+\".\"+spec.group`: {expected:?}"),
        ));
    }
    if spec.group.is_empty() && spec.version != "v1" {
        errs.push(FieldError::required(
            "spec.group",
            "only v1 may have an empty group and it better be legacy kube",
        ));
    }
    if spec.version.is_empty() {
        errs.push(FieldError::required("spec.version", ""));
    }
    if !(1..=20000).contains(&spec.group_priority_minimum) {
        errs.push(FieldError::invalid(
            "spec.groupPriorityMinimum",
            spec.group_priority_minimum,
            "must be positive and less than 20000",
        ));
    }
    if !(1..=1000).contains(&spec.version_priority) {
        errs.push(FieldError::invalid(
            "spec.versionPriority",
            spec.version_priority,
            "must be positive and less than 1000",
        ));
    }
    match &spec.service {
        None => {
            if spec.insecure_skip_tls_verify {
                errs.push(FieldError::invalid(
                    "spec.insecureSkipTLSVerify",
                    true,
                    "must be false if service is nil",
                ));
            }
            if !spec.ca_bundle.is_empty() {
                errs.push(FieldError::invalid(
                    "spec.caBundle",
                    format!("{} bytes", spec.ca_bundle.len()),
                    "must be empty if service is nil",
                ));
            }
        }
        Some(service) => {
            if service.namespace.is_empty() {
                errs.push(FieldError::required("spec.service.namespace", ""));
            }
            if service.name.is_empty() {
                errs.push(FieldError::required("spec.service.name", ""));
            }
            if let Some(port) = service.port
                && !(1..=65535).contains(&port)
            {
                errs.push(FieldError::invalid(
                    "spec.service.port",
                    port,
                    "must be a valid port number (1-65535, inclusive)",
                ));
            }
            if spec.insecure_skip_tls_verify && !spec.ca_bundle.is_empty() {
                errs.push(FieldError::invalid(
                    "spec.insecureSkipTLSVerify",
                    true,
                    "may not be true if caBundle is present",
                ));
            }
        }
    }
    errs
}

fn base64_bytes<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
}

fn from_base64_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    let text: Option<String> = Option::deserialize(d)?;
    match text {
        None => Ok(Vec::new()),
        Some(t) => base64::engine::general_purpose::STANDARD
            .decode(t.as_bytes())
            .map_err(serde::de::Error::custom),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn service(name: &str, group: &str, version: &str) -> APIService {
        APIService::new(
            name,
            APIServiceSpec {
                service: Some(ServiceReference {
                    namespace: "ns".into(),
                    name: "svc".into(),
                    port: None,
                }),
                group: group.into(),
                version: version.into(),
                group_priority_minimum: 1000,
                version_priority: 15,
                ..Default::default()
            },
        )
    }

    #[test]
    fn wire_shape_round_trips() {
        let mut s = service("v1.example.com", "example.com", "v1");
        s.spec.ca_bundle = b"PEM".to_vec();
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["apiVersion"], "apiregistration.k8s.io/v1");
        assert_eq!(v["spec"]["caBundle"], "UEVN");
        assert_eq!(
            v["spec"]["service"],
            json!({"namespace": "ns", "name": "svc"})
        );
        let back: APIService = serde_json::from_value(v).unwrap();
        assert_eq!(back.spec, s.spec);
        assert_eq!(back.spec.service.unwrap().port_or_default(), 443);
    }

    #[test]
    fn name_must_be_version_dot_group() {
        assert!(validate(&service("v1.example.com", "example.com", "v1")).is_empty());
        let errs = validate(&service("wrong", "example.com", "v1"));
        assert_eq!(errs.len(), 1);
        assert_eq!(
            errs[0].to_string(),
            "metadata.name: Invalid value: \"wrong\": must be `spec.version+\".\"+spec.group`: \"v1.example.com\""
        );
    }
}
