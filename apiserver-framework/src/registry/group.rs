//! [`Group`]: the resources of one API group, as a server's builder receives them.

use std::sync::Arc;

use crate::registry::rest::RestStorage;
use crate::registry::store::Store;
use crate::registry::strategy::{DefaultStrategy, Strategy};
use crate::resource::ApiResource;
use crate::storage::Storage;

type Factory = Box<dyn FnOnce(&Arc<dyn Storage>) -> Arc<dyn RestStorage> + Send>;

/// The resources of one API group.
///
/// ```text
/// Group::new("wardle.example.com")
///     .resource::<Flunder>()
///     .resource_with::<Fischer>(FischerStrategy)
/// ```
pub struct Group {
    name: String,
    factories: Vec<Factory>,
}

impl Group {
    /// An empty group named `name` (e.g. `wardle.example.com`).
    pub fn new(name: impl Into<String>) -> Self {
        Group {
            name: name.into(),
            factories: Vec::new(),
        }
    }

    /// The group's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Serves `T` with the generic store and the default strategy.
    pub fn resource<T: ApiResource>(self) -> Self {
        self.resource_with::<T>(DefaultStrategy)
    }

    /// Serves `T` with the generic store driven by `strategy`.
    pub fn resource_with<T: ApiResource>(mut self, strategy: impl Strategy<T>) -> Self {
        let strategy: Arc<dyn Strategy<T>> = Arc::new(strategy);
        self.check_group(&T::resource_info().group);
        self.factories
            .push(Box::new(move |storage: &Arc<dyn Storage>| {
                Arc::new(Store::<T>::new(storage.clone(), strategy)) as Arc<dyn RestStorage>
            }));
        self
    }

    /// Serves a hand-written storage (for computed resources).
    pub fn storage(mut self, rest: Arc<dyn RestStorage>) -> Self {
        self.check_group(&rest.info().group);
        self.factories.push(Box::new(move |_| rest));
        self
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
        self.factories.into_iter().map(|f| f(storage)).collect()
    }
}
