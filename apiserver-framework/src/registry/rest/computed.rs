//! Computed resources: objects made on each request (metrics, status of other systems), not
//! stored. Implement [`ResourceProvider`] for a `#[derive(ApiResource)]` type and serve it with
//! [`Group::computed`](crate::registry::group::Group::computed):
//!
//! ```text
//! #[async_trait]
//! impl ResourceProvider<NodeMetrics> for MachineMetrics {
//!     async fn list(&self, ctx: &RequestContext) -> Result<Vec<NodeMetrics>, ApiError> { … }
//! }
//! Group::new("metrics.k8s.io").computed::<NodeMetrics>(MachineMetrics)
//! ```
//!
//! The framework gives it what a stored resource has for reads: `get` (from
//! [`ResourceProvider::get`], by default a search of the list), `list` with label and field
//! selectors (`metadata.name`, `metadata.namespace` and the type's selectable fields) and
//! `limit`/`continue` paging, Table output from the printer columns, `PartialObjectMetadata`,
//! discovery with the verbs `get` and `list` only, and OpenAPI. Every other verb answers
//! upstream's 405 `MethodNotAllowed` for a route that does not exist. Objects carry no
//! `resourceVersion` of their own (the list's is empty), as metrics-server's.
//!
//! A provider is not trusted to keep to the request's namespace: a list in a namespace answers
//! the provider's objects of that namespace only, and a get whose object is of another
//! namespace answers a 500 `InternalError` without the object (both logged as errors), so a
//! provider's mistake never shows a client an object its authorization did not cover.

use std::marker::PhantomData;

use bytes::Bytes;
use serde_json::Value;

use crate::error::ApiError;
use crate::registry::rest::continue_token;
use crate::registry::rest::options::{DeleteOptions, ListOptions, WriteOptions};
use crate::registry::rest::{DeleteOutcome, ObjectList, RequestContext, RestStorage};
use crate::resource::{ApiResource, ResourceInfo};

/// Computes the objects of a resource on request.
#[async_trait::async_trait]
pub trait ResourceProvider<T: ApiResource>: Send + Sync + 'static {
    /// Every object now (of `ctx.namespace` when it is set, for namespaced resources).
    async fn list(&self, ctx: &RequestContext) -> Result<Vec<T>, ApiError>;

    /// The object `name` (in `ctx.namespace`), or `None`. The default searches
    /// [`ResourceProvider::list`]; override it when one object is cheaper to compute.
    async fn get(&self, ctx: &RequestContext, name: &str) -> Result<Option<T>, ApiError> {
        Ok(self
            .list(ctx)
            .await?
            .into_iter()
            .find(|o| o.meta().name.as_deref() == Some(name)))
    }
}

/// The read-only storage of a computed resource (see the module documentation).
pub struct Computed<T: ApiResource, P: ResourceProvider<T>> {
    info: ResourceInfo,
    provider: P,
    _type: PhantomData<fn() -> T>,
}

impl<T: ApiResource, P: ResourceProvider<T>> Computed<T, P> {
    /// The storage of `T` computed by `provider`.
    pub fn new(provider: P) -> Self {
        Computed {
            info: T::resource_info(),
            provider,
            _type: PhantomData,
        }
    }

    /// The provider.
    pub fn provider(&self) -> &P {
        &self.provider
    }

    /// An object as the client sees it: `apiVersion` and `kind` set, and the namespace of the
    /// request for namespaced objects that name none (or an empty one).
    fn encode(&self, object: &T, ctx: &RequestContext) -> Result<Value, ApiError> {
        let mut v = serde_json::to_value(object).map_err(ApiError::internal)?;
        if let Value::Object(map) = &mut v {
            map.insert("apiVersion".into(), self.info.api_version().into());
            map.insert("kind".into(), self.info.kind.clone().into());
            if self.info.namespaced()
                && let Some(ns) = &ctx.namespace
                && let Some(Value::Object(meta)) = map.get_mut("metadata")
                && namespace_of(meta).is_none()
            {
                meta.insert("namespace".into(), ns.clone().into());
            }
        }
        Ok(v)
    }

