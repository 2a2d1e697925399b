//! The host's `admissionregistration.k8s.io/v1` webhook configurations, so extension servers
//! read and watch them (`MutatingAdmissionWebhook`, `ValidatingAdmissionWebhook`) as in a
//! cluster.

use k8s_openapi::api::admissionregistration::v1 as reg;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The group of the webhook configurations.
pub const GROUP: &str = "admissionregistration.k8s.io";

/// Mutating webhooks of the host
/// (`/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/<name>`).
#[derive(
    crate::ApiResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema,
)]
#[resource(
    group = "admissionregistration.k8s.io",
    version = "v1",
    kind = "MutatingWebhookConfiguration",
    flat,
    crate = "crate"
)]
pub struct MutatingWebhookConfigurationSpec {
    /// The webhooks, called in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub webhooks: Vec<reg::MutatingWebhook>,
}

/// Validating webhooks of the host
/// (`/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/<name>`).
#[derive(
    crate::ApiResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema,
)]
#[resource(
    group = "admissionregistration.k8s.io",
    version = "v1",
    kind = "ValidatingWebhookConfiguration",
    flat,
    crate = "crate"
)]
pub struct ValidatingWebhookConfigurationSpec {
    /// The webhooks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub webhooks: Vec<reg::ValidatingWebhook>,
}
