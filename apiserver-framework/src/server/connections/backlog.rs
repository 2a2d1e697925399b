//! [`Backlog`]: HTTP/2 requests accepted whose tasks have not yet started, bounded per
//! connection and over the listener by reading no more of a connection while it is full.
//!
//! A stream costs the server its state in `h2`, the request `hyper` builds and a task, about
//! 1.8 KB, from the moment its HEADERS are read until it is answered. A client may keep
//! `--http2-max-streams-per-connection` (1,000) streams open a connection, and may open the
//! next the moment one is answered: 200 connections flooding HEADERS announcing bodies they
//! never send had 200,000 streams read and waiting their turn at once, 350 MB, each held
//! seconds before its (cheap) refusal. Reading a connection's bytes only while the server
//! keeps up with them leaves the flood in the client's socket, where it costs the server
//! nothing, and keeps each stream read served within moments.
//!
//! What counts is a request accepted whose task has not yet run: those wait on nothing but
//! the runtime, so a full backlog always empties, and a connection's reading never waits on
//! requests that wait on their own bodies. A connection reads again once its own backlog is
//! below [`ConnectionLimits::max_unstarted_requests_per_connection`] and the listener's below
//! [`ConnectionLimits::max_unstarted_requests`] (a started request lets one waiting
//! connection go on, in the order they came).
//!
//! `h2` decodes every frame of what one read brings before it hands the streams to `hyper`
//! one at a time, asking for more bytes between them. So a connection's reads are gated in
//! rounds ([`ReadGate`]): after a read that brought bytes, the connection reads again only
//! once every stream decoded from it was accepted (a read asked for with no stream accepted
//! since the last one asked for). A bound is therefore passed by at most what one read
//! brings (at most `h2`'s read buffer) per connection.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll};

use futures::task::AtomicWaker;
use tokio::sync::Notify;
use tokio::sync::futures::OwnedNotified;

use super::limits::ConnectionLimits;

/// The listener's backlog, shared by its connections.
#[derive(Clone, Debug)]
pub(crate) struct Backlog {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    unstarted: AtomicUsize,
    max: usize,
    /// Connections waiting for the listener's backlog to shrink.
    room: Arc<Notify>,
}

impl Backlog {
    /// The listener's backlog, bounded by `limits`.
    pub fn new(limits: &ConnectionLimits) -> Self {
        Backlog {
            shared: Arc::new(Shared {
                unstarted: AtomicUsize::new(0),
                max: limits.max_unstarted_requests.max(1),
                room: Arc::new(Notify::new()),
            }),
        }
    }

    /// One connection's backlog, within this one.
    pub fn connection(&self, limits: &ConnectionLimits) -> Arc<ConnectionBacklog> {
        Arc::new(ConnectionBacklog {
            listener: self.clone(),
            unstarted: AtomicUsize::new(0),
            max: limits.max_unstarted_requests_per_connection.max(1),
            reader: AtomicWaker::new(),
            accepted: AtomicBool::new(false),
        })
    }

    fn has_room(&self) -> bool {
        self.shared.unstarted.load(Ordering::Acquire) < self.shared.max
    }
}

/// One connection's backlog.
#[derive(Debug)]
pub(crate) struct ConnectionBacklog {
    listener: Backlog,
    unstarted: AtomicUsize,
    max: usize,
    /// The connection's task, waiting to read until its backlog shrinks.
    reader: AtomicWaker,
    /// A request was accepted since the gate last refused a read.
    accepted: AtomicBool,
}

impl ConnectionBacklog {
    /// A request was accepted: it is in the backlog until the returned guard is dropped
    /// (when its task starts).
    pub fn accepted(self: &Arc<Self>) -> Unstarted {
        self.accepted.store(true, Ordering::Relaxed);
        self.unstarted.fetch_add(1, Ordering::AcqRel);
        self.listener
            .shared
            .unstarted
            .fetch_add(1, Ordering::AcqRel);
        Unstarted {
            backlog: self.clone(),
        }
    }

    fn has_room(&self) -> bool {
        self.unstarted.load(Ordering::Acquire) < self.max
    }
}

/// A request in its connection's backlog; dropped when its task starts.
#[derive(Debug)]
pub(crate) struct Unstarted {
    backlog: Arc<ConnectionBacklog>,
}

impl Drop for Unstarted {
    fn drop(&mut self) {
        let backlog = &self.backlog;
        if backlog.unstarted.fetch_sub(1, Ordering::AcqRel) == backlog.max {
            backlog.reader.wake();
        }
        let listener = &backlog.listener.shared;
        if listener.unstarted.fetch_sub(1, Ordering::AcqRel) <= listener.max {
            listener.room.notify_one();
        }
    }
}

/// Where a connection's reads stand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Round {
    /// The connection may read, once its backlog has room.
    Open,
    /// The last read brought bytes: `h2` decodes them all, then hands their streams over.
    Read,
    /// Waiting for `hyper` to accept the streams of the last read.
    Settling,
}

