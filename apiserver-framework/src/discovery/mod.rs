//! API discovery documents: the legacy `/apis` tree and aggregated discovery v2.
//!
//! The functions here are pure: they turn the description of what a server (or a chain of
//! servers) serves into the JSON documents that clients read.

// The documents' builders serve the server's routes; public with the `testing` feature, for
// the workspace's tests of the documents.
internal_modules!(aggregated, legacy);

use crate::registry::rest::subresource::SubresourceInfo;
use crate::registry::scheme::Registry;
use crate::resource::ResourceInfo;

/// A resource as a server serves it: its description and the verbs its storage supports.
#[derive(Clone, Debug)]
pub struct ServedResource {
    /// The resource's static description.
    pub info: ResourceInfo,
    /// Upstream verb names supported on the main resource, in upstream order:
    /// `create`, `delete`, `deletecollection`, `get`, `list`, `patch`, `update`, `watch`.
    pub verbs: Vec<String>,
    /// Verbs of the `status` subresource (`get`, `patch`, `update`); empty without one.
    pub status_verbs: Vec<String>,
    /// Verbs of the `scale` subresource (`get`, `patch`, `update`); empty without one.
    pub scale_verbs: Vec<String>,
    /// The custom subresources (get with options, actions, connect), in registration order.
    pub custom_subresources: Vec<SubresourceInfo>,
    /// The version objects are stored in (the resource's own, or its kind's storage version
    /// when it is served in several): what `storageVersionHash` hashes.
    pub storage_version: String,
}

impl ServedResource {
    /// The group and version of a custom subresource's answer: its own, or the resource's
    /// when it names none.
    pub fn response_group_version<'a>(&'a self, sub: &'a SubresourceInfo) -> (&'a str, &'a str) {
        if sub.response_group.is_empty() && sub.response_version.is_empty() {
            (&self.info.group, &self.info.version)
        } else {
            (&sub.response_group, &sub.response_version)
        }
    }
}

/// One version of a group, with its resources.
#[derive(Clone, Debug)]
pub struct ServedVersion {
    /// The version, e.g. `v1alpha1`.
    pub version: String,
    /// The resources served in this version.
    pub resources: Vec<ServedResource>,
}

/// One API group, with its versions in order of preference (preferred first).
#[derive(Clone, Debug)]
pub struct ServedGroup {
    /// The group name, e.g. `wardle.example.com`.
    pub name: String,
    /// The versions, preferred first.
    pub versions: Vec<ServedVersion>,
}

/// The groups, versions and resources `registry` serves, for discovery and OpenAPI. Versions
/// are listed in Kubernetes' order of priority (see [`crate::resource::compare_versions`]:
/// `v1` before `v1beta1` before `v1alpha1`), the first preferred.
pub(crate) fn served_groups(registry: &Registry) -> Vec<ServedGroup> {
    let mut groups: Vec<ServedGroup> = Vec::new();
    for r in registry.resources() {
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
        let custom_subresources = r
            .custom_subresources()
            .iter()
            .map(|s| s.info().clone())
            .collect();
        let storage_version = r.storage_version().unwrap_or(&info.version).to_string();
        version.resources.push(ServedResource {
            storage_version,
            info,
            verbs,
            status_verbs,
            scale_verbs,
            custom_subresources,
        });
    }
    for g in &mut groups {
        g.versions
            .sort_by(|a, b| crate::resource::compare_versions(&a.version, &b.version));
    }
    groups
}
