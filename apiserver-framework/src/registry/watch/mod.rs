//! Turning a storage watch into the events a client sees: selector transitions, compaction
//! errors, and bookmarks. Each event is sent as a JSON line (`line`), made once for all the
//! watchers of a change (see `crate::registry::cache`).

pub(crate) mod line;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::error::ApiError;
use crate::registry::cache::encoded_events::EncodedEvents;
use crate::registry::rest::options::ListOptions;
use crate::registry::rest::{EventStream, ObjectEvent, WatchEventType};
use crate::resource::ResourceInfo;
use crate::selector::FieldRequirement;
use crate::storage::{EventKind, KeyValue, StorageError, StorageEvent};

/// How often a watcher that allows bookmarks gets one (upstream: about once a minute).
pub const BOOKMARK_INTERVAL: Duration = Duration::from_secs(60);

/// How long before a watch's deadline its last bookmark is sent, so that a client resuming
/// after the deadline starts from a recent revision (upstream: about 2 s).
pub const BOOKMARK_BEFORE_DEADLINE: Duration = Duration::from_secs(2);

/// The annotation of the bookmark that ends the initial events of a `sendInitialEvents` watch.
pub const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// An event with its object (at its resourceVersion).
pub fn event(kind: WatchEventType, kv: &KeyValue) -> ObjectEvent {
    ObjectEvent::of_change(kind, kv)
}

/// An `ERROR` event carrying the Status of `err`.
pub fn error_event(err: &ApiError) -> ObjectEvent {
    ObjectEvent::new(WatchEventType::Error, Bytes::from(err.to_json()))
}

/// A `BOOKMARK` event: an object of the resource's kind carrying only its resourceVersion
/// (and, for the end of the initial events, the `k8s.io/initial-events-end` annotation).
pub fn bookmark(info: &ResourceInfo, revision: u64, initial_events_end: bool) -> ObjectEvent {
    let mut metadata = json!({"resourceVersion": revision.to_string()});
    if initial_events_end {
        metadata["annotations"] = json!({INITIAL_EVENTS_END: "true"});
    }
    let object = json!({
        "kind": info.kind,
        "apiVersion": info.api_version(),
        "metadata": metadata,
    });
    ObjectEvent::new(
        WatchEventType::Bookmark,
        Bytes::from(serde_json::to_vec(&object).unwrap_or_default()),
    )
}

/// The `410 Expired` Status of a watch that starts (or falls) behind the compacted revision.
pub fn too_old(requested: u64, compacted: u64) -> ApiError {
    ApiError::expired(format!(
        "too old resource version: {requested} ({compacted})"
    ))
}

/// The event a watcher sees for a storage event (if any), including the transitions in and
/// out of its selectors, as upstream's watch cache reports them.
fn filter(
    selectors: Option<&ListOptions>,
    ev: &StorageEvent,
    encoded: &EncodedEvents,
) -> Option<ObjectEvent> {
    let sel = |v: &[u8]| selectors.is_none_or(|opts| matches(opts, v));
    let now = sel(&ev.kv.value);
    let kind = match ev.kind {
        EventKind::Created => now.then_some(WatchEventType::Added),
        EventKind::Deleted => now.then_some(WatchEventType::Deleted),
        EventKind::Updated => {
            let before = ev.prev.as_ref().is_some_and(|p| sel(&p.value));
            match (before, now) {
                (true, true) => Some(WatchEventType::Modified),
                (false, true) => Some(WatchEventType::Added),
                (true, false) => Some(WatchEventType::Deleted),
                (false, false) => None,
            }
        }
        // Progress of the storage's watch, not a change.
        EventKind::Progress => None,
    }?;
    Some(encoded.get_or_encode(kind, &ev.kv))
}

/// The instants at which bookmarks are due: every [`BOOKMARK_INTERVAL`] and once
/// [`BOOKMARK_BEFORE_DEADLINE`] before the deadline.
fn ticks(deadline: Instant) -> impl Stream<Item = ()> {
    let last = deadline.checked_sub(BOOKMARK_BEFORE_DEADLINE);
    futures::stream::unfold(Instant::now(), move |from| async move {
        let periodic = from + BOOKMARK_INTERVAL;
        let next = match last {
            Some(last) if last > from => periodic.min(last),
            _ => periodic,
        };
        if next >= deadline {
            return None;
        }
        tokio::time::sleep_until(next).await;
        Some(((), next))
    })
}

