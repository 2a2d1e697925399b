//! Request bodies the aggregator can send again: so that a request that failed on one backend
//! before any response can go to the next with the same body, what was read of a small body
//! is kept ([`Replay`]), as Go's `Request.GetBody` gives its transports a body again.
//!
//! A copy is kept only while it may still serve, and only of a body that can be held whole:
//!
//! * a body announced (its length, or an upper bound of it) at most [`REPLAY_LIMIT`] bytes,
//!   and never of a long-running request ([`super::long_running`]): a body of unknown or
//!   larger length, and a watch's, is streamed through and nothing of it stays;
//! * reserved in full, when the request arrives, from a [`ReplayBudget`] shared by every
//!   request: a body that finds no room is streamed without a copy (it is served as any other,
//!   only not sent twice);
//! * let go as soon as the backend's response head arrives ([`Replay::settle`]: bytes a retry
//!   was still sending go as they are sent), when the body turns out longer than announced,
//!   carries trailers or fails, and with the request.
//!
//! A request whose body keeps no copy can still go to another endpoint while no byte of its
//! body was read (an empty body, or a failure before the body was sent).
//!
//! Each attempt gets its own body ([`Replay::attempt`]): the kept bytes first, then the rest of
//! the client's body, read on demand (and kept in turn). Only the latest attempt may read; an
//! earlier attempt's body, which hyper may still hold for a moment after its stream failed,
//! fails instead of taking frames from the latest one.
//!
//! The kept bytes are copied into one buffer of the reserved size, so that what a copy holds is
//! what it reserved: the frames a client sends may be small slices of larger buffers that
//! keeping them would pin.
//!
//! Written here because no crate offers a replayable streaming request body for hyper.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use bytes::{Bytes, BytesMut};
use http_body::{Frame, SizeHint};
use parking_lot::Mutex;

use super::replay_budget::{ReplayBudget, Reservation};

/// The longest request body kept for sending it again: a body announced longer is never sent
/// twice once a byte of it was read.
pub(crate) const REPLAY_LIMIT: usize = 1024 * 1024;

/// A client's request body, shared by the attempts to send it.
pub(crate) struct Replay(Arc<Mutex<Shared>>);

struct Shared {
    source: Body,
    /// Every byte read from `source`, while a copy is kept: `None` once let go (or when none
    /// was ever kept).
    copy: Option<Kept>,
    /// How much of `source` was read: its data bytes, and one more for trailers.
    read: u64,
    /// How much of the body the current attempt has sent, in the same measure.
    sent: u64,
    /// A response came: no further attempt will be made.
    settled: bool,
    /// `source` has ended.
    ended: bool,
    /// `source` failed, with this message.
    failed: Option<String>,
    /// The attempt allowed to read.
    current: u64,
}

/// The bytes of a body read so far, in a buffer of its reserved size.
struct Kept {
    /// Parts already handed to an attempt, in order (each shares the one buffer).
    frozen: Vec<Bytes>,
    /// The bytes read since the last part was handed out (the rest of the buffer).
    tail: BytesMut,
    /// The bytes in `frozen` and `tail`.
    len: usize,
    reservation: Reservation,
}

impl Kept {
    fn new(reservation: Reservation) -> Self {
        Kept {
            frozen: Vec::new(),
            tail: BytesMut::new(),
            len: 0,
            reservation,
        }
    }

    /// Appends `data`, or returns `false` when it does not fit in the reservation.
    fn push(&mut self, data: &[u8]) -> bool {
        let reserved = self.reservation.bytes();
        if data.len() > reserved - self.len {
            return false;
        }
        if self.len == 0 && self.tail.capacity() == 0 {
            self.tail.reserve(reserved);
        }
        self.tail.extend_from_slice(data);
        self.len += data.len();
        true
    }

    /// The kept bytes from offset `from` to the end of the part holding it.
    fn from(&mut self, from: usize) -> Bytes {
        let frozen_len = self.len - self.tail.len();
        if from >= frozen_len && !self.tail.is_empty() {
            self.frozen.push(self.tail.split().freeze());
        }
        let mut start = 0;
        for part in &self.frozen {
            if from < start + part.len() {
                return part.slice(from - start..);
            }
            start += part.len();
        }
        Bytes::new()
    }
}

