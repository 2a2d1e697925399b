//! The type-erased REST storage the HTTP layer calls: one per served resource.

use std::any::Any;
use std::sync::Arc;

use bytes::Bytes;
use futures::stream::BoxStream;
use serde_json::Value;

use crate::error::{ApiError, Status};
use crate::registry::admission::AdmissionChain;
use crate::registry::options::{DeleteOptions, ListOptions, WriteOptions};
use crate::registry::scheme::Registry;
use crate::resource::ResourceInfo;
use crate::schema::StructuralSchema;
use crate::user::UserInfo;

/// The request-scoped facts a storage needs.
#[derive(Clone)]
pub struct RequestContext {
    /// The namespace from the path (namespaced resources), `None` for cluster-scoped ones and
    /// for lists across all namespaces.
    pub namespace: Option<String>,
    /// The caller.
    pub user: UserInfo,
    /// The server's admission plugins.
    pub admission: Arc<AdmissionChain>,
    /// Every resource the server stores.
    pub registry: Arc<Registry>,
}

/// A page of objects, each already serialized as JSON.
#[derive(Clone, Debug, Default)]
pub struct ObjectList {
    /// The list's `metadata.resourceVersion`.
    pub resource_version: String,
    /// The token for the next page, if any.
    pub continue_token: Option<String>,
    /// How many items follow this page (only when known and meaningful).
    pub remaining_item_count: Option<i64>,
    /// The objects.
    pub items: Vec<Bytes>,
    /// The items joined with commas (`item,item,…`) in one buffer, when they were written
    /// that way (the store's lists are): a JSON list then sends that buffer as it is instead
    /// of copying every item again. It is used only while `items` are exactly its slices, in
    /// order; items changed, filtered or reordered after it was made are joined anew.
    pub joined_items: Option<Bytes>,
}

impl ObjectList {
    /// [`joined_items`](Self::joined_items), when `items` are still exactly its slices: each
    /// item where the one before ended, one comma apart.
    pub fn items_as_joined(&self) -> Option<&Bytes> {
        let joined = self.joined_items.as_ref()?;
        let start = joined.as_ptr() as usize;
        let mut at = start;
        for (i, item) in self.items.iter().enumerate() {
            if i > 0 {
                if joined.get(at - start) != Some(&b',') {
                    return None;
                }
                at += 1;
            }
            if item.as_ptr() as usize != at || item.is_empty() {
                return None;
            }
            at += item.len();
        }
        (at == start + joined.len()).then_some(joined)
    }
}

/// The type of a watch event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchEventType {
    /// An object appeared (or is part of the initial state).
    Added,
    /// An object changed.
    Modified,
    /// An object was deleted; the event carries its last state.
    Deleted,
    /// A progress marker carrying only a resourceVersion.
    Bookmark,
    /// The watch failed; the event carries a Status.
    Error,
}

impl WatchEventType {
    /// The wire name: `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR`.
    pub fn as_str(self) -> &'static str {
        match self {
            WatchEventType::Added => "ADDED",
            WatchEventType::Modified => "MODIFIED",
            WatchEventType::Deleted => "DELETED",
            WatchEventType::Bookmark => "BOOKMARK",
            WatchEventType::Error => "ERROR",
        }
    }
}

/// One watch event with its object serialized as JSON.
#[derive(Clone, Debug)]
pub struct ObjectEvent {
    /// The event type.
    pub kind: WatchEventType,
    /// The object (a Status for `ERROR`).
    pub object: Bytes,
}

/// A stream of watch events; it ends when the watch ends.
pub type EventStream = BoxStream<'static, ObjectEvent>;

/// The outcome of a delete.
#[derive(Clone, Debug)]
pub enum DeleteOutcome {
    /// The object is gone; the response is a `Success` Status.
    Deleted(Box<Status>),
    /// The object is still there (finalizers pending); the response is the object.
    Pending(Bytes),
}

/// Decodes a whole protobuf request body (with its `k8s\0` envelope) into a JSON object; a
/// body that does not decode is a 400.
pub(crate) type ProtobufDecoder = fn(&[u8]) -> Result<Value, ApiError>;

