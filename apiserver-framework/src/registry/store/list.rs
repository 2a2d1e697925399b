//! List: paging with `limit` and `continue`, reads at a `resourceVersion`, label and field
//! selectors; and the typed lists that plugins and controllers read.

use super::Store;
use super::errors::storage_error;
use crate::error::ApiError;
use crate::registry::rest::continue_token;
use crate::registry::rest::options::ListOptions;
use crate::registry::rest::{ObjectList, RequestContext};
use crate::registry::store::encoding::Versioned;
use crate::registry::watch;
use crate::resource::ApiResource;
use crate::storage::{ListRequest, StorageError};

/// The 410 message of a continue token whose revision was compacted away, as upstream's.
const INCONSISTENT_CONTINUE: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

impl<T: ApiResource> Store<T> {
    /// Every object of the resource in `namespace` (all namespaces with `None`), decoded: a
    /// consistent read (with etcd, one round trip to learn its current revision).
    pub async fn list_objects(&self, namespace: Option<&str>) -> Result<Vec<T>, ApiError> {
        self.objects(namespace, false).await
    }

    /// Every object of the resource in `namespace` as the watch cache holds it, decoded:
    /// what admission plugins and controllers read, like upstream's informer listers. It
    /// includes every write this server has acknowledged and costs no storage round trip;
    /// another server's write of the last moment may be missing.
    pub async fn cached_objects(&self, namespace: Option<&str>) -> Result<Vec<T>, ApiError> {
        self.objects(namespace, true).await
    }

    async fn objects(&self, namespace: Option<&str>, from_cache: bool) -> Result<Vec<T>, ApiError> {
        let page = self
            .storage
            .list(ListRequest {
                prefix: self.collection_prefix(namespace),
                from_cache,
                ..Default::default()
            })
            .await
            .map_err(|e| storage_error(&self.info, "list", "", e))?;
        page.items.iter().map(|kv| self.decode_stored(kv)).collect()
    }

    /// One page of the objects `opts` selects in the request's namespace (all namespaces
    /// without one).
    pub(super) async fn list_page(
        &self,
        ctx: &RequestContext,
        opts: &ListOptions,
    ) -> Result<ObjectList, ApiError> {
        self.check_field_selector(opts)?;
        let prefix = self.collection_prefix(self.list_namespace(ctx));
        // resourceVersion=0 ("any"): what the watch cache holds, as upstream serves it.
        let from_cache = opts.continue_token.is_empty() && opts.resource_version == "0";
        // A list served from the cache is served whole: upstream's cacher ignores `limit`
        // there (no continue token, no remainingItemCount).
        let limit = if from_cache { 0 } else { opts.limit };
        let (revision, mut start_after) = if !opts.continue_token.is_empty() {
            let (rev, key) = continue_token::decode(&opts.continue_token)
                .map_err(|e| ApiError::bad_request(format!("invalid continue token: {e}")))?;
            if !key.starts_with(&prefix) {
                return Err(ApiError::bad_request(
                    "invalid continue token: continue key is not valid: the key is outside the requested collection",
                ));
            }
            (rev, Some(key))
        } else {
            let exact = opts.resource_version_match == "Exact"
                || (opts.resource_version_match.is_empty() && limit > 0);
            match opts.resource_version.as_str() {
                "" | "0" => (None, None),
                rv => {
                    let rv = parse_rv(rv)?;
                    self.check_not_future("list", rv).await?;
                    (exact.then_some(rv), None)
                }
            }
        };
        let filtering = !opts.label_selector.is_empty() || !opts.field_selector.is_empty();
        let continue_key = start_after
            .clone()
            .filter(|_| !opts.continue_token.is_empty());
        // Items are kept as stored, with their revisions: each is written with its
        // resourceVersion when the response is sent (`ObjectList`).
        let mut items: Vec<Versioned> = Vec::new();
        let mut read_revision = revision;
        // Pages are read until `limit` objects matched the selectors or the collection ends.
        let (more, remaining, last_key) = loop {
            let want = if limit > 0 { limit - items.len() } else { 0 };
            let page = self
                .storage
                .list(ListRequest {
                    prefix: prefix.clone(),
                    start_after: start_after.clone(),
                    limit: want,
                    revision: read_revision,
                    from_cache,
                })
                .await
                .map_err(|e| match (e, &continue_key) {
                    (StorageError::Compacted { .. }, Some(key)) => {
                        // As upstream: the list cannot continue consistently; a token that
                        // continues at the latest revision is offered in the Status.
                        let mut e = ApiError::expired(INCONSISTENT_CONTINUE);
                        e.continue_token = Some(continue_token::encode_latest(key));
                        e
                    }
                    (e, _) => storage_error(&self.info, "list", &prefix, e),
                })?;
            read_revision = Some(page.revision);
            let last = page.items.last().map(|kv| kv.key.to_string());
            if !filtering {
                items.reserve(page.items.len());
            }
            for kv in page.items {
                if watch::matches(opts, &kv.value) {
                    items.push(self.known_start.versioned(kv.value, kv.mod_revision));
                }
            }
            if !page.more || (limit > 0 && items.len() >= limit) {
                break (page.more, page.remaining, last);
            }
            start_after = last;
        };
        let revision = read_revision.unwrap_or(0);
        let mut list = ObjectList::versioned(items);
        list.resource_version = revision.to_string();
        list.continue_token = match (more, last_key) {
            (true, Some(k)) => Some(continue_token::encode(revision, &k)),
            _ => None,
        };
        list.remaining_item_count = (more && !filtering).then_some(remaining as i64);
        Ok(list)
    }

