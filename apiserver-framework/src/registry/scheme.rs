//! The registry (scheme) of a server: groups → versions → resources and their storage.

use std::any::Any;
use std::sync::Arc;

use serde_json::Value;

use crate::admission::ObjectInterfaces;
use crate::error::ApiError;
use crate::registry::rest::RestStorage;
use crate::registry::store::Store;
use crate::registry::typed::TypedResource;
use crate::registry::versions::VersionedStorage;
use crate::registry::versions::conversion::Converter;
use crate::resource::{ApiResource, ResourceInfo, compare_versions};

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

    /// `T`'s resource in `T`'s version, read and written as `T` (see [`TypedResource`]); an
    /// internal error naming it when the server does not serve it.
    pub fn resource<T: ApiResource>(&self) -> Result<TypedResource<'_, T>, ApiError> {
        let (group, version, plural) = (T::group(&()), T::version(&()), T::plural(&()));
        self.find(&group, &version, &plural)
            .map(TypedResource::new)
            .ok_or_else(|| {
                ApiError::internal(format!("{plural}.{group} is not served in {version}"))
            })
    }

    /// Every served version of `resource` (the resources of its group and plural), the
    /// preferred version first, as Kubernetes ranks versions: upstream's equivalent resources
    /// (`EquivalentResourceMapper`) of one group.
    pub fn versions_of(&self, resource: &ResourceInfo) -> Vec<&ResourceInfo> {
        let mut versions: Vec<&ResourceInfo> = self
            .resources
            .iter()
            .map(|r| r.info())
            .filter(|i| i.group == resource.group && i.plural == resource.plural)
            .collect();
        versions.sort_by(|a, b| compare_versions(&a.version, &b.version));
        versions
    }

    /// The conversions between the versions of `resource`'s kind, when it is a kind of
    /// several versions ([`VersionedStorage`]); `None` for a resource of one version.
    pub fn converter_of(&self, resource: &ResourceInfo) -> Option<&Arc<dyn Converter>> {
        self.resources.iter().find_map(|r| {
            let info = r.info();
            if info.group != resource.group || info.plural != resource.plural {
                return None;
            }
            Some(r.downcast_ref::<VersionedStorage>()?.converter())
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
        self.resources.iter().find_map(|r| {
            r.downcast_ref::<Store<T>>().or_else(|| {
                r.downcast_ref::<VersionedStorage>()?
                    .inner()
                    .downcast_ref::<Store<T>>()
            })
        })
    }
}

/// Admission's view of the registry: a plugin sees the server's resources through
/// [`ObjectInterfaces`], which names nothing of the registry.
impl ObjectInterfaces for Registry {
    fn versions_of(&self, resource: &ResourceInfo) -> Vec<&ResourceInfo> {
        Registry::versions_of(self, resource)
    }

    fn convert(
        &self,
        resource: &ResourceInfo,
        object: Value,
        api_version: &str,
    ) -> Option<Result<Value, Box<dyn std::error::Error + Send + Sync>>> {
        let converter = self.converter_of(resource)?;
        Some(converter.convert(object, api_version).map_err(Into::into))
    }
}

/// The registry behind admission's view of it ([`AdmissionAttributes::registry`]), for
/// plugins that read other objects typed.
///
/// [`AdmissionAttributes::registry`]: crate::admission::AdmissionAttributes::registry
impl dyn ObjectInterfaces {
    /// The server's [`Registry`], when these are its interfaces (they are, in every server).
    pub fn registry(&self) -> Option<&Registry> {
        (self as &dyn Any).downcast_ref::<Registry>()
    }

    /// The generic store of `T` (see [`Registry::store`]).
    pub fn store<T: ApiResource>(&self) -> Option<&Store<T>> {
        self.registry()?.store::<T>()
    }
}