/// The REST operations of one resource, as the HTTP layer calls them.
///
/// [`crate::registry::store::Store`] implements it for every `#[derive(ApiResource)]` type;
/// implement it by hand for computed resources. A method a storage does not support answers
/// 405 (and its verb is absent from [`RestStorage::verbs`] and so from discovery).
#[async_trait::async_trait]
pub trait RestStorage: Send + Sync + 'static {
    /// The resource's description.
    fn info(&self) -> &ResourceInfo;

    /// The supported verbs, in upstream's names.
    fn verbs(&self) -> Vec<&'static str>;

    /// Itself as `Any`, for typed access through [`Registry`].
    fn as_any(&self) -> &dyn Any;

    /// The model of [`ResourceInfo::schema`] that strategic merge patches, server-side apply
    /// and field validation follow, built once per resource. The default builds it on the first
    /// call and shares it ([`StructuralSchema::shared`]); stores build theirs when created.
    fn structural_schema(&self) -> StructuralSchema {
        StructuralSchema::shared(&self.info().schema)
    }

    /// How to decode a create body in Kubernetes' protobuf encoding
    /// (`application/vnd.kubernetes.protobuf`) into the JSON object it stands for, for storages
    /// of built-in kinds that clients send that way (kubectl 1.32 and later sends its
    /// SelfSubjectReviews and SelfSubjectAccessReviews as protobuf). `None`, the default: a
    /// protobuf body answers 415 like any other unsupported media type.
    fn protobuf_decoder(&self) -> Option<ProtobufDecoder> {
        None
    }

    /// The custom subresources served besides `status` and `scale` (see
    /// [`crate::registry::subresource`]); none by default.
    fn custom_subresources(
        &self,
    ) -> &[std::sync::Arc<dyn crate::registry::subresource::CustomSubresource>] {
        &[]
    }

    /// The `Warning` every response of this resource carries when its version is deprecated
    /// (upstream's `<group>/<version> <Kind> is deprecated in v<X.Y>+…`); `None` by default.
    fn deprecation_warning(&self) -> Option<&str> {
        None
    }

    /// The version objects are stored in, when not [`ResourceInfo::version`] (a kind served
    /// in several versions); discovery's `storageVersionHash` hashes it.
    fn storage_version(&self) -> Option<&str> {
        None
    }

    /// Reads one object.
    async fn get(&self, ctx: &RequestContext, name: &str) -> Result<Bytes, ApiError> {
        let _ = (ctx, name);
        Err(ApiError::method_not_supported(self.info(), "get"))
    }

    /// Lists objects.
    async fn list(&self, ctx: &RequestContext, opts: &ListOptions) -> Result<ObjectList, ApiError> {
        let _ = (ctx, opts);
        Err(ApiError::method_not_supported(self.info(), "list"))
    }

    /// Watches objects.
    async fn watch(
        &self,
        ctx: &RequestContext,
        opts: &ListOptions,
    ) -> Result<EventStream, ApiError> {
        let _ = (ctx, opts);
        Err(ApiError::method_not_supported(self.info(), "watch"))
    }

    /// Creates an object from a decoded request body.
    async fn create(
        &self,
        ctx: &RequestContext,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        let _ = (ctx, body, opts);
        Err(ApiError::method_not_supported(self.info(), "create"))
    }

    /// Replaces an object (or its `status` subresource) with a decoded request body.
    async fn update(
        &self,
        ctx: &RequestContext,
        name: &str,
        subresource: Option<&str>,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        let _ = (ctx, name, subresource, body, opts);
        Err(ApiError::method_not_supported(self.info(), "update"))
    }

    /// Applies a function to the stored object (for patches): reads the object as JSON, calls
    /// `patch` on it and stores the result as an update would.
    async fn patch(
        &self,
        ctx: &RequestContext,
        name: &str,
        subresource: Option<&str>,
        patch: &(dyn Fn(Value) -> Result<Value, ApiError> + Send + Sync),
        opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        let _ = (ctx, name, subresource, patch, opts);
        Err(ApiError::method_not_supported(self.info(), "patch"))
    }

    /// Deletes an object.
    async fn delete(
        &self,
        ctx: &RequestContext,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<DeleteOutcome, ApiError> {
        let _ = (ctx, name, opts);
        Err(ApiError::method_not_supported(self.info(), "delete"))
    }

    /// Deletes every object matching the list options; returns the deleted objects.
    async fn delete_collection(
        &self,
        ctx: &RequestContext,
        list: &ListOptions,
        opts: &DeleteOptions,
    ) -> Result<ObjectList, ApiError> {
        let _ = (ctx, list, opts);
        Err(ApiError::method_not_supported(
            self.info(),
            "deletecollection",
        ))
    }
}
