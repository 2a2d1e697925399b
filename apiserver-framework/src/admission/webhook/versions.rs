//! `matchPolicy`: which version of a resource a webhook is called in, and the request's objects
//! in that version (upstream's `generic.Webhook.ShouldCallHook`, `admission.VersionedAttributes`
//! and `admission.ConvertToGVK`).
//!
//! A webhook's rules are matched against the version the request named first. Under
//! `matchPolicy: Equivalent` (the default of `admissionregistration.k8s.io/v1`, and ours when
//! the field is unset), a webhook none of whose rules names that version is still called when a
//! rule names another served version of the resource: the first such rule decides, and among
//! the versions it names the preferred one (Kubernetes' version order). The webhook then gets
//! the objects converted to that version through the kind's hub; the review's `kind` and
//! `resource` name that version, `requestKind` and `requestResource` the request's. Under
//! `Exact` only the request's own version matches.

use k8s_openapi::api::admissionregistration::v1::RuleWithOperations;
use serde_json::Value;

use crate::admission::AdmissionAttributes;
use crate::admission::webhook::matching::rule_matches;
use crate::error::ApiError;
use crate::resource::ResourceInfo;

/// A webhook's `matchPolicy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatchPolicy {
    /// Only the version a request named matches the webhook's rules.
    Exact,
    /// Every served version of a resource a rule names matches.
    Equivalent,
}

impl MatchPolicy {
    /// The policy a webhook's `matchPolicy` field names: unset is `Equivalent`, the value the
    /// host's `admissionregistration.k8s.io/v1` defaulting would give it; any other value but
    /// `Equivalent` is `Exact`, as upstream's `ShouldCallHook` reads it.
    pub fn of(field: Option<&str>) -> Self {
        match field {
            None | Some("Equivalent") => MatchPolicy::Equivalent,
            Some(_) => MatchPolicy::Exact,
        }
    }
}

/// The version of the request's resource a webhook with `rules` and `policy` is called in, or
/// `None` when the webhook does not want the request.
pub fn matching_version<'a>(
    rules: &[RuleWithOperations],
    policy: MatchPolicy,
    attrs: &AdmissionAttributes<'a>,
) -> Option<&'a ResourceInfo> {
    let requested = attrs.request_resource;
    if rules.iter().any(|r| rule_matches(r, requested, attrs)) {
        return Some(requested);
    }
    if policy == MatchPolicy::Exact {
        return None;
    }
    let equivalents = attrs.registry.versions_of(requested);
    // Earlier rules first, then the preferred version.
    rules.iter().find_map(|rule| {
        equivalents
            .iter()
            .filter(|e| e.version != requested.version)
            .find(|e| rule_matches(rule, e, attrs))
            .copied()
    })
}

/// The request's object and old object in the version a webhook is called in.
pub struct Versioned<'a> {
    /// The version: the request's resource or one of its other versions.
    pub resource: &'a ResourceInfo,
    /// The object (absent on delete).
    pub object: Option<Value>,
    /// The stored object (updates and deletes).
    pub old_object: Option<Value>,
}

impl<'a> Versioned<'a> {
    /// The objects of `attrs` (held in `attrs.resource`'s version) in `resource`'s version.
    pub fn new(
        attrs: &AdmissionAttributes<'_>,
        resource: &'a ResourceInfo,
    ) -> Result<Self, ApiError> {
        let convert = |v: Option<&Value>| {
            v.map(|v| convert(attrs, v.clone(), attrs.resource, resource))
                .transpose()
        };
        Ok(Versioned {
            resource,
            object: convert(attrs.object.as_deref())?,
            old_object: convert(attrs.old_object)?,
        })
    }

    /// The object (as a webhook patched it) in the version of `attrs`' objects, to write back.
    pub fn stored_object(
        &self,
        attrs: &AdmissionAttributes<'_>,
    ) -> Result<Option<Value>, ApiError> {
        self.object
            .clone()
            .map(|v| convert(attrs, v, self.resource, attrs.resource))
            .transpose()
    }
}

/// `value`, an object of `from`'s version, in `to`'s version, converted through the kind's hub
/// (upstream's `ConvertToGVK`); a failure is a 500, as upstream's.
fn convert(
    attrs: &AdmissionAttributes<'_>,
    mut value: Value,
    from: &ResourceInfo,
    to: &ResourceInfo,
) -> Result<Value, ApiError> {
    if from.version == to.version {
        return Ok(value);
    }
    // The object is in `from`'s version whatever a webhook's patch did to these fields.
    if let Some(map) = value.as_object_mut() {
        map.insert("apiVersion".into(), from.api_version().into());
        map.insert("kind".into(), from.kind.clone().into());
    }
    let Some(converted) = attrs.registry.convert(from, value, &to.api_version()) else {
        return Err(ApiError::internal(format!(
            "unable to convert {} to {}: no conversion",
            from.api_version(),
            to.api_version()
        )));
    };
    converted.map_err(ApiError::internal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unset_policy_is_equivalent() {
        assert_eq!(MatchPolicy::of(None), MatchPolicy::Equivalent);
        assert_eq!(MatchPolicy::of(Some("Equivalent")), MatchPolicy::Equivalent);
        assert_eq!(MatchPolicy::of(Some("Exact")), MatchPolicy::Exact);
    }
}
