//! [`WatchEvents`]: the events of a watch, collected as they arrive.

use std::fmt::Debug;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use kube::api::{Api, WatchEvent, WatchParams};
use serde::de::DeserializeOwned;

/// A watch started on an [`Api`], whose events a test takes in order.
///
/// ```no_run
/// # async fn f(api: kube::Api<kube::core::DynamicObject>) -> Result<(), kube::Error> {
/// use std::time::Duration;
/// use apiserver_framework::testing::WatchEvents;
///
/// let mut events = WatchEvents::start(&api, &Default::default(), "0").await?;
/// // ... create, change and delete an object ...
/// let seen = events.take(3, Duration::from_secs(10)).await;
/// assert_eq!(WatchEvents::types(&seen), ["ADDED", "MODIFIED", "DELETED"]);
/// # Ok(()) }
/// ```
pub struct WatchEvents<K> {
    stream: BoxStream<'static, Result<WatchEvent<K>, kube::Error>>,
}

impl<K> WatchEvents<K>
where
    K: Clone + Debug + DeserializeOwned + Send + 'static,
{
    /// Starts watching `api` after `resource_version` (`"0"`: the current objects first, as
    /// `ADDED` events; a list's `resourceVersion`: only what changed since).
    pub async fn start(
        api: &Api<K>,
        params: &WatchParams,
        resource_version: &str,
    ) -> Result<Self, kube::Error> {
        let stream = api.watch(params, resource_version).await?.boxed();
        Ok(WatchEvents { stream })
    }

    /// The next `count` events (bookmarks skipped), waiting at most `timeout` in all. Panics
    /// with the events seen so far when fewer arrive, or on an error of the stream.
    pub async fn take(&mut self, count: usize, timeout: Duration) -> Vec<WatchEvent<K>> {
        match self.try_take(count, timeout).await {
            Ok(seen) => seen,
            Err((why, seen)) => panic!(
                "expected {count} watch events, {why}; seen {}: {:?}",
                seen.len(),
                Self::types(&seen)
            ),
        }
    }

    /// Like [`WatchEvents::take`], returning why fewer came, with the events seen, instead of
    /// panicking.
    #[allow(clippy::type_complexity)]
    pub async fn try_take(
        &mut self,
        count: usize,
        timeout: Duration,
    ) -> Result<Vec<WatchEvent<K>>, (String, Vec<WatchEvent<K>>)> {
        let mut seen = Vec::new();
        let collect = async {
            while seen.len() < count {
                match self.stream.next().await {
                    Some(Ok(WatchEvent::Bookmark(_))) => {}
                    Some(Ok(event)) => seen.push(event),
                    Some(Err(e)) => return Err(format!("the watch failed: {e}")),
                    None => return Err("the watch ended".to_string()),
                }
            }
            Ok(())
        };
        let outcome = match tokio::time::timeout(timeout, collect).await {
            Ok(outcome) => outcome,
            Err(_) => Err(format!("no more events within {timeout:?}")),
        };
        match outcome {
            Ok(()) => Ok(seen),
            Err(why) => Err((why, seen)),
        }
    }

    /// Whether no event (other than a bookmark) arrives within `quiet`; the event that does,
    /// otherwise.
    pub async fn expect_quiet(&mut self, quiet: Duration) -> Result<(), WatchEvent<K>> {
        let next = async {
            loop {
                match self.stream.next().await {
                    Some(Ok(WatchEvent::Bookmark(_))) => continue,
                    Some(Ok(event)) => return Some(event),
                    _ => return None,
                }
            }
        };
        match tokio::time::timeout(quiet, next).await {
            Ok(Some(event)) => Err(event),
            _ => Ok(()),
        }
    }

    /// The types of `events` (`ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK`, `ERROR`).
    pub fn types(events: &[WatchEvent<K>]) -> Vec<&'static str> {
        events.iter().map(event_type).collect()
    }
}

/// The wire name of an event's type.
pub(crate) fn event_type<K>(event: &WatchEvent<K>) -> &'static str {
    match event {
        WatchEvent::Added(_) => "ADDED",
        WatchEvent::Modified(_) => "MODIFIED",
        WatchEvent::Deleted(_) => "DELETED",
        WatchEvent::Bookmark(_) => "BOOKMARK",
        WatchEvent::Error(_) => "ERROR",
    }
}
