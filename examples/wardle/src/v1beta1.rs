//! `wardle.example.com/v1beta1`: the Flunder as sample-apiserver's v1beta1 has it, with the
//! reference split by type (`flunderReference`, `fischerReference`) and `referenceType`, and
//! the conversions to and from v1alpha1.
//!
//! v1beta1 is the preferred version and the hub every Flunder version converts through (it
//! holds what sample-apiserver's internal Flunder holds). Besides upstream's fields it keeps
//! this port's `replicas`, `toppings` and status, so that objects convert without loss.

use apiserver_framework::prelude::*;

use crate::{FlunderStatus, ReferenceType, Topping};

/// A Flunder refers to another flunder or a fischer by name, each in a field of its own.
#[derive(ApiResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[resource(
    group = "wardle.example.com",
    version = "v1beta1",
    kind = "Flunder",
    namespaced,
    status = "FlunderStatus",
    shortname = "fl",
    category = "all",
    printcolumn(
        name = "Type",
        json_path = ".spec.referenceType",
        description = "The kind of the referenced object"
    ),
    printcolumn(
        name = "Flunder",
        json_path = ".spec.flunderReference",
        description = "The name of the referenced Flunder"
    ),
    printcolumn(
        name = "Fischer",
        json_path = ".spec.fischerReference",
        description = "The name of the referenced Fischer"
    ),
    selectable_field = ".spec.flunderReference",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas",
        label_selector_path = ".status.selector"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct FlunderSpec {
    /// The name of the referenced Flunder (with `referenceType: Flunder`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flunder_reference: Option<String>,
    /// The name of the referenced Fischer (with `referenceType: Fischer`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fischer_reference: Option<String>,
    /// The kind of the referenced object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_type: Option<ReferenceType>,
    /// How many copies of this Flunder are wanted (the scale subresource's replicas).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Toppings, each identified by its name: patches and `kubectl apply` merge them by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[resource(list_type = "map", list_map_key = "name")]
    pub toppings: Vec<Topping>,
}

/// v1alpha1 → v1beta1, as upstream converts v1alpha1 to its internal form (after v1alpha1's
/// defaulting: a reference without a type refers to a Flunder): the reference goes to the
/// field its type names; without a type, nowhere.
impl From<crate::Flunder> for Flunder {
    fn from(old: crate::Flunder) -> Self {
        let s = old.spec;
        let has_reference = s.reference.as_deref().is_some_and(|r| !r.is_empty());
        let reference_type = match s.reference_type {
            None if has_reference => Some(ReferenceType::Flunder),
            t => t,
        };
        let (flunder_reference, fischer_reference) = match reference_type {
            Some(ReferenceType::Flunder) => (s.reference, None),
            Some(ReferenceType::Fischer) => (None, s.reference),
            None => (None, None),
        };
        Flunder {
            metadata: old.metadata,
            spec: FlunderSpec {
                flunder_reference,
                fischer_reference,
                reference_type,
                replicas: s.replicas,
                toppings: s.toppings,
            },
            status: old.status,
        }
    }
}

/// v1beta1 → v1alpha1, as upstream converts its internal form to v1alpha1: the reference of
/// the field the type names.
impl From<Flunder> for crate::Flunder {
    fn from(new: Flunder) -> Self {
        let s = new.spec;
        let reference = match s.reference_type {
            Some(ReferenceType::Flunder) => s.flunder_reference,
            Some(ReferenceType::Fischer) => s.fischer_reference,
            None => None,
        };
        crate::Flunder {
            metadata: new.metadata,
            spec: crate::FlunderSpec {
                reference,
                reference_type: s.reference_type,
                replicas: s.replicas,
                toppings: s.toppings,
            },
            status: new.status,
        }
    }
}

/// sample-apiserver's `ValidateFlunderSpec`, on the v1beta1 (internal) form.
pub fn validate_spec(s: &FlunderSpec) -> Vec<FieldError> {
    let flunder = s.flunder_reference.as_deref().unwrap_or("");
    let fischer = s.fischer_reference.as_deref().unwrap_or("");
    let t = s.reference_type;
    let mut errs = Vec::new();
    if !flunder.is_empty() && !fischer.is_empty() {
        errs.push(FieldError::invalid(
            "spec.fischerReference",
            fischer,
            "cannot be set with flunderReference at the same time",
        ));
    } else if !flunder.is_empty() && t != Some(ReferenceType::Flunder) {
        errs.push(FieldError::invalid(
            "spec.flunderReference",
            flunder,
            "cannot be set if referenceType is not Flunder",
        ));
    } else if !fischer.is_empty() && t != Some(ReferenceType::Fischer) {
        errs.push(FieldError::invalid(
            "spec.fischerReference",
            fischer,
            "cannot be set if referenceType is not Fischer",
        ));
    } else if fischer.is_empty() && t == Some(ReferenceType::Fischer) {
        errs.push(FieldError::invalid(
            "spec.fischerReference",
            fischer,
            "cannot be empty if referenceType is Fischer",
        ));
    } else if flunder.is_empty() && t == Some(ReferenceType::Flunder) {
        errs.push(FieldError::invalid(
            "spec.flunderReference",
            flunder,
            "cannot be empty if referenceType is Flunder",
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alpha(reference: Option<&str>, t: Option<ReferenceType>) -> crate::Flunder {
        crate::Flunder::new(
            "f",
            crate::FlunderSpec {
                reference: reference.map(str::to_string),
                reference_type: t,
                replicas: Some(2),
                ..Default::default()
            },
        )
    }

    #[test]
    fn conversions_follow_upstream() {
        let b = Flunder::from(alpha(Some("x"), None));
        assert_eq!(b.spec.reference_type, Some(ReferenceType::Flunder));
        assert_eq!(b.spec.flunder_reference.as_deref(), Some("x"));
        assert_eq!(b.spec.replicas, Some(2));
        let b = Flunder::from(alpha(Some("y"), Some(ReferenceType::Fischer)));
        assert_eq!(b.spec.fischer_reference.as_deref(), Some("y"));
        assert_eq!(b.spec.flunder_reference, None);
        let back = crate::Flunder::from(b);
        assert_eq!(
            back.spec,
            alpha(Some("y"), Some(ReferenceType::Fischer)).spec
        );
    }

    #[test]
    fn validation_has_upstreams_messages() {
        let spec = FlunderSpec {
            flunder_reference: Some("a".into()),
            fischer_reference: Some("b".into()),
            ..Default::default()
        };
        assert_eq!(
            validate_spec(&spec)
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            [
                r#"spec.fischerReference: Invalid value: "b": cannot be set with flunderReference at the same time"#
            ]
        );
        let spec = FlunderSpec {
            fischer_reference: Some("b".into()),
            reference_type: Some(ReferenceType::Flunder),
            ..Default::default()
        };
        assert_eq!(validate_spec(&spec).len(), 1);
    }
}
