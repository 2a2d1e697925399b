//! One kind in several versions: [`Kind`] declares them, with the hub they convert through and
//! the version objects are stored in; [`VersionedStorage`] serves each version from the one
//! store of the storage version, converting at the boundary.
//!
//! ```text
//! Group::new("wardle.example.com").kind(
//!     Kind::<hub::Flunder>::new()
//!         .version::<v1alpha1::Flunder>()
//!         .version::<v1beta1::Flunder>()
//!         .storage_version("v1alpha1")
//!         .deprecated("v1alpha1", Deprecation::since(1, 3).removed_in(1, 10))
//!         .strategy(FlunderStrategy),
//! )
//! ```
//!
//! Each version is a `#[derive(ApiResource)]` type; the hub is any Rust type holding the
//! object (often the newest version, or an internal type that is never served). A version is
//! accepted only if it converts both ways with the hub (`From` or `TryFrom`), so a version
//! without conversions does not compile. The conversions themselves, on JSON objects and on
//! the stored values, are in [`conversion`].

pub mod conversion;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Display;
use std::marker::PhantomData;
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use serde_json::Value;

use crate::apply;
use crate::error::{ApiError, FieldError, StatusDetails};
use crate::registry::cache::converted_events::ConvertedEvents;
use crate::registry::rest::options::{DeleteOptions, ListOptions, WriteOptions};
use crate::registry::rest::{
    DeleteOutcome, EventStream, ObjectList, RequestContext, RestStorage, WatchEventType,
};
use crate::registry::store::strategy::{DefaultStrategy, Strategy};
use crate::registry::store::{Store, storage_error};
use crate::registry::versions::conversion::{
    ConversionError, Converter, ConvertingStorage, HubConversion, MigrationReport, Spoke,
    VersionPrefix,
};
use crate::registry::watch;
use crate::resource::{ApiResource, ResourceInfo};
use crate::schema::StructuralSchema;
use crate::storage::{CorruptValue, Storage, StorageError};

/// When a version was deprecated (and is removed), as upstream's prerelease-lifecycle markers
/// say: requests to it answer with a `Warning` header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deprecation {
    /// The Kubernetes minor release (`major`, `minor`) the version is deprecated in.
    pub deprecated_in: (u32, u32),
    /// The release it is no longer served in, if announced.
    pub removed_in: Option<(u32, u32)>,
    /// The `<group>/<version>` and kind to use instead, if any.
    pub replacement: Option<(String, String)>,
}

impl Deprecation {
    /// Deprecated in `major.minor`.
    pub fn since(major: u32, minor: u32) -> Self {
        Deprecation {
            deprecated_in: (major, minor),
            removed_in: None,
            replacement: None,
        }
    }

    /// Unavailable from `major.minor` on.
    pub fn removed_in(mut self, major: u32, minor: u32) -> Self {
        self.removed_in = Some((major, minor));
        self
    }

    /// Replaced by `kind` in `api_version` (`<group>/<version>`).
    pub fn replaced_by(mut self, api_version: impl Into<String>, kind: impl Into<String>) -> Self {
        self.replacement = Some((api_version.into(), kind.into()));
        self
    }

    /// Upstream's warning text: `<group>/<version> <Kind> is deprecated in v<X.Y>+`, then
    /// `, unavailable in v<X.Y>+` and `; use <group>/<version> <Kind>` when known.
    pub fn warning(&self, api_version: &str, kind: &str) -> String {
        let (major, minor) = self.deprecated_in;
        let mut text = format!("{api_version} {kind} is deprecated in v{major}.{minor}+");
        if let Some((major, minor)) = self.removed_in {
            text.push_str(&format!(", unavailable in v{major}.{minor}+"));
        }
        if let Some((gv, kind)) = &self.replacement {
            text.push_str(&format!("; use {gv} {kind}"));
        }
        text
    }
}

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

/// A strategy written against the hub, run on a version by converting.
struct HubStrategy<V, H> {
    hub: Arc<dyn Strategy<H>>,
    _marker: PhantomData<fn() -> V>,
}

