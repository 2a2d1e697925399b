//! [`DelegatingStorage`]: a [`RestStorage`] that serves another one with changes, writing only
//! what it changes.
//!
//! ```text
//! struct Slow(Arc<dyn RestStorage>);
//!
//! #[async_trait]
//! impl DelegatingStorage for Slow {
//!     fn inner(&self) -> &dyn RestStorage { self.0.as_ref() }
//!     async fn get(&self, ctx: &RequestContext, name: &str) -> Result<Bytes, ApiError> {
//!         tokio::time::sleep(Duration::from_millis(10)).await;
//!         self.0.get(ctx, name).await
//!     }
//! }
//! ```
//!
//! Every method of the trait forwards to [`DelegatingStorage::inner`] unless the wrapper writes
//! its own, and every `DelegatingStorage` is a [`RestStorage`] through one blanket
//! implementation: a method added to [`RestStorage`] is forwarded here once, for every wrapper.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;

use crate::error::ApiError;
use crate::registry::rest::options::{DeleteOptions, ListOptions, WriteOptions};
use crate::registry::rest::subresource::CustomSubresource;
use crate::registry::rest::{
    DeleteOutcome, EventStream, ObjectList, ProtobufDecoder, RequestContext, RestStorage,
};
use crate::resource::ResourceInfo;
use crate::schema::StructuralSchema;

/// A storage serving [`inner`](Self::inner) with changes: each method, [`RestStorage`]'s
/// namesake, forwards to the inner storage unless the wrapper writes it. Implementing this
/// trait implements [`RestStorage`].
///
/// [`wrapped`](Self::wrapped) is not forwarded: a wrapper is a storage of its own for typed
/// access unless it says it serves the inner storage unchanged.
#[async_trait::async_trait]
pub trait DelegatingStorage: Send + Sync + 'static {
    /// The storage served.
    fn inner(&self) -> &dyn RestStorage;

    /// See [`RestStorage::wrapped`]; `None` by default (not forwarded).
    fn wrapped(&self) -> Option<&dyn RestStorage> {
        None
    }

    /// See [`RestStorage::info`].
    fn info(&self) -> &ResourceInfo {
        self.inner().info()
    }

    /// See [`RestStorage::verbs`].
    fn verbs(&self) -> Vec<&'static str> {
        self.inner().verbs()
    }

    /// See [`RestStorage::structural_schema`].
    fn structural_schema(&self) -> StructuralSchema {
        self.inner().structural_schema()
    }

    /// See [`RestStorage::protobuf_decoder`].
    fn protobuf_decoder(&self) -> Option<ProtobufDecoder> {
        self.inner().protobuf_decoder()
    }

    /// See [`RestStorage::custom_subresources`].
    fn custom_subresources(&self) -> &[Arc<dyn CustomSubresource>] {
        self.inner().custom_subresources()
    }

    /// See [`RestStorage::deprecation_warning`].
    fn deprecation_warning(&self) -> Option<&str> {
        self.inner().deprecation_warning()
    }

    /// See [`RestStorage::storage_version`].
    fn storage_version(&self) -> Option<&str> {
        self.inner().storage_version()
    }

    /// See [`RestStorage::get`].
    async fn get(&self, ctx: &RequestContext, name: &str) -> Result<Bytes, ApiError> {
        self.inner().get(ctx, name).await
    }

    /// See [`RestStorage::list`].
    async fn list(&self, ctx: &RequestContext, opts: &ListOptions) -> Result<ObjectList, ApiError> {
        self.inner().list(ctx, opts).await
    }

    /// See [`RestStorage::watch`].
    async fn watch(
        &self,
        ctx: &RequestContext,
        opts: &ListOptions,
    ) -> Result<EventStream, ApiError> {
        self.inner().watch(ctx, opts).await
    }

    /// See [`RestStorage::create`].
    async fn create(
        &self,
        ctx: &RequestContext,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        self.inner().create(ctx, body, opts).await
    }

    /// See [`RestStorage::update`].
    async fn update(
        &self,
        ctx: &RequestContext,
        name: &str,
        subresource: Option<&str>,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        self.inner()
            .update(ctx, name, subresource, body, opts)
            .await
    }

    /// See [`RestStorage::patch`].
    async fn patch(
        &self,
        ctx: &RequestContext,
        name: &str,
        subresource: Option<&str>,
        patch: &(dyn Fn(Value) -> Result<Value, ApiError> + Send + Sync),
        opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        self.inner()
            .patch(ctx, name, subresource, patch, opts)
            .await
    }

    /// See [`RestStorage::delete`].
    async fn delete(
        &self,
        ctx: &RequestContext,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<DeleteOutcome, ApiError> {
        self.inner().delete(ctx, name, opts).await
    }

    /// See [`RestStorage::delete_collection`].
    async fn delete_collection(
        &self,
        ctx: &RequestContext,
        list: &ListOptions,
        opts: &DeleteOptions,
    ) -> Result<ObjectList, ApiError> {
        self.inner().delete_collection(ctx, list, opts).await
    }
}