    /// The namespace of a provider's object when it is not the request's: the request names a
    /// namespace of a namespaced resource and the object names another (one that names none
    /// is given the request's by [`Self::encode`]).
    fn foreign_namespace<'o>(&self, ctx: &RequestContext, object: &'o T) -> Option<&'o str> {
        let requested = ctx
            .namespace
            .as_deref()
            .filter(|_| self.info.namespaced())?;
        let theirs = object
            .meta()
            .namespace
            .as_deref()
            .filter(|ns| !ns.is_empty())?;
        (theirs != requested).then_some(theirs)
    }

    /// The key an object sorts and continues by, a clean path as continue tokens carry:
    /// `/<namespace>/<name>`, or `/<name>` without a namespace.
    fn key(v: &Value) -> String {
        let meta = &v["metadata"];
        let name = meta["name"].as_str().unwrap_or("");
        match meta["namespace"].as_str().filter(|ns| !ns.is_empty()) {
            Some(ns) => format!("/{ns}/{name}"),
            None => format!("/{name}"),
        }
    }
}

/// A non-empty `namespace` of an object's `metadata`.
fn namespace_of(meta: &serde_json::Map<String, Value>) -> Option<&str> {
    meta.get("namespace")
        .and_then(Value::as_str)
        .filter(|ns| !ns.is_empty())
}

fn to_bytes(v: &Value) -> Result<Bytes, ApiError> {
    serde_json::to_vec(v)
        .map(Bytes::from)
        .map_err(ApiError::internal)
}

