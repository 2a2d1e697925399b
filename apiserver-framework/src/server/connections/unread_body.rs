//! [`UnreadBody`]: a request body that, when the handler lets go of it unread, is read to its
//! end (within bounds) and discarded, or left for the connection to decide, so that an answer
//! given early reaches the client.
//!
//! Many answers come before the body is read: 401, 403, 404, 405, 415, 429, 504, and 413
//! after the first 3 MiB. Were the rest of the body simply dropped:
//! - HTTP/2 resets the stream as soon as the response is complete (`RST_STREAM`, `NO_ERROR`
//!   as RFC 9113 §8.1 allows). A client still sending — curl 7.88 among them — reports a
//!   stream error and never shows the answer.
//! - HTTP/1.1 cannot reuse the connection and closes it with the body unread, which can
//!   reset the TCP connection before the client has read the answer.
//!
//! Over HTTP/1.1 the rest is read in the background at once ([`Rest::Read`]), as Go's server
//! does (it reads up to 256 KiB), so that the client finishes sending and then reads the
//! answer. Over HTTP/2 the body is left to the connection ([`Rest::Leave`]), which settles it
//! once it knows the answer (`early_answer`): the answer waits until the rest is read while
//! the client sends it, and is sent at once, its stream reset as Go's server does, when the
//! client sends none of it.
//! The reading is bounded in bytes and time ([`ReadBounds`]) and in the number of bodies read
//! at once (`drains`); past any bound the body is dropped and the stream reset (`NO_ERROR`
//! once the response is complete). A body announcing more than the byte bound is not read at
//! all (as Go does past its bound).

use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use parking_lot::Mutex;

use super::drains::Drains;

/// How much of an unread body's rest is read, and for how long.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ReadBounds {
    /// At most this many bytes of data.
    pub max_bytes: u64,
    /// For at most this long.
    pub timeout: Duration,
}

impl ReadBounds {
    /// Whether reading `body`'s rest is worth starting: the bounds allow some reading, and
    /// the body does not announce more than would be read.
    pub fn worth_reading(&self, body: &impl Body) -> bool {
        self.max_bytes > 0 && !self.timeout.is_zero() && body.size_hint().lower() <= self.max_bytes
    }
}

/// What becomes of a body's unread rest once the handler lets go of it.
#[derive(Debug)]
pub(crate) enum Rest<B> {
    /// Read in the background at once, within bounds, if the listener has room (HTTP/1.1).
    Read(ReadBounds, Drains),
    /// Left in the connection's [`Leftover`] to settle once the answer is known (HTTP/2);
    /// dropped if the connection no longer waits for it.
    Leave(Weak<Mutex<Option<B>>>),
    /// Dropped: the stream is reset once answered (HTTP/2 with `Expect: 100-continue`, whose
    /// client sends nothing before it is asked to).
    Drop,
}

/// A request body whose unread rest, when dropped, is dealt with as its [`Rest`] says.
#[derive(Debug)]
pub(crate) struct UnreadBody<B: Body + Unpin + Send + 'static> {
    inner: Option<B>,
    rest: Rest<B>,
}

impl<B: Body + Unpin + Send + 'static> UnreadBody<B> {
    /// `inner`, whose unread rest becomes `rest` once dropped.
    pub fn new(inner: B, rest: Rest<B>) -> Self {
        UnreadBody {
            inner: Some(inner),
            rest,
        }
    }
}

/// Where a request's body lands if the handler lets go of it unread (see [`Rest::Leave`]).
#[derive(Debug)]
pub(crate) struct Leftover<B>(Arc<Mutex<Option<B>>>);

impl<B> Leftover<B> {
    /// An empty place.
    pub fn new() -> Self {
        Leftover(Arc::new(Mutex::new(None)))
    }

    /// The [`Rest`] of a body that lands here.
    pub fn rest(&self) -> Rest<B> {
        Rest::Leave(Arc::downgrade(&self.0))
    }

    /// The body's unread rest, if the handler let go of it unread.
    pub fn take(&self) -> Option<B> {
        self.0.lock().take()
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
        if body.is_end_stream() {
            return;
        }
        match std::mem::replace(&mut self.rest, Rest::Drop) {
            Rest::Drop => {}
            Rest::Leave(place) => {
                if let Some(place) = place.upgrade() {
                    *place.lock() = Some(body);
                }
            }
            Rest::Read(bounds, drains) => {
                if !bounds.worth_reading(&body) {
                    return;
                }
                let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                    return;
                };
                let Some(permit) = drains.permit() else {
                    return;
                };
                runtime.spawn(async move {
                    discard(body, bounds).await;
                    drop(permit);
                });
            }
        }
    }
}