/// A running watch: `initial` events first, then the storage's events after revision
/// `after`, filtered by the selectors, with bookmarks when the client allows them; the stream
/// ends at `deadline`, or after an ERROR event.
pub fn run(
    info: &ResourceInfo,
    opts: &ListOptions,
    initial: Vec<ObjectEvent>,
    after: u64,
    live: BoxStream<'static, Result<StorageEvent, StorageError>>,
    deadline: Instant,
    encoded: Arc<EncodedEvents>,
) -> EventStream {
    let bookmarks = opts.allow_watch_bookmarks;
    // What the watch keeps for its whole life: the selectors only when there are some, the
    // resource and the bookmarks' ticks only while bookmarks are sent.
    RunningWatch {
        initial: initial.into_iter(),
        live: Some(live),
        bookmarks: bookmarks.then(|| Bookmarks {
            ticks: ticks(deadline).boxed(),
            info: Box::new(info.clone()),
        }),
        deadline: Box::pin(tokio::time::sleep_until(deadline)),
        unchecked: 1,
        seen: after,
        selectors: (!opts.label_selector.is_empty() || !opts.field_selector.is_empty())
            .then(|| Box::new(opts.clone())),
        encoded,
    }
    .boxed()
}

/// How many events a watch delivers without waiting, at most, before it looks at its
/// deadline again.
const DEADLINE_CHECK: u32 = 64;

/// The stream of [`run`], one type rather than a stack of adapters: every event of every
/// watcher passes through it, so each layer's poll would be paid once per delivery.
struct RunningWatch {
    initial: std::vec::IntoIter<ObjectEvent>,
    /// The storage's events; `None` once they ended, or after an ERROR event (which ends the
    /// watch).
    live: Option<BoxStream<'static, Result<StorageEvent, StorageError>>>,
    /// What bookmarks need, while they are sent.
    bookmarks: Option<Bookmarks>,
    /// The watch's end.
    deadline: Pin<Box<tokio::time::Sleep>>,
    /// Polls until the deadline's timer is polled again, at the poll that brings this to
    /// zero (at the first poll, then at most every [`DEADLINE_CHECK`] polls).
    unchecked: u32,
    /// The revision every event up to which has been delivered (what a bookmark may promise).
    seen: u64,
    selectors: Option<Box<ListOptions>>,
    encoded: Arc<EncodedEvents>,
}

/// A watch's bookmarks: when they are due, and the resource they name.
struct Bookmarks {
    ticks: BoxStream<'static, ()>,
    info: Box<ResourceInfo>,
}

impl RunningWatch {
    /// What the watcher sees of a storage event, if anything; an error ends the watch.
    fn storage_event(&mut self, ev: Result<StorageEvent, StorageError>) -> Option<ObjectEvent> {
        match ev {
            Ok(ev) => {
                self.seen = self.seen.max(ev.kv.mod_revision);
                filter(self.selectors.as_deref(), &ev, &self.encoded)
            }
            Err(e) => {
                self.live = None;
                self.bookmarks = None;
                let err = match e {
                    StorageError::Compacted {
                        requested,
                        compacted,
                    } => too_old(requested, compacted),
                    other => ApiError::internal(other),
                };
                Some(error_event(&err))
            }
        }
    }
}

