//! The generic REST store: Kubernetes semantics for any `#[derive(ApiResource)]` type on any
//! [`Storage`] backend.
//!
//! [`Store`] and its [`RestStorage`] implementation live here; each operation lives in the
//! file named after it (`create`, `update` with patch, `delete`, `list`, `watch`), beside what
//! they share: the codecs (`codec`), managed fields (`managed_fields`), the calls into
//! admission (`admission`) and the mapping of storage errors to Statuses (`errors`). The
//! hooks a resource's rules plug in are its [`strategy::Strategy`]; the fast edits of the
//! serialized objects it keeps (their `resourceVersion`) are in `encoding`.

mod admission;
mod codec;
mod create;
mod delete;
pub(crate) mod encoding;
mod errors;
#[cfg(test)]
pub(crate) mod fixture;
mod list;
mod managed_fields;
mod schema_validation;
pub mod strategy;
mod update;
mod watch;

use std::marker::PhantomData;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;

use crate::error::ApiError;
use crate::registry::cache::encoded_events::EncodedEvents;
use crate::registry::rest::options::{DeleteOptions, ListOptions, WriteOptions};
use crate::registry::rest::{
    DeleteOutcome, EventStream, ObjectList, ProtobufDecoder, RequestContext, RestStorage,
};
use crate::registry::store::encoding::{KnownStart, with_resource_version};
use crate::registry::store::strategy::Strategy;
use crate::resource::{ApiResource, ResourceInfo};
use crate::schema::{SchemaValidator, StructuralSchema};
use crate::storage::{KeyValue, Storage};

pub(crate) use errors::storage_error;
pub(crate) use watch::MAX_WATCH_TIMEOUT;

/// The generic store of resource `T`: decoding, metadata rules, strategy, admission, storage.
pub struct Store<T: ApiResource> {
    info: ResourceInfo,
    storage: Arc<dyn Storage>,
    strategy: Arc<dyn Strategy<T>>,
    prefix: String,
    /// `<group>/<version>` of `T`, made once (managed fields and body checks read it).
    api_version: String,
    /// How `T`'s stored objects start, where a list writes each one's resourceVersion.
    known_start: KnownStart,
    /// Recent changes encoded once for all watchers.
    encoded: Arc<EncodedEvents>,
    /// The model of the resource's schema: patches, apply and field validation follow it.
    schema: StructuralSchema,
    /// How protobuf bodies of `T` decode, for built-in kinds (none: they answer 415).
    protobuf: Option<ProtobufDecoder>,
    /// The schema's constraints and `x-kubernetes-validations` rules, checked on every write;
    /// `Err`: a rule that cannot be used (registering the resource reports it, and the server
    /// does not start; a store made by hand fails every write with it).
    validator: Result<SchemaValidator, String>,
    _marker: PhantomData<fn() -> T>,
}

impl<T: ApiResource> Store<T> {
    /// A store of `T` on `storage`, driven by `strategy`.
    pub fn new(storage: Arc<dyn Storage>, strategy: Arc<dyn Strategy<T>>) -> Self {
        let info = T::resource_info();
        let schema = StructuralSchema::from_openapi(&info.schema);
        let validator = SchemaValidator::new(&info.schema).map_err(|e| e.to_string());
        // As kube-apiserver: `/<resource>/` for the core group, `/<group>/<resource>/` otherwise.
        let prefix = if info.group.is_empty() {
            format!("/{}/", info.plural)
        } else {
            format!("/{}/{}/", info.group, info.plural)
        };
        let api_version = info.api_version();
        Store {
            known_start: KnownStart::new(&api_version, &info.kind),
            api_version,
            info,
            storage,
            strategy,
            prefix,
            encoded: Arc::default(),
            schema,
            protobuf: None,
            validator,
            _marker: PhantomData,
        }
    }

    /// The store accepting create and update bodies in Kubernetes' protobuf encoding, decoded
    /// by `decoder` (for built-in kinds, which client-go's typed clients send that way).
    pub(crate) fn with_protobuf_decoder(mut self, decoder: ProtobufDecoder) -> Self {
        self.protobuf = Some(decoder);
        self
    }

    /// The storage key of object `name`.
    fn key(&self, namespace: Option<&str>, name: &str) -> String {
        // Joined by hand: `format!` costs several times more, at every read and write.
        let namespace = namespace.filter(|_| self.info.namespaced());
        let length = self.prefix.len() + namespace.map_or(0, |ns| ns.len() + 1) + name.len();
        let mut key = String::with_capacity(length);
        key.push_str(&self.prefix);
        if let Some(ns) = namespace {
            key.push_str(ns);
            key.push('/');
        }
        key.push_str(name);
        key
    }

    /// The key prefix of the objects in `namespace` (all of them with `None`).
    fn collection_prefix(&self, namespace: Option<&str>) -> String {
        match namespace {
            Some(ns) if self.info.namespaced() => format!("{}{ns}/", self.prefix),
            _ => self.prefix.clone(),
        }
    }