/// Reads `body` to its end, within `bounds`.
pub(crate) async fn discard<B: Body + Unpin>(mut body: B, bounds: ReadBounds) {
    let read = async {
        let mut total = 0u64;
        while let Some(Ok(frame)) = body.frame().await {
            if let Some(data) = frame.data_ref() {
                total += bytes::Buf::remaining(data) as u64;
                if total > bounds.max_bytes {
                    break;
                }
            }
        }
    };
    let _ = tokio::time::timeout(bounds.timeout, read).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::connections::ConnectionLimits;
    use futures::StreamExt;
    use http_body_util::StreamBody;
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

    fn bounds(max_bytes: u64) -> ReadBounds {
        ReadBounds {
            max_bytes,
            timeout: Duration::from_secs(5),
        }
    }

    /// A listener's drains with room for one body.
    fn one_drain() -> Drains {
        Drains::new(&ConnectionLimits {
            max_draining_bodies: 1,
            ..ConnectionLimits::default()
        })
    }

    /// Waits until the one body `drains` has room for is no longer being read.
    async fn read_done(drains: &Drains) {
        while drains.permit().is_none() {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn a_dropped_body_is_read_to_its_end_within_bounds() {
        let drains = one_drain();
        let read = Arc::new(AtomicUsize::new(0));
        let rest = Rest::Read(bounds(1 << 20), drains.clone());
        let mut body = UnreadBody::new(counted(10, read.clone()), rest);
        body.frame().await.unwrap().unwrap();
        drop(body);
        read_done(&drains).await;
        assert_eq!(read.load(Ordering::SeqCst), 10);

        // Beyond the byte bound, reading stops.
        let read = Arc::new(AtomicUsize::new(0));
        let rest = Rest::Read(bounds(4096), drains.clone());
        drop(UnreadBody::new(counted(1000, read.clone()), rest));
        read_done(&drains).await;
        assert_eq!(read.load(Ordering::SeqCst), 5);
    }

    #[tokio::test]
    async fn no_body_is_read_without_room_or_past_its_announced_bound() {
        let drains = one_drain();
        let held = drains.permit().expect("the one place");
        let read = Arc::new(AtomicUsize::new(0));
        let rest = Rest::Read(bounds(1 << 20), drains.clone());
        drop(UnreadBody::new(counted(10, read.clone()), rest));
        drop(held);
        assert_eq!(read.load(Ordering::SeqCst), 0, "no room: dropped unread");

        let big = http_body_util::Full::new(Bytes::from(vec![0u8; 8192]));
        assert!(!bounds(4096).worth_reading(&big));
        assert!(bounds(8192).worth_reading(&big));
        drop(UnreadBody::new(
            big,
            Rest::Read(bounds(4096), drains.clone()),
        ));
        assert!(drains.permit().is_some(), "announcing more: not read");
    }

    #[tokio::test]
    async fn a_body_left_unread_lands_in_its_leftover_while_it_is_waited_for() {
        let read = Arc::new(AtomicUsize::new(0));
        let leftover = Leftover::new();
        let mut body = UnreadBody::new(counted(10, read.clone()), leftover.rest());
        assert!(leftover.take().is_none(), "held by the handler");
        body.frame().await.unwrap().unwrap();
        drop(body);
        let rest = leftover.take().expect("left over");
        assert_eq!(rest.size_hint().lower(), 0);
        assert!(leftover.take().is_none(), "taken once");

        // Read to its end: nothing left over.
        let leftover = Leftover::new();
        let whole = http_body_util::Full::new(Bytes::from_static(b"{}"));
        let mut body = UnreadBody::new(whole, leftover.rest());
        while body.frame().await.is_some() {}
        drop(body);
        assert!(leftover.take().is_none());

        // No longer waited for: dropped.
        let leftover = Leftover::new();
        let body = UnreadBody::new(counted(10, read.clone()), leftover.rest());
        drop(leftover);
        drop(body);
    }
}
