//! API discovery documents: the legacy `/apis` tree and aggregated discovery v2.
//!
//! The functions here are pure: they turn the description of what a server (or a chain of
//! servers) serves into the JSON documents that clients read.

pub mod aggregated;
pub mod legacy;

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
