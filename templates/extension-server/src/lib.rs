//! {{project-name}}: a Kubernetes extension API server built with apiserver-framework.
//!
//! The resource, its rules and [`app`], the server; `src/main.rs` runs it, and the tests in
//! `tests/` serve it in-process with the framework's test kit.

use apiserver_framework::prelude::*;

// Replace Widget with your own resource; the book's "Defining resources" chapter explains every
// attribute of the derive, and "Policies and validation rules" the schema's constraints and
// CEL rules such as the one on `purpose`.

/// A Widget is something with a size and a purpose.
#[derive(ApiResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[resource(
    group = "{{group}}",
    version = "v1alpha1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus",
    shortname = "wd",
    printcolumn(
        name = "Size",
        type = "integer",
        json_path = ".spec.size",
        description = "How big the widget is"
    ),
    printcolumn(
        name = "Ready",
        type = "boolean",
        json_path = ".status.ready",
        priority = 1
    )
)]
#[serde(rename_all = "camelCase")]
pub struct WidgetSpec {
    /// How big the widget is (at least 1).
    pub size: u32,
    /// What the widget is for (default: `general`); it cannot change once set.
    #[resource(validation = Rule::new("self == oldSelf").message("purpose cannot change once set"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purpose: Option<String>,
}

/// The observed state of a Widget, written through the `status` subresource.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WidgetStatus {
    /// Whether the widget is ready.
    #[serde(default)]
    pub ready: bool,
}

/// Defaulting and validation of Widgets.
pub struct WidgetStrategy;

impl Strategy<Widget> for WidgetStrategy {
    fn default(&self, obj: &mut Widget) {
        obj.spec.purpose.get_or_insert_with(|| "general".into());
    }

    fn validate(&self, obj: &Widget) -> Vec<FieldError> {
        if obj.spec.size == 0 {
            return vec![FieldError::invalid("spec.size", 0, "must be at least 1")];
        }
        Vec::new()
    }
}

/// Refuses to create Widgets whose names start with `system-`.
pub struct ReservedNames;

#[async_trait]
impl AdmissionPlugin for ReservedNames {
    fn name(&self) -> &str {
        "ReservedNames"
    }

    fn phases(&self) -> Phases {
        Phases::Validate
    }

    fn handles(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        operation == Operation::Create && resource.is::<Widget>()
    }

    async fn validate(&self, attrs: &AdmissionAttributes<'_>) -> Result<(), ApiError> {
        if attrs.name.starts_with("system-") {
            return Err(attrs.forbidden("names starting with system- are reserved"));
        }
        Ok(())
    }
}

/// The server: the Widget resource with its strategy, and the ReservedNames admission plugin.
pub fn app() -> App {
    App::new("{{project-name}}")
        .resource_with::<Widget>(WidgetStrategy)
        .admission(ReservedNames)
}
