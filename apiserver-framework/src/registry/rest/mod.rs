//! The REST interface: the type-erased storage the HTTP layer calls, one per served resource
//! ([`RestStorage`]), with what its methods take and give.
//!
//! Beside the trait: the request options its methods take ([`options`]) and the continue
//! tokens of paged lists (`continue_token`); custom subresources ([`subresource`], with the
//! streams of connect subresources in [`connect`]); computed resources ([`computed`]); and
//! storages that serve another one with changes ([`delegating`], of which
//! `with_subresources` is one).

pub mod computed;
pub mod connect;
// Public with the `testing` feature, for the workspace's tests and fuzz targets of client input.
internal_modules!(continue_token);
pub mod delegating;
pub mod options;
pub mod subresource;
pub(crate) mod with_subresources;

use std::any::Any;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures::stream::BoxStream;
use serde_json::Value;

use crate::admission::{AdmissionChain, AdmissionNotes};
use crate::error::{ApiError, Status};
use crate::registry::rest::options::{DeleteOptions, ListOptions, WriteOptions};
use crate::registry::scheme::Registry;
use crate::registry::store::encoding::Versioned;
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
    /// The resource in the version the request named, when the storage it reaches serves
    /// another version: a multi-version kind's writes are converted to its storage version and
    /// handed to that version's store, which admits them in its own version and tells
    /// admission the request's version from this (upstream's `requestResource`). `None`: the
    /// storage's own version.
    pub request_resource: Option<Arc<ResourceInfo>>,
    /// What admission adds to the request: warnings for the response, annotations for its
    /// audit event.
    pub notes: AdmissionNotes,
}

/// A page of objects, each serialized as JSON.
///
/// The store's lists hold their objects as stored, each written with its
/// `metadata.resourceVersion` only when the response is sent, a piece at a time; reading the
/// items ([`items_mut`](Self::items_mut), [`into_items`](Self::into_items)) writes them all
/// first.
#[derive(Clone, Debug, Default)]
pub struct ObjectList {
    /// The list's `metadata.resourceVersion`.
    pub resource_version: String,
    /// The token for the next page, if any.
    pub continue_token: Option<String>,
    /// How many items follow this page (only when known and meaningful).
    pub remaining_item_count: Option<i64>,
    items: ListItems,
}

/// The items of an [`ObjectList`]: written, or still to be written with their
/// resourceVersion.
#[derive(Clone, Debug)]
pub(crate) enum ListItems {
    /// Serialized objects.
    Written(Vec<Bytes>),
    /// Stored objects with their revisions.
    Versioned(Vec<Versioned>),
}

impl Default for ListItems {
    fn default() -> Self {
        ListItems::Written(Vec::new())
    }
}

impl ListItems {
    /// How many objects there are.
    pub(crate) fn len(&self) -> usize {
        match self {
            ListItems::Written(items) => items.len(),
            ListItems::Versioned(items) => items.len(),
        }
    }
}

impl ObjectList {
    /// A list of `items` (each one serialized object); its resourceVersion, continue token and
    /// remaining count are empty until set.
    pub fn new(items: Vec<Bytes>) -> Self {
        ObjectList {
            items: ListItems::Written(items),
            ..Default::default()
        }
    }

    /// A list of stored objects, each written with its resourceVersion when sent.
    pub(crate) fn versioned(items: Vec<Versioned>) -> Self {
        ObjectList {
            items: ListItems::Versioned(items),
            ..Default::default()
        }
    }

    /// How many objects the list holds.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the list holds no object.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The items, to read or change; objects not written yet are written first (into one
    /// buffer, which the items are slices of).
    pub fn items_mut(&mut self) -> &mut Vec<Bytes> {
        if let ListItems::Versioned(items) = &self.items {
            let written = write_all(items);
            self.items = ListItems::Written(written);
        }
        match &mut self.items {
            ListItems::Written(items) => items,
            ListItems::Versioned(_) => unreachable!("written above"),
        }
    }

