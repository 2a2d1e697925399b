//! [`VersionedStorage`]: one served version of a multi-version kind, and how it converts
//! between its version and the storage version (requests in, objects out).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;

use crate::apply;
use crate::error::ApiError;
use crate::registry::cache::converted_events::ConvertedEvents;
use crate::registry::rest::options::{ListOptions, WriteOptions};
use crate::registry::rest::{ObjectList, RequestContext, RestStorage};
use crate::registry::store::storage_error;
use crate::registry::versions::conversion::{
    self, ConversionError, Converter, MigrationReport, VersionPrefix,
};
use crate::resource::ResourceInfo;
use crate::schema::StructuralSchema;
use crate::storage::{CorruptValue, Storage, StorageError};

/// One served version of a multi-version kind: requests in this version are converted to the
/// storage version and handed to the kind's one store; what it answers is converted back.
pub struct VersionedStorage {
    pub(super) info: ResourceInfo,
    /// `info`, shared with the requests this version hands to the store of the storage
    /// version ([`RequestContext::request_resource`]).
    pub(super) request_resource: Arc<ResourceInfo>,
    pub(super) schema: StructuralSchema,
    /// Every version's schema, by `<group>/<version>`.
    pub(super) schemas: Arc<BTreeMap<String, StructuralSchema>>,
    pub(super) api_version: String,
    /// The start of this version's objects.
    pub(super) in_version: VersionPrefix,
    pub(super) warning: Option<String>,
    /// The store of the storage version (on a [`ConvertingStorage`]).
    pub(super) inner: Arc<dyn RestStorage>,
    pub(super) converter: Arc<dyn Converter>,
    /// The storage itself, without conversion (migration, deletion of corrupt objects).
    pub(super) raw: Arc<dyn Storage>,
    pub(super) prefix: String,
    pub(super) storage_version: String,
    /// The watch events of this version, converted (or checked) once for all watchers.
    pub(super) converted: Arc<ConvertedEvents>,
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
    pub(super) fn inner_ctx<'c>(&self, ctx: &'c RequestContext) -> Cow<'c, RequestContext> {
        if self.is_storage_version() {
            return Cow::Borrowed(ctx);
        }
        Cow::Owned(RequestContext {
            request_resource: Some(self.request_resource.clone()),
            ..ctx.clone()
        })
    }

    pub(super) fn key(&self, ctx: &RequestContext, name: &str) -> String {
        match ctx.namespace.as_deref() {
            Some(ns) if self.info.namespaced() => format!("{}{ns}/{name}", self.prefix),
            _ => format!("{}{name}", self.prefix),
        }
    }

    /// An object of the storage version's store in this version. The store's objects were
    /// checked to decode where they were read ([`ConvertingStorage`]) or encoded from its type
    /// a moment ago, so one already in this version is answered as it is; any other is
    /// converted, and one that does not convert is a 500 naming it.
    pub(super) fn out(&self, object: Bytes) -> Result<Bytes, ApiError> {
        self.in_version(object)
            .map_err(|(e, object)| self.corrupt(&object_name(&object), &e))
    }

    /// `object` in this version, or why it does not convert (with the object).
    pub(super) fn in_version(&self, object: Bytes) -> Result<Bytes, (ConversionError, Bytes)> {
        if self.in_version.starts(&object) {
            return Ok(object);
        }
        conversion::convert_bytes(self.converter.as_ref(), &object, &self.api_version)
            .map_err(|e| (e, object))
    }

    /// The 500 of a read of `name` (`<namespace>/<name>` or `<name>`) that does not convert.
    pub(super) fn corrupt(&self, name: &str, err: &ConversionError) -> ApiError {
        let value = CorruptValue {
            key: format!("{}{name}", self.prefix),
            message: err.to_string(),
        };
        storage_error(&self.info, "get", name, StorageError::Corrupt(vec![value]))
    }

    /// Objects in this version, converted; objects that do not convert fail the list as
    /// upstream's does: `500 StorageReadError` naming every one of them.
    pub(super) fn out_list(&self, mut list: ObjectList) -> Result<ObjectList, ApiError> {
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
    pub(super) fn in_storage_version(&self, body: Value) -> Result<Value, ApiError> {
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
    pub(super) fn tagged(&self, mut body: Value) -> Result<Value, ApiError> {
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

    pub(super) fn value_out(&self, value: Value) -> Result<Value, ApiError> {
        self.converter
            .convert(value, &self.api_version)
            .map_err(|e| self.corrupt("", &e))
    }

    /// Records a write other than an apply in `new`'s `managedFields`, in this version's terms
    /// (the store of the storage version is told the managers are computed).
    pub(super) fn track(
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
    pub(super) fn validate(
        &self,
        name: &str,
        new: &Value,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
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
    pub(super) fn split_field_selector(
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

    pub(super) fn computed(opts: &WriteOptions) -> WriteOptions {
        WriteOptions {
            apply: true,
            ..opts.clone()
        }
    }

    pub(super) async fn current(
        &self,
        ctx: &RequestContext,
        name: &str,
    ) -> Result<Value, ApiError> {
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
