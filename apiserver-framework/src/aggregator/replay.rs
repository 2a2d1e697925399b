//! Request bodies the aggregator can send again: the frames read from the client so far are
//! kept (up to [`REPLAY_LIMIT`] bytes), so that a request that failed on one backend before any
//! response can go to the next with the same body. This is what Go's `Request.GetBody` gives
//! its transports; the aggregator reads the client's body as it sends it, so it keeps what it
//! read rather than buffering the whole body first.
//!
//! Each attempt gets its own body ([`Replay::attempt`]): the kept frames first, then the rest of
//! the client's body, read on demand (and kept in turn). Only the latest attempt may read; an
//! earlier attempt's body, which hyper may still hold for a moment after its stream failed,
//! fails instead of taking frames from the latest one.
//!
//! Written here because no crate offers a replayable streaming request body for hyper.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use bytes::Bytes;
use http::HeaderMap;
use http_body::{Frame, SizeHint};
use parking_lot::Mutex;

/// The most bytes of a request body kept for sending it again; a request whose body is longer
/// is sent again only while no more than this was read.
pub(crate) const REPLAY_LIMIT: usize = 1024 * 1024;

/// A client's request body, shared by the attempts to send it.
pub(crate) struct Replay(Arc<Mutex<Shared>>);

struct Shared {
    source: Body,
    /// The frames read from `source`, in order, while they fit in [`REPLAY_LIMIT`] and a
    /// later attempt may need them; `None` once given to the last attempt after [`Replay::settle`].
    kept: Vec<Option<Kept>>,
    kept_bytes: usize,
    /// How many frames were read from `source`.
    read: usize,
    /// A frame was read and not kept: no attempt starting from the beginning can be complete.
    incomplete: bool,
    /// A response came: no further attempt will be made.
    settled: bool,
    /// `source` has ended.
    ended: bool,
    /// `source` failed, with this message.
    failed: Option<String>,
    /// The attempt allowed to read.
    current: u64,
}

#[derive(Clone)]
enum Kept {
    Data(Bytes),
    Trailers(HeaderMap),
}

impl Replay {
    /// Wraps a client's request body.
    pub(crate) fn new(source: Body) -> Self {
        Replay(Arc::new(Mutex::new(Shared {
            source,
            kept: Vec::new(),
            kept_bytes: 0,
            read: 0,
            incomplete: false,
            settled: false,
            ended: false,
            failed: None,
            current: 0,
        })))
    }

    /// The body of the next attempt, from the first byte; earlier attempts' bodies fail from
    /// now on.
    pub(crate) fn attempt(&self) -> AttemptBody {
        let mut shared = self.0.lock();
        shared.current += 1;
        AttemptBody {
            shared: self.0.clone(),
            id: shared.current,
            next: 0,
        }
    }

    /// Whether another attempt would carry the whole body: every frame read so far is kept
    /// (and the client's body did not fail).
    pub(crate) fn replayable(&self) -> bool {
        let shared = self.0.lock();
        !shared.incomplete && !shared.settled && shared.failed.is_none()
    }

    /// No further attempt will be made: frames are no longer kept, and those kept are let go
    /// as the last attempt sends them.
    pub(crate) fn settle(&self) {
        self.0.lock().settled = true;
    }
}

/// One attempt's request body.
pub(crate) struct AttemptBody {
    shared: Arc<Mutex<Shared>>,
    id: u64,
    /// The index of the next frame to send.
    next: usize,
}