#[async_trait::async_trait]
impl<D: DelegatingStorage> RestStorage for D {
    fn info(&self) -> &ResourceInfo {
        DelegatingStorage::info(self)
    }

    fn verbs(&self) -> Vec<&'static str> {
        DelegatingStorage::verbs(self)
    }

    fn wrapped(&self) -> Option<&dyn RestStorage> {
        DelegatingStorage::wrapped(self)
    }

    fn structural_schema(&self) -> StructuralSchema {
        DelegatingStorage::structural_schema(self)
    }

    fn protobuf_decoder(&self) -> Option<ProtobufDecoder> {
        DelegatingStorage::protobuf_decoder(self)
    }

    fn custom_subresources(&self) -> &[Arc<dyn CustomSubresource>] {
        DelegatingStorage::custom_subresources(self)
    }

    fn deprecation_warning(&self) -> Option<&str> {
        DelegatingStorage::deprecation_warning(self)
    }

    fn storage_version(&self) -> Option<&str> {
        DelegatingStorage::storage_version(self)
    }

    async fn get(&self, ctx: &RequestContext, name: &str) -> Result<Bytes, ApiError> {
        DelegatingStorage::get(self, ctx, name).await
    }

    async fn list(&self, ctx: &RequestContext, opts: &ListOptions) -> Result<ObjectList, ApiError> {
        DelegatingStorage::list(self, ctx, opts).await
    }

    async fn watch(
        &self,
        ctx: &RequestContext,
        opts: &ListOptions,
    ) -> Result<EventStream, ApiError> {
        DelegatingStorage::watch(self, ctx, opts).await
    }

    async fn create(
        &self,
        ctx: &RequestContext,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        DelegatingStorage::create(self, ctx, body, opts).await
    }

    async fn update(
        &self,
        ctx: &RequestContext,
        name: &str,
        subresource: Option<&str>,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        DelegatingStorage::update(self, ctx, name, subresource, body, opts).await
    }

    async fn patch(
        &self,
        ctx: &RequestContext,
        name: &str,
        subresource: Option<&str>,
        patch: &(dyn Fn(Value) -> Result<Value, ApiError> + Send + Sync),
        opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        DelegatingStorage::patch(self, ctx, name, subresource, patch, opts).await
    }

    async fn delete(
        &self,
        ctx: &RequestContext,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<DeleteOutcome, ApiError> {
        DelegatingStorage::delete(self, ctx, name, opts).await
    }

    async fn delete_collection(
        &self,
        ctx: &RequestContext,
        list: &ListOptions,
        opts: &DeleteOptions,
    ) -> Result<ObjectList, ApiError> {
        DelegatingStorage::delete_collection(self, ctx, list, opts).await
    }
}
