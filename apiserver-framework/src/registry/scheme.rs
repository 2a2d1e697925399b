//! The registry (scheme) of a server: groups → versions → resources and their storage.

use std::sync::Arc;

use crate::error::ApiError;
use crate::registry::rest::RestStorage;
use crate::registry::store::Store;
use crate::registry::typed::TypedResource;
use crate::registry::versions::VersionedStorage;
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
            let any = r.as_any();
            any.downcast_ref::<Store<T>>().or_else(|| {
                any.downcast_ref::<VersionedStorage>()?
                    .inner()
                    .as_any()
                    .downcast_ref::<Store<T>>()
            })
        })
    }
}
