//! The host's `admissionregistration.k8s.io/v1beta1` `MutatingAdmissionPolicy` and
//! `MutatingAdmissionPolicyBinding`, field for field as Kubernetes 1.34 serves them (beta, off
//! unless the host enables it). Declared here because k8s-openapi has them only for some
//! Kubernetes versions, and a library never picks k8s-openapi's version; their parts shared with
//! the validating policies are k8s-openapi's `v1` types, which have the same fields.

use std::borrow::Cow;

use k8s_openapi::api::admissionregistration::v1 as reg;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a mutating admission policy does.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MutatingAdmissionPolicySpec {
    /// The kind of the parameters its bindings name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub param_kind: Option<reg::ParamKind>,
    /// The requests it takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_constraints: Option<reg::MatchResources>,
    /// Named expressions the mutations may use as `variables.<name>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variables: Option<Vec<reg::Variable>>,
    /// The mutations, applied in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutations: Option<Vec<Mutation>>,
    /// `Fail` (the default) or `Ignore`: what an error means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_policy: Option<String>,
    /// Conditions every one of which must hold for the policy to apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_conditions: Option<Vec<reg::MatchCondition>>,
    /// `Never` or `IfNeeded`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reinvocation_policy: Option<String>,
}

/// One mutation: an apply configuration or a JSON patch, built by a CEL expression.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Mutation {
    /// `ApplyConfiguration` or `JSONPatch`.
    pub patch_type: String,
    /// The expression of an `ApplyConfiguration` mutation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apply_configuration: Option<MutationExpression>,
    /// The expression of a `JSONPatch` mutation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_patch: Option<MutationExpression>,
}

/// The CEL expression of a mutation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MutationExpression {
    /// The expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expression: Option<String>,
}

/// What a binding of a mutating admission policy says.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MutatingAdmissionPolicyBindingSpec {
    /// The policy it binds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_name: Option<String>,
    /// Its parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub param_ref: Option<reg::ParamRef>,
    /// The requests it narrows the policy to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_resources: Option<reg::MatchResources>,
}

/// A host object: its metadata and spec.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct HostObject<S> {
    /// The object's metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Its spec.
    #[serde(default)]
    pub spec: S,
}

/// A mutating admission policy of the host.
pub type MutatingAdmissionPolicy = HostObject<MutatingAdmissionPolicySpec>;
/// A binding of a mutating admission policy of the host.
pub type MutatingAdmissionPolicyBinding = HostObject<MutatingAdmissionPolicyBindingSpec>;

/// The names a kind of [`HostObject`] goes by.
pub trait Named {
    /// The kind.
    const KIND: &'static str;
    /// The plural resource name.
    const PLURAL: &'static str;
}

impl Named for MutatingAdmissionPolicySpec {
    const KIND: &'static str = "MutatingAdmissionPolicy";
    const PLURAL: &'static str = "mutatingadmissionpolicies";
}

impl Named for MutatingAdmissionPolicyBindingSpec {
    const KIND: &'static str = "MutatingAdmissionPolicyBinding";
    const PLURAL: &'static str = "mutatingadmissionpolicybindings";
}

impl<S: Named> kube::Resource for HostObject<S> {
    type DynamicType = ();
    type Scope = kube::core::ClusterResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        S::KIND.into()
    }

    fn group(_: &()) -> Cow<'_, str> {
        "admissionregistration.k8s.io".into()
    }

    fn version(_: &()) -> Cow<'_, str> {
        "v1beta1".into()
    }

    fn plural(_: &()) -> Cow<'_, str> {
        S::PLURAL.into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}