impl Replay {
    /// Wraps a client's request body, reserving room in `budget` for a copy when the body is
    /// announced at most [`REPLAY_LIMIT`] long; with no budget (a long-running request), or no
    /// room, nothing is kept.
    pub(crate) fn new(source: Body, budget: Option<&ReplayBudget>) -> Self {
        let announced = http_body::Body::size_hint(&source).upper();
        let copy = match (budget, announced) {
            (Some(budget), Some(len)) if len > 0 && len <= REPLAY_LIMIT as u64 => {
                budget.reserve(len as usize).map(Kept::new)
            }
            _ => None,
        };
        Replay(Arc::new(Mutex::new(Shared {
            source,
            copy,
            read: 0,
            sent: 0,
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
        shared.sent = 0;
        AttemptBody {
            shared: self.0.clone(),
            id: shared.current,
        }
    }

    /// Whether another attempt would carry the whole body: nothing was read yet, or every byte
    /// read is kept (and the client's body did not fail).
    pub(crate) fn replayable(&self) -> bool {
        let shared = self.0.lock();
        !shared.settled && shared.failed.is_none() && (shared.read == 0 || shared.copy.is_some())
    }

    /// No further attempt will be made (the backend's response head arrived): the copy is let
    /// go now, or, when the last attempt is still sending kept bytes, as soon as it has sent
    /// them; nothing read later is kept.
    pub(crate) fn settle(&self) {
        let mut shared = self.0.lock();
        shared.settled = true;
        if shared.sent >= shared.read {
            shared.copy = None;
        }
    }
}

/// One attempt's request body.
pub(crate) struct AttemptBody {
    shared: Arc<Mutex<Shared>>,
    id: u64,
}

impl http_body::Body for AttemptBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        let mut guard = this.shared.lock();
        let shared = &mut *guard;
        if shared.current != this.id {
            return Poll::Ready(Some(Err(axum::Error::new(
                "the request body went to a later attempt",
            ))));
        }
        if shared.sent < shared.read {
            // Read before this attempt began: only a copy can send it again.
            let data = match shared.copy.as_mut() {
                Some(copy) => copy.from(shared.sent as usize),
                None => Bytes::new(),
            };
            if data.is_empty() {
                return Poll::Ready(Some(Err(axum::Error::new(
                    "the request body cannot be sent again",
                ))));
            }
            shared.sent += data.len() as u64;
            if shared.settled && shared.sent >= shared.read {
                shared.copy = None;
            }
            return Poll::Ready(Some(Ok(Frame::data(data))));
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
                shared.copy = None;
                Poll::Ready(Some(Err(e)))
            }
            Poll::Ready(Some(Ok(frame))) => {
                let kept = match frame.data_ref() {
                    Some(data) => {
                        shared.read += data.len() as u64;
                        !shared.settled && shared.copy.as_mut().is_some_and(|copy| copy.push(data))
                    }
                    // Trailers are never kept: no client of an API server sends them, and
                    // they would be bytes outside the reservation.
                    None => {
                        shared.read += 1;
                        false
                    }
                };
                if !kept {
                    shared.copy = None;
                }
                shared.sent = shared.read;
                Poll::Ready(Some(Ok(frame)))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        let shared = self.shared.lock();
        shared.current == self.id
            && shared.failed.is_none()
            && shared.sent >= shared.read
            && (shared.ended || shared.source.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        let shared = self.shared.lock();
        if shared.current != self.id {
            return SizeHint::default();
        }
        let rest = if shared.ended {
            SizeHint::with_exact(0)
        } else {
            shared.source.size_hint()
        };
        if shared.sent >= shared.read {
            return rest;
        }
        if shared.copy.is_none() {
            return SizeHint::default();
        }
        let kept = shared.read - shared.sent;
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
    use std::collections::VecDeque;

    use http::HeaderMap;
    use http_body::Body as _;
    use http_body_util::BodyExt as _;

    use super::*;

    /// A client's body: `frames` in order, then the end (or nothing ever more, when
    /// `unfinished`), announcing `announced` bytes (unknown when `None`).
    struct Client {
        frames: VecDeque<Frame<Bytes>>,
        announced: Option<u64>,
        unfinished: bool,
    }

    impl http_body::Body for Client {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            match self.frames.pop_front() {
                Some(frame) => Poll::Ready(Some(Ok(frame))),
                None if self.unfinished => Poll::Pending,
                None => Poll::Ready(None),
            }
        }

        fn size_hint(&self) -> SizeHint {
            self.announced.map(SizeHint::with_exact).unwrap_or_default()
        }
    }

    /// A body of `chunks`, announcing its length.
    fn sized(chunks: &[&'static str]) -> Body {
        let len = chunks.iter().map(|c| c.len() as u64).sum();
        client(chunks, Some(len), false)
    }

    fn client(chunks: &[&'static str], announced: Option<u64>, unfinished: bool) -> Body {
        Body::new(Client {
            frames: chunks
                .iter()
                .map(|c| Frame::data(Bytes::from_static(c.as_bytes())))
                .collect(),
            announced,
            unfinished,
        })
    }

    fn kept(replay: &Replay) -> Option<usize> {
        replay.0.lock().copy.as_ref().map(|c| c.len)
    }

    /// The next frame's data, which must come at once.
    fn next_data(body: &mut AttemptBody) -> Bytes {
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        match Pin::new(body).poll_frame(&mut cx) {
            Poll::Ready(Some(Ok(frame))) => frame.into_data().expect("a data frame"),
            Poll::Ready(Some(Err(e))) => panic!("the body failed: {e}"),
            Poll::Ready(None) => panic!("the body ended"),
            Poll::Pending => panic!("the body waits"),
        }
    }

    #[tokio::test]
    async fn an_attempt_after_a_partial_read_sends_the_whole_body() {
        let budget = ReplayBudget::new(1024);
        let replay = Replay::new(sized(&["ab", "cd", "ef"]), Some(&budget));
        assert_eq!(budget.used(), 6, "the announced length is reserved");
        let mut first = replay.attempt();
        assert_eq!(next_data(&mut first), "ab");
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
        drop((replay, first));
        assert_eq!(budget.used(), 0, "given back with the request");
    }

    #[tokio::test]
    async fn an_empty_body_ends_at_once_in_every_attempt() {
        let budget = ReplayBudget::new(1024);
        let replay = Replay::new(Body::empty(), Some(&budget));
        assert!(replay.attempt().is_end_stream());
        assert!(replay.attempt().is_end_stream());
        assert!(replay.replayable());
        assert_eq!(budget.used(), 0);
    }

    /// A body announced longer than the limit, or of unknown length, keeps nothing: it is
    /// served whole by its attempt, and sent again only while nothing of it was read.
    #[tokio::test]
    async fn bodies_announced_too_long_or_not_at_all_are_streamed_without_a_copy() {
        let budget = ReplayBudget::new(64 * 1024 * 1024);
        for announced in [Some(REPLAY_LIMIT as u64 + 1), Some(2 << 20), None] {
            let replay = Replay::new(client(&["ab", "cd"], announced, false), Some(&budget));
            assert_eq!(budget.used(), 0, "{announced:?}");
            assert!(replay.replayable(), "nothing read yet");
            let mut first = replay.attempt();
            assert_eq!(next_data(&mut first), "ab");
            assert!(!replay.replayable(), "{announced:?}");
            assert_eq!(kept(&replay), None);
            assert_eq!(&first.collect().await.unwrap().to_bytes()[..], b"cd");
            let mut second = replay.attempt();
            assert!(
                second.frame().await.unwrap().is_err(),
                "never a partial body"
            );
        }
    }

    /// A long-running request's body (no budget given) keeps nothing, however small.
    #[tokio::test]
    async fn without_a_budget_nothing_is_kept() {
        let replay = Replay::new(sized(&["ab"]), None);
        let mut first = replay.attempt();
        assert_eq!(next_data(&mut first), "ab");
        assert_eq!(kept(&replay), None);
        assert!(!replay.replayable());
    }

    #[tokio::test]
    async fn settling_lets_the_kept_bytes_go_and_keeps_nothing_more() {
        let budget = ReplayBudget::new(1024);
        // Announced 6, unfinished: as a client that stops sending.
        let replay = Replay::new(client(&["ab", "cd"], Some(6), true), Some(&budget));
        let mut first = replay.attempt();
        assert_eq!(next_data(&mut first), "ab");
        assert_eq!(next_data(&mut first), "cd");
        assert_eq!(kept(&replay), Some(4));
        assert_eq!(budget.used(), 6);
        // The response head arrives.
        replay.settle();
        assert_eq!(kept(&replay), None, "freed at once");
        assert_eq!(budget.used(), 0, "and its reservation given back");
        assert!(!replay.replayable());

        // A retry still sending kept bytes when its response came sends them, then lets go.
        let replay = Replay::new(sized(&["ab", "cd", "ef"]), Some(&budget));
        let mut first = replay.attempt();
        assert_eq!(next_data(&mut first), "ab");
        assert_eq!(next_data(&mut first), "cd");
        let mut second = replay.attempt();
        replay.settle();
        assert_eq!(kept(&replay), Some(4), "not yet sent by the last attempt");
        assert_eq!(next_data(&mut second), "abcd");
        assert_eq!(kept(&replay), None);
        assert_eq!(budget.used(), 0);
        // The rest streams on, not kept.
        assert_eq!(next_data(&mut second), "ef");
        assert_eq!(kept(&replay), None);
        assert!(second.frame().await.is_none());
    }

    #[tokio::test]
    async fn the_budget_refuses_to_keep_past_its_bound_but_every_body_is_served() {
        let budget = ReplayBudget::new(10);
        let a = Replay::new(sized(&["aaaa", "aaaa"]), Some(&budget));
        assert_eq!(budget.used(), 8);
        // 8 + 5 > 10: no room for b's copy.
        let b = Replay::new(sized(&["bb", "bbb"]), Some(&budget));
        assert_eq!(budget.used(), 8);
        let mut b_first = b.attempt();
        assert_eq!(next_data(&mut b_first), "bb");
        assert!(!b.replayable(), "read, and not kept");
        assert_eq!(&b_first.collect().await.unwrap().to_bytes()[..], b"bbb");
        // a keeps its copy and can be sent again.
        let mut a_first = a.attempt();
        assert_eq!(next_data(&mut a_first), "aaaa");
        assert!(a.replayable());
        let a_second = a.attempt();
        assert_eq!(
            &a_second.collect().await.unwrap().to_bytes()[..],
            b"aaaaaaaa"
        );
        a.settle();
        assert_eq!(budget.used(), 0);
        // With a's reservation given back, the next body finds room.
        let c = Replay::new(sized(&["cc", "ccc"]), Some(&budget));
        assert_eq!(budget.used(), 5);
        drop(c);
        assert_eq!(budget.used(), 0);
    }

    #[tokio::test]
    async fn a_body_longer_than_announced_or_with_trailers_lets_its_copy_go() {
        let budget = ReplayBudget::new(1024);
        // Announces 3, sends 4: a body whose length a hint bounded wrongly.
        let replay = Replay::new(client(&["ab", "cd"], Some(3), false), Some(&budget));
        assert_eq!(budget.used(), 3);
        let mut first = replay.attempt();
        assert_eq!(next_data(&mut first), "ab");
        assert!(replay.replayable());
        assert_eq!(next_data(&mut first), "cd");
        assert!(!replay.replayable());
        assert_eq!(budget.used(), 0);

        let mut frames: VecDeque<Frame<Bytes>> = VecDeque::new();
        frames.push_back(Frame::data(Bytes::from_static(b"ab")));
        frames.push_back(Frame::trailers(HeaderMap::new()));
        let source = Body::new(Client {
            frames,
            announced: Some(2),
            unfinished: false,
        });
        let replay = Replay::new(source, Some(&budget));
        let mut first = replay.attempt();
        assert_eq!(next_data(&mut first), "ab");
        assert!(replay.replayable());
        assert!(first.frame().await.unwrap().unwrap().is_trailers());
        assert!(!replay.replayable());
        assert_eq!(budget.used(), 0);
    }
}
