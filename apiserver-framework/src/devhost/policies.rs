//! The host's `admissionregistration.k8s.io/v1` validating admission policies and `v1beta1`
//! mutating admission policies with their bindings, so extension servers enforce them
//! (`ValidatingAdmissionPolicy`, `MutatingAdmissionPolicy`) as in a cluster, and an author tries
//! a policy with `kubectl apply` against the dev host, which fills them in and checks them as
//! kube-apiserver does (`policy_checks`).

use k8s_openapi::api::admissionregistration::v1 as reg;

use crate::admission::policy::mutating_kinds as mutating;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A validating admission policy of the host
/// (`/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/<name>`).
#[derive(
    crate::ApiResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema,
)]
#[resource(
    group = "admissionregistration.k8s.io",
    version = "v1",
    kind = "ValidatingAdmissionPolicy",
    crate = "crate"
)]
pub struct ValidatingAdmissionPolicySpec {
    /// The policy: what it matches, its parameters, variables, validations and audit
    /// annotations.
    #[serde(flatten)]
    pub policy: reg::ValidatingAdmissionPolicySpec,
}

/// A binding of a validating admission policy of the host
/// (`/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/<name>`).
#[derive(
    crate::ApiResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema,
)]
#[resource(
    group = "admissionregistration.k8s.io",
    version = "v1",
    kind = "ValidatingAdmissionPolicyBinding",
    crate = "crate"
)]
pub struct ValidatingAdmissionPolicyBindingSpec {
    /// The binding: its policy, parameters, resources and validation actions.
    #[serde(flatten)]
    pub binding: reg::ValidatingAdmissionPolicyBindingSpec,
}

/// A mutating admission policy of the host
/// (`/apis/admissionregistration.k8s.io/v1beta1/mutatingadmissionpolicies/<name>`).
#[derive(
    crate::ApiResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema,
)]
#[resource(
    group = "admissionregistration.k8s.io",
    version = "v1beta1",
    kind = "MutatingAdmissionPolicy",
    crate = "crate"
)]
pub struct MutatingAdmissionPolicySpec {
    /// The policy: what it matches, its parameters, variables and mutations.
    #[serde(flatten)]
    pub policy: mutating::MutatingAdmissionPolicySpec,
}

/// A binding of a mutating admission policy of the host
/// (`/apis/admissionregistration.k8s.io/v1beta1/mutatingadmissionpolicybindings/<name>`).
#[derive(
    crate::ApiResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema,
)]
#[resource(
    group = "admissionregistration.k8s.io",
    version = "v1beta1",
    kind = "MutatingAdmissionPolicyBinding",
    crate = "crate"
)]
pub struct MutatingAdmissionPolicyBindingSpec {
    /// The binding: its policy, parameters and resources.
    #[serde(flatten)]
    pub binding: mutating::MutatingAdmissionPolicyBindingSpec,
}