impl<V, H> HubStrategy<V, H>
where
    V: ApiResource,
    H: TryFrom<V>,
    V: TryFrom<H>,
    <H as TryFrom<V>>::Error: Display,
    <V as TryFrom<H>>::Error: Display,
{
    fn to_hub(obj: &V) -> Result<H, FieldError> {
        H::try_from(obj.clone()).map_err(|e| FieldError::invalid("spec", "", e.to_string()))
    }

    /// Runs `f` on the hub form of `obj` and takes the result back (metadata stays `obj`'s).
    fn mutate(obj: &mut V, f: impl FnOnce(&mut H)) {
        let Ok(mut hub) = Self::to_hub(obj) else {
            return;
        };
        f(&mut hub);
        if let Ok(mut back) = V::try_from(hub) {
            // `obj`'s metadata moves into the result (not copied); the hub's is dropped.
            std::mem::swap(back.meta_mut(), obj.meta_mut());
            *obj = back;
        }
    }
}

impl<V, H> Strategy<V> for HubStrategy<V, H>
where
    V: ApiResource,
    H: TryFrom<V> + Send + Sync + 'static,
    V: TryFrom<H>,
    <H as TryFrom<V>>::Error: Display,
    <V as TryFrom<H>>::Error: Display,
{
    fn default(&self, obj: &mut V) {
        Self::mutate(obj, |h| self.hub.default(h));
    }

    fn prepare_for_create(&self, obj: &mut V) {
        Self::mutate(obj, |h| self.hub.prepare_for_create(h));
    }

    fn prepare_for_update(&self, new: &mut V, old: &V) {
        let Ok(old) = Self::to_hub(old) else {
            return;
        };
        Self::mutate(new, |h| self.hub.prepare_for_update(h, &old));
    }

    fn validate(&self, obj: &V) -> Vec<FieldError> {
        match Self::to_hub(obj) {
            Ok(h) => self.hub.validate(&h),
            Err(e) => vec![e],
        }
    }

    fn validate_update(&self, new: &V, old: &V) -> Vec<FieldError> {
        match (Self::to_hub(new), Self::to_hub(old)) {
            (Ok(n), Ok(o)) => self.hub.validate_update(&n, &o),
            (Err(e), _) | (_, Err(e)) => vec![e],
        }
    }
}

/// One served version of a multi-version kind: requests in this version are converted to the
/// storage version and handed to the kind's one store; what it answers is converted back.
pub struct VersionedStorage {
    info: ResourceInfo,
    /// `info`, shared with the requests this version hands to the store of the storage
    /// version ([`RequestContext::request_resource`]).
    request_resource: Arc<ResourceInfo>,
    schema: StructuralSchema,
    /// Every version's schema, by `<group>/<version>`.
    schemas: Arc<BTreeMap<String, StructuralSchema>>,
    api_version: String,
    /// The start of this version's objects.
    in_version: VersionPrefix,
    warning: Option<String>,
    /// The store of the storage version (on a [`ConvertingStorage`]).
    inner: Arc<dyn RestStorage>,
    converter: Arc<dyn Converter>,
    /// The storage itself, without conversion (migration, deletion of corrupt objects).
    raw: Arc<dyn Storage>,
    prefix: String,
    storage_version: String,
    /// The watch events of this version, converted (or checked) once for all watchers.
    converted: Arc<ConvertedEvents>,
}

impl VersionedStorage {
    /// The `<group>/<version>` objects are stored in.
    pub fn storage_version(&self) -> &str {
        &self.storage_version
    }

    /// Whether this version is the storage version.
    pub fn is_storage_version(&self) -> bool {
        self.api_version == self.storage_version
    }

    /// The store of the storage version, for typed access.
    pub fn inner(&self) -> &Arc<dyn RestStorage> {
        &self.inner
    }

    /// The converter between the kind's versions.
    pub fn converter(&self) -> &Arc<dyn Converter> {
        &self.converter
    }

    /// Rewrites every object of the kind that is stored in another version into the storage
    /// version (see [`conversion::migrate`]).
    pub async fn migrate(&self) -> Result<MigrationReport, StorageError> {
        conversion::migrate(
            &self.raw,
            self.converter.as_ref(),
            &self.prefix,
            &self.storage_version,
        )
        .await
    }

