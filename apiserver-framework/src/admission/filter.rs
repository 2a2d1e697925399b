//! Registering a plugin for some resources only: [`ResourceFilter`] and [`Filtered`].

use std::sync::Arc;

use crate::admission::{AdmissionAttributes, AdmissionPlugin, Operation, Phases};
use crate::error::ApiError;
use crate::resource::ResourceInfo;

/// The resources (as `(group, plural)` pairs) and operations a plugin is registered for.
#[derive(Clone, Debug, Default)]
pub struct ResourceFilter {
    resources: Vec<(String, String)>,
    operations: Vec<Operation>,
}

impl ResourceFilter {
    /// A filter matching nothing until resources are added.
    pub fn new() -> Self {
        ResourceFilter::default()
    }

    /// Also matches `plural` of `group` (`""` for the core group; `"*"` matches any).
    pub fn resource(mut self, group: &str, plural: &str) -> Self {
        self.resources.push((group.to_string(), plural.to_string()));
        self
    }

    /// Restricts the filter to `operation` (added to the others; all operations by default).
    pub fn operation(mut self, operation: Operation) -> Self {
        self.operations.push(operation);
        self
    }

    /// Whether `resource` and `operation` pass the filter.
    pub fn matches(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        let any = |pattern: &str, value: &str| pattern == "*" || pattern == value;
        (self.operations.is_empty() || self.operations.contains(&operation))
            && self
                .resources
                .iter()
                .any(|(g, r)| any(g, &resource.group) && any(r, &resource.plural))
    }
}

/// A plugin that only sees the requests its [`ResourceFilter`] matches (and its own
/// [`AdmissionPlugin::handles`] accepts).
pub struct Filtered {
    plugin: Arc<dyn AdmissionPlugin>,
    filter: ResourceFilter,
}

impl Filtered {
    /// `plugin` restricted to `filter`.
    pub fn new(plugin: Arc<dyn AdmissionPlugin>, filter: ResourceFilter) -> Self {
        Filtered { plugin, filter }
    }
}

#[async_trait::async_trait]
impl AdmissionPlugin for Filtered {
    fn name(&self) -> &str {
        self.plugin.name()
    }

    fn enabled_by_default(&self) -> bool {
        self.plugin.enabled_by_default()
    }

    fn phases(&self) -> Phases {
        self.plugin.phases()
    }

    fn handles(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        self.filter.matches(resource, operation) && self.plugin.handles(resource, operation)
    }

    async fn mutate(&self, attrs: &mut AdmissionAttributes<'_>) -> Result<(), ApiError> {
        self.plugin.mutate(attrs).await
    }

    async fn validate(&self, attrs: &AdmissionAttributes<'_>) -> Result<(), ApiError> {
        self.plugin.validate(attrs).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devhost::core::{ConfigMap, Namespace};
    use crate::resource::ApiResource;

    #[test]
    fn filters_match_resources_and_operations() {
        let cm = ConfigMap::resource_info();
        let ns = Namespace::resource_info();
        let f = ResourceFilter::new().resource("", "configmaps");
        assert!(f.matches(&cm, Operation::Create) && f.matches(&cm, Operation::Delete));
        assert!(!f.matches(&ns, Operation::Create));
        let f = ResourceFilter::new()
            .resource("*", "*")
            .operation(Operation::Update);
        assert!(f.matches(&ns, Operation::Update) && !f.matches(&ns, Operation::Create));
        assert!(!ResourceFilter::new().matches(&cm, Operation::Create));
    }
}
