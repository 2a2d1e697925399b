//! Watch: where it starts (the current state as `ADDED` events, or after a revision), how
//! long it lasts, and the storage watch it follows.

use std::time::Duration;

use futures::StreamExt;
use rand::Rng;

use super::Store;
use super::errors::storage_error;
use super::list::parse_rv;
use crate::error::ApiError;
use crate::registry::rest::options::ListOptions;
use crate::registry::rest::{EventStream, RequestContext, WatchEventType};
use crate::registry::watch as events;
use crate::resource::ApiResource;
use crate::storage::{ListRequest, StorageError};

/// The longest a watch lasts (ten years): longer `timeoutSeconds` are cut to it.
pub const MAX_WATCH_TIMEOUT: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// How long a watch lasts without `timeoutSeconds`: 30 minutes times a random factor in
/// [1, 2), as upstream spreads reconnects.
fn default_watch_timeout() -> Duration {
    let factor: f64 = rand::rng().random_range(1.0..2.0);
    Duration::from_secs_f64(1800.0 * factor)
}

impl<T: ApiResource> Store<T> {
    /// The events of the objects `opts` selects in the request's namespace, until the
    /// watch's timeout.
    pub(super) async fn watch_objects(
        &self,
        ctx: &RequestContext,
        opts: &ListOptions,
    ) -> Result<EventStream, ApiError> {
        self.check_field_selector(opts)?;
        let prefix = self.collection_prefix(self.list_namespace(ctx));
        let timeout = opts
            .timeout_seconds
            .map(Duration::from_secs)
            .unwrap_or_else(default_watch_timeout);
        let now = tokio::time::Instant::now();
        let deadline = now.checked_add(timeout).unwrap_or(now + MAX_WATCH_TIMEOUT);
        let failed = |e| storage_error(&self.info, "watch", "", e);
        // Where the watch starts: with the current state as ADDED events (legacy watches from
        // "" or "0", and `sendInitialEvents=true`), or after a given revision.
        let requested = match opts.resource_version.as_str() {
            "" | "0" => None,
            rv => Some(parse_rv(rv)?),
        };
        let send_initial = opts.send_initial_events.unwrap_or(requested.is_none());
        let mut initial = Vec::new();
        let after = if send_initial {
            if let Some(rv) = requested {
                self.check_not_future("watch", rv).await?;
            }
            let page = self
                .storage
                .list(ListRequest {
                    prefix: prefix.clone(),
                    ..Default::default()
                })
                .await
                .map_err(failed)?;
            for kv in &page.items {
                if events::matches(opts, &kv.value) {
                    initial.push(events::event(WatchEventType::Added, kv));
                }
            }
            if opts.send_initial_events == Some(true) && opts.allow_watch_bookmarks {
                initial.push(events::bookmark(&self.info, page.revision, true));
            }
            page.revision
        } else {
            match requested {
                Some(rv) => rv,
                None => self.storage.current_revision().await.map_err(failed)?,
            }
        };
        let live = match self.storage.watch(&prefix, after).await {
            Ok(s) => s,
            Err(StorageError::Compacted { compacted, .. }) => {
                let err = events::too_old(after, compacted);
                return Ok(futures::stream::iter([events::error_event(&err)]).boxed());
            }
            Err(e) => return Err(failed(e)),
        };
        Ok(events::run(
            &self.info,
            opts,
            initial,
            after,
            live,
            deadline,
            self.encoded.clone(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::registry::rest::options::{DeleteOptions, WriteOptions};
    use crate::registry::rest::{ObjectEvent, RestStorage};
    use crate::registry::store::fixture::{self, NS, Widget};
    use crate::selector::FieldSelector;
    use crate::storage::Storage;

    /// The next `n` events as `(type, name, color)`.
    async fn next(stream: &mut EventStream, n: usize) -> Vec<(&'static str, String, String)> {
        let mut out = Vec::new();
        for _ in 0..n {
            let ev: ObjectEvent = tokio::time::timeout(Duration::from_secs(10), stream.next())
                .await
                .expect("an event within 10 s")
                .expect("the stream goes on");
            let v: Value = serde_json::from_slice(&ev.object).unwrap();
            let s = |p| {
                v.pointer(p)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            out.push((ev.kind.as_str(), s("/metadata/name"), s("/spec/color")));
        }
        out
    }

    fn ev(kind: &'static str, name: &str, color: &str) -> (&'static str, String, String) {
        (kind, name.into(), color.into())
    }

    async fn create(store: &Store<Widget>, name: &str, color: &str) {
        store
            .create(
                &fixture::ctx(),
                fixture::body(&Widget::new(name, color)),
                &WriteOptions::default(),
            )
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn a_watch_after_a_revision_sees_the_changes_after_it() {
        let (store, storage) = fixture::store();
        create(&store, "a", "red").await;
        let after = storage.current_revision().await.unwrap();
        create(&store, "b", "red").await;
        let mut w = store.get_object(Some(NS), "a").await.unwrap();
        w.spec.color = "blue".into();
        store
            .update(
                &fixture::ctx(),
                "a",
                None,
                fixture::body(&w),
                &WriteOptions::default(),
            )
            .await
            .unwrap();
        store
            .delete(&fixture::ctx(), "b", &DeleteOptions::default())
            .await
            .unwrap();
        let opts = ListOptions {
            resource_version: after.to_string(),
            ..Default::default()
        };
        let mut stream = store.watch(&fixture::ctx(), &opts).await.unwrap();
        assert_eq!(
            next(&mut stream, 3).await,
            [
                ev("ADDED", "b", "red"),
                ev("MODIFIED", "a", "blue"),
                ev("DELETED", "b", "red")
            ]
        );
        // And what happens next.
        create(&store, "c", "red").await;
        assert_eq!(next(&mut stream, 1).await, [ev("ADDED", "c", "red")]);
    }

    #[tokio::test]
    async fn a_watch_from_now_starts_with_the_current_state_and_follows_selectors() {
        let (store, _) = fixture::store();
        create(&store, "a", "red").await;
        create(&store, "b", "blue").await;
        let opts = ListOptions {
            field_selector: FieldSelector::parse("spec.color=red").unwrap(),
            ..Default::default()
        };
        let mut stream = store.watch(&fixture::ctx(), &opts).await.unwrap();
        assert_eq!(next(&mut stream, 1).await, [ev("ADDED", "a", "red")]);
        // `b` turns red: it enters the selection.
        let mut b = store.get_object(Some(NS), "b").await.unwrap();
        b.spec.color = "red".into();
        store
            .update(
                &fixture::ctx(),
                "b",
                None,
                fixture::body(&b),
                &WriteOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!(next(&mut stream, 1).await, [ev("ADDED", "b", "red")]);
    }

    #[tokio::test]
    async fn send_initial_events_ends_with_a_bookmark() {
        let (store, storage) = fixture::store();
        create(&store, "a", "red").await;
        let rev = storage.current_revision().await.unwrap();
        let opts = ListOptions {
            send_initial_events: Some(true),
            allow_watch_bookmarks: true,
            resource_version_match: "NotOlderThan".into(),
            ..Default::default()
        };
        let mut stream = store.watch(&fixture::ctx(), &opts).await.unwrap();
        assert_eq!(next(&mut stream, 1).await, [ev("ADDED", "a", "red")]);
        let bookmark = stream.next().await.unwrap();
        assert_eq!(bookmark.kind, WatchEventType::Bookmark);
        let v: Value = serde_json::from_slice(&bookmark.object).unwrap();
        assert_eq!(v["metadata"]["resourceVersion"], rev.to_string());
        assert_eq!(
            v["metadata"]["annotations"][events::INITIAL_EVENTS_END],
            "true"
        );
    }

    #[tokio::test]
    async fn a_compacted_start_is_an_error_event_and_a_future_one_a_504() {
        let (store, storage) = fixture::store();
        create(&store, "a", "red").await;
        create(&store, "b", "red").await;
        let rev = storage.current_revision().await.unwrap();
        storage.compact(rev).await.unwrap();
        let opts = ListOptions {
            resource_version: "1".into(),
            ..Default::default()
        };
        let mut stream = store.watch(&fixture::ctx(), &opts).await.unwrap();
        let e = stream.next().await.unwrap();
        assert_eq!(e.kind, WatchEventType::Error);
        let v: Value = serde_json::from_slice(&e.object).unwrap();
        assert_eq!(
            (v["code"].as_u64(), v["reason"].as_str()),
            (Some(410), Some("Expired"))
        );
        assert!(stream.next().await.is_none());

        let future = ListOptions {
            resource_version: (rev + 100).to_string(),
            send_initial_events: Some(true),
            ..Default::default()
        };
        let e = store.watch(&fixture::ctx(), &future).await.err().unwrap();
        assert_eq!(e.code, 504);
    }

    #[tokio::test]
    async fn a_watch_ends_at_its_timeout() {
        let (store, _) = fixture::store();
        let opts = ListOptions {
            timeout_seconds: Some(0),
            ..Default::default()
        };
        let mut stream = store.watch(&fixture::ctx(), &opts).await.unwrap();
        let end = tokio::time::timeout(Duration::from_secs(10), stream.next()).await;
        assert!(matches!(end, Ok(None)), "the stream ends");
    }

    #[test]
    fn the_default_timeout_is_between_30_and_60_minutes() {
        for _ in 0..100 {
            let t = default_watch_timeout();
            assert!(
                t >= Duration::from_secs(1800) && t < Duration::from_secs(3600),
                "{t:?}"
            );
        }
    }
}
