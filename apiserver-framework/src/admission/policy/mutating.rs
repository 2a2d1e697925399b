//! `MutatingAdmissionPolicy`: the host cluster's `admissionregistration.k8s.io/v1beta1`
//! mutating admission policies and their bindings applied to this server's writes (upstream's
//! `pkg/admission/plugin/policy/mutating`). Off unless enabled
//! (`--enable-admission-plugins=MutatingAdmissionPolicy`), as upstream's feature gate of the
//! same name is off in Kubernetes 1.34; the host must serve the kinds (kube-apiserver with that
//! feature gate and `admissionregistration.k8s.io/v1beta1` enabled, or the dev host).
//!
//! Policies run in name order with their bindings, matched as the validating policies are
//! ([`super::matching`]), once per parameter; a policy whose `matchConditions` hold applies its
//! `mutations` in order to the object in the version it matched: an `ApplyConfiguration`'s
//! object is merged into it as server-side apply merges, by the resource's schema in that
//! version (struct fields and maps key by key, `set` and `map` lists item by item, atomic
//! lists and scalars replaced), a `JSONPatch`'s operations are applied to it as upstream's
//! JSON patch library applies them ([`super::json_patch`]). An error (an expression that
//! fails, a patch that does not apply) follows the policy's `failurePolicy`: under `Fail`, the
//! default, the request is refused with upstream's `403` and message
//! `policy '<p>' with binding '<b>' denied request: <why>`. A policy that changes the object asks for a second round of the mutating plugins
//! ([`crate::admission::Reinvocation`]); in it, only the `reinvocationPolicy: IfNeeded` ones
//! that ran before a later change of the object run again, each once.

use std::sync::{Arc, OnceLock};

use kube::runtime::reflector::Store;
use serde_json::Value;

use super::evaluation::{self, Inputs};
use super::json_patch;
use super::matching;
use super::mutating_kinds::{MutatingAdmissionPolicy, MutatingAdmissionPolicyBinding, Mutation};
use super::objects;
use super::params::Params;
use crate::admission::host::{AbortOnDrop, HostObjects, reflect, wait_synced};
use crate::admission::programs::Programs;
use crate::admission::webhook::review;
use crate::admission::webhook::versions::Versioned;
use crate::admission::{AdmissionAttributes, AdmissionPlugin, Phases};
use crate::apply::merge::merge;
use crate::cel::authorizer::evaluate_with_checks;
use crate::error::{ApiError, StatusCause};
use crate::schema::StructuralSchema;

/// The name of the plugin.
pub const MUTATING_POLICY_NAME: &str = "MutatingAdmissionPolicy";

/// The host's mutating policies and bindings, watched from the first request on.
struct Watched {
    policies: Store<MutatingAdmissionPolicy>,
    bindings: Store<MutatingAdmissionPolicyBinding>,
    _tasks: AbortOnDrop,
}

/// Applies the host's mutating admission policies.
pub struct MutatingAdmissionPolicyPlugin {
    host: HostObjects,
    params: Params,
    programs: Programs,
    /// The mutations' expressions, whose object constructions are maps.
    mutations: Programs,
    watched: OnceLock<Arc<Watched>>,
}

impl MutatingAdmissionPolicyPlugin {
    /// The plugin reading policies, bindings and parameters from `host`.
    pub fn new(host: HostObjects) -> Self {
        MutatingAdmissionPolicyPlugin {
            params: Params::new(host.client.clone()),
            host,
            programs: Programs::default(),
            mutations: Programs::with(objects::compile),
            watched: OnceLock::new(),
        }
    }

    fn watched(&self) -> Arc<Watched> {
        self.watched
            .get_or_init(|| {
                let (policies, a) = reflect(kube::Api::all(self.host.client.clone()));
                let (bindings, b) = reflect(kube::Api::all(self.host.client.clone()));
                Arc::new(Watched {
                    policies,
                    bindings,
                    _tasks: AbortOnDrop(vec![a, b]),
                })
            })
            .clone()
    }
}

/// One policy's error: the policy, the binding, why.
struct PolicyError {
    policy: String,
    binding: String,
    message: String,
}

#[async_trait::async_trait]
impl AdmissionPlugin for MutatingAdmissionPolicyPlugin {
    fn name(&self) -> &str {
        MUTATING_POLICY_NAME
    }

    fn enabled_by_default(&self) -> bool {
        false
    }

    fn phases(&self) -> Phases {
        Phases::Mutate
    }

