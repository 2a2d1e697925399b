//! [`Upgrade`]: what becomes of a connection answered `101 Switching Protocols` (a WebSocket
//! connect session, or a connection the aggregator splices to a backend's).
//!
//! Once it has answered 101, hyper hands the connection's byte stream to whoever takes the
//! upgrade and lets go of it. The connection's own task stays with the stream anyway:
//! - the connection stays among the open connections, counted against
//!   `--max-open-connections` until the stream is dropped, and busy: it is never closed to make
//!   room for a new one (as a connection with a watch in flight is not), so at the bound new
//!   connections are refused;
//! - once nothing has been read or written for the streaming idle timeout
//!   ([`ConnectionLimits::streaming_idle_timeout`](super::ConnectionLimits)), every read and
//!   write of the stream fails (`TimedOut`), which ends whatever runs on it and drops the
//!   stream, as the kubelet's streaming server closes a stream idle past its
//!   `--streaming-connection-idle-timeout` (its deadlines on the connection fail reads and
//!   writes alike).
//!
//! The stream ([`TrackedIo`](super::tracked_io::TrackedIo)) tells this state of what it
//! reads and writes and when it is dropped, and registers its reader's and writer's wakers
//! while they wait, so that closing it wakes them.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::task::AtomicWaker;
use tokio::sync::Notify;
use tokio::time::Instant;

/// The upgrade state of one connection.
#[derive(Debug)]
pub(crate) struct Upgrade {
    /// The connection answered 101: its stream outlives hyper's serving.
    upgraded: AtomicBool,
    /// What `last_io` counts from.
    origin: Instant,
    /// When a byte was last read or written after the upgrade, in nanoseconds since `origin`.
    last_io: AtomicU64,
    /// The server closed the stream: its reads and writes fail.
    closed: AtomicBool,
    /// The stream was dropped.
    dropped: Notify,
    reader: AtomicWaker,
    writer: AtomicWaker,
}

impl Default for Upgrade {
    fn default() -> Self {
        Upgrade {
            upgraded: AtomicBool::new(false),
            origin: Instant::now(),
            last_io: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            dropped: Notify::new(),
            reader: AtomicWaker::new(),
            writer: AtomicWaker::new(),
        }
    }
}

/// Which side of the stream waits.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Side {
    Read,
    Write,
}

impl Upgrade {
    /// The connection answers 101: from now on its stream is watched.
    pub fn begin(&self) {
        self.note_io();
        self.upgraded.store(true, Ordering::Release);
    }

    /// Whether the connection answered 101.
    pub fn upgraded(&self) -> bool {
        self.upgraded.load(Ordering::Acquire)
    }

    /// Bytes were read or written.
    pub fn note_io(&self) {
        let nanos = u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.last_io.store(nanos, Ordering::Relaxed);
    }

    /// When a byte was last read or written (or the upgrade began).
    fn last_io(&self) -> Instant {
        self.origin + Duration::from_nanos(self.last_io.load(Ordering::Relaxed))
    }

    /// The error of every read and write once the server closed the stream, if it did.
    pub fn check_closed(&self) -> io::Result<()> {
        match self.closed.load(Ordering::SeqCst) {
            true => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the upgraded connection was idle past the streaming idle timeout",
            )),
            false => Ok(()),
        }
    }

    /// The stream's `side` must wait: keeps its waker so that closing the stream wakes it.
    /// Ready with the closed stream's error if it was closed meanwhile.
    pub fn wait<T>(&self, cx: &Context<'_>, side: Side) -> Poll<io::Result<T>> {
        match side {
            Side::Read => self.reader.register(cx.waker()),
            Side::Write => self.writer.register(cx.waker()),
        }
        match self.check_closed() {
            Ok(()) => Poll::Pending,
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    /// Fails the stream's reads and writes from now on, waking those waiting.
    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.reader.wake();
        self.writer.wake();
    }

    /// The stream was dropped.
    pub fn stream_dropped(&self) {
        self.dropped.notify_one();
    }

    /// Stays with an upgraded connection until its stream is dropped; closes the stream once
    /// nothing has been read or written for `idle_timeout` (zero: never).
    pub async fn hold(&self, idle_timeout: Duration) {
        loop {
            let due = match idle_timeout.is_zero() || self.closed.load(Ordering::SeqCst) {
                true => None,
                false => Some(self.last_io() + idle_timeout),
            };
            let expired = async {
                match due {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                // The stream notifies once, when dropped; the notice waits for this if it
                // comes first.
                _ = self.dropped.notified() => return,
                _ = expired => {
                    if self.last_io() + idle_timeout <= Instant::now() {
                        tracing::debug!(?idle_timeout, "closing an upgraded connection idle past the streaming idle timeout");
                        self.close();
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::task::noop_waker_ref;

    #[tokio::test(start_paused = true)]
    async fn an_idle_stream_is_closed_and_held_until_dropped() {
        let upgrade = std::sync::Arc::new(Upgrade::default());
        upgrade.begin();
        assert!(upgrade.upgraded());
        let held = tokio::spawn({
            let upgrade = upgrade.clone();
            async move { upgrade.hold(Duration::from_secs(10)).await }
        });
        // Activity within the timeout keeps it open.
        tokio::time::sleep(Duration::from_secs(8)).await;
        upgrade.note_io();
        tokio::time::sleep(Duration::from_secs(8)).await;
        assert!(upgrade.check_closed().is_ok());
        let cx = Context::from_waker(noop_waker_ref());
        assert!(upgrade.wait::<()>(&cx, Side::Read).is_pending());
        // Ten seconds without: closed, and a waiting side learns it.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let err = upgrade.check_closed().unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(upgrade.wait::<()>(&cx, Side::Write).is_ready());
        // Still held until the stream is dropped.
        assert!(!held.is_finished());
        upgrade.stream_dropped();
        held.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_timeout_it_is_held_until_dropped() {
        let upgrade = std::sync::Arc::new(Upgrade::default());
        upgrade.begin();
        let held = tokio::spawn({
            let upgrade = upgrade.clone();
            async move { upgrade.hold(Duration::ZERO).await }
        });
        tokio::time::sleep(Duration::from_secs(24 * 3600)).await;
        assert!(upgrade.check_closed().is_ok());
        assert!(!held.is_finished());
        upgrade.stream_dropped();
        held.await.unwrap();
    }
}
