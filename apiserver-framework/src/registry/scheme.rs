//! The registry (scheme) of a server: groups → versions → resources and their storage.

use std::sync::Arc;

use crate::discovery::{ServedGroup, ServedResource, ServedVersion};
use crate::registry::rest::RestStorage;
use crate::registry::store::Store;
use crate::resource::ApiResource;

/// Every resource a server stores, in registration order.
#[derive(Clone, Default)]
pub struct Registry {
    resources: Vec<Arc<dyn RestStorage>>,
}

impl Registry {
    /// A registry of the given storages.
    pub fn new(resources: Vec<Arc<dyn RestStorage>>) -> Self {
        Registry { resources }
    }

    /// Every storage, in registration order.
    pub fn resources(&self) -> &[Arc<dyn RestStorage>] {
        &self.resources
    }

    /// The storage of `<plural>` in `<group>/<version>`.
    pub fn find(&self, group: &str, version: &str, plural: &str) -> Option<&Arc<dyn RestStorage>> {
        self.resources.iter().find(|r| {
            let i = r.info();
            i.group == group && i.version == version && i.plural == plural
        })
    }

    /// Whether any resource of `group` (and `version`, if given) is served here.
    pub fn serves(&self, group: &str, version: Option<&str>) -> bool {
        self.resources.iter().any(|r| {
            let i = r.info();
            i.group == group && version.is_none_or(|v| v == i.version)
        })
    }

    /// The generic store of `T`, for typed access from admission plugins and hooks.
    pub fn store<T: ApiResource>(&self) -> Option<&Store<T>> {
        self.resources
            .iter()
            .find_map(|r| r.as_any().downcast_ref::<Store<T>>())
    }

    /// The groups, versions and resources, for discovery and OpenAPI. Versions are listed in
    /// registration order (the first registered is preferred).
    pub fn served_groups(&self) -> Vec<ServedGroup> {
        let mut groups: Vec<ServedGroup> = Vec::new();
        for r in &self.resources {
            let info = r.info().clone();
            let verbs: Vec<String> = r.verbs().iter().map(|v| v.to_string()).collect();
            let subresource_verbs = |declared: bool| -> Vec<String> {
                if declared {
                    ["get", "patch", "update"]
                        .iter()
                        .filter(|v| verbs.iter().any(|x| x == *v))
                        .map(|v| v.to_string())
                        .collect()
                } else {
                    Vec::new()
                }
            };
            let status_verbs = subresource_verbs(info.status_subresource);
            let scale_verbs = subresource_verbs(info.scale.is_some());
            let group = match groups.iter_mut().position(|g| g.name == info.group) {
                Some(i) => &mut groups[i],
                None => {
                    groups.push(ServedGroup {
                        name: info.group.clone(),
                        versions: Vec::new(),
                    });
                    groups.last_mut().expect("just pushed")
                }
            };
            let version = match group
                .versions
                .iter_mut()
                .position(|v| v.version == info.version)
            {
                Some(i) => &mut group.versions[i],
                None => {
                    group.versions.push(ServedVersion {
                        version: info.version.clone(),
                        resources: Vec::new(),
                    });
                    group.versions.last_mut().expect("just pushed")
                }
            };
            version.resources.push(ServedResource {
                info,
                verbs,
                status_verbs,
                scale_verbs,
            });
        }
        groups
    }
}