impl http_body::Body for AttemptBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        let mut shared = this.shared.lock();
        if shared.current != this.id {
            return Poll::Ready(Some(Err(axum::Error::new(
                "the request body went to a later attempt",
            ))));
        }
        if this.next < shared.read {
            let settled = shared.settled;
            let kept = match shared.kept.get_mut(this.next) {
                Some(slot) if settled => slot.take(),
                Some(slot) => slot.clone(),
                None => None,
            };
            let Some(kept) = kept else {
                return Poll::Ready(Some(Err(axum::Error::new(
                    "the request body cannot be sent again",
                ))));
            };
            this.next += 1;
            return Poll::Ready(Some(Ok(match kept {
                Kept::Data(data) => Frame::data(data),
                Kept::Trailers(trailers) => Frame::trailers(trailers),
            })));
        }
        if let Some(message) = &shared.failed {
            return Poll::Ready(Some(Err(axum::Error::new(message.clone()))));
        }
        if shared.ended {
            return Poll::Ready(None);
        }
        let polled = Pin::new(&mut shared.source).poll_frame(cx);
        match polled {
            Poll::Pending => Poll::Pending,
            Poll::Ready(None) => {
                shared.ended = true;
                Poll::Ready(None)
            }
            Poll::Ready(Some(Err(e))) => {
                shared.failed = Some(e.to_string());
                Poll::Ready(Some(Err(e)))
            }
            Poll::Ready(Some(Ok(frame))) => {
                shared.read += 1;
                this.next = shared.read;
                if !shared.settled && !shared.incomplete {
                    let size = frame.data_ref().map_or(0, Bytes::len);
                    let kept = if let Some(data) = frame.data_ref() {
                        Some(Kept::Data(data.clone()))
                    } else {
                        frame.trailers_ref().cloned().map(Kept::Trailers)
                    };
                    match kept {
                        Some(kept) if shared.kept_bytes + size <= REPLAY_LIMIT => {
                            shared.kept_bytes += size;
                            shared.kept.push(Some(kept));
                        }
                        _ => {
                            shared.incomplete = true;
                            shared.kept = Vec::new();
                        }
                    }
                }
                Poll::Ready(Some(Ok(frame)))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        let shared = self.shared.lock();
        shared.current == self.id
            && shared.failed.is_none()
            && self.next == shared.read
            && (shared.ended || shared.source.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        let shared = self.shared.lock();
        let rest = shared.source.size_hint();
        if self.next >= shared.read {
            return if shared.ended {
                SizeHint::with_exact(0)
            } else {
                rest
            };
        }
        let mut kept = 0u64;
        for slot in shared.kept.iter().skip(self.next) {
            match slot {
                Some(Kept::Data(data)) => kept += data.len() as u64,
                Some(Kept::Trailers(_)) => {}
                None => return SizeHint::default(),
            }
        }
        if shared.kept.len() < shared.read {
            return SizeHint::default();
        }
        let rest = if shared.ended {
            SizeHint::with_exact(0)
        } else {
            rest
        };
        let mut hint = SizeHint::new();
        hint.set_lower(kept + rest.lower());
        if let Some(upper) = rest.upper() {
            hint.set_upper(kept + upper);
        }
        hint
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt as _;
    use http_body::Body as _;
    use http_body_util::BodyExt as _;

    use super::*;

    fn chunked(chunks: &[&'static str]) -> Body {
        let stream = futures::stream::iter(
            chunks
                .iter()
                .map(|c| Ok::<_, std::convert::Infallible>(Bytes::from_static(c.as_bytes())))
                .collect::<Vec<_>>(),
        );
        Body::from_stream(stream.boxed())
    }

    #[tokio::test]
    async fn an_attempt_after_a_partial_read_sends_the_whole_body() {
        let replay = Replay::new(chunked(&["ab", "cd", "ef"]));
        let mut first = replay.attempt();
        let frame = first.frame().await.unwrap().unwrap();
        assert_eq!(frame.into_data().unwrap(), "ab");
        assert!(replay.replayable());
        let second = replay.attempt();
        // The first attempt's body is no longer its to read.
        assert!(first.frame().await.unwrap().is_err());
        let bytes = second.collect().await.unwrap().to_bytes();
        assert_eq!(&bytes[..], b"abcdef");
        // And once more, from what was kept alone.
        let third = replay.attempt();
        assert_eq!(third.size_hint().exact(), Some(6));
        assert_eq!(&third.collect().await.unwrap().to_bytes()[..], b"abcdef");
    }

    #[tokio::test]
    async fn an_empty_body_ends_at_once_in_every_attempt() {
        let replay = Replay::new(Body::empty());
        assert!(replay.attempt().is_end_stream());
        assert!(replay.attempt().is_end_stream());
        assert!(replay.replayable());
    }

    #[tokio::test]
    async fn a_body_longer_than_the_limit_is_not_replayable_once_read_past_it() {
        let big = Bytes::from(vec![b'x'; REPLAY_LIMIT]);
        let stream = futures::stream::iter(vec![
            Ok::<_, std::convert::Infallible>(big.clone()),
            Ok(Bytes::from_static(b"y")),
        ]);
        let replay = Replay::new(Body::from_stream(stream));
        let mut first = replay.attempt();
        first.frame().await.unwrap().unwrap();
        assert!(replay.replayable(), "exactly the limit is kept");
        first.frame().await.unwrap().unwrap();
        assert!(!replay.replayable());
        let mut second = replay.attempt();
        assert!(
            second.frame().await.unwrap().is_err(),
            "never a partial body"
        );
    }

    #[tokio::test]
    async fn after_a_response_nothing_is_kept() {
        let replay = Replay::new(chunked(&["ab", "cd"]));
        let mut first = replay.attempt();
        first.frame().await.unwrap().unwrap();
        replay.settle();
        assert!(!replay.replayable());
        let rest = first.collect().await.unwrap().to_bytes();
        assert_eq!(&rest[..], b"cd");
        assert!(replay.0.lock().kept.len() <= 1);
    }
}