    /// The namespace a list or watch reads: the request's, for a namespaced resource.
    pub(super) fn list_namespace<'a>(&self, ctx: &'a RequestContext) -> Option<&'a str> {
        if self.info.namespaced() {
            ctx.namespace.as_deref()
        } else {
            None
        }
    }

    /// A field selector may only name the fields the resource supports (400 otherwise).
    pub(super) fn check_field_selector(&self, opts: &ListOptions) -> Result<(), ApiError> {
        opts.field_selector
            .check_supported(&self.info.field_selector_labels())
            .map_err(ApiError::bad_request)
    }

    /// A read at a revision the storage has not reached answers upstream's 504 `Timeout`
    /// (`Too large resource version`); the storage is consistent, so there is nothing to wait
    /// for.
    pub(super) async fn check_not_future(&self, op: &str, rv: u64) -> Result<(), ApiError> {
        let current = self
            .storage
            .current_revision()
            .await
            .map_err(|e| storage_error(&self.info, op, "", e))?;
        if rv > current {
            return Err(storage_error(
                &self.info,
                op,
                "",
                StorageError::FutureRevision {
                    requested: rv,
                    current,
                },
            ));
        }
        Ok(())
    }
}

/// A `resourceVersion` of a read: a number, or a 400.
pub(super) fn parse_rv(rv: &str) -> Result<u64, ApiError> {
    rv.parse::<u64>()
        .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::rest::ListItems;
    use crate::registry::rest::RestStorage;
    use crate::registry::rest::options::WriteOptions;
    use crate::registry::store::fixture::{self, NS, Widget};
    use crate::selector::{FieldSelector, LabelSelector};
    use crate::storage::Storage;
    use crate::storage::memory::MemoryStorage;

    /// A store holding widgets `w0`…`w{n-1}` in namespace [`NS`] (colors alternate red and
    /// blue, label `i=<index>`) and one widget `x` in namespace `other`.
    async fn filled(n: usize) -> (Store<Widget>, std::sync::Arc<MemoryStorage>) {
        let (store, storage) = fixture::store();
        for i in 0..n {
            let mut w = Widget::new(&format!("w{i}"), if i % 2 == 0 { "red" } else { "blue" });
            w.metadata.labels = Some([("i".to_string(), i.to_string())].into());
            store
                .create(&fixture::ctx(), fixture::body(&w), &WriteOptions::default())
                .await
                .unwrap();
        }
        let mut other = fixture::ctx();
        other.namespace = Some("other".into());
        store
            .create(
                &other,
                fixture::body(&Widget::new("x", "red")),
                &WriteOptions::default(),
            )
            .await
            .unwrap();
        (store, storage)
    }

    fn names(list: &ObjectList) -> Vec<String> {
        list.clone()
            .into_items()
            .iter()
            .map(|b| fixture::decode(b).metadata.name.unwrap())
            .collect()
    }

    #[tokio::test]
    async fn pages_follow_the_continue_token_at_the_first_pages_revision() {
        let (store, _) = filled(5).await;
        let ctx = fixture::ctx();
        let mut opts = ListOptions {
            limit: 2,
            ..Default::default()
        };
        let first = store.list(&ctx, &opts).await.unwrap();
        assert_eq!(names(&first), ["w0", "w1"]);
        assert_eq!(first.remaining_item_count, Some(3));
        // A write after the first page does not show up in the following ones.
        store
            .create(
                &ctx,
                fixture::body(&Widget::new("w5", "red")),
                &WriteOptions::default(),
            )
            .await
            .unwrap();
        opts.continue_token = first.continue_token.clone().unwrap();
        let second = store.list(&ctx, &opts).await.unwrap();
        assert_eq!(names(&second), ["w2", "w3"]);
        assert_eq!(second.resource_version, first.resource_version);
        opts.continue_token = second.continue_token.unwrap();
        let last = store.list(&ctx, &opts).await.unwrap();
        assert_eq!(names(&last), ["w4"]);
        assert!(last.continue_token.is_none());
        assert_eq!(last.remaining_item_count, None);
        // Without a limit: everything, in the request's namespace only.
        let all = store.list(&ctx, &ListOptions::default()).await.unwrap();
        assert_eq!(all.len(), 6);
        let mut everywhere = ctx.clone();
        everywhere.namespace = None;
        assert_eq!(
            store
                .list(&everywhere, &ListOptions::default())
                .await
                .unwrap()
                .len(),
            7
        );
    }

    #[tokio::test]
    async fn a_lists_items_are_written_with_their_resource_version_when_read() {
        let (store, _) = filled(6).await;
        let ctx = fixture::ctx();
        let all = store.list(&ctx, &ListOptions::default()).await.unwrap();
        // Held as stored until read or sent.
        assert!(matches!(all.list_items(), ListItems::Versioned(v) if v.len() == 6));
        let mut read = all.clone();
        let items = read.items_mut().clone();
        assert!(matches!(read.list_items(), ListItems::Written(w) if w.len() == 6));
        assert_eq!(items, all.into_items());
        for item in &items {
            let name = fixture::decode(item).metadata.name.unwrap();
            // The same bytes as a GET of the object: its resourceVersion written in.
            assert_eq!(*item, store.get(&ctx, &name).await.unwrap());
        }
        // Changed items stay changed.
        read.items_mut().truncate(2);
        assert_eq!(read.len(), 2);
        assert_eq!(read.into_items(), items[..2]);
    }

    #[tokio::test]
    async fn selectors_filter_and_a_page_fills_up_to_the_limit() {
        let (store, _) = filled(6).await;
        let ctx = fixture::ctx();
        let opts = ListOptions {
            field_selector: FieldSelector::parse("spec.color=blue").unwrap(),
            limit: 2,
            ..Default::default()
        };
        let page = store.list(&ctx, &opts).await.unwrap();
        assert_eq!(names(&page), ["w1", "w3"]);
        // Filtered lists do not count what remains.
        assert_eq!(page.remaining_item_count, None);
        let opts = ListOptions {
            label_selector: LabelSelector::parse("i in (2,4)").unwrap(),
            ..Default::default()
        };
        assert_eq!(names(&store.list(&ctx, &opts).await.unwrap()), ["w2", "w4"]);
        let opts = ListOptions {
            field_selector: FieldSelector::parse("spec.size=1").unwrap(),
            ..Default::default()
        };
        let e = store.list(&ctx, &opts).await.unwrap_err();
        assert_eq!(e.code, 400);
    }

    #[tokio::test]
    async fn an_exact_resource_version_reads_the_past_and_a_future_one_is_a_504() {
        let (store, storage) = filled(2).await;
        let ctx = fixture::ctx();
        let then = storage.current_revision().await.unwrap();
        store
            .create(
                &ctx,
                fixture::body(&Widget::new("w9", "red")),
                &WriteOptions::default(),
            )
            .await
            .unwrap();
        let opts = ListOptions {
            resource_version: then.to_string(),
            resource_version_match: "Exact".into(),
            ..Default::default()
        };
        let past = store.list(&ctx, &opts).await.unwrap();
        assert_eq!(names(&past), ["w0", "w1"]);
        assert_eq!(past.resource_version, then.to_string());
        // Not older than: the latest state.
        let opts = ListOptions {
            resource_version: then.to_string(),
            ..Default::default()
        };
        assert_eq!(store.list(&ctx, &opts).await.unwrap().len(), 3);
        let opts = ListOptions {
            resource_version: "1000".into(),
            ..Default::default()
        };
        let e = store.list(&ctx, &opts).await.unwrap_err();
        assert_eq!((e.code, e.reason.as_str()), (504, "Timeout"));
        let opts = ListOptions {
            resource_version: "x".into(),
            ..Default::default()
        };
        assert_eq!(store.list(&ctx, &opts).await.unwrap_err().code, 400);
    }

    #[tokio::test]
    async fn a_bad_or_foreign_continue_token_is_a_400() {
        let (store, _) = filled(3).await;
        let opts = ListOptions {
            continue_token: "garbage".into(),
            ..Default::default()
        };
        let e = store.list(&fixture::ctx(), &opts).await.unwrap_err();
        assert_eq!(e.code, 400);
        assert!(e.message.starts_with("invalid continue token: "), "{e:?}");
        // A token of namespace `other` used in the default namespace.
        let mut other = fixture::ctx();
        other.namespace = Some("other".into());
        let token = continue_token::encode(2, "/test.example.com/widgets/other/x");
        let opts = ListOptions {
            continue_token: token,
            ..Default::default()
        };
        let e = store.list(&fixture::ctx(), &opts).await.unwrap_err();
        assert!(
            e.message.contains("outside the requested collection"),
            "{e:?}"
        );
        assert!(store.list(&other, &opts).await.is_ok());
    }

    #[tokio::test]
    async fn a_continue_token_of_a_compacted_revision_is_a_410_offering_the_latest() {
        let (store, storage) = filled(3).await;
        let ctx = fixture::ctx();
        let first = store
            .list(
                &ctx,
                &ListOptions {
                    limit: 1,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        let mut w = store.get_object(Some(NS), "w0").await.unwrap();
        w.spec.size = 2;
        store
            .update(
                &ctx,
                "w0",
                None,
                fixture::body(&w),
                &WriteOptions::default(),
            )
            .await
            .unwrap();
        storage
            .compact(storage.current_revision().await.unwrap())
            .await
            .unwrap();
        let opts = ListOptions {
            limit: 1,
            continue_token: first.continue_token.unwrap(),
            ..Default::default()
        };
        let e = store.list(&ctx, &opts).await.unwrap_err();
        assert_eq!((e.code, e.reason.as_str()), (410, "Expired"));
        assert_eq!(e.message, INCONSISTENT_CONTINUE);
        let latest = ListOptions {
            continue_token: e.continue_token.unwrap(),
            ..Default::default()
        };
        assert_eq!(
            names(&store.list(&ctx, &latest).await.unwrap()),
            ["w1", "w2"]
        );
    }

    #[tokio::test]
    async fn typed_lists_decode_every_object() {
        let (store, _) = filled(3).await;
        let here = store.list_objects(Some(NS)).await.unwrap();
        assert_eq!(here.len(), 3);
        assert!(here.iter().all(|w| w.metadata.resource_version.is_some()));
        assert_eq!(store.cached_objects(None).await.unwrap().len(), 4);
    }
}
