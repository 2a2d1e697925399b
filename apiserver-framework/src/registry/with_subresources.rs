//! A storage with custom subresources: any [`RestStorage`] plus the
//! [`CustomSubresource`]s registered for its resource.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;

use crate::error::ApiError;
use crate::registry::options::{DeleteOptions, ListOptions, WriteOptions};
use crate::registry::rest::{
    DeleteOutcome, EventStream, ObjectList, ProtobufDecoder, RequestContext, RestStorage,
};
use crate::registry::subresource::CustomSubresource;
use crate::resource::ResourceInfo;
use crate::schema::StructuralSchema;

/// `inner` serving `subresources` besides its own operations, which it forwards unchanged.
pub struct WithSubresources {
    inner: Arc<dyn RestStorage>,
    subresources: Vec<Arc<dyn CustomSubresource>>,
}

impl WithSubresources {
    /// `inner` with `subresources`.
    pub fn new(inner: Arc<dyn RestStorage>, subresources: Vec<Arc<dyn CustomSubresource>>) -> Self {
        WithSubresources {
            inner,
            subresources,
        }
    }
}

#[async_trait::async_trait]
impl RestStorage for WithSubresources {
    fn info(&self) -> &ResourceInfo {
        self.inner.info()
    }

    fn verbs(&self) -> Vec<&'static str> {
        self.inner.verbs()
    }

    /// The inner storage, so that typed access (`Registry::store`) finds it.
    fn wrapped(&self) -> Option<&dyn RestStorage> {
        Some(self.inner.as_ref())
    }

    fn structural_schema(&self) -> StructuralSchema {
        self.inner.structural_schema()
    }

    fn protobuf_decoder(&self) -> Option<ProtobufDecoder> {
        self.inner.protobuf_decoder()
    }

    fn custom_subresources(&self) -> &[Arc<dyn CustomSubresource>] {
        &self.subresources
    }

    fn deprecation_warning(&self) -> Option<&str> {
        self.inner.deprecation_warning()
    }

    fn storage_version(&self) -> Option<&str> {
        self.inner.storage_version()
    }

    async fn get(&self, ctx: &RequestContext, name: &str) -> Result<Bytes, ApiError> {
        self.inner.get(ctx, name).await
    }

    async fn list(&self, ctx: &RequestContext, opts: &ListOptions) -> Result<ObjectList, ApiError> {
        self.inner.list(ctx, opts).await
    }

    async fn watch(
        &self,
        ctx: &RequestContext,
        opts: &ListOptions,
    ) -> Result<EventStream, ApiError> {
        self.inner.watch(ctx, opts).await
    }

    async fn create(
        &self,
        ctx: &RequestContext,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        self.inner.create(ctx, body, opts).await
    }

    async fn update(
        &self,
        ctx: &RequestContext,
        name: &str,
        subresource: Option<&str>,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        self.inner.update(ctx, name, subresource, body, opts).await
    }

    async fn patch(
        &self,
        ctx: &RequestContext,
        name: &str,
        subresource: Option<&str>,
        patch: &(dyn Fn(Value) -> Result<Value, ApiError> + Send + Sync),
        opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        self.inner.patch(ctx, name, subresource, patch, opts).await
    }

    async fn delete(
        &self,
        ctx: &RequestContext,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<DeleteOutcome, ApiError> {
        self.inner.delete(ctx, name, opts).await
    }

    async fn delete_collection(
        &self,
        ctx: &RequestContext,
        list: &ListOptions,
        opts: &DeleteOptions,
    ) -> Result<ObjectList, ApiError> {
        self.inner.delete_collection(ctx, list, opts).await
    }
}
