//! Which webhooks a request goes to: `rules`, `namespaceSelector` and `objectSelector`, as
//! upstream's `pkg/admission/plugin/webhook/predicates` match them.

use std::collections::BTreeMap;

use k8s_openapi::api::admissionregistration::v1::RuleWithOperations;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::Value;

use crate::admission::AdmissionAttributes;
use crate::error::ApiError;
use crate::resource::ResourceInfo;

fn any_or(list: &Option<Vec<String>>, value: &str) -> bool {
    list.as_deref()
        .unwrap_or_default()
        .iter()
        .any(|v| v == "*" || v == value)
}

/// Whether `rule` covers the request, taken as a write to `info` (the request's resource, or
/// one of its other versions under `matchPolicy: Equivalent`).
pub fn rule_matches(
    rule: &RuleWithOperations,
    info: &ResourceInfo,
    attrs: &AdmissionAttributes<'_>,
) -> bool {
    let namespace = attrs.namespace.unwrap_or_default();
    let is_namespace = info.group.is_empty() && info.plural == "namespaces";
    let scope = match rule.scope.as_deref() {
        None | Some("*") => true,
        Some("Namespaced") => !is_namespace && !namespace.is_empty(),
        Some("Cluster") => is_namespace || namespace.is_empty(),
        Some(_) => false,
    };
    let subresource = attrs.subresource.unwrap_or_default();
    let resource = rule
        .resources
        .as_deref()
        .unwrap_or_default()
        .iter()
        .any(|r| {
            let (res, sub) = r.split_once('/').unwrap_or((r.as_str(), ""));
            (res == "*" || res == info.plural) && (sub == "*" || sub == subresource)
        });
    scope
        && any_or(&rule.operations, attrs.operation.as_str())
        && any_or(&rule.api_groups, &info.group)
        && any_or(&rule.api_versions, &info.version)
        && resource
}

/// Whether `selector` selects `labels`; an unknown operator is an error.
pub fn selector_matches(
    selector: &LabelSelector,
    labels: &BTreeMap<String, String>,
) -> Result<bool, String> {
    for (k, v) in selector.match_labels.iter().flatten() {
        if labels.get(k) != Some(v) {
            return Ok(false);
        }
    }
    for req in selector.match_expressions.iter().flatten() {
        let values = req.values.as_deref().unwrap_or_default();
        let value = labels.get(&req.key);
        let ok = match req.operator.as_str() {
            "In" => value.is_some_and(|v| values.contains(v)),
            "NotIn" => !value.is_some_and(|v| values.contains(v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            op => return Err(format!("{op:?} is not a valid label selector operator")),
        };
        if !ok {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Whether the selector selects nothing in particular (matches everything).
pub fn selector_is_empty(selector: &Option<LabelSelector>) -> bool {
    selector.as_ref().is_none_or(|s| {
        s.match_labels.as_ref().is_none_or(BTreeMap::is_empty)
            && s.match_expressions.as_ref().is_none_or(Vec::is_empty)
    })
}

fn labels_of(object: Option<&Value>) -> Option<BTreeMap<String, String>> {
    let labels = object?.pointer("/metadata/labels");
    Some(
        labels
            .and_then(|l| serde_json::from_value(l.clone()).ok())
            .unwrap_or_default(),
    )
}

/// Upstream's `objectSelector`: the object or the old object carries matching labels.
pub fn object_selected(
    selector: &Option<LabelSelector>,
    attrs: &AdmissionAttributes<'_>,
) -> Result<bool, ApiError> {
    let Some(selector) = selector.as_ref().filter(|_| !selector_is_empty(selector)) else {
        return Ok(true);
    };
    for object in [attrs.object.as_deref(), attrs.old_object] {
        if let Some(labels) = labels_of(object)
            && selector_matches(selector, &labels).map_err(ApiError::internal)?
        {
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn req(key: &str, operator: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: operator.into(),
            values: Some(values.iter().map(|v| v.to_string()).collect()),
        }
    }

    #[test]
    fn label_selectors_match_like_upstream() {
        let labels: BTreeMap<String, String> = [("a".to_string(), "1".to_string())].into();
        let sel = |labels: &[(&str, &str)], exprs: Vec<LabelSelectorRequirement>| LabelSelector {
            match_labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            match_expressions: Some(exprs),
        };
        assert!(selector_matches(&sel(&[("a", "1")], vec![]), &labels).unwrap());
        assert!(!selector_matches(&sel(&[("a", "2")], vec![]), &labels).unwrap());
        assert!(selector_matches(&sel(&[], vec![req("a", "In", &["1", "2"])]), &labels).unwrap());
        assert!(selector_matches(&sel(&[], vec![req("b", "NotIn", &["1"])]), &labels).unwrap());
        assert!(!selector_matches(&sel(&[], vec![req("a", "NotIn", &["1"])]), &labels).unwrap());
        assert!(selector_matches(&sel(&[], vec![req("a", "Exists", &[])]), &labels).unwrap());
        assert!(selector_matches(&sel(&[], vec![req("b", "DoesNotExist", &[])]), &labels).unwrap());
        assert!(selector_matches(&sel(&[], vec![req("a", "Near", &[])]), &labels).is_err());
        assert!(selector_is_empty(&Some(sel(&[], vec![]))));
        assert!(!selector_is_empty(&Some(sel(&[("a", "1")], vec![]))));
    }
}
