//! [`UnreadBody`]: a request body that, when the handler lets go of it unread, is read to its
//! end (within bounds) and discarded, so that an answer given early reaches the client.
//!
//! Many answers come before the body is read: 401, 403, 404, 405, 415, 429, 504, and 413
//! after the first 3 MiB. Were the rest of the body simply dropped:
//! - HTTP/2 resets the stream as soon as the response is complete (`RST_STREAM`, `NO_ERROR`
//!   as RFC 9113 §8.1 allows). A client still sending — curl 7.88 among them — reports a
//!   stream error and never shows the answer.
//! - HTTP/1.1 cannot reuse the connection and closes it with the body unread, which can
//!   reset the TCP connection before the client has read the answer.
//!
//! Reading the rest instead lets the client finish sending and then read the answer, as
//! Go's server does for HTTP/1.1 (it reads up to 256 KiB). The reading is bounded in bytes
//! and time ([`ConnectionLimits`](super::ConnectionLimits)); past either, the body is dropped
//! and the stream reset (`NO_ERROR` once the response is complete). A body announcing more
//! than the byte bound is not read at all (as Go does past its bound).
//!
//! Over HTTP/2 the connection also holds such an answer back until that reading is done
//! ([`Drain`]): a client that reads the answer's headers while still sending may end its body
//! there, short of its `content-length` (curl 7.88 does: "HTTP error before end of send, stop
//! sending"), and the server's HTTP/2 stack (`h2`) resets a stream whose body ends short with
//! `PROTOCOL_ERROR`, dropping whatever of the answer it has not sent yet. The headers and the
//! body of an answer leave in separate steps, so a client can read the headers alone; it then
//! got the reset instead of the body. Holding the answer until the body is read means the
//! client has finished sending before it sees any of it.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use tokio::sync::watch;

/// A request body read to its end in the background if dropped before that.
#[derive(Debug)]
pub(crate) struct UnreadBody<B: Body + Unpin + Send + 'static> {
    inner: Option<B>,
    max_bytes: u64,
    timeout: Duration,
    /// True while the rest is being read in the background; dropped when that ends. Made
    /// when someone asks ([`UnreadBody::drain`]).
    draining: Option<watch::Sender<bool>>,
}

impl<B: Body + Unpin + Send + 'static> UnreadBody<B> {
    /// `inner`, whose unread rest is read (at most `max_bytes`, for at most `timeout`) once
    /// dropped.
    pub fn new(inner: B, max_bytes: u64, timeout: Duration) -> Self {
        UnreadBody {
            inner: Some(inner),
            max_bytes,
            timeout,
            draining: None,
        }
    }

    /// Tells when reading the body's unread rest, if it comes to that, is over.
    pub fn drain(&mut self) -> Drain {
        let draining = self
            .draining
            .get_or_insert_with(|| watch::Sender::new(false));
        Drain(Some(draining.subscribe()))
    }
}

/// Whether, and until when, a request body let go of unread is being read in the background.
#[derive(Debug)]
pub(crate) struct Drain(Option<watch::Receiver<bool>>);

impl Drain {
    /// Whether the body was dropped unread and its rest is being read now.
    pub fn draining(&self) -> bool {
        self.0.as_ref().is_some_and(|d| *d.borrow())
    }

    /// Resolves once the body's rest is no longer being read: at once unless it is being read
    /// now, then when that reading ends (the body's end, or a bound reached). A body still held
    /// (by the handler or anything it gave it to) is not waited for.
    pub async fn finished(self) {
        if let Some(mut draining) = self.0 {
            // An error: the reading is over (its sender is gone).
            let _ = draining.wait_for(|d| !*d).await;
        }
    }
}

impl<B> Body for UnreadBody<B>
where
    B: Body<Data = Bytes> + Unpin + Send + 'static,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        match self.inner.as_mut() {
            Some(inner) => Pin::new(inner).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(|b| b.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), |b| b.size_hint())
    }
}

impl<B: Body + Unpin + Send + 'static> Drop for UnreadBody<B> {
    fn drop(&mut self) {
        let Some(body) = self.inner.take() else {
            return;
        };
        if body.is_end_stream() || self.max_bytes == 0 || self.timeout.is_zero() {
            return;
        }
        // More left than would be read: not worth starting (the stream is reset, or the
        // connection closed, once the answer is sent).
        if body.size_hint().lower() > self.max_bytes {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let draining = self.draining.take();
        if let Some(draining) = &draining {
            draining.send_replace(true);
        }
        let (max_bytes, timeout) = (self.max_bytes, self.timeout);
        runtime.spawn(async move {
            discard(body, max_bytes, timeout).await;
            // The body is dropped by now: the stream's receiving side is done with.
            drop(draining);
        });
    }
}

/// Reads `body` to its end, at most `max_bytes` of data for at most `timeout`.
async fn discard<B: Body + Unpin>(mut body: B, max_bytes: u64, timeout: Duration) {
    let read = async {
        let mut total = 0u64;
        while let Some(Ok(frame)) = body.frame().await {
            if let Some(data) = frame.data_ref() {
                total += bytes::Buf::remaining(data) as u64;
                if total > max_bytes {
                    break;
                }
            }
        }
    };
    let _ = tokio::time::timeout(timeout, read).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::StreamBody;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A body of `chunks` 1 KiB frames, counting those read.
    fn counted(
        chunks: usize,
        read: Arc<AtomicUsize>,
    ) -> impl Body<Data = Bytes, Error = std::convert::Infallible> + Unpin + Send {
        let frames = futures::stream::iter(0..chunks).map(move |_| {
            read.fetch_add(1, Ordering::SeqCst);
            Ok::<_, std::convert::Infallible>(Frame::data(Bytes::from(vec![0u8; 1024])))
        });
        StreamBody::new(frames)
    }

    use futures::StreamExt;

    #[tokio::test]
    async fn a_dropped_body_is_read_to_its_end_within_bounds() {
        let read = Arc::new(AtomicUsize::new(0));
        let mut body = UnreadBody::new(counted(10, read.clone()), 1 << 20, Duration::from_secs(5));
        body.frame().await.unwrap().unwrap();
        drop(body);
        for _ in 0..100 {
            if read.load(Ordering::SeqCst) == 10 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(read.load(Ordering::SeqCst), 10);

        // Beyond the byte bound, reading stops.
        let read = Arc::new(AtomicUsize::new(0));
        drop(UnreadBody::new(
            counted(1000, read.clone()),
            4096,
            Duration::from_secs(5),
        ));
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(read.load(Ordering::SeqCst), 5);
    }

    #[tokio::test]
    async fn the_drain_tells_when_a_dropped_body_has_been_read() {
        // Held: nothing to wait for.
        let read = Arc::new(AtomicUsize::new(0));
        let mut body = UnreadBody::new(counted(10, read.clone()), 1 << 20, Duration::from_secs(5));
        let drain = body.drain();
        assert!(!drain.draining());
        drain.finished().await;

        // Dropped unread: draining until the last frame is read.
        let drain = body.drain();
        drop(body);
        assert!(drain.draining());
        drain.finished().await;
        assert_eq!(read.load(Ordering::SeqCst), 10);

        // A body announcing more than the bound is not read at all.
        let big = http_body_util::Full::new(Bytes::from(vec![0u8; 8192]));
        let mut body = UnreadBody::new(big, 4096, Duration::from_secs(5));
        let drain = body.drain();
        drop(body);
        assert!(!drain.draining());
        drain.finished().await;
    }
}