/// The gate on one HTTP/2 connection's reads (see the module's documentation).
pub(crate) struct ReadGate {
    backlog: Arc<ConnectionBacklog>,
    round: Round,
    /// Waiting for room in the listener's backlog.
    waiting: Option<Pin<Box<OwnedNotified>>>,
}

impl std::fmt::Debug for ReadGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadGate")
            .field("round", &self.round)
            .finish_non_exhaustive()
    }
}

impl ReadGate {
    /// The gate on the reads of the connection whose backlog is `backlog`.
    pub fn new(backlog: Arc<ConnectionBacklog>) -> Self {
        ReadGate {
            backlog,
            round: Round::Open,
            waiting: None,
        }
    }

    /// Ready when the connection may read.
    pub fn poll_open(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let accepted = self.backlog.accepted.swap(false, Ordering::Relaxed);
        match self.round {
            // Asked again right after a read: `h2` decoded it and may hold its streams.
            Round::Read => return self.settle(cx),
            // A stream was handed over since the last ask: there may be more.
            Round::Settling if accepted => return self.settle(cx),
            Round::Settling | Round::Open => self.round = Round::Open,
        }
        if !self.backlog.has_room() {
            self.backlog.reader.register(cx.waker());
            if !self.backlog.has_room() {
                return Poll::Pending;
            }
        }
        self.poll_listener_room(cx)
    }

    /// The read the gate let through brought bytes (`true`) or not.
    pub fn read(&mut self, brought: bool) {
        if brought {
            self.round = Round::Read;
        }
    }

    /// Refuses the read for now and asks to be polled again right away: `hyper` first takes
    /// the streams `h2` holds, if any (see [`Round::Settling`]).
    fn settle(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        self.round = Round::Settling;
        cx.waker().wake_by_ref();
        Poll::Pending
    }

    fn poll_listener_room(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let listener = &self.backlog.listener;
        loop {
            if listener.has_room() {
                self.waiting = None;
                return Poll::Ready(());
            }
            let waiting = self
                .waiting
                .get_or_insert_with(|| Box::pin(listener.shared.room.clone().notified_owned()));
            waiting.as_mut().enable();
            if listener.has_room() {
                self.waiting = None;
                return Poll::Ready(());
            }
            match waiting.as_mut().poll(cx) {
                Poll::Ready(()) => self.waiting = None,
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::task::noop_waker;

    fn limits(per_connection: usize, all: usize) -> ConnectionLimits {
        ConnectionLimits {
            max_unstarted_requests_per_connection: per_connection,
            max_unstarted_requests: all,
            ..ConnectionLimits::default()
        }
    }

    #[test]
    fn a_read_waits_for_its_streams_to_be_accepted() {
        let limits = limits(10, 100);
        let backlog = Backlog::new(&limits).connection(&limits);
        let mut gate = ReadGate::new(backlog.clone());
        let waker = noop_waker();
        let mut cx = Context::from_waker(&waker);
        assert!(gate.poll_open(&mut cx).is_ready());
        gate.read(true);
        // h2 asks for more bytes after decoding the read: refused.
        assert!(gate.poll_open(&mut cx).is_pending());
        // hyper takes a stream, and h2 asks again: refused while streams are handed over.
        let _first = backlog.accepted();
        assert!(gate.poll_open(&mut cx).is_pending());
        // Nothing taken since: h2 holds no stream, and the connection reads again.
        assert!(gate.poll_open(&mut cx).is_ready());
        gate.read(false);
        assert!(gate.poll_open(&mut cx).is_ready());
    }

    #[test]
    fn a_full_backlog_stops_reading_until_a_request_starts() {
        let limits = limits(2, 100);
        let listener = Backlog::new(&limits);
        let backlog = listener.connection(&limits);
        let mut gate = ReadGate::new(backlog.clone());
        let waker = noop_waker();
        let mut cx = Context::from_waker(&waker);
        let first = backlog.accepted();
        let _second = backlog.accepted();
        assert!(
            gate.poll_open(&mut cx).is_pending(),
            "the connection's bound"
        );
        drop(first);
        assert!(gate.poll_open(&mut cx).is_ready(), "room again");
    }

    #[test]
    fn the_listener_bound_holds_over_connections() {
        let limits = limits(10, 2);
        let listener = Backlog::new(&limits);
        let (a, b) = (listener.connection(&limits), listener.connection(&limits));
        let mut gate = ReadGate::new(b.clone());
        let waker = noop_waker();
        let mut cx = Context::from_waker(&waker);
        let first = a.accepted();
        let _second = a.accepted();
        assert!(gate.poll_open(&mut cx).is_pending(), "the listener's bound");
        drop(first);
        assert!(gate.poll_open(&mut cx).is_ready(), "room again");
    }
}
