//! The REST verbs of a [`VersionedStorage`]: each request converted to the storage version
//! and handed to the kind's one store, and what it answers converted back (watch events once
//! for all the version's watchers).

use bytes::Bytes;
use futures::StreamExt;
use serde_json::Value;

use super::storage::VersionedStorage;
use crate::error::{ApiError, StatusDetails};
use crate::registry::rest::options::{DeleteOptions, ListOptions, WriteOptions};
use crate::registry::rest::{
    DeleteOutcome, EventStream, ObjectList, RequestContext, RestStorage, WatchEventType,
};
use crate::registry::store::storage_error;
use crate::registry::versions::conversion::{self, ConversionError};
use crate::registry::watch;
use crate::resource::ResourceInfo;
use crate::schema::StructuralSchema;
use crate::storage::{CorruptValue, StorageError};

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
