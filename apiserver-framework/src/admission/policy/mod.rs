//! `ValidatingAdmissionPolicy`: the host cluster's `admissionregistration.k8s.io/v1`
//! `ValidatingAdmissionPolicy` and `ValidatingAdmissionPolicyBinding` objects applied to this
//! server's writes (upstream's `pkg/admission/plugin/policy/validating`).
//!
//! Policies run in name order, each with its bindings (those whose `policyName` names it).
//! A policy applies when its `matchConstraints` and the binding's `matchResources` take the
//! request ([`matching`]); it is evaluated once per parameter the binding names ([`params`]) in
//! CEL ([`evaluation`]), on the objects in the version its rules matched. A failed validation
//! does what the binding's `validationActions` say: `Deny` refuses the request with upstream's
//! Status (reason `Invalid`, 422, unless the validation names another reason), `Warn` returns a
//! `Warning` header, `Audit` records the `validation.policy.admission.k8s.io/validation_failure`
//! audit annotation. A policy's `auditAnnotations` are recorded as `<policy>/<key>`. Errors (an
//! expression that fails, a missing parameter, a bad selector) follow the policy's
//! `failurePolicy`: `Fail` (the default) refuses, `Ignore` lets the request through.

pub(crate) mod evaluation;
pub(crate) mod json_patch;
pub(crate) mod matching;
pub(crate) mod mutating;
pub(crate) mod mutating_kinds;
pub(crate) mod objects;
pub(crate) mod params;

use std::collections::BTreeMap;

use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use serde_json::{Value, json};

use crate::admission::host::{HostObjects, wait_synced};
use crate::admission::programs::Programs;
use crate::admission::webhook::review;
use crate::admission::webhook::versions::Versioned;
use crate::admission::{AdmissionAttributes, AdmissionPlugin, Phases};
use crate::cel::authorizer::evaluate_with_checks;
use crate::error::{ApiError, StatusCause};
use evaluation::{Annotation, Decision, Inputs};
use params::Params;

/// The name of the plugin.
pub const VALIDATING_POLICY_NAME: &str = "ValidatingAdmissionPolicy";

/// The audit annotation a validation failure under the `Audit` action records.
const VALIDATION_FAILURE_ANNOTATION: &str = "validation.policy.admission.k8s.io/validation_failure";

/// A denial: the policy, the binding, why, and the Status reason.
struct Denial {
    policy: String,
    binding: Option<String>,
    message: String,
    reason: String,
}

/// Enforces the host's validating admission policies.
pub struct ValidatingAdmissionPolicyPlugin {
    host: HostObjects,
    params: Params,
    programs: Programs,
}

impl ValidatingAdmissionPolicyPlugin {
    /// The plugin reading policies, bindings and parameters from `host`.
    pub fn new(host: HostObjects) -> Self {
        ValidatingAdmissionPolicyPlugin {
            params: Params::new(host.client.clone()),
            host,
            programs: Programs::default(),
        }
    }
}

/// Whether a policy's errors are ignored (`failurePolicy: Ignore`; unset is `Fail`).
fn ignores_failures(policy: &ValidatingAdmissionPolicy) -> bool {
    policy
        .spec
        .as_ref()
        .and_then(|s| s.failure_policy.as_deref())
        == Some("Ignore")
}

/// The request's namespace as `namespaceObject` (`null` for cluster-scoped resources and
/// namespaces themselves).
pub(crate) async fn namespace_object(
    host: &HostObjects,
    attrs: &AdmissionAttributes<'_>,
) -> Result<Value, ApiError> {
    let is_namespace = attrs.resource.group.is_empty() && attrs.resource.plural == "namespaces";
    let name = attrs.namespace.unwrap_or_default();
    if name.is_empty() || is_namespace {
        return Ok(Value::Null);
    }
    let Some(mut ns) = host.namespace(name).await? else {
        return Ok(Value::Null);
    };
    ns.metadata.managed_fields = None;
    serde_json::to_value(ns).map_err(ApiError::internal)
}

#[async_trait::async_trait]
impl AdmissionPlugin for ValidatingAdmissionPolicyPlugin {
    fn name(&self) -> &str {
        VALIDATING_POLICY_NAME
    }