    async fn mutate(&self, attrs: &mut AdmissionAttributes<'_>) -> Result<(), ApiError> {
        let watched = self.watched();
        wait_synced(&watched.policies, attrs).await?;
        wait_synced(&watched.bindings, attrs).await?;
        let mut policies = watched.policies.state();
        if policies.is_empty() || attrs.object.is_none() {
            return Ok(());
        }
        policies.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let mut bindings = watched.bindings.state();
        bindings.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let reinvoking = attrs.reinvocation.is_reinvoke;
        let object = attrs.object.as_deref();
        attrs.reinvocation.policies.begin(reinvoking, object);
        let mut errors = Vec::new();
        for policy in &policies {
            let name = policy.metadata.name.clone().unwrap_or_default();
            let ignore = policy.spec.failure_policy.as_deref() == Some("Ignore");
            for binding in bindings
                .iter()
                .filter(|b| b.spec.policy_name.as_deref() == Some(name.as_str()))
            {
                let binding_name = binding.metadata.name.clone().unwrap_or_default();
                if let Err(message) = self.apply(policy, binding, attrs).await
                    && !ignore
                {
                    errors.push(PolicyError {
                        policy: name.clone(),
                        binding: binding_name,
                        message,
                    });
                }
            }
        }
        let object = attrs.object.as_deref();
        attrs.reinvocation.policies.end(object);
        match errors.is_empty() {
            true => Ok(()),
            false => Err(denied(attrs, errors)),
        }
    }
}

impl MutatingAdmissionPolicyPlugin {
    /// Applies `policy` through `binding` when they take the request: an error says why it
    /// failed (the failure policy decides).
    async fn apply(
        &self,
        policy: &MutatingAdmissionPolicy,
        binding: &MutatingAdmissionPolicyBinding,
        attrs: &mut AdmissionAttributes<'_>,
    ) -> Result<(), String> {
        let spec = &policy.spec;
        let Some(constraints) = &spec.match_constraints else {
            return Ok(());
        };
        let version = match matching::matches(constraints, &self.host, attrs).await {
            Ok(Some(version)) => version,
            Ok(None) => return Ok(()),
            Err(e) => return Err(format!("failed to configure policy: {}", e.message)),
        };
        match matching::binding_matches(&binding.spec.match_resources, &self.host, attrs).await {
            Ok(true) => {}
            Ok(false) => return Ok(()),
            Err(e) => return Err(format!("failed to configure binding: {}", e.message)),
        }
        let params = self
            .params
            .collect(
                spec.param_kind.as_ref(),
                binding.spec.param_ref.as_ref(),
                attrs.namespace.unwrap_or_default(),
            )
            .await
            .map_err(|e| format!("failed to configure binding: {e}"))?;
        let namespace_object = super::namespace_object(&self.host, attrs)
            .await
            .map_err(|e| e.message)?;
        let schema = StructuralSchema::shared(&version.schema);
        let checks = attrs.checks();
        let (authorizer, user) = (attrs.authorizer, attrs.user);
        let if_needed = spec.reinvocation_policy.as_deref() == Some("IfNeeded");
        let reinvoking = attrs.reinvocation.is_reinvoke;
        for (index, param) in params.iter().enumerate() {
            // Upstream's key of an invocation: the policy, the binding and the parameter.
            let key = format!(
                "{}/{}/{index}",
                policy.metadata.name.as_deref().unwrap_or_default(),
                binding.metadata.name.as_deref().unwrap_or_default()
            );
            if reinvoking && !attrs.reinvocation.policies.reinvokes(&key) {
                continue;
            }
            let mut versioned = Versioned::new(attrs, version).map_err(|e| e.message)?;
            let review = review::request(attrs, &versioned, "");
            let mut request = review["request"].clone();
            if let Some(map) = request.as_object_mut() {
                map.remove("object");
                map.remove("oldObject");
                map.remove("uid");
            }
            let object = versioned.object.clone().unwrap_or(Value::Null);
            let old_object = versioned.old_object.clone().unwrap_or(Value::Null);
            let mutated = evaluate_with_checks(&checks, authorizer, user, |checks| {
                let inputs = Inputs {
                    object: &object,
                    old_object: &old_object,
                    request: &request,
                    params: param,
                    namespace_object: &namespace_object,
                    checks,
                };
                let Some(prepared) = evaluation::prepare(
                    &self.programs,
                    spec.match_conditions.as_deref().unwrap_or_default(),
                    spec.variables.as_deref().unwrap_or_default(),
                    &inputs,
                )?
                else {
                    return Ok(None);
                };
                let mut mutated = object.clone();
                for mutation in spec.mutations.iter().flatten() {
                    mutate(&self.mutations, &mut mutated, &schema, mutation, &prepared)?;
                }
                Ok::<_, String>(Some(mutated))
            })
            .await?;
            // A false match condition: the policy did not run.
            let Some(mutated) = mutated else {
                continue;
            };
            if mutated != object {
                versioned.object = Some(mutated);
                let stored = versioned.stored_object(attrs).map_err(|e| e.message)?;
                if let (Some(object), Some(stored)) = (attrs.object.as_deref_mut(), stored)
                    && *object != stored
                {
                    *object = stored;
                    attrs.reinvocation.policies.object_changed();
                    attrs.reinvocation.should_reinvoke = true;
                }
            }
            if if_needed {
                attrs.reinvocation.policies.invoked(key);
            }
        }
        Ok(())
    }
}