impl Stream for RunningWatch {
    type Item = ObjectEvent;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ObjectEvent>> {
        let this = self.get_mut();
        // The deadline ends the watch even while events are ready: its timer is polled at
        // the first poll, whenever the watch waits, and every DEADLINE_CHECK polls without a
        // wait, rather than at every event.
        this.unchecked = this.unchecked.wrapping_sub(1);
        if this.unchecked == 0 {
            this.unchecked = DEADLINE_CHECK;
            if this.deadline.as_mut().poll(cx).is_ready() {
                return Poll::Ready(None);
            }
        }
        if let Some(ev) = this.initial.next() {
            return Poll::Ready(Some(ev));
        }
        loop {
            if let Some(bookmarks) = &mut this.bookmarks {
                match bookmarks.ticks.poll_next_unpin(cx) {
                    Poll::Ready(Some(())) => {
                        return Poll::Ready(Some(bookmark(&bookmarks.info, this.seen, false)));
                    }
                    Poll::Ready(None) => this.bookmarks = None,
                    Poll::Pending => {}
                }
            }
            let Some(live) = &mut this.live else {
                // The storage's events ended: the watch ends once no bookmark is due either.
                if this.bookmarks.is_none() {
                    return Poll::Ready(None);
                }
                break;
            };
            match live.poll_next_unpin(cx) {
                Poll::Ready(Some(ev)) => match this.storage_event(ev) {
                    Some(out) => return Poll::Ready(Some(out)),
                    None => continue,
                },
                Poll::Ready(None) => this.live = None,
                Poll::Pending => break,
            }
        }
        this.unchecked = DEADLINE_CHECK;
        match this.deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Whether stored object bytes satisfy the list options' label and field selectors.
///
/// Label selectors and field selectors on `metadata.name` and `metadata.namespace` (the
/// common ones) read only those fields of the object: the rest is skipped as it is parsed,
/// not built into a `serde_json::Value`, which was most of the cost of a filtered list's item
/// or a filtered watch's event (each watcher reads each event). Selectors on other fields
/// read the whole object.
pub fn matches(opts: &ListOptions, bytes: &[u8]) -> bool {
    if opts.label_selector.is_empty() && opts.field_selector.is_empty() {
        return true;
    }
    let on_metadata = |r: &FieldRequirement| METADATA_FIELDS.contains(&r.field.as_str());
    if opts.field_selector.requirements.iter().all(on_metadata)
        && let Ok(object) = serde_json::from_slice::<MetadataOnly>(bytes)
    {
        let metadata = object.metadata.unwrap_or_default();
        let fields_match = opts.field_selector.requirements.iter().all(|r| {
            let actual = match r.field.as_str() {
                "metadata.name" => metadata.name.as_deref(),
                _ => metadata.namespace.as_deref(),
            };
            (actual.unwrap_or_default() == r.value) != r.negated
        });
        return fields_match
            && opts
                .label_selector
                .matches(&metadata.labels.unwrap_or_default());
    }
    let Ok(v) = serde_json::from_slice::<Value>(bytes) else {
        return false;
    };
    opts.label_selector.matches(&labels_of(&v)) && opts.field_selector.matches(&v)
}

/// The fields [`MetadataOnly`] reads for field selectors.
const METADATA_FIELDS: [&str; 2] = ["metadata.name", "metadata.namespace"];

/// An object's name, namespace and labels, and nothing else of it.
#[derive(serde::Deserialize)]
struct MetadataOnly {
    metadata: Option<SelectedMetadata>,
}

/// What selectors read of an object's metadata.
#[derive(Default, serde::Deserialize)]
struct SelectedMetadata {
    name: Option<String>,
    namespace: Option<String>,
    labels: Option<std::collections::BTreeMap<String, String>>,
}

/// Labels of an object, for label selectors (none when they are not a map of strings).
pub fn labels_of(v: &Value) -> std::collections::BTreeMap<String, String> {
    let Some(labels) = v.pointer("/metadata/labels").and_then(Value::as_object) else {
        return Default::default();
    };
    labels
        .iter()
        .map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect::<Option<_>>()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use futures::channel::mpsc;

    use super::*;
    use crate::registry::store::fixture::Widget;
    use crate::selector::{FieldSelector, LabelSelector};

    fn info() -> ResourceInfo {
        <Widget as crate::resource::ApiResource>::resource_info()
    }

    fn created(name: &str, revision: u64) -> StorageEvent {
        StorageEvent {
            kind: EventKind::Created,
            kv: KeyValue {
                key: format!("/widgets/default/{name}").into(),
                value: Bytes::from(format!(r#"{{"metadata":{{"name":"{name}"}}}}"#)),
                create_revision: revision,
                mod_revision: revision,
            },
            prev: None,
        }
    }

    type Sender = mpsc::UnboundedSender<Result<StorageEvent, StorageError>>;

    /// A watch of `opts` from revision 10 that ends `deadline` from now, fed by the returned
    /// sender.
    fn watch(
        opts: &ListOptions,
        initial: Vec<ObjectEvent>,
        deadline: Duration,
    ) -> (EventStream, Sender) {
        let (tx, rx) = mpsc::unbounded();
        let stream = run(
            &info(),
            opts,
            initial,
            10,
            rx.boxed(),
            Instant::now() + deadline,
            Arc::new(EncodedEvents::default()),
        );
        (stream, tx)
    }

    /// `(type, resourceVersion)` of an event.
    fn seen(ev: &ObjectEvent) -> (&'static str, String) {
        let v: Value = serde_json::from_slice(&ev.object).unwrap();
        let rv = v["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or("")
            .to_string();
        (ev.kind.as_str(), rv)
    }

    #[tokio::test(start_paused = true)]
    async fn bookmarks_come_every_interval_and_just_before_the_deadline_then_the_watch_ends() {
        let opts = ListOptions {
            allow_watch_bookmarks: true,
            ..Default::default()
        };
        let (mut stream, tx) = watch(&opts, Vec::new(), Duration::from_secs(150));
        let start = Instant::now();
        tx.unbounded_send(Ok(created("a", 11))).unwrap();
        let mut got = Vec::new();
        while let Some(ev) = stream.next().await {
            got.push((seen(&ev), (Instant::now() - start).as_secs()));
            if got.len() == 1 {
                tx.unbounded_send(Ok(created("b", 12))).unwrap();
            }
        }
        assert_eq!(
            got,
            [
                (("ADDED", "11".to_string()), 0),
                (("ADDED", "12".to_string()), 0),
                (("BOOKMARK", "12".to_string()), 60),
                (("BOOKMARK", "12".to_string()), 120),
                (("BOOKMARK", "12".to_string()), 148),
            ]
        );
        assert_eq!(
            (Instant::now() - start).as_secs(),
            150,
            "ends at the deadline"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn without_bookmarks_the_watch_ends_with_the_storage_or_at_the_deadline() {
        let (mut stream, tx) = watch(
            &ListOptions::default(),
            Vec::new(),
            Duration::from_secs(150),
        );
        tx.unbounded_send(Ok(created("a", 11))).unwrap();
        drop(tx);
        assert_eq!(seen(&stream.next().await.unwrap()), ("ADDED", "11".into()));
        assert!(stream.next().await.is_none(), "the storage's stream ended");

        let (mut stream, _tx) = watch(
            &ListOptions::default(),
            Vec::new(),
            Duration::from_secs(150),
        );
        let start = Instant::now();
        assert!(stream.next().await.is_none());
        assert_eq!((Instant::now() - start).as_secs(), 150);
    }

    #[tokio::test(start_paused = true)]
    async fn a_watch_whose_events_never_stop_still_ends_at_its_deadline() {
        // Storage events that are always ready: the watch never waits for one.
        let endless = futures::stream::iter((11..).map(|rev| Ok(created(&format!("o{rev}"), rev))));
        let mut stream = run(
            &info(),
            &ListOptions::default(),
            Vec::new(),
            10,
            endless.boxed(),
            Instant::now() + Duration::from_secs(5),
            Arc::new(EncodedEvents::default()),
        );
        for _ in 0..1000 {
            assert!(stream.next().await.is_some());
        }
        tokio::time::advance(Duration::from_secs(6)).await;
        let mut after = 0;
        while stream.next().await.is_some() {
            after += 1;
            assert!(after < 10_000, "the watch went on past its deadline");
        }
        assert!(
            after <= DEADLINE_CHECK as usize,
            "{after} events after the deadline"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn initial_events_come_first_and_an_error_ends_the_watch() {
        let initial = vec![event(WatchEventType::Added, &created("a", 5).kv)];
        let (mut stream, tx) = watch(&ListOptions::default(), initial, Duration::from_secs(150));
        tx.unbounded_send(Ok(created("b", 11))).unwrap();
        tx.unbounded_send(Err(StorageError::Compacted {
            requested: 11,
            compacted: 20,
        }))
        .unwrap();
        tx.unbounded_send(Ok(created("c", 21))).unwrap();
        let mut got = Vec::new();
        while let Some(ev) = stream.next().await {
            got.push(ev);
        }
        assert_eq!(seen(&got[0]), ("ADDED", "5".into()));
        assert_eq!(seen(&got[1]), ("ADDED", "11".into()));
        assert_eq!(got[2].kind, WatchEventType::Error);
        let status: Value = serde_json::from_slice(&got[2].object).unwrap();
        assert_eq!(status["code"], 410);
        assert_eq!(got.len(), 3, "nothing after the error");
    }

    #[tokio::test(start_paused = true)]
    async fn events_outside_the_selectors_are_skipped_but_counted_for_bookmarks() {
        let opts = ListOptions {
            allow_watch_bookmarks: true,
            field_selector: FieldSelector::parse("metadata.name=b").unwrap(),
            ..Default::default()
        };
        let (mut stream, tx) = watch(&opts, Vec::new(), Duration::from_secs(70));
        tx.unbounded_send(Ok(created("a", 11))).unwrap();
        tx.unbounded_send(Ok(created("b", 12))).unwrap();
        tx.unbounded_send(Ok(created("c", 13))).unwrap();
        assert_eq!(seen(&stream.next().await.unwrap()), ("ADDED", "12".into()));
        assert_eq!(
            seen(&stream.next().await.unwrap()),
            ("BOOKMARK", "13".into())
        );
    }

    #[test]
    fn selectors_on_labels_name_and_namespace_read_those_alone_as_the_whole_object_would() {
        // What a match was before labels were read alone: the whole object parsed, its labels
        // a map of strings or none.
        fn whole(opts: &ListOptions, bytes: &[u8]) -> bool {
            let Ok(v) = serde_json::from_slice::<Value>(bytes) else {
                return false;
            };
            let labels = v
                .pointer("/metadata/labels")
                .and_then(|l| serde_json::from_value(l.clone()).ok())
                .unwrap_or_default();
            opts.label_selector.matches(&labels) && opts.field_selector.matches(&v)
        }
        let objects: [&[u8]; 12] = [
            br#"{"metadata":{"name":"a","labels":{"app":"web","tier":"front"}},"spec":{"x":[1,{"y":"z"}]}}"#,
            br#"{"metadata":{"name":"b","namespace":"ns","labels":{"app":"db"}}}"#,
            br#"{"metadata":{"name":"c"}}"#,
            br#"{"metadata":{"name":"d","labels":null}}"#,
            br#"{"metadata":{"name":"e","labels":{"app":7}}}"#,
            br#"{"metadata":"not an object"}"#,
            br#"{"kind":"K"}"#,
            br#"{"metadata":{"labels":{"app":"w\u0065b","t\"ier":"front"}}}"#,
            br#"{"metadata":{"labels":{"app":"db"}},"metadata":{"labels":{"app":"web"}}}"#,
            br#"{"metadata":{"name":7,"namespace":null}}"#,
            br#"{"metadata":{"name":"\u0061","labels":{}}}"#,
            b"not json",
        ];
        let selectors = [
            ("app=web", ""),
            ("!app", ""),
            ("app in (web,db)", ""),
            ("app", ""),
            ("app!=web,tier", ""),
            ("", "metadata.name=a"),
            ("", "metadata.name!=a"),
            ("", "metadata.namespace="),
            ("", "metadata.namespace=ns,metadata.name=b"),
            ("app", "metadata.name!=b"),
            ("", "spec.x=1"),
            ("app=web", "metadata.name=a,spec.x="),
        ];
        for selector in selectors {
            let opts = ListOptions {
                label_selector: LabelSelector::parse(selector.0).unwrap(),
                field_selector: FieldSelector::parse(selector.1).unwrap(),
                ..Default::default()
            };
            for object in objects {
                assert_eq!(
                    matches(&opts, object),
                    whole(&opts, object),
                    "{selector:?} on {}",
                    String::from_utf8_lossy(object)
                );
            }
        }
        let opts = |labels: &str| ListOptions {
            label_selector: LabelSelector::parse(labels).unwrap(),
            ..Default::default()
        };
        assert!(matches(&opts("app=web"), objects[0]));
        assert!(!matches(&opts("app=web"), objects[1]));
        assert!(matches(&opts("!app"), objects[4]));
        assert!(matches(&opts("app=web"), objects[7]));
        assert!(matches(&opts("app=web"), objects[8]));
        assert!(!matches(&opts("!app"), objects[11]));
    }
}
