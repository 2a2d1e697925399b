//! [`Group`]: the resources of one API group, as a server's builder receives them.

use std::sync::Arc;

use crate::registry::rest::RestStorage;
use crate::registry::store::Store;
use crate::registry::strategy::{DefaultStrategy, Strategy};
use crate::registry::versions::{Kind, StorageVersions};
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
/// ```
pub struct Group {
    name: String,
    versions: Vec<String>,
    factories: Vec<Factory>,
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

    /// Serves a hand-written storage (for computed resources).
    pub fn storage(mut self, rest: Arc<dyn RestStorage>) -> Self {
        self.check_group(&rest.info().group);
        let version = rest.info().version.clone();
        self.add_version(&version);
        self.factories.push(Box::new(move |_, _| vec![rest]));
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
    pub(crate) fn build(self, storage: &Arc<dyn Storage>) -> Vec<Arc<dyn RestStorage>> {
        let chosen = self.storage_versions;
        self.factories
            .into_iter()
            .flat_map(|f| f(storage, &chosen))
            .collect()
    }
}
