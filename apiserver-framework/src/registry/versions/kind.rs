//! [`Kind`]: the declaration of one kind in several versions, and the storages it builds for
//! them (one [`VersionedStorage`] per served version, over one store of the storage version).

use std::collections::BTreeMap;
use std::fmt::Display;
use std::marker::PhantomData;
use std::sync::Arc;

use serde_json::Value;

use super::deprecation::Deprecation;
use super::hub_strategy::HubStrategy;
use super::storage::VersionedStorage;
use crate::registry::rest::RestStorage;
use crate::registry::store::Store;
use crate::registry::store::strategy::{DefaultStrategy, Strategy};
use crate::registry::versions::conversion::{
    Converter, ConvertingStorage, HubConversion, Spoke, VersionPrefix,
};
use crate::resource::{ApiResource, ResourceInfo};
use crate::schema::StructuralSchema;
use crate::storage::Storage;

type MakeStore<H> = fn(Arc<dyn Storage>, Arc<dyn Strategy<H>>) -> Arc<dyn RestStorage>;

/// One declared version.
struct Declared<H> {
    info: ResourceInfo,
    served: bool,
    deprecation: Option<Deprecation>,
    make_store: MakeStore<H>,
}

/// One kind in several versions, converting through the hub `H`.
///
/// Register it with [`crate::registry::group::Group::kind`].
pub struct Kind<H> {
    declared: Vec<Declared<H>>,
    spokes: Vec<Spoke<H>>,
    storage_version: Option<String>,
    strategy: Arc<dyn Strategy<H>>,
}

impl<H: Send + Sync + 'static> Default for Kind<H> {
    fn default() -> Self {
        Self::new()
    }
}