/// Applies one mutation to `object`.
fn mutate(
    programs: &Programs,
    object: &mut Value,
    schema: &StructuralSchema,
    mutation: &Mutation,
    prepared: &evaluation::Prepared<'_>,
) -> Result<(), String> {
    let (expression, apply) = match mutation.patch_type.as_str() {
        "ApplyConfiguration" => (mutation.apply_configuration.as_ref(), true),
        "JSONPatch" => (mutation.json_patch.as_ref(), false),
        other => return Err(format!("unsupported patch type {other:?}")),
    };
    let expression = expression
        .and_then(|e| e.expression.as_deref())
        .unwrap_or_default();
    if let Some(e) = prepared.failed_variable(expression) {
        return Err(e);
    }
    let value = objects::evaluate(programs, expression, &prepared.context, &prepared.meter)?;
    if apply {
        if !value.is_object() {
            return Err(format!(
                "apply configuration must be an object, but got {value}"
            ));
        }
        // As server-side apply merges (structured-merge-diff, as upstream's policies do), by
        // the resource's schema in the matched version.
        *object = merge(object, &value, schema.root()).map_err(|e| e.to_string())?;
        Ok(())
    } else {
        let patch: ::json_patch::Patch = serde_json::from_value(value)
            .map_err(|e| format!("JSONPatch expression must return a list of JSONPatch: {e}"))?;
        *object = json_patch::apply(object, &patch)?;
        Ok(())
    }
}

/// Upstream's Status for policy errors: `403` with the first error's message, each as a cause.
fn denied(attrs: &AdmissionAttributes<'_>, errors: Vec<PolicyError>) -> ApiError {
    let mut err = attrs.forbidden("admission request denied by policy");
    let messages: Vec<String> = errors
        .into_iter()
        .map(|e| {
            format!(
                "policy '{}' with binding '{}' denied request: {}",
                e.policy, e.binding, e.message
            )
        })
        .collect();
    if let Some(first) = messages.first() {
        err.message = first.clone();
        err.reason = "Invalid".into();
    }
    let details = err.details.get_or_insert_with(Default::default);
    for message in messages {
        details.causes.push(StatusCause {
            message,
            ..Default::default()
        });
    }
    err
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn apply_configurations_merge_as_server_side_apply_by_the_schema() {
        let schema = StructuralSchema::from_openapi(&json!({
            "type": "object",
            "properties": {
                "metadata": {"type": "object"},
                "spec": {"type": "object", "properties": {
                    "items": {"type": "array", "items": {"type": "integer"}},
                    "toppings": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": {"type": "object", "properties": {
                            "name": {"type": "string"}, "amount": {"type": "integer"}}},
                    },
                }},
            },
        }));
        let object = json!({"metadata": {"name": "f", "labels": {"a": "1"}},
            "spec": {"items": [1, 2], "toppings": [
                {"name": "tomato", "amount": 1}, {"name": "cheese", "amount": 1}]}});
        let configuration = json!({"metadata": {"labels": {"b": "2"}},
            "spec": {"items": [3], "toppings": [{"name": "cheese", "amount": 2}, {"name": "basil"}]}});
        assert_eq!(
            merge(&object, &configuration, schema.root()).unwrap(),
            json!({"metadata": {"name": "f", "labels": {"a": "1", "b": "2"}},
                "spec": {"items": [3], "toppings": [
                    {"name": "tomato", "amount": 1}, {"name": "cheese", "amount": 2},
                    {"name": "basil"}]}})
        );
    }
}