    fn phases(&self) -> Phases {
        Phases::Validate
    }

    async fn validate(&self, attrs: &AdmissionAttributes<'_>) -> Result<(), ApiError> {
        wait_synced(&self.host.policies, attrs).await?;
        wait_synced(&self.host.policy_bindings, attrs).await?;
        let mut policies = self.host.policies.state();
        if policies.is_empty() {
            return Ok(());
        }
        policies.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let mut bindings = self.host.policy_bindings.state();
        bindings.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let mut denials = Vec::new();
        for policy in &policies {
            self.apply(policy, &bindings, attrs, &mut denials).await?;
        }
        match denials.into_iter().next() {
            None => Ok(()),
            Some(denial) => Err(denied(attrs, denial)),
        }
    }
}

impl ValidatingAdmissionPolicyPlugin {
    /// Applies one policy with its bindings, adding what it denies to `denials`.
    async fn apply(
        &self,
        policy: &ValidatingAdmissionPolicy,
        bindings: &[std::sync::Arc<ValidatingAdmissionPolicyBinding>],
        attrs: &AdmissionAttributes<'_>,
        denials: &mut Vec<Denial>,
    ) -> Result<(), ApiError> {
        let name = policy.metadata.name.clone().unwrap_or_default();
        let Some(spec) = policy.spec.as_ref() else {
            return Ok(());
        };
        let ignore = ignores_failures(policy);
        let config_error = |binding: Option<&str>, why: String| {
            let message = match binding {
                None => format!("failed to configure policy: {why}"),
                Some(_) => format!("failed to configure binding: {why}"),
            };
            Denial {
                policy: name.clone(),
                binding: binding.map(str::to_string),
                message,
                reason: String::new(),
            }
        };
        let version = match &spec.match_constraints {
            None => return Ok(()),
            Some(constraints) => match matching::matches(constraints, &self.host, attrs).await {
                Ok(Some(version)) => version,
                Ok(None) => return Ok(()),
                Err(e) if ignore => {
                    tracing::warn!("admission: policy {name:?}: {}", e.message);
                    return Ok(());
                }
                Err(e) => {
                    denials.push(config_error(None, e.message));
                    return Ok(());
                }
            },
        };
        let mut versioned: Option<(Value, Value, Value)> = None;
        // The request's namespace, read once for all the policy's bindings.
        let checks = attrs.checks();
        let mut namespace_read: Option<Value> = None;
        let mut annotations: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for binding in bindings {
            let Some(binding_spec) = binding.spec.as_ref() else {
                continue;
            };
            if binding_spec.policy_name.as_deref() != Some(name.as_str()) {
                continue;
            }
            let binding_name = binding.metadata.name.clone().unwrap_or_default();
            match matching::binding_matches(&binding_spec.match_resources, &self.host, attrs).await
            {
                Ok(true) => {}
                Ok(false) => continue,
                Err(_) if ignore => continue,
                Err(e) => {
                    denials.push(config_error(Some(&binding_name), e.message));
                    continue;
                }
            }
            let namespace = attrs.namespace.unwrap_or_default();
            let params = match self
                .params
                .collect(
                    spec.param_kind.as_ref(),
                    binding_spec.param_ref.as_ref(),
                    namespace,
                )
                .await
            {
                Ok(params) => params,
                Err(_) if ignore => continue,
                Err(e) => {
                    denials.push(config_error(Some(&binding_name), e));
                    continue;
                }
            };
            if params.is_empty() {
                continue;
            }
            if versioned.is_none() {
                let objects = Versioned::new(attrs, version)?;
                let review = review::request(attrs, &objects, "");
                let mut request = review["request"].clone();
                if let Some(map) = request.as_object_mut() {
                    map.remove("object");
                    map.remove("oldObject");
                    map.remove("uid");
                }
                versioned = Some((
                    objects.object.unwrap_or(Value::Null),
                    objects.old_object.unwrap_or(Value::Null),
                    request,
                ));
            }
            let Some((object, old_object, request)) = versioned.as_ref() else {
                continue;
            };
            if namespace_read.is_none() {
                namespace_read = Some(namespace_object(&self.host, attrs).await?);
            }
            let namespace_object = namespace_read.as_ref().unwrap_or(&Value::Null);
            let actions = binding_spec.validation_actions.clone().unwrap_or_default();
            for param in &params {
                let outcome =
                    evaluate_with_checks(&checks, attrs.authorizer, attrs.user, |checks| {
                        evaluation::evaluate(
                            &self.programs,
                            spec,
                            &Inputs {
                                object,
                                old_object,
                                request,
                                params: param,
                                namespace_object,
                                checks,
                            },
                        )
                    })
                    .await;
                for (index, decision) in outcome.decisions.into_iter().enumerate() {
                    let (message, reason) = match decision {
                        Decision::Admit => continue,
                        Decision::Error(e) if ignore => {
                            tracing::warn!(
                                "admission: policy {name:?} with binding {binding_name:?}: {e}"
                            );
                            continue;
                        }
                        Decision::Error(e) => (e, String::new()),
                        Decision::Deny { message, reason } => (message, reason),
                    };
                    for action in &actions {
                        match action.as_str() {
                            "Deny" => denials.push(Denial {
                                policy: name.clone(),
                                binding: Some(binding_name.clone()),
                                message: message.clone(),
                                reason: reason.clone(),
                            }),
                            "Warn" => attrs.notes.add_warning(&format!(
                                "Validation failed for ValidatingAdmissionPolicy '{name}' with binding '{binding_name}': {message}"
                            )),
                            "Audit" => {
                                let value = json!([{
                                    "message": message,
                                    "policy": name,
                                    "binding": binding_name,
                                    "expressionIndex": index,
                                    "validationActions": actions,
                                }]);
                                if let Err(e) = attrs
                                    .notes
                                    .add_annotation(VALIDATION_FAILURE_ANNOTATION, &value.to_string())
                                {
                                    tracing::warn!(
                                        "failed to set admission audit annotation {VALIDATION_FAILURE_ANNOTATION} for ValidatingAdmissionPolicy {name} and ValidatingAdmissionPolicyBinding {binding_name}: {e}"
                                    );
                                }
                            }
                            _ => {}
                        }
                    }
                }
                for annotation in outcome.annotations {
                    match annotation {
                        Annotation::Publish { key, value } => {
                            let values = annotations.entry(key).or_default();
                            if !values.contains(&value) {
                                values.push(value);
                            }
                        }
                        Annotation::Error(_) if ignore => {}
                        Annotation::Error(e) => denials.push(Denial {
                            policy: name.clone(),
                            binding: Some(binding_name.clone()),
                            message: e,
                            reason: String::new(),
                        }),
                    }
                }
            }
        }
        for (key, values) in annotations {
            // Each value is at most `MAX_ANNOTATION_VALUE_BYTES`; several distinct ones (from
            // several parameters) are joined, as upstream does.
            let value = values.join(", ");
            let key = format!("{name}/{key}");
            if let Err(e) = attrs.notes.add_annotation(&key, &value) {
                tracing::warn!(
                    "failed to set admission audit annotation {key} to {value} for ValidatingAdmissionPolicy {name}: {e}"
                );
            }
        }
        Ok(())
    }
}

/// Upstream's Status for a denial: `admission.NewForbidden`'s message and details, with the
/// validation's reason (default `Invalid`) and its code, and the message as a cause.
fn denied(attrs: &AdmissionAttributes<'_>, denial: Denial) -> ApiError {
    let message = match &denial.binding {
        Some(binding) => format!(
            "ValidatingAdmissionPolicy '{}' with binding '{binding}' denied request: {}",
            denial.policy, denial.message
        ),
        None => format!(
            "ValidatingAdmissionPolicy '{}' denied request: {}",
            denial.policy, denial.message
        ),
    };
    let mut err = attrs.forbidden(&message);
    let reason = if denial.reason.is_empty() {
        "Invalid".to_string()
    } else {
        denial.reason
    };
    err.code = match reason.as_str() {
        "Forbidden" => 403,
        "Unauthorized" => 401,
        "RequestEntityTooLarge" => 413,
        _ => 422,
    };
    err.reason = reason;
    let details = err.details.get_or_insert_with(Default::default);
    details.causes.push(StatusCause {
        message,
        ..Default::default()
    });
    err
}
