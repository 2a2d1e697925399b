//! Which requests a policy or binding takes: `matchConstraints` and a binding's
//! `matchResources` (`namespaceSelector`, `objectSelector`, `resourceRules` with
//! `resourceNames`, `excludeResourceRules`, `matchPolicy`), as upstream's
//! `pkg/admission/plugin/policy/matching` matches them, with the webhooks' rule and selector
//! matching.

use k8s_openapi::api::admissionregistration::v1::{
    MatchResources, NamedRuleWithOperations, RuleWithOperations,
};

use crate::admission::AdmissionAttributes;
use crate::admission::host::HostObjects;
use crate::admission::lifecycle::namespace_not_found;
use crate::admission::webhook::matching;
use crate::admission::webhook::versions::{self, MatchPolicy};
use crate::error::ApiError;
use crate::resource::ResourceInfo;

/// The rules of `named` that apply to an object called `name`, as webhook rules: a rule with
/// `resourceNames` applies only to those names.
fn rules_for(named: &Option<Vec<NamedRuleWithOperations>>, name: &str) -> Vec<RuleWithOperations> {
    named
        .iter()
        .flatten()
        .filter(|r| {
            r.resource_names
                .as_deref()
                .is_none_or(|names| names.is_empty() || names.iter().any(|n| n == name))
        })
        .map(|r| RuleWithOperations {
            api_groups: r.api_groups.clone(),
            api_versions: r.api_versions.clone(),
            operations: r.operations.clone(),
            resources: r.resources.clone(),
            scope: r.scope.clone(),
        })
        .collect()
}

/// The version of the request's resource that `resources` matches the request in (the one its
/// expressions see), or `None` when it does not take the request. An error (a namespace the
/// host does not have, a selector that does not parse) is a configuration error of the policy
/// or binding.
pub(crate) async fn matches<'a>(
    resources: &MatchResources,
    host: &HostObjects,
    attrs: &AdmissionAttributes<'a>,
) -> Result<Option<&'a ResourceInfo>, ApiError> {
    let namespace = attrs.namespace.unwrap_or_default();
    let is_namespace = attrs.resource.group.is_empty() && attrs.resource.plural == "namespaces";
    if !namespace.is_empty()
        && !is_namespace
        && !matching::selector_is_empty(&resources.namespace_selector)
        && let Some(selector) = &resources.namespace_selector
    {
        let Some(ns) = host.namespace(namespace).await? else {
            return Err(namespace_not_found(namespace));
        };
        let labels = ns.metadata.labels.unwrap_or_default();
        if !matching::selector_matches(selector, &labels).map_err(ApiError::internal)? {
            return Ok(None);
        }
    }
    if !matching::object_selected(&resources.object_selector, attrs)? {
        return Ok(None);
    }
    let policy = MatchPolicy::of(resources.match_policy.as_deref());
    let excluded = rules_for(&resources.exclude_resource_rules, attrs.name);
    if versions::matching_version(&excluded, policy, attrs).is_some() {
        return Ok(None);
    }
    // No rules: every resource, in the version the request named.
    if resources.resource_rules.as_ref().is_none_or(Vec::is_empty) {
        return Ok(Some(attrs.request_resource));
    }
    let rules = rules_for(&resources.resource_rules, attrs.name);
    Ok(versions::matching_version(&rules, policy, attrs))
}

/// Whether a binding's `matchResources` (none, or no `resourceRules`: every request its
/// policy takes) takes the request.
pub(crate) async fn binding_matches(
    resources: &Option<MatchResources>,
    host: &HostObjects,
    attrs: &AdmissionAttributes<'_>,
) -> Result<bool, ApiError> {
    match resources {
        None => Ok(true),
        Some(resources) => Ok(matches(resources, host, attrs).await?.is_some()),
    }
}
