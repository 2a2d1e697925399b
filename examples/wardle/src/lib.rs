//! wardle: the Kubernetes sample-apiserver (`wardle.example.com`) built with
//! apiserver-framework.
//!
//! Two resources: the namespaced [`Flunder`] and the cluster-scoped [`Fischer`], and the
//! [`BanFlunder`] admission plugin: a Flunder whose name a Fischer lists in
//! `disallowedFlunders` cannot be created.
//!
//! [`app`] serves Flunder in two versions as sample-apiserver does: `v1alpha1`
//! ([`Flunder`], stored) and `v1beta1` ([`v1beta1::Flunder`], preferred, the hub they convert
//! through); Fischer is in `v1alpha1` only.

use apiserver_framework::prelude::*;

pub mod v1beta1;

/// `wardle.example.com/v1alpha1`: the Flunder and Fischer of this crate's root.
pub mod v1alpha1 {
    pub use crate::{Fischer, FischerSpec, Flunder, FlunderSpec};
}

pub mod subresources;

/// What a Flunder refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ReferenceType {
    /// Another Flunder.
    Flunder,
    /// A Fischer.
    Fischer,
}

/// A Flunder refers to another flunder or a fischer by name.
#[derive(ApiResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[resource(
    group = "wardle.example.com",
    version = "v1alpha1",
    kind = "Flunder",
    namespaced,
    status = "FlunderStatus",
    shortname = "fl",
    category = "all",
    printcolumn(
        name = "Reference",
        json_path = ".spec.reference",
        description = "The name of the referenced Flunder or Fischer"
    ),
    printcolumn(
        name = "Type",
        json_path = ".spec.referenceType",
        description = "The kind of the referenced object",
        priority = 1
    ),
    selectable_field = ".spec.reference",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas",
        label_selector_path = ".status.selector"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct FlunderSpec {
    /// The name of a Flunder or a Fischer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// The kind of the referenced object. Defaults to `Flunder` when `reference` is set.
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

/// One topping of a Flunder.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Topping {
    /// The topping's name, unique within the Flunder.
    pub name: String,
    /// How much of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amount: Option<i32>,
}

/// The observed state of a Flunder.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FlunderStatus {
    /// How many copies exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// The label selector of the copies, in its string form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
}

