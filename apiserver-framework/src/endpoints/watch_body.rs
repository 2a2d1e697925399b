//! A watch's response body: each event as a line of JSON (`{"type":…,"object":…}\n`), one
//! frame per event.
//!
//! A body of its own rather than a stream mapped into a body: every event of every watcher
//! passes through it, and each adapter between the events and the connection is polled once
//! per delivery.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::StreamExt;
use http_body::{Body, Frame};

use crate::endpoints::negotiation::Output;
use crate::endpoints::response;
use crate::endpoints::watch_metrics::{self, WatchSeries};
use crate::registry::rest::{EventStream, ObjectEvent, WatchEventType};
use crate::resource::ResourceInfo;

/// The body of a watch answered as `output`.
pub(crate) struct WatchBody {
    events: EventStream,
    output: Output,
    /// The resource, kept for the watch's whole life only when the events are re-encoded:
    /// JSON events carry the stored object as it is.
    info: Option<Box<ResourceInfo>>,
    /// Whether no object's event has been sent yet (a Table's first row carries its columns).
    first: bool,
    /// The watch event metrics of the resource.
    metrics: WatchSeries,
}

impl WatchBody {
    /// The body of `events`, answered as `output`.
    pub(crate) fn new(events: EventStream, output: Output, info: &ResourceInfo) -> Self {
        let metrics = watch_metrics::global().of(info);
        let info = (!matches!(output, Output::Json | Output::Yaml)).then(|| Box::new(info.clone()));
        WatchBody {
            events,
            output,
            metrics,
            info,
            first: true,
        }
    }

    /// The line of `ev`: JSON events are sent in the line their watchers share when they were
    /// made in one.
    fn line(&mut self, ev: &ObjectEvent) -> Bytes {
        let line = match &self.info {
            Some(info) => {
                let object =
                    response::watch_object(&self.output, info, &ev.object, ev.kind, self.first);
                ObjectEvent::new(ev.kind, object).json_line()
            }
            None => ev.json_line(),
        };
        if !matches!(ev.kind, WatchEventType::Error | WatchEventType::Bookmark) {
            self.first = false;
        }
        self.metrics.sent(line.len());
        line
    }
}

impl Body for WatchBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        match this.events.poll_next_unpin(cx) {
            Poll::Ready(Some(ev)) => Poll::Ready(Some(Ok(Frame::data(this.line(&ev))))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;
    use crate::registry::store::fixture::Widget;

    #[tokio::test]
    async fn one_line_per_event_in_order_then_the_end() {
        let info = <Widget as crate::resource::ApiResource>::resource_info();
        let object = br#"{"metadata":{"name":"a"}}"#;
        let shared = ObjectEvent::in_line(WatchEventType::Added, object.len(), |out| {
            out.extend_from_slice(object)
        });
        let events = vec![
            shared.clone(),
            ObjectEvent::new(WatchEventType::Deleted, Bytes::from_static(object)),
        ];
        let mut body = WatchBody::new(futures::stream::iter(events).boxed(), Output::Json, &info);
        let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(
            first.as_ptr(),
            shared.json_line().as_ptr(),
            "the shared line, not a copy"
        );
        let second = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(
            &second[..],
            b"{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n"
        );
        assert!(body.frame().await.is_none());
    }
}