    /// The context of a write handed to the store of the storage version: it names this
    /// version as the request's, for admission (see [`RequestContext::request_resource`]).
    fn inner_ctx<'c>(&self, ctx: &'c RequestContext) -> Cow<'c, RequestContext> {
        if self.is_storage_version() {
            return Cow::Borrowed(ctx);
        }
        Cow::Owned(RequestContext {
            request_resource: Some(self.request_resource.clone()),
            ..ctx.clone()
        })
    }

    fn key(&self, ctx: &RequestContext, name: &str) -> String {
        match ctx.namespace.as_deref() {
            Some(ns) if self.info.namespaced() => format!("{}{ns}/{name}", self.prefix),
            _ => format!("{}{name}", self.prefix),
        }
    }

    /// An object of the storage version's store in this version. The store's objects were
    /// checked to decode where they were read ([`ConvertingStorage`]) or encoded from its type
    /// a moment ago, so one already in this version is answered as it is; any other is
    /// converted, and one that does not convert is a 500 naming it.
    fn out(&self, object: Bytes) -> Result<Bytes, ApiError> {
        self.in_version(object)
            .map_err(|(e, object)| self.corrupt(&object_name(&object), &e))
    }

    /// `object` in this version, or why it does not convert (with the object).
    fn in_version(&self, object: Bytes) -> Result<Bytes, (ConversionError, Bytes)> {
        if self.in_version.starts(&object) {
            return Ok(object);
        }
        conversion::convert_bytes(self.converter.as_ref(), &object, &self.api_version)
            .map_err(|e| (e, object))
    }

    /// The 500 of a read of `name` (`<namespace>/<name>` or `<name>`) that does not convert.
    fn corrupt(&self, name: &str, err: &ConversionError) -> ApiError {
        let value = CorruptValue {
            key: format!("{}{name}", self.prefix),
            message: err.to_string(),
        };
        storage_error(&self.info, "get", name, StorageError::Corrupt(vec![value]))
    }

    /// Objects in this version, converted; objects that do not convert fail the list as
    /// upstream's does: `500 StorageReadError` naming every one of them.
    fn out_list(&self, mut list: ObjectList) -> Result<ObjectList, ApiError> {
        // The store's items are in the storage version already: its storage converts (or
        // checks) every value it reads. Looking at each again would only read every item of
        // the page once more.
        if self.is_storage_version() {
            return Ok(list);
        }
        let mut corrupt = Vec::new();
        for item in list.items_mut() {
            // An item already in this version stays as it is.
            if self.in_version.starts(item) {
                continue;
            }
            match conversion::convert_bytes(self.converter.as_ref(), item, &self.api_version) {
                Ok(converted) => *item = converted,
                Err(e) => corrupt.push(CorruptValue {
                    key: format!("{}{}", self.prefix, object_key_suffix(item)),
                    message: e.to_string(),
                }),
            }
        }
        if !corrupt.is_empty() {
            let err = StorageError::Corrupt(corrupt);
            return Err(storage_error(&self.info, "list", &self.prefix, err));
        }
        Ok(list)
    }

    /// A request body in this version, in the storage version.
    fn in_storage_version(&self, body: Value) -> Result<Value, ApiError> {
        let body = self.tagged(body)?;
        if self.is_storage_version() || !body.is_object() {
            return Ok(body);
        }
        self.converter
            .convert(body, &self.storage_version)
            .map_err(|e| {
                ApiError::bad_request(format!(
                    "{} in version {:?} cannot be handled as a {}: {e}",
                    self.info.kind, self.info.version, self.info.kind
                ))
            })
    }

    /// A request body with this version's `apiVersion` (set when absent); another version or
    /// kind is a 400, as the store's.
    fn tagged(&self, mut body: Value) -> Result<Value, ApiError> {
        if let Some(map) = body.as_object_mut() {
            match map.get("apiVersion") {
                None => {
                    map.insert("apiVersion".into(), Value::String(self.api_version.clone()));
                }
                Some(Value::String(gv)) if gv != &self.api_version => {
                    return Err(ApiError::bad_request(format!(
                        "the API version in the data ({gv}) does not match the expected API version ({})",
                        self.api_version
                    )));
                }
                _ => {}
            }
            if let Some(Value::String(k)) = map.get("kind")
                && k != &self.info.kind
            {
                return Err(ApiError::bad_request(format!(
                    "the kind in the data ({k}) does not match the expected kind ({})",
                    self.info.kind
                )));
            }
        }
        Ok(body)
    }

    fn value_out(&self, value: Value) -> Result<Value, ApiError> {
        self.converter
            .convert(value, &self.api_version)
            .map_err(|e| self.corrupt("", &e))
    }

    /// Records a write other than an apply in `new`'s `managedFields`, in this version's terms
    /// (the store of the storage version is told the managers are computed).
    fn track(
        &self,
        old: Option<&Value>,
        new: &mut Value,
        subresource: Option<&str>,
        opts: &WriteOptions,
    ) -> Result<(), ApiError> {
        if opts.apply {
            return Ok(());
        }
        let managed = apply::ManagedFields::for_update(old, new, subresource.is_some());
        let ctx = apply::Context {
            schema: &self.schema,
            manager: &opts.field_manager,
            api_version: &self.api_version,
            subresource,
            reset_fields: apply::reset_fields(subresource, self.info.status_subresource),
            now: jiff::Timestamp::now(),
        };
        let managed = apply::update_across(&ctx, Some(self), old, new, managed)?;
        managed.write_to(new);
        Ok(())
    }

    /// The kind's validation of a write in this version, before it is converted to the
    /// storage version (which may not hold all of it): a 422 `Invalid` as the store's.
    fn validate(&self, name: &str, new: &Value, old: Option<&Value>) -> Result<(), ApiError> {
        let errs = self.converter.validate(new, old).map_err(|e| {
            ApiError::bad_request(format!(
                "{} in version {:?} cannot be handled as a {}: {e}",
                self.info.kind, self.info.version, self.info.kind
            ))
        })?;
        if errs.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid(&self.info, name, &errs))
        }
    }

    /// A field selector on this version's fields, for a version other than the storage
    /// version: checked against this version's selectable fields, removed from the options the
    /// store of the storage version gets (it knows its own fields only) and returned as the
    /// options to filter the converted objects with. Metadata fields stay with the store.
    #[allow(clippy::type_complexity)]
    fn split_field_selector(
        &self,
        opts: &ListOptions,
    ) -> Result<(ListOptions, Option<ListOptions>), ApiError> {
        opts.field_selector
            .check_supported(&self.info.field_selector_labels())
            .map_err(ApiError::bad_request)?;
        let own_field = |field: &str| !field.starts_with("metadata.");
        if self.is_storage_version()
            || !opts
                .field_selector
                .requirements
                .iter()
                .any(|r| own_field(&r.field))
        {
            return Ok((opts.clone(), None));
        }
        let mut inner = opts.clone();
        inner
            .field_selector
            .requirements
            .retain(|r| !own_field(&r.field));
        let mut own = ListOptions::default();
        own.field_selector.requirements = opts
            .field_selector
            .requirements
            .iter()
            .filter(|r| own_field(&r.field))
            .cloned()
            .collect();
        Ok((inner, Some(own)))
    }

    fn computed(opts: &WriteOptions) -> WriteOptions {
        WriteOptions {
            apply: true,
            ..opts.clone()
        }
    }

    async fn current(&self, ctx: &RequestContext, name: &str) -> Result<Value, ApiError> {
        let bytes = self.get(ctx, name).await?;
        serde_json::from_slice(&bytes).map_err(ApiError::internal)
    }
}