/// A Fischer lists the Flunder names that may not be used.
#[derive(ApiResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[resource(
    group = "wardle.example.com",
    version = "v1alpha1",
    kind = "Fischer",
    flat,
    shortname = "fi",
    printcolumn(
        name = "Disallowed",
        type = "string",
        json_path = ".disallowedFlunders",
        description = "The Flunder names this Fischer bans"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct FischerSpec {
    /// Names that Flunders may not have. Atomic, as upstream's `+listType=atomic`: a patch or
    /// an apply replaces the whole list.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[resource(list_type = "atomic")]
    pub disallowed_flunders: Vec<String>,
}

/// sample-apiserver's v1alpha1 Flunder rules: its defaulting (`SetDefaults_FlunderSpec`), its
/// validation (`ValidateFlunder`) and its registry strategy, which validates creates only.
///
/// Upstream converts a v1alpha1 spec to an internal one with `flunderReference` or
/// `fischerReference` set by `referenceType`, and validates that form: its field paths and
/// messages are the ones below. Of its rules, only "a type needs a reference" can fail for a
/// v1alpha1 object (the others relate two references, which v1alpha1 cannot carry, or an
/// unknown type, which [`ReferenceType`] cannot hold).
pub struct FlunderStrategy;

impl Strategy<Flunder> for FlunderStrategy {
    /// A reference without a type refers to a Flunder.
    fn default(&self, obj: &mut Flunder) {
        let has_reference = obj.spec.reference.as_deref().is_some_and(|r| !r.is_empty());
        if has_reference && obj.spec.reference_type.is_none() {
            obj.spec.reference_type = Some(ReferenceType::Flunder);
        }
    }

    fn validate(&self, obj: &Flunder) -> Vec<FieldError> {
        let reference = obj.spec.reference.as_deref().unwrap_or("");
        let (field, kind) = match obj.spec.reference_type {
            Some(ReferenceType::Flunder) => ("spec.flunderReference", "Flunder"),
            Some(ReferenceType::Fischer) => ("spec.fischerReference", "Fischer"),
            None => return Vec::new(),
        };
        if reference.is_empty() {
            return vec![FieldError::invalid(
                field,
                reference,
                format!("cannot be empty if referenceType is {kind}"),
            )];
        }
        Vec::new()
    }

    /// Upstream's Flunder strategy validates nothing on update.
    fn validate_update(&self, _new: &Flunder, _old: &Flunder) -> Vec<FieldError> {
        Vec::new()
    }
}

/// The rules every Flunder version follows, on the hub (v1beta1, upstream's internal form):
/// v1alpha1's defaulting happens in its conversion; validation is `ValidateFlunder`.
impl Strategy<v1beta1::Flunder> for FlunderStrategy {
    fn validate(&self, obj: &v1beta1::Flunder) -> Vec<FieldError> {
        v1beta1::validate_spec(&obj.spec)
    }

    /// Upstream's Flunder strategy validates nothing on update.
    fn validate_update(&self, _new: &v1beta1::Flunder, _old: &v1beta1::Flunder) -> Vec<FieldError> {
        Vec::new()
    }
}

/// sample-apiserver's lifecycle of `v1alpha1` (its types' `+k8s:prerelease-lifecycle-gen`
/// markers: introduced in 1.0, deprecated in 1.3, removed in 1.10): every answer about a
/// v1alpha1 Flunder or Fischer carries upstream's warning
/// `wardle.example.com/v1alpha1 Flunder is deprecated in v1.3+, unavailable in v1.10+`.
pub fn v1alpha1_deprecation() -> Deprecation {
    Deprecation::since(1, 3).removed_in(1, 10)
}

/// The Flunder kind as sample-apiserver serves it: `v1alpha1` (deprecated, see
/// [`v1alpha1_deprecation`]) and `v1beta1` (preferred by Kubernetes' version priority),
/// converting through v1beta1, stored as `v1alpha1` (upstream's storage version;
/// `--storage-version flunders.wardle.example.com=v1beta1` changes it).
pub fn flunder_kind() -> Kind<v1beta1::Flunder> {
    Kind::new()
        .version::<Flunder>()
        .version::<v1beta1::Flunder>()
        .storage_version("v1alpha1")
        .deprecated("v1alpha1", v1alpha1_deprecation())
        .strategy(FlunderStrategy)
}

/// The Fischer kind: `v1alpha1` only, deprecated as Flunder's (see [`v1alpha1_deprecation`]).
pub fn fischer_kind() -> Kind<Fischer> {
    Kind::new()
        .version::<Fischer>()
        .deprecated("v1alpha1", v1alpha1_deprecation())
}

/// sample-apiserver's BanFlunder: refuses to create a Flunder whose name any Fischer lists in
/// `disallowedFlunders`.
pub struct BanFlunder;

#[async_trait]
impl AdmissionPlugin for BanFlunder {
    fn name(&self) -> &str {
        "BanFlunder"
    }

    fn phases(&self) -> Phases {
        Phases::Validate
    }

    fn handles(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        operation == Operation::Create && resource.is::<Flunder>()
    }

    async fn validate(&self, attrs: &AdmissionAttributes<'_>) -> Result<(), ApiError> {
        let Some(fischers) = attrs.registry.store::<Fischer>() else {
            return Ok(());
        };
        let banned = fischers
            .cached_objects(None)
            .await?
            .into_iter()
            .any(|f| f.spec.disallowed_flunders.iter().any(|n| n == attrs.name));
        if banned {
            return Err(
                attrs.forbidden("this name may not be used, please change the resource name")
            );
        }
        Ok(())
    }
}

/// The wardle server as sample-apiserver serves it: Flunder in `v1alpha1` and `v1beta1`
/// (see [`flunder_kind`]) with its subresources in `v1alpha1` (see [`subresources`]),
/// Fischer in `v1alpha1` (see [`fischer_kind`]), and BanFlunder.
pub fn app() -> App {
    App::new("wardle")
        .kind(flunder_kind())
        .subresource::<Flunder>(subresources::describe())
        .subresource::<Flunder>(subresources::topping())
        .subresource::<Flunder>(subresources::console())
        .kind(fischer_kind())
        .admission(BanFlunder)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flunder(reference: Option<&str>, reference_type: Option<ReferenceType>) -> Flunder {
        let mut f = Flunder::new(
            "f",
            FlunderSpec {
                reference: reference.map(str::to_string),
                reference_type,
                ..Default::default()
            },
        );
        FlunderStrategy.default(&mut f);
        f
    }

    fn errors(f: &Flunder) -> Vec<String> {
        FlunderStrategy
            .validate(f)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_reference_without_a_type_refers_to_a_flunder() {
        let f = flunder(Some("other"), None);
        assert_eq!(f.spec.reference_type, Some(ReferenceType::Flunder));
        assert!(errors(&f).is_empty());
        // Nothing to default without a reference.
        assert_eq!(flunder(None, None).spec.reference_type, None);
        assert_eq!(flunder(Some(""), None).spec.reference_type, None);
        // A given type is kept.
        let f = flunder(Some("other"), Some(ReferenceType::Fischer));
        assert_eq!(f.spec.reference_type, Some(ReferenceType::Fischer));
    }

    #[test]
    fn a_type_needs_a_reference_with_upstreams_messages() {
        assert_eq!(
            errors(&flunder(None, Some(ReferenceType::Flunder))),
            [
                r#"spec.flunderReference: Invalid value: "": cannot be empty if referenceType is Flunder"#
            ]
        );
        assert_eq!(
            errors(&flunder(Some(""), Some(ReferenceType::Fischer))),
            [
                r#"spec.fischerReference: Invalid value: "": cannot be empty if referenceType is Fischer"#
            ]
        );
        assert!(errors(&flunder(None, None)).is_empty());
        assert!(errors(&flunder(Some("x"), Some(ReferenceType::Fischer))).is_empty());
    }

    #[test]
    fn updates_are_not_validated() {
        let bad = flunder(None, Some(ReferenceType::Flunder));
        assert!(!errors(&bad).is_empty());
        assert!(FlunderStrategy.validate_update(&bad, &bad).is_empty());
    }
}