impl<H: Send + Sync + 'static> Kind<H> {
    /// A kind without versions yet, whose rules are the store's own ([`DefaultStrategy`]).
    pub fn new() -> Self {
        Kind {
            declared: Vec::new(),
            spokes: Vec::new(),
            storage_version: None,
            strategy: Arc::new(DefaultStrategy),
        }
    }

    /// Serves version `V`, which converts to and from the hub (`From` or `TryFrom` both ways;
    /// a version without them does not compile). The first version declared names the kind's
    /// group, kind and plural; every other must agree.
    pub fn version<V>(mut self) -> Self
    where
        V: ApiResource,
        H: TryFrom<V>,
        V: TryFrom<H>,
        <H as TryFrom<V>>::Error: Display,
        <V as TryFrom<H>>::Error: Display,
    {
        let info = V::resource_info();
        if let Some(first) = self.declared.first() {
            assert!(
                first.info.group == info.group
                    && first.info.kind == info.kind
                    && first.info.plural == info.plural,
                "version {} of {} is not a version of {}",
                info.version,
                info.group_kind(),
                first.info.group_kind()
            );
        }
        assert!(
            !self.declared.iter().any(|d| d.info.version == info.version),
            "version {} of {} declared twice",
            info.version,
            info.group_kind()
        );
        self.spokes.push(Spoke {
            api_version: info.api_version(),
            kind: info.kind.clone(),
            to_hub: Box::new(|value: Value| {
                let v: V = serde_json::from_value(value).map_err(|e| e.to_string())?;
                H::try_from(v).map_err(|e| e.to_string())
            }),
            from_hub: Box::new(|hub: H| {
                let v = V::try_from(hub).map_err(|e| e.to_string())?;
                serde_json::to_value(&v).map_err(|e| e.to_string())
            }),
            check: Box::new(|bytes: &[u8]| {
                serde_json::from_slice::<V>(bytes)
                    .map(drop)
                    .map_err(|e| e.to_string())
            }),
        });
        self.declared.push(Declared {
            info,
            served: true,
            deprecation: None,
            make_store: make_store::<V, H>,
        });
        self
    }

    /// What the server knows about each declared version, in declaration order.
    pub(crate) fn declared_infos(&self) -> impl Iterator<Item = &ResourceInfo> {
        self.declared.iter().map(|d| &d.info)
    }

    /// Stores objects in `version` (by default the preferred version). Objects stored in
    /// another version are still read (converted); [`VersionedStorage::migrate`] rewrites them.
    pub fn storage_version(mut self, version: impl Into<String>) -> Self {
        self.storage_version = Some(version.into());
        self
    }

    /// Marks `version` deprecated: its responses carry upstream's `Warning` header.
    pub fn deprecated(mut self, version: &str, deprecation: Deprecation) -> Self {
        self.declared_mut(version).deprecation = Some(deprecation);
        self
    }

    /// Keeps `version` for conversion (objects stored in it are read) without serving it.
    pub fn unserved(mut self, version: &str) -> Self {
        self.declared_mut(version).served = false;
        self
    }

    /// The kind's rules, written once against the hub: every version's writes are converted
    /// to the hub for defaulting and validation.
    pub fn strategy(mut self, strategy: impl Strategy<H>) -> Self {
        self.strategy = Arc::new(strategy);
        self
    }

    fn declared_mut(&mut self, version: &str) -> &mut Declared<H> {
        self.declared
            .iter_mut()
            .find(|d| d.info.version == version)
            .unwrap_or_else(|| panic!("version {version} is not declared"))
    }

    /// The group of the kind (of its first version).
    pub fn group(&self) -> &str {
        self.declared.first().map_or("", |d| d.info.group.as_str())
    }

    /// The kind's name (of its first version), e.g. `Flunder`.
    pub fn kind(&self) -> &str {
        self.declared.first().map_or("", |d| d.info.kind.as_str())
    }

    /// The kind's plural resource name.
    pub fn plural(&self) -> &str {
        self.declared.first().map_or("", |d| d.info.plural.as_str())
    }

    /// Every declared version, served or not.
    pub fn declared_versions(&self) -> Vec<String> {
        self.declared
            .iter()
            .map(|d| d.info.version.clone())
            .collect()
    }

    /// The served versions.
    pub fn served_versions(&self) -> Vec<String> {
        self.declared
            .iter()
            .filter(|d| d.served)
            .map(|d| d.info.version.clone())
            .collect()
    }

    /// The storages of the served versions on `storage`, storing in `storage_version` when
    /// given (a flag's choice), else in the declared or preferred one.
    pub fn build(
        self,
        storage: &Arc<dyn Storage>,
        storage_version: Option<&str>,
    ) -> Vec<Arc<dyn RestStorage>> {
        assert!(!self.declared.is_empty(), "a Kind needs a version");
        let stored = storage_version
            .map(str::to_string)
            .or(self.storage_version)
            .unwrap_or_else(|| {
                let mut versions: Vec<&str> = self
                    .declared
                    .iter()
                    .filter(|d| d.served)
                    .map(|d| d.info.version.as_str())
                    .collect();
                versions.sort_by(|a, b| crate::resource::compare_versions(a, b));
                versions.first().copied().unwrap_or("").to_string()
            });
        let stored = self
            .declared
            .iter()
            .find(|d| d.info.version == stored)
            .unwrap_or_else(|| panic!("storage version {stored} is not declared"));
        let storage_api_version = stored.info.api_version();
        let converter: Arc<dyn Converter> = Arc::new(HubConversion {
            spokes: self.spokes,
            strategy: self.strategy.clone(),
        });
        let converting: Arc<dyn Storage> = Arc::new(ConvertingStorage::new(
            storage.clone(),
            converter.clone(),
            storage_api_version.clone(),
        ));
        let inner = (stored.make_store)(converting, self.strategy);
        let schemas: Arc<BTreeMap<String, StructuralSchema>> = Arc::new(
            self.declared
                .iter()
                .map(|d| {
                    (
                        d.info.api_version(),
                        StructuralSchema::from_openapi(&d.info.schema),
                    )
                })
                .collect(),
        );
        let prefix = if stored.info.group.is_empty() {
            format!("/{}/", stored.info.plural)
        } else {
            format!("/{}/{}/", stored.info.group, stored.info.plural)
        };
        self.declared
            .iter()
            .filter(|d| d.served)
            .map(|d| {
                Arc::new(VersionedStorage {
                    schema: schemas[&d.info.api_version()].clone(),
                    schemas: schemas.clone(),
                    api_version: d.info.api_version(),
                    in_version: VersionPrefix::new(&d.info.api_version()),
                    warning: d
                        .deprecation
                        .as_ref()
                        .map(|dep| dep.warning(&d.info.api_version(), &d.info.kind)),
                    info: d.info.clone(),
                    request_resource: Arc::new(d.info.clone()),
                    inner: inner.clone(),
                    converter: converter.clone(),
                    raw: storage.clone(),
                    prefix: prefix.clone(),
                    storage_version: storage_api_version.clone(),
                    converted: Arc::default(),
                }) as Arc<dyn RestStorage>
            })
            .collect()
    }
}

fn make_store<V, H>(
    storage: Arc<dyn Storage>,
    strategy: Arc<dyn Strategy<H>>,
) -> Arc<dyn RestStorage>
where
    V: ApiResource,
    H: TryFrom<V> + Send + Sync + 'static,
    V: TryFrom<H>,
    <H as TryFrom<V>>::Error: Display,
    <V as TryFrom<H>>::Error: Display,
{
    let strategy: Arc<dyn Strategy<V>> = Arc::new(HubStrategy::<V, H> {
        hub: strategy,
        _marker: PhantomData,
    });
    Arc::new(Store::<V>::new(storage, strategy))
}
