//! [`UntilStopped`]: a response body ended cleanly (as if complete) once the server stops, the
//! way a watch ends when its server shuts down.
//!
//! A watch's body is polled once per event it sends and once more when it has none left, for
//! every watcher. Polling the stop signal's future at each of those polls (a `take_until`)
//! registers the task's waker with the signal every time; here the signal is read (a flag
//! behind a read lock) at each poll, and its future is polled only when the body waits and
//! the task's waker is not the one registered already, so that a stop that comes while the
//! body waits still wakes it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use axum::body::Body;
use bytes::Bytes;
use http_body::Frame;
use tokio::sync::watch;

/// The future that resolves once the server stops.
type Stop = Pin<Box<dyn Future<Output = ()> + Send>>;

/// `body`, ended cleanly once `stopped` turns true.
pub(crate) fn until_stopped(body: Body, stopped: watch::Receiver<bool>) -> Body {
    let mut signal = stopped.clone();
    Body::new(UntilStopped {
        body,
        stop: Box::pin(async move {
            let _ = signal.wait_for(|s| *s).await;
        }),
        stopped,
        armed_for: None,
        ended: false,
    })
}

/// The body of [`until_stopped`].
struct UntilStopped {
    body: Body,
    /// Polled to register the waker that a stop wakes.
    stop: Stop,
    /// Read at every poll.
    stopped: watch::Receiver<bool>,
    /// The waker `stop` was last polled with.
    armed_for: Option<Waker>,
    ended: bool,
}

impl UntilStopped {
    fn end(&mut self) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        self.ended = true;
        Poll::Ready(None)
    }
}

impl http_body::Body for UntilStopped {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        if this.ended || *this.stopped.borrow() {
            return this.end();
        }
        match Pin::new(&mut this.body).poll_frame(cx) {
            Poll::Ready(None) => return this.end(),
            Poll::Ready(frame) => return Poll::Ready(frame),
            Poll::Pending => {}
        }
        if !this
            .armed_for
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()))
        {
            if this.stop.as_mut().poll(cx).is_ready() {
                return this.end();
            }
            this.armed_for = Some(cx.waker().clone());
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.ended
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures::StreamExt;
    use http_body::Body as _;
    use http_body_util::BodyExt;

    use super::*;

    /// A body that sends what the channel gives and waits between.
    fn fed() -> (tokio::sync::mpsc::UnboundedSender<&'static str>, Body) {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let stream = futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
            .map(|s: &'static str| Ok::<_, std::io::Error>(Bytes::from(s)));
        (tx, Body::from_stream(stream))
    }

    #[tokio::test]
    async fn frames_pass_until_the_server_stops_while_the_body_waits() {
        let (stop, stopped) = watch::channel(false);
        let (tx, body) = fed();
        let mut body = until_stopped(body, stopped);
        tx.send("a").unwrap();
        let frame = body.frame().await.unwrap().unwrap();
        assert_eq!(frame.into_data().unwrap(), "a");
        // The body waits; the stop wakes it and it ends as if complete.
        let next = tokio::spawn(async move {
            let end = body.frame().await;
            (end.is_none(), body.is_end_stream())
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        stop.send(true).unwrap();
        let (ended, is_end) = tokio::time::timeout(Duration::from_secs(5), next)
            .await
            .expect("the stop wakes the waiting body")
            .unwrap();
        assert!(ended && is_end);
        drop(tx);
    }

    #[tokio::test]
    async fn a_stop_ends_the_body_even_when_it_has_frames_ready() {
        let (stop, stopped) = watch::channel(false);
        let (tx, body) = fed();
        let mut body = until_stopped(body, stopped);
        tx.send("a").unwrap();
        assert!(body.frame().await.is_some());
        stop.send(true).unwrap();
        tx.send("b").unwrap();
        assert!(body.frame().await.is_none(), "nothing after the stop");
        assert!(body.frame().await.is_none());
    }

    #[tokio::test]
    async fn the_body_ends_when_its_own_body_does() {
        let (_stop, stopped) = watch::channel(false);
        let (tx, body) = fed();
        let mut body = until_stopped(body, stopped);
        tx.send("a").unwrap();
        drop(tx);
        assert!(body.frame().await.is_some());
        assert!(body.frame().await.is_none());
        assert!(body.is_end_stream());
    }

    #[tokio::test]
    async fn a_stop_reaches_a_body_polled_by_another_task_than_before() {
        let (stop, stopped) = watch::channel(false);
        let (tx, body) = fed();
        let mut body = until_stopped(body, stopped);
        // Armed by this task's waker: the body waits.
        assert!(
            tokio::time::timeout(Duration::from_millis(20), body.frame())
                .await
                .is_err()
        );
        // Polled from another task, it registers that task's waker.
        let next = tokio::spawn(async move { body.frame().await.is_none() });
        tokio::time::sleep(Duration::from_millis(50)).await;
        stop.send(true).unwrap();
        let ended = tokio::time::timeout(Duration::from_secs(5), next)
            .await
            .expect("the stop wakes the task polling now")
            .unwrap();
        assert!(ended);
        drop(tx);
    }

    #[tokio::test]
    async fn stopped_body_ends_cleanly() {
        let (tx, rx) = watch::channel(false);
        let (chunks, stream) =
            tokio::sync::mpsc::unbounded_channel::<Result<String, std::io::Error>>();
        let body = Body::from_stream(tokio_stream::wrappers::UnboundedReceiverStream::new(stream));
        let body = until_stopped(body, rx);
        chunks.send(Ok("one\n".into())).unwrap();
        let reader = tokio::spawn(async move { body.collect().await.map(|c| c.to_bytes()) });
        tokio::time::sleep(Duration::from_millis(50)).await;
        tx.send(true).unwrap();
        let bytes = reader.await.unwrap().unwrap();
        assert_eq!(&bytes[..], b"one\n");
        drop(chunks);
    }
}
