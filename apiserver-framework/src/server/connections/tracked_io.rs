//! [`TrackedIo`]: a connection's byte stream, noting reads in its `Activity` (a request
//! has begun arriving); once the connection is upgraded, noting reads and writes for its
//! streaming idle timeout, failing them once the server closed it, and telling when it is
//! dropped (see `upgraded`). An HTTP/2 connection reads only while its gate lets it
//! (see `backlog`).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::activity::Activity;
use super::backlog::ReadGate;
use super::upgraded::Side;

/// `inner`, telling `activity` whenever bytes are read (and, once upgraded, written), and
/// when it is dropped.
#[derive(Debug)]
pub struct TrackedIo<T> {
    inner: T,
    activity: Arc<Activity>,
    gate: Option<ReadGate>,
}

impl<T> TrackedIo<T> {
    /// Tracks reads of `inner` in `activity`, reading only while `gate` (if any) lets it.
    pub(crate) fn new(inner: T, activity: Arc<Activity>, gate: Option<ReadGate>) -> Self {
        TrackedIo {
            inner,
            activity,
            gate,
        }
    }

    /// The result of a read or write of an upgraded connection's stream, noted: bytes moved
    /// count as activity, and a side that must wait keeps its waker.
    fn upgraded<R>(
        &self,
        cx: &Context<'_>,
        side: Side,
        polled: Poll<io::Result<R>>,
        moved: bool,
    ) -> Poll<io::Result<R>> {
        let upgrade = &self.activity.upgrade;
        match polled {
            Poll::Ready(Ok(_)) if moved => upgrade.note_io(),
            Poll::Pending => return upgrade.wait(cx, side),
            _ => {}
        }
        polled
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for TrackedIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let upgraded = self.activity.upgrade.upgraded();
        if upgraded {
            self.activity.upgrade.check_closed()?;
        }
        if let Some(gate) = self.gate.as_mut().filter(|_| !upgraded) {
            std::task::ready!(gate.poll_open(cx));
        }
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        let moved = buf.filled().len() > before;
        if upgraded {
            return self.upgraded(cx, Side::Read, polled, moved);
        }
        if let Some(gate) = self.gate.as_mut() {
            gate.read(moved);
        }
        if matches!(polled, Poll::Ready(Ok(()))) && moved {
            self.activity.note_read();
        }
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for TrackedIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if !self.activity.upgrade.upgraded() {
            return Pin::new(&mut self.inner).poll_write(cx, buf);
        }
        self.activity.upgrade.check_closed()?;
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        let moved = matches!(polled, Poll::Ready(Ok(n)) if n > 0);
        self.upgraded(cx, Side::Write, polled, moved)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if !self.activity.upgrade.upgraded() {
            return Pin::new(&mut self.inner).poll_flush(cx);
        }
        self.activity.upgrade.check_closed()?;
        let polled = Pin::new(&mut self.inner).poll_flush(cx);
        self.upgraded(cx, Side::Write, polled, false)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if !self.activity.upgrade.upgraded() {
            return Pin::new(&mut self.inner).poll_shutdown(cx);
        }
        self.activity.upgrade.check_closed()?;
        let polled = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.upgraded(cx, Side::Write, polled, false)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if !self.activity.upgrade.upgraded() {
            return Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        }
        self.activity.upgrade.check_closed()?;
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        let moved = matches!(polled, Poll::Ready(Ok(n)) if n > 0);
        self.upgraded(cx, Side::Write, polled, moved)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

impl<T> Drop for TrackedIo<T> {
    fn drop(&mut self) {
        self.activity.upgrade.stream_dropped();
    }
}