#[async_trait::async_trait]
impl<T: ApiResource, P: ResourceProvider<T>> RestStorage for Computed<T, P> {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }

    fn verbs(&self) -> Vec<&'static str> {
        vec!["get", "list"]
    }

    async fn get(&self, ctx: &RequestContext, name: &str) -> Result<Bytes, ApiError> {
        let Some(o) = self.provider.get(ctx, name).await? else {
            return Err(ApiError::not_found(&self.info, name));
        };
        if let Some(theirs) = self.foreign_namespace(ctx, &o) {
            tracing::error!(
                resource = %self.info.group_resource(),
                name,
                namespace = ctx.namespace.as_deref().unwrap_or(""),
                object_namespace = theirs,
                "the provider of a computed resource answered a get with an object of another \
                 namespace; refused"
            );
            return Err(ApiError::internal(format!(
                "the provider of {} answered an object of another namespace",
                self.info.group_resource()
            )));
        }
        to_bytes(&self.encode(&o, ctx)?)
    }

    async fn list(&self, ctx: &RequestContext, opts: &ListOptions) -> Result<ObjectList, ApiError> {
        opts.field_selector
            .check_supported(&self.info.field_selector_labels())
            .map_err(ApiError::bad_request)?;
        let start_after = if opts.continue_token.is_empty() {
            None
        } else {
            let (_, key) = continue_token::decode(&opts.continue_token)
                .map_err(|e| ApiError::bad_request(format!("invalid continue token: {e}")))?;
            Some(key)
        };
        let mut objects = Vec::new();
        let mut foreign = 0usize;
        for o in self.provider.list(ctx).await? {
            if self.foreign_namespace(ctx, &o).is_some() {
                foreign += 1;
                continue;
            }
            let labels = o.meta().labels.clone().unwrap_or_default();
            if !opts.label_selector.matches(&labels) {
                continue;
            }
            let v = self.encode(&o, ctx)?;
            if !opts.field_selector.matches(&v) {
                continue;
            }
            let key = Self::key(&v);
            if start_after.as_ref().is_some_and(|s| key <= *s) {
                continue;
            }
            objects.push((key, v));
        }
        if foreign > 0 {
            tracing::error!(
                resource = %self.info.group_resource(),
                namespace = ctx.namespace.as_deref().unwrap_or(""),
                objects = foreign,
                "the provider of a computed resource listed objects of other namespaces; left out"
            );
        }
        objects.sort_by(|a, b| a.0.cmp(&b.0));
        let mut continue_token = None;
        let mut remaining_item_count = None;
        if opts.limit > 0 && objects.len() > opts.limit {
            let rest = objects.len() - opts.limit;
            objects.truncate(opts.limit);
            if let Some((last, _)) = objects.last() {
                continue_token = Some(continue_token::encode_latest(last));
            }
            remaining_item_count = i64::try_from(rest).ok();
        }
        let items = objects
            .iter()
            .map(|(_, v)| to_bytes(v))
            .collect::<Result<Vec<_>, _>>()?;
        let mut list = ObjectList::new(items);
        list.continue_token = continue_token;
        list.remaining_item_count = remaining_item_count;
        Ok(list)
    }

    // Writes answer as a route that does not exist: 405 with upstream's generic message.

    async fn create(
        &self,
        _ctx: &RequestContext,
        _body: Value,
        _opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        Err(ApiError::method_not_allowed())
    }

    async fn update(
        &self,
        _ctx: &RequestContext,
        _name: &str,
        _subresource: Option<&str>,
        _body: Value,
        _opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        Err(ApiError::method_not_allowed())
    }

    async fn patch(
        &self,
        _ctx: &RequestContext,
        _name: &str,
        _subresource: Option<&str>,
        _patch: &(dyn Fn(Value) -> Result<Value, ApiError> + Send + Sync),
        _opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        Err(ApiError::method_not_allowed())
    }

    async fn delete(
        &self,
        _ctx: &RequestContext,
        _name: &str,
        _opts: &DeleteOptions,
    ) -> Result<DeleteOutcome, ApiError> {
        Err(ApiError::method_not_allowed())
    }

    async fn delete_collection(
        &self,
        _ctx: &RequestContext,
        _list: &ListOptions,
        _opts: &DeleteOptions,
    ) -> Result<ObjectList, ApiError> {
        Err(ApiError::method_not_allowed())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::admission::AdmissionChain;
    use crate::devhost::node::{Node, NodeSpec};
    use crate::registry::scheme::Registry;
    use crate::selector::{FieldSelector, LabelSelector};
    use crate::user::UserInfo;

    struct Three;

    #[async_trait::async_trait]
    impl ResourceProvider<Node> for Three {
        async fn list(&self, _ctx: &RequestContext) -> Result<Vec<Node>, ApiError> {
            Ok(["c", "a", "b"]
                .iter()
                .map(|n| {
                    let mut node = Node::new(n, NodeSpec {});
                    node.metadata.labels = Some(
                        [("tier".to_string(), format!("t-{n}"))]
                            .into_iter()
                            .collect(),
                    );
                    node
                })
                .collect())
        }
    }

    fn ctx() -> RequestContext {
        RequestContext {
            namespace: None,
            user: UserInfo::new("u", &[]),
            admission: Arc::new(AdmissionChain::new(Vec::new())),
            registry: Arc::new(Registry::default()),
            request_resource: None,
            notes: Default::default(),
        }
    }

    fn names(list: &ObjectList) -> Vec<String> {
        list.clone()
            .into_items()
            .iter()
            .map(|b| {
                let v: Value = serde_json::from_slice(b).unwrap();
                assert_eq!(
                    (v["apiVersion"].as_str(), v["kind"].as_str()),
                    (Some("v1"), Some("Node"))
                );
                v["metadata"]["name"].as_str().unwrap().to_string()
            })
            .collect()
    }

    #[tokio::test]
    async fn lists_page_and_select() {
        let s = Computed::<Node, _>::new(Three);
        let mut opts = ListOptions {
            limit: 2,
            ..Default::default()
        };
        let page = s.list(&ctx(), &opts).await.unwrap();
        assert_eq!(names(&page), ["a", "b"]);
        assert_eq!(page.remaining_item_count, Some(1));
        opts.continue_token = page.continue_token.clone().expect("a continue token");
        let page = s.list(&ctx(), &opts).await.unwrap();
        assert_eq!(names(&page), ["c"]);
        assert!(page.continue_token.is_none());

        let opts = ListOptions {
            label_selector: LabelSelector::parse("tier in (t-a,t-c)").unwrap(),
            ..Default::default()
        };
        assert_eq!(names(&s.list(&ctx(), &opts).await.unwrap()), ["a", "c"]);
        let opts = ListOptions {
            field_selector: FieldSelector::parse("metadata.name!=a").unwrap(),
            ..Default::default()
        };
        assert_eq!(names(&s.list(&ctx(), &opts).await.unwrap()), ["b", "c"]);
        let opts = ListOptions {
            field_selector: FieldSelector::parse("spec.x=1").unwrap(),
            ..Default::default()
        };
        let e = s.list(&ctx(), &opts).await.unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (400, "field label not supported: spec.x")
        );
        let opts = ListOptions {
            continue_token: "%%%".into(),
            ..Default::default()
        };
        assert_eq!(s.list(&ctx(), &opts).await.unwrap_err().code, 400);
    }

    #[tokio::test]
    async fn gets_one_and_refuses_writes() {
        let s = Computed::<Node, _>::new(Three);
        let b = s.get(&ctx(), "b").await.unwrap();
        let v: Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["metadata"]["labels"]["tier"], "t-b");
        assert_eq!(s.get(&ctx(), "z").await.unwrap_err().code, 404);
        let e = s
            .delete(&ctx(), "b", &DeleteOptions::default())
            .await
            .unwrap_err();
        assert_eq!((e.code, e.reason.as_str()), (405, "MethodNotAllowed"));
        assert_eq!(
            e.message,
            "the server does not allow this method on the requested resource"
        );
        assert_eq!(s.verbs(), ["get", "list"]);
    }
}
