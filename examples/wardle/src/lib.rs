//! wardle: the Kubernetes sample-apiserver (`wardle.example.com`) built with
//! apiserver-framework.
//!
//! Two resources: the namespaced [`Flunder`] and the cluster-scoped [`Fischer`], and the
//! [`BanFlunder`] admission plugin: a Flunder whose name a Fischer lists in
//! `disallowedFlunders` cannot be created.

use apiserver_framework::prelude::*;

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
    /// Names that Flunders may not have.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[resource(list_type = "set")]
    pub disallowed_flunders: Vec<String>,
}

/// Keeps `referenceType` consistent with `reference`, as sample-apiserver validates.
pub struct FlunderStrategy;

impl Strategy<Flunder> for FlunderStrategy {
    fn validate(&self, obj: &Flunder) -> Vec<FieldError> {
        let mut errs = Vec::new();
        match (&obj.spec.reference, &obj.spec.reference_type) {
            (Some(r), None) if !r.is_empty() => errs.push(FieldError::required(
                "spec.referenceType",
                "referenceType is required when reference is set",
            )),
            (None, Some(_)) => errs.push(FieldError::required(
                "spec.reference",
                "reference is required when referenceType is set",
            )),
            _ => {}
        }
        errs
    }
}

/// sample-apiserver's BanFlunder: refuses to create a Flunder whose name any Fischer lists in
/// `disallowedFlunders`.
pub struct BanFlunder;

#[async_trait::async_trait]
impl AdmissionPlugin for BanFlunder {
    fn name(&self) -> &str {
        "BanFlunder"
    }

    fn handles(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        operation == Operation::Create
            && resource.group == "wardle.example.com"
            && resource.kind == "Flunder"
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

/// The wardle server: both resources and BanFlunder.
pub fn app() -> App {
    App::new("wardle")
        .group(
            Group::new("wardle.example.com")
                .resource_with::<Flunder>(FlunderStrategy)
                .resource::<Fischer>(),
        )
        .admission(BanFlunder)
}
