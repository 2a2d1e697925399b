//! [`BatchedWrites`]: an HTTP/2 connection's writes gathered into one TLS write per round of
//! the runtime, instead of one per frame.
//!
//! `h2` flushes its connection as soon as its task runs with a frame to send, and the runtime
//! runs a task woken by the running one right after it (tokio's LIFO slot). A watch event
//! fanned out to the many streams of one connection (the aggregator's connection to this
//! server carries up to 250 watches, a client's informers share one) therefore left as one
//! frame, one TLS record and one `writev` per stream: the host's CPU went mostly to the
//! kernel's side of those writes. Go's HTTP/2 server buffers its frames and flushes when its
//! write queue runs empty; this does the same for the runtime's queue.
//!
//! The bytes a flush would send are kept until the connection's task has yielded once: it
//! goes to the back of its worker's queue, the other tasks that were ready (the other
//! streams' writers) queue their frames meanwhile, and the next flush writes them all in one
//! TLS write. One yield per batch bounds the delay to one turn of the runtime's queue; a batch
//! reaching a full TLS record ([`BATCH`]) is written at once, so a connection keeps at most
//! that much beside what `h2` and TLS buffer themselves, and shutting down writes without
//! yielding. HTTP/1.1 carries one response at a time, with nothing to gather: its writes pass
//! straight through.
//!
//! Written here because the ecosystem's write buffers (tokio's `BufWriter`) write on every
//! flush, which `h2` asks for once per frame.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The most bytes kept, a full TLS record's worth: a flush with this many writes at once, and
/// a write that would pass it sends the kept ones first.
pub const BATCH: usize = 16 * 1024;

/// `inner`, whose writes are gathered when `batching` (HTTP/2) and passed through otherwise.
#[derive(Debug)]
pub struct BatchedWrites<T> {
    inner: T,
    batching: bool,
    /// Bytes accepted and not yet written to `inner`; its first `sent` were.
    kept: Vec<u8>,
    sent: usize,
    /// Whether the task has yielded since the first of `kept` was accepted.
    yielded: bool,
}

impl<T> BatchedWrites<T> {
    /// Gathers `inner`'s writes when `batching`; otherwise passes them through.
    pub fn new(inner: T, batching: bool) -> Self {
        BatchedWrites {
            inner,
            batching,
            kept: Vec::new(),
            sent: 0,
            yielded: false,
        }
    }

    /// The wrapped stream.
    #[cfg(any(test, feature = "testing"))]
    pub fn get_ref(&self) -> &T {
        &self.inner
    }

    /// How many accepted bytes are not yet written to the wrapped stream.
    pub fn kept(&self) -> usize {
        self.kept.len() - self.sent
    }
}

impl<T: AsyncWrite + Unpin> BatchedWrites<T> {
    /// Writes every kept byte to `inner`, then lets the kept buffer go: an idle connection
    /// holds none.
    fn poll_write_kept(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.sent < self.kept.len() {
            let n = std::task::ready!(
                Pin::new(&mut self.inner).poll_write(cx, &self.kept[self.sent..])
            )?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.sent += n;
        }
        self.kept = Vec::new();
        self.sent = 0;
        self.yielded = false;
        Poll::Ready(Ok(()))
    }