impl apply::VersionConverter for VersionedStorage {
    fn to_version(&self, obj: &Value, api_version: &str) -> Option<(Value, StructuralSchema)> {
        let schema = self.schemas.get(api_version)?.clone();
        let mut obj = obj.clone();
        if let Some(map) = obj.as_object_mut() {
            map.entry("apiVersion")
                .or_insert_with(|| Value::String(self.api_version.clone()));
            map.entry("kind")
                .or_insert_with(|| Value::String(self.info.kind.clone()));
        }
        let converted = self.converter.convert(obj, api_version).ok()?;
        Some((converted, schema))
    }
}

/// `metadata.name` of a serialized object, or `""`.
fn object_name(object: &[u8]) -> String {
    serde_json::from_slice::<Value>(object)
        .ok()
        .and_then(|v| {
            v.pointer("/metadata/name")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_default()
}

/// `<namespace>/<name>` (or `<name>`) of a serialized object, as its key ends.
fn object_key_suffix(object: &[u8]) -> String {
    let v = serde_json::from_slice::<Value>(object).unwrap_or(Value::Null);
    let name = v
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    match v.pointer("/metadata/namespace").and_then(Value::as_str) {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_string(),
    }
}

#[async_trait::async_trait]
impl RestStorage for VersionedStorage {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }

    fn verbs(&self) -> Vec<&'static str> {
        self.inner.verbs()
    }

    fn structural_schema(&self) -> StructuralSchema {
        self.schema.clone()
    }

    fn deprecation_warning(&self) -> Option<&str> {
        self.warning.as_deref()
    }

    fn storage_version(&self) -> Option<&str> {
        self.storage_version
            .rsplit_once('/')
            .map_or(Some(self.storage_version.as_str()), |(_, v)| Some(v))
    }

    async fn get(&self, ctx: &RequestContext, name: &str) -> Result<Bytes, ApiError> {
        let bytes = self.inner.get(ctx, name).await?;
        self.in_version(bytes)
            .map_err(|(e, _)| self.corrupt_key(ctx, name, &e))
    }

    async fn list(&self, ctx: &RequestContext, opts: &ListOptions) -> Result<ObjectList, ApiError> {
        let (inner_opts, own) = self.split_field_selector(opts)?;
        let list = self.inner.list(ctx, &inner_opts).await?;
        let mut list = self.out_list(list)?;
        if let Some(own) = own {
            list.items_mut().retain(|item| watch::matches(&own, item));
            list.remaining_item_count = None;
        }
        Ok(list)
    }

    async fn watch(
        &self,
        ctx: &RequestContext,
        opts: &ListOptions,
    ) -> Result<EventStream, ApiError> {
        let (inner_opts, own) = self.split_field_selector(opts)?;
        let stream = self.inner.watch(ctx, &inner_opts).await?;
        let converter = self.converter.clone();
        let converted = self.converted.clone();
        let to = self.api_version.clone();
        let kind = self.info.kind.clone();
        Ok(stream
            .filter_map(move |mut event| {
                let out = match event.kind {
                    WatchEventType::Error => Some(event),
                    WatchEventType::Bookmark => {
                        event.object = retag(&event.object, &to, &kind);
                        Some(event)
                    }
                    _ => match converted.get_or_convert(&event, |object| {
                        conversion::convert_bytes(converter.as_ref(), object, &to)
                    }) {
                        Ok(out) if own.as_ref().is_none_or(|o| watch::matches(o, &out.object)) => {
                            Some(out)
                        }
                        Ok(_) => None,
                        Err(e) => {
                            tracing::warn!(error = %e, "watch event of an object that does not decode dropped");
                            None
                        }
                    },
                };
                futures::future::ready(out)
            })
            .boxed())
    }

    async fn create(
        &self,
        ctx: &RequestContext,
        mut body: Value,
        opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        if self.is_storage_version() {
            let body = self.in_storage_version(body)?;
            return self.out(self.inner.create(ctx, body, opts).await?);
        }
        self.track(None, &mut body, None, opts)?;
        let name = body
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let body = self.tagged(body)?;
        self.validate(&name, &body, None)?;
        let body = self.in_storage_version(body)?;
        let bytes = self
            .inner
            .create(&self.inner_ctx(ctx), body, &Self::computed(opts))
            .await?;
        self.out(bytes)
    }

    async fn update(
        &self,
        ctx: &RequestContext,
        name: &str,
        subresource: Option<&str>,
        mut body: Value,
        opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        if self.is_storage_version() {
            let body = self.in_storage_version(body)?;
            let bytes = self
                .inner
                .update(ctx, name, subresource, body, opts)
                .await?;
            return self.out(bytes);
        }
        let old = self.current(ctx, name).await?;
        self.track(Some(&old), &mut body, subresource, opts)?;
        let body = self.tagged(body)?;
        if subresource.is_none() {
            self.validate(name, &body, Some(&old))?;
        }
        let body = self.in_storage_version(body)?;
        let bytes = self
            .inner
            .update(
                &self.inner_ctx(ctx),
                name,
                subresource,
                body,
                &Self::computed(opts),
            )
            .await?;
        self.out(bytes)
    }

    async fn patch(
        &self,
        ctx: &RequestContext,
        name: &str,
        subresource: Option<&str>,
        patch: &(dyn Fn(Value) -> Result<Value, ApiError> + Send + Sync),
        opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        if self.is_storage_version() {
            let bytes = self
                .inner
                .patch(ctx, name, subresource, patch, opts)
                .await?;
            return self.out(bytes);
        }
        let in_version = |stored: Value| -> Result<Value, ApiError> {
            let old = self.value_out(stored)?;
            let mut new = patch(old.clone())?;
            self.track(Some(&old), &mut new, subresource, opts)?;
            let new = self.tagged(new)?;
            if subresource.is_none() {
                self.validate(name, &new, Some(&old))?;
            }
            self.in_storage_version(new)
        };
        let bytes = self
            .inner
            .patch(
                &self.inner_ctx(ctx),
                name,
                subresource,
                &in_version,
                &Self::computed(opts),
            )
            .await?;
        self.out(bytes)
    }

    async fn delete(
        &self,
        ctx: &RequestContext,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<DeleteOutcome, ApiError> {
        if opts.ignore_store_read_error_with_cluster_breaking_potential == Some(true) {
            return self.unsafe_delete(ctx, name, opts).await;
        }
        match self.inner.delete(&self.inner_ctx(ctx), name, opts).await? {
            DeleteOutcome::Pending(bytes) => Ok(DeleteOutcome::Pending(self.out(bytes)?)),
            deleted => Ok(deleted),
        }
    }

    async fn delete_collection(
        &self,
        ctx: &RequestContext,
        list: &ListOptions,
        opts: &DeleteOptions,
    ) -> Result<ObjectList, ApiError> {
        let deleted = self
            .inner
            .delete_collection(&self.inner_ctx(ctx), list, opts)
            .await?;
        self.out_list(deleted)
    }
}

impl VersionedStorage {
    fn corrupt_key(&self, ctx: &RequestContext, name: &str, err: &ConversionError) -> ApiError {
        let value = CorruptValue {
            key: self.key(ctx, name),
            message: err.to_string(),
        };
        storage_error(&self.info, "get", name, StorageError::Corrupt(vec![value]))
    }

    /// Upstream's unsafe deletion of an object that cannot be read
    /// (`ignoreStoreReadErrorWithClusterBreakingPotential`): the key is removed without
    /// decoding it, without admission or finalizers. A readable object is deleted normally.
    async fn unsafe_delete(
        &self,
        ctx: &RequestContext,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<DeleteOutcome, ApiError> {
        if opts.dry_run {
            return Err(ApiError::bad_request(
                "ignoreStoreReadErrorWithClusterBreakingPotential: Invalid value: true: cannot be set together with .dryRun",
            ));
        }
        match self.get(ctx, name).await {
            Ok(_) => {
                let mut safe = opts.clone();
                safe.ignore_store_read_error_with_cluster_breaking_potential = None;
                return self.delete(ctx, name, &safe).await;
            }
            Err(e) if e.code == 404 => return Err(e),
            Err(_) => {}
        }
        let key = self.key(ctx, name);
        self.raw.delete(&key, None).await.map_err(|e| match e {
            StorageError::NotFound(_) => ApiError::not_found(&self.info, name),
            e => ApiError::internal(e),
        })?;
        Ok(DeleteOutcome::Deleted(Box::new(
            crate::error::Status::success(StatusDetails {
                name: name.to_string(),
                group: self.info.group.clone(),
                kind: self.info.plural.clone(),
                ..Default::default()
            }),
        )))
    }
}

/// A bookmark's object with this version's `apiVersion` and `kind`.
fn retag(object: &[u8], api_version: &str, kind: &str) -> Bytes {
    match serde_json::from_slice::<Value>(object) {
        Ok(mut v) => {
            if let Some(map) = v.as_object_mut() {
                map.insert("apiVersion".into(), Value::String(api_version.into()));
                map.insert("kind".into(), Value::String(kind.into()));
            }
            Bytes::from(serde_json::to_vec(&v).unwrap_or_default())
        }
        Err(_) => Bytes::copy_from_slice(object),
    }
}

/// Storage versions chosen at run time (a flag), by `<plural>.<group>`.
pub(crate) type StorageVersions = BTreeMap<String, String>;
