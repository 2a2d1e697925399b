//! [`Group`]: the resources of one API group, as a server's builder receives them.

use std::sync::Arc;

use crate::registry::rest::RestStorage;
use crate::registry::store::Store;
use crate::registry::strategy::{DefaultStrategy, Strategy};
use crate::registry::subresource::CustomSubresource;
use crate::registry::versions::{Kind, StorageVersions};
use crate::registry::with_subresources::WithSubresources;
use crate::resource::ApiResource;
use crate::storage::Storage;

type Factory =
    Box<dyn FnOnce(&Arc<dyn Storage>, &StorageVersions) -> Vec<Arc<dyn RestStorage>> + Send>;

/// The resources of one API group.
///
/// ```text
/// Group::new("wardle.example.com")
///     .resource::<Flunder>()
///     .resource_with::<Fischer>(FischerStrategy)
///     .subresource::<Flunder>(Subresource::getter(names, Describe))
/// ```
pub struct Group {
    name: String,
    versions: Vec<String>,
    factories: Vec<Factory>,
    /// Custom subresources by `(version, plural)` of their resource.
    subresources: Vec<(String, String, Arc<dyn CustomSubresource>)>,
    storage_versions: StorageVersions,
    /// The declared versions of each multi-version kind, by `<plural>.<group>`.
    kinds: StorageVersions,
}

impl Group {
    /// An empty group named `name` (e.g. `wardle.example.com`).
    pub fn new(name: impl Into<String>) -> Self {
        Group {
            name: name.into(),
            versions: Vec::new(),
            factories: Vec::new(),
            subresources: Vec::new(),
            storage_versions: StorageVersions::new(),
            kinds: StorageVersions::new(),
        }
    }

    /// The group's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The versions of the group's resources, in registration order, without repeats.
    pub fn versions(&self) -> &[String] {
        &self.versions
    }

    /// Serves `T` with the generic store and the default strategy.
    pub fn resource<T: ApiResource>(self) -> Self {
        self.resource_with::<T>(DefaultStrategy)
    }

    /// Serves `T` with the generic store driven by `strategy`.
    pub fn resource_with<T: ApiResource>(mut self, strategy: impl Strategy<T>) -> Self {
        let strategy: Arc<dyn Strategy<T>> = Arc::new(strategy);
        let info = T::resource_info();
        self.check_group(&info.group);
        self.add_version(&info.version);
        self.factories.push(Box::new(
            move |storage: &Arc<dyn Storage>, _: &StorageVersions| {
                vec![Arc::new(Store::<T>::new(storage.clone(), strategy)) as Arc<dyn RestStorage>]
            },
        ));
        self
    }

    /// Serves `T` computed by `provider` on each request (see
    /// [`crate::registry::computed`]): read-only, nothing stored.
    pub fn computed<T: ApiResource>(
        self,
        provider: impl crate::registry::computed::ResourceProvider<T>,
    ) -> Self {
        self.storage(Arc::new(crate::registry::computed::Computed::<T, _>::new(
            provider,
        )))
    }

    /// Serves every version of a multi-version kind (see [`Kind`]).
    pub fn kind<H: Send + Sync + 'static>(mut self, kind: Kind<H>) -> Self {
        self.check_group(kind.group());
        for v in kind.served_versions() {
            self.add_version(&v);
        }
        let resource = format!("{}.{}", kind.plural(), kind.group());
        self.kinds
            .insert(resource.clone(), kind.declared_versions().join(","));
        self.factories.push(Box::new(
            move |storage: &Arc<dyn Storage>, chosen: &StorageVersions| {
                kind.build(storage, chosen.get(&resource).map(String::as_str))
            },
        ));
        self
    }

    /// Stores `resource` (`<plural>.<group>`) of a multi-version kind in `version`, whatever
    /// its [`Kind`] declares (the `--storage-version` flag).
    /// A resource that is not a multi-version kind of this group, or a version the kind does
    /// not declare, is an error naming them.
    pub fn set_storage_version(&mut self, resource: &str, version: &str) -> Result<(), String> {
        let Some(declared) = self.kinds.get(resource) else {
            return Err(format!(
                "{resource} is not a resource of {} served in several versions",
                self.name
            ));
        };
        if !declared.split(',').any(|v| v == version) {
            return Err(format!(
                "{resource} has no version {version:?} (it has {declared})"
            ));
        }
        self.storage_versions
            .insert(resource.to_string(), version.to_string());
        Ok(())
    }

    /// Serves a hand-written storage (for computed resources that need more than
    /// [`Group::computed`] gives).
    pub fn storage(mut self, rest: Arc<dyn RestStorage>) -> Self {
        self.check_group(&rest.info().group);
        let version = rest.info().version.clone();
        self.add_version(&version);
        self.factories.push(Box::new(move |_, _| vec![rest]));
        self
    }

    /// Serves a custom subresource (see [`crate::registry::subresource`]) of `T`'s resource.
    /// Its answers are documented in `T`'s group and version.
    pub fn subresource<T: ApiResource>(self, subresource: Arc<dyn CustomSubresource>) -> Self {
        let info = T::resource_info();
        self.subresource_of(&info.version, &info.plural, subresource)
    }

    /// Serves a custom subresource of the resource `plural` in `version` of this group (for
    /// hand-written storages).
    pub fn subresource_of(
        mut self,
        version: &str,
        plural: &str,
        subresource: Arc<dyn CustomSubresource>,
    ) -> Self {
        let name = &subresource.info().name;
        assert!(
            !name.is_empty() && !name.contains('/') && !matches!(name.as_str(), "status" | "scale"),
            "invalid custom subresource name {name:?}"
        );
        assert!(
            !self
                .subresources
                .iter()
                .any(|(v, p, s)| v == version && p == plural && s.info().name == *name),
            "subresource {plural}/{name} registered twice"
        );
        self.subresources
            .push((version.to_string(), plural.to_string(), subresource));
        self
    }

    fn add_version(&mut self, version: &str) {
        if !self.versions.iter().any(|v| v == version) {
            self.versions.push(version.to_string());
        }
    }

    fn check_group(&self, group: &str) {
        assert_eq!(
            group, self.name,
            "resource of group {group:?} registered in Group {:?}",
            self.name
        );
    }

    /// Builds the storages of the group's resources on `storage`.
    ///
    /// # Panics
    /// When a custom subresource names a resource the group does not serve.
    pub(crate) fn build(self, storage: &Arc<dyn Storage>) -> Vec<Arc<dyn RestStorage>> {
        let chosen = self.storage_versions;
        let mut subresources = self.subresources;
        let built: Vec<Arc<dyn RestStorage>> = self
            .factories
            .into_iter()
            .flat_map(|f| f(storage, &chosen))
            .map(|rest| {
                let info = rest.info().clone();
                let (mine, rest_of) = std::mem::take(&mut subresources)
                    .into_iter()
                    .partition(|(v, p, _)| *v == info.version && *p == info.plural);
                subresources = rest_of;
                let mine: Vec<Arc<dyn CustomSubresource>> =
                    mine.into_iter().map(|(_, _, s)| s).collect();
                if mine.is_empty() {
                    rest
                } else {
                    Arc::new(WithSubresources::new(rest, mine)) as Arc<dyn RestStorage>
                }
            })
            .collect();
        if let Some((v, p, s)) = subresources.first() {
            panic!(
                "subresource {p}/{} registered for a resource {v}/{p} that group {:?} does not serve",
                s.info().name,
                self.name
            );
        }
        built
    }
}