    /// The items, written.
    pub fn into_items(self) -> Vec<Bytes> {
        match self.items {
            ListItems::Written(items) => items,
            ListItems::Versioned(items) => write_all(&items),
        }
    }

    /// The items as they are held.
    #[cfg(test)]
    pub(crate) fn list_items(&self) -> &ListItems {
        &self.items
    }

    /// The items as they are held, for the response body.
    pub(crate) fn into_list_items(self) -> ListItems {
        self.items
    }
}

/// Every object written with its resourceVersion into one buffer, sliced per object.
fn write_all(items: &[Versioned]) -> Vec<Bytes> {
    let mut buffer = BytesMut::with_capacity(items.iter().map(Versioned::len).sum());
    let mut ends = Vec::with_capacity(items.len());
    for item in items {
        item.put(&mut buffer);
        ends.push(buffer.len());
    }
    let buffer = buffer.freeze();
    let mut start = 0;
    ends.into_iter()
        .map(|end| {
            let item = buffer.slice(start..end);
            start = end;
            item
        })
        .collect()
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
    /// The event's JSON line, when the event was made in one that its watchers share (see
    /// [`ObjectEvent::json_line`]); used only while `kind` and `object` are still those it was
    /// made with.
    pub(crate) line: Option<Bytes>,
}

impl ObjectEvent {
    /// An event of `kind` carrying `object`.
    pub fn new(kind: WatchEventType, object: Bytes) -> Self {
        ObjectEvent {
            kind,
            object,
            line: None,
        }
    }
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
///
/// A storage is [`Any`], so that typed access finds the concrete storage behind a
/// `dyn RestStorage` (its `downcast_ref`).
#[async_trait::async_trait]
pub trait RestStorage: Any + Send + Sync {
    /// The resource's description.
    fn info(&self) -> &ResourceInfo;

    /// The supported verbs, in upstream's names.
    fn verbs(&self) -> Vec<&'static str>;

    /// The storage this one serves unchanged under its own name, adding to it (a resource's
    /// store with custom subresources): typed access (`downcast_ref` on a `dyn RestStorage`)
    /// looks through it to the storage it wraps. `None`, the default: the storage is itself.
    fn wrapped(&self) -> Option<&dyn RestStorage> {
        None
    }

    /// The model of [`ResourceInfo::schema`] that strategic merge patches, server-side apply
    /// and field validation follow, built once per resource. The default builds it on the first
    /// call and shares it ([`StructuralSchema::shared`]); stores build theirs when created.
    fn structural_schema(&self) -> StructuralSchema {
        StructuralSchema::shared(&self.info().schema)
    }

    /// How to decode a create or update body in Kubernetes' protobuf encoding
    /// (`application/vnd.kubernetes.protobuf`) into the JSON object it stands for, for storages
    /// of built-in kinds that clients send that way (kubectl 1.32 and later sends the objects
    /// of its typed clients as protobuf: `kubectl create namespace`, `create configmap`,
    /// `auth whoami`, `auth can-i`). `None`, the default: a protobuf body answers 415 like any
    /// other unsupported media type.
    fn protobuf_decoder(&self) -> Option<ProtobufDecoder> {
        None
    }

    /// The custom subresources served besides `status` and `scale` (see
    /// [`crate::registry::rest::subresource`]); none by default.
    fn custom_subresources(
        &self,
    ) -> &[std::sync::Arc<dyn crate::registry::rest::subresource::CustomSubresource>] {
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

impl dyn RestStorage {
    /// This storage as a `T`, or else the storage it wraps ([`RestStorage::wrapped`]) as one:
    /// typed access to a served resource's storage, for [`Registry`] and the server's own code.
    pub fn downcast_ref<T: RestStorage>(&self) -> Option<&T> {
        let mut storage = self;
        loop {
            if let Some(found) = (storage as &dyn Any).downcast_ref::<T>() {
                return Some(found);
            }
            storage = storage.wrapped()?;
        }
    }
}