    /// The namespace of a request on one object: required for a namespaced resource.
    fn namespace<'a>(&self, ctx: &'a RequestContext) -> Result<Option<&'a str>, ApiError> {
        if !self.info.namespaced() {
            return Ok(None);
        }
        match ctx.namespace.as_deref() {
            Some(ns) if !ns.is_empty() => Ok(Some(ns)),
            _ => Err(ApiError::bad_request("Namespace parameter required.")),
        }
    }

    /// One object, decoded.
    pub async fn get_object(&self, namespace: Option<&str>, name: &str) -> Result<T, ApiError> {
        let kv = self.current(namespace, name).await?;
        self.decode_stored(&kv)
    }

    /// The stored object `name` (404 when there is none).
    async fn current(&self, namespace: Option<&str>, name: &str) -> Result<KeyValue, ApiError> {
        self.storage
            .get(&self.key(namespace, name))
            .await
            .map_err(|e| errors::storage_error(&self.info, "get", name, e))?
            .ok_or_else(|| ApiError::not_found(&self.info, name))
    }
}

#[async_trait::async_trait]
impl<T: ApiResource> RestStorage for Store<T> {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }

    fn verbs(&self) -> Vec<&'static str> {
        vec![
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ]
    }

    fn structural_schema(&self) -> StructuralSchema {
        self.schema.clone()
    }

    fn protobuf_decoder(&self) -> Option<ProtobufDecoder> {
        self.protobuf
    }

    async fn get(&self, ctx: &RequestContext, name: &str) -> Result<Bytes, ApiError> {
        let namespace = self.namespace(ctx)?;
        let kv = self.current(namespace, name).await?;
        Ok(with_resource_version(&kv.value, kv.mod_revision))
    }

    async fn list(&self, ctx: &RequestContext, opts: &ListOptions) -> Result<ObjectList, ApiError> {
        self.list_page(ctx, opts).await
    }

    async fn watch(
        &self,
        ctx: &RequestContext,
        opts: &ListOptions,
    ) -> Result<EventStream, ApiError> {
        self.watch_objects(ctx, opts).await
    }

    async fn create(
        &self,
        ctx: &RequestContext,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        let obj = self.decode_body(body)?;
        self.create_typed(ctx, obj, opts).await
    }

    async fn update(
        &self,
        ctx: &RequestContext,
        name: &str,
        subresource: Option<&str>,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        self.replace(ctx, name, subresource, body, opts).await
    }

    async fn patch(
        &self,
        ctx: &RequestContext,
        name: &str,
        subresource: Option<&str>,
        patch: &(dyn Fn(Value) -> Result<Value, ApiError> + Send + Sync),
        opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        self.patch_object(ctx, name, subresource, patch, opts).await
    }

    async fn delete(
        &self,
        ctx: &RequestContext,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<DeleteOutcome, ApiError> {
        self.delete_object(ctx, name, opts).await
    }

    async fn delete_collection(
        &self,
        ctx: &RequestContext,
        list: &ListOptions,
        opts: &DeleteOptions,
    ) -> Result<ObjectList, ApiError> {
        self.delete_objects(ctx, list, opts).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::store::fixture::{self, NS, Widget};
    use crate::storage::memory::MemoryStorage;

    #[test]
    fn keys_follow_kube_apiservers_layout() {
        let (store, _) = fixture::store();
        assert_eq!(
            store.key(Some(NS), "a"),
            "/test.example.com/widgets/default/a"
        );
        assert_eq!(
            store.collection_prefix(Some(NS)),
            "/test.example.com/widgets/default/"
        );
        assert_eq!(store.collection_prefix(None), "/test.example.com/widgets/");
        assert_eq!(store.verbs().len(), 8);
        let storage: &dyn RestStorage = &store;
        assert!(storage.downcast_ref::<Store<Widget>>().is_some());
    }

    #[tokio::test]
    async fn get_answers_the_object_at_its_revision_or_404() {
        let storage = Arc::new(MemoryStorage::new());
        let store: Store<Widget> = Store::new(
            storage.clone(),
            Arc::new(crate::registry::store::strategy::DefaultStrategy),
        );
        let ctx = fixture::ctx();
        let e = store.get(&ctx, "a").await.unwrap_err();
        assert_eq!(e.message, r#"widgets.test.example.com "a" not found"#);
        store
            .create(
                &ctx,
                fixture::body(&Widget::new("a", "red")),
                &WriteOptions::default(),
            )
            .await
            .unwrap();
        let got = fixture::decode(&store.get(&ctx, "a").await.unwrap());
        let rev = storage.current_revision().await.unwrap();
        assert_eq!(got.metadata.resource_version, Some(rev.to_string()));
        let mut no_ns = ctx.clone();
        no_ns.namespace = None;
        assert_eq!(store.get(&no_ns, "a").await.unwrap_err().code, 400);
    }
}