    /// Makes room for `len` more bytes: writes the kept ones first when they would pass
    /// [`BATCH`].
    fn poll_room(&mut self, cx: &mut Context<'_>, len: usize) -> Poll<io::Result<()>> {
        if self.kept.len() + len > BATCH {
            std::task::ready!(self.poll_write_kept(cx))?;
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for BatchedWrites<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for BatchedWrites<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if !this.batching {
            return Pin::new(&mut this.inner).poll_write(cx, buf);
        }
        std::task::ready!(this.poll_room(cx, buf.len()))?;
        if buf.len() >= BATCH {
            return Pin::new(&mut this.inner).poll_write(cx, buf);
        }
        this.kept.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if !this.batching {
            return Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        }
        let len = bufs.iter().map(|b| b.len()).sum::<usize>();
        std::task::ready!(this.poll_room(cx, len))?;
        if len >= BATCH {
            return Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        }
        for b in bufs {
            this.kept.extend_from_slice(b);
        }
        Poll::Ready(Ok(len))
    }

    /// Batching, writes are copied once anyway: `h2` then copies small frames into its own
    /// buffer instead of asking for a flush between every two.
    fn is_write_vectored(&self) -> bool {
        !self.batching && self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.kept() > 0 && this.kept() < BATCH && !this.yielded {
            // To the back of the runtime's queue: the tasks ready now queue their frames
            // first, and the next flush writes them with these.
            this.yielded = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        std::task::ready!(this.poll_write_kept(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        std::task::ready!(this.poll_write_kept(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Wake, Waker};

    use tokio::io::{AsyncReadExt as _, DuplexStream};

    use super::*;

    /// A pipe's writing end that counts the writes reaching it.
    struct Counted {
        pipe: DuplexStream,
        writes: usize,
    }

    impl AsyncWrite for Counted {
        fn poll_write(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            let polled = Pin::new(&mut self.pipe).poll_write(cx, buf);
            if matches!(polled, Poll::Ready(Ok(_))) {
                self.writes += 1;
            }
            polled
        }

        fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.pipe).poll_flush(cx)
        }

        fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.pipe).poll_shutdown(cx)
        }

        fn is_write_vectored(&self) -> bool {
            true
        }
    }

    /// Counts the wake-ups of the task it stands for.
    #[derive(Default)]
    struct Wakes(AtomicUsize);

    impl Wake for Wakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A batching (or not) writer over a pipe of `capacity` bytes, its reading end, and a
    /// task's context whose wake-ups are counted.
    fn writer(
        batching: bool,
        capacity: usize,
    ) -> (BatchedWrites<Counted>, DuplexStream, Arc<Wakes>) {
        let (pipe, reader) = tokio::io::duplex(capacity);
        let writer = BatchedWrites::new(Counted { pipe, writes: 0 }, batching);
        (writer, reader, Arc::new(Wakes::default()))
    }

    fn write(
        w: &mut BatchedWrites<Counted>,
        cx: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(w).poll_write(cx, bytes)
    }

    fn flush(w: &mut BatchedWrites<Counted>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(w).poll_flush(cx)
    }

    async fn read_all(reader: &mut DuplexStream, len: usize) -> Vec<u8> {
        let mut got = vec![0; len];
        tokio::time::timeout(
            std::time::Duration::from_secs(10),
            reader.read_exact(&mut got),
        )
        .await
        .expect("the bytes arrive in time")
        .expect("the bytes arrive");
        got
    }

    /// Frames written and flushed reach the stream in one write, after the task yielded once
    /// (woken, so that it runs again) and flushed again.
    #[tokio::test]
    async fn frames_of_one_turn_leave_in_one_write_after_one_yield() {
        let (mut w, mut reader, wakes) = writer(true, 1 << 20);
        let waker = Waker::from(wakes.clone());
        let mut cx = Context::from_waker(&waker);
        for frame in [&b"one,"[..], b"two,", b"three"] {
            assert!(
                matches!(write(&mut w, &mut cx, frame), Poll::Ready(Ok(n)) if n == frame.len())
            );
        }
        assert!(
            flush(&mut w, &mut cx).is_pending(),
            "the first flush yields"
        );
        assert_eq!(
            wakes.0.load(Ordering::SeqCst),
            1,
            "and wakes its task to run again"
        );
        assert_eq!(w.get_ref().writes, 0, "nothing written yet");
        // Another frame queued meanwhile joins the batch.
        assert!(write(&mut w, &mut cx, b",four").is_ready());
        assert!(matches!(flush(&mut w, &mut cx), Poll::Ready(Ok(()))));
        assert_eq!(w.get_ref().writes, 1, "one write for the whole batch");
        assert_eq!(w.kept(), 0);
        assert_eq!(read_all(&mut reader, 18).await, b"one,two,three,four");
        // The next batch yields again, once.
        assert!(write(&mut w, &mut cx, b"five").is_ready());
        assert!(flush(&mut w, &mut cx).is_pending());
        assert!(flush(&mut w, &mut cx).is_ready());
        assert_eq!(wakes.0.load(Ordering::SeqCst), 2);
        assert_eq!(read_all(&mut reader, 4).await, b"five");
    }

    /// A flush with nothing kept neither yields nor writes.
    #[tokio::test]
    async fn a_flush_with_nothing_kept_does_not_yield() {
        let (mut w, _reader, wakes) = writer(true, 1024);
        let waker = Waker::from(wakes.clone());
        let mut cx = Context::from_waker(&waker);
        assert!(matches!(flush(&mut w, &mut cx), Poll::Ready(Ok(()))));
        assert_eq!(wakes.0.load(Ordering::SeqCst), 0);
        assert_eq!(w.get_ref().writes, 0);
    }

    /// Without batching (HTTP/1.1) every write goes straight through, and vectored writes are
    /// offered as the stream offers them.
    #[tokio::test]
    async fn without_batching_writes_pass_through() {
        let (mut w, mut reader, wakes) = writer(false, 1024);
        let waker = Waker::from(wakes.clone());
        let mut cx = Context::from_waker(&waker);
        assert!(w.is_write_vectored());
        assert!(write(&mut w, &mut cx, b"ab").is_ready());
        assert!(write(&mut w, &mut cx, b"cd").is_ready());
        assert_eq!(w.get_ref().writes, 2);
        assert!(flush(&mut w, &mut cx).is_ready(), "no yield");
        assert_eq!(wakes.0.load(Ordering::SeqCst), 0);
        assert_eq!(read_all(&mut reader, 4).await, b"abcd");
        let (batched, _r, _w) = writer(true, 1024);
        assert!(
            !batched.is_write_vectored(),
            "batching copies: h2 is told not to chain"
        );
    }

    /// Kept bytes never pass a TLS record's worth: a flush with that much writes at once, and a
    /// write that would pass it sends the kept ones first.
    #[tokio::test]
    async fn a_full_record_is_written_without_waiting() {
        let (mut w, mut reader, wakes) = writer(true, 1 << 20);
        let waker = Waker::from(wakes.clone());
        let mut cx = Context::from_waker(&waker);
        let half = vec![b'a'; BATCH / 2];
        assert!(write(&mut w, &mut cx, &half).is_ready());
        assert!(write(&mut w, &mut cx, &half).is_ready());
        assert_eq!(w.kept(), BATCH);
        assert!(
            matches!(flush(&mut w, &mut cx), Poll::Ready(Ok(()))),
            "no yield"
        );
        assert_eq!(wakes.0.load(Ordering::SeqCst), 0);
        assert_eq!(w.get_ref().writes, 1);
        // 3/4 kept, then half more: the kept bytes go first, the half is kept.
        let three_quarters = vec![b'b'; BATCH * 3 / 4];
        assert!(write(&mut w, &mut cx, &three_quarters).is_ready());
        assert!(write(&mut w, &mut cx, &half).is_ready());
        assert_eq!(w.get_ref().writes, 2);
        assert_eq!(w.kept(), BATCH / 2);
        // A write of a record or more is not copied: it goes straight through.
        assert!(flush(&mut w, &mut cx).is_pending());
        assert!(flush(&mut w, &mut cx).is_ready());
        let big = vec![b'c'; BATCH * 2];
        assert!(matches!(write(&mut w, &mut cx, &big), Poll::Ready(Ok(n)) if n == big.len()));
        assert_eq!(w.kept(), 0);
        let got = read_all(&mut reader, BATCH + BATCH * 3 / 4 + BATCH / 2 + BATCH * 2).await;
        assert!(got[..BATCH].iter().all(|&b| b == b'a'));
        assert!(got[BATCH..BATCH + BATCH * 3 / 4].iter().all(|&b| b == b'b'));
        assert!(
            got[BATCH + BATCH * 3 / 4..][..BATCH / 2]
                .iter()
                .all(|&b| b == b'a')
        );
        assert!(got[got.len() - BATCH * 2..].iter().all(|&b| b == b'c'));
    }

    /// A stream that takes no more (a slow reader) holds the flush back without losing or
    /// reordering a byte, and the kept bytes are bounded while it does.
    #[tokio::test]
    async fn a_full_stream_holds_the_flush_back_without_losing_bytes() {
        let (mut w, mut reader, wakes) = writer(true, 100);
        let waker = Waker::from(wakes.clone());
        let mut cx = Context::from_waker(&waker);
        let data: Vec<u8> = (0..250u8).collect();
        assert!(write(&mut w, &mut cx, &data).is_ready());
        assert!(flush(&mut w, &mut cx).is_pending(), "the yield");
        assert!(
            flush(&mut w, &mut cx).is_pending(),
            "the pipe holds 100 bytes"
        );
        assert_eq!(w.kept(), 150);
        let more = vec![7u8; BATCH];
        assert!(
            write(&mut w, &mut cx, &more).is_pending(),
            "no room: the kept bytes go first"
        );
        assert_eq!(w.kept(), 150, "nothing taken while the stream is full");
        let first = read_all(&mut reader, 100).await;
        assert!(flush(&mut w, &mut cx).is_pending(), "another 100");
        let second = read_all(&mut reader, 100).await;
        assert!(flush(&mut w, &mut cx).is_ready());
        let third = read_all(&mut reader, 50).await;
        assert_eq!([first, second, third].concat(), data);
    }

    /// Shutting down writes the kept bytes first, without yielding.
    #[tokio::test]
    async fn shutdown_writes_the_kept_bytes() {
        let (mut w, mut reader, wakes) = writer(true, 1024);
        let waker = Waker::from(wakes.clone());
        let mut cx = Context::from_waker(&waker);
        assert!(write(&mut w, &mut cx, b"GOAWAY").is_ready());
        assert!(matches!(
            Pin::new(&mut w).poll_shutdown(&mut cx),
            Poll::Ready(Ok(()))
        ));
        assert_eq!(wakes.0.load(Ordering::SeqCst), 0);
        let mut got = Vec::new();
        reader.read_to_end(&mut got).await.expect("read to the end");
        assert_eq!(got, b"GOAWAY");
    }
}
