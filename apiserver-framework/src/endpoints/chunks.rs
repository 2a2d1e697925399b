//! A response body sent as a few buffers one after another, its length known: a list's
//! opening, its items as one buffer and its closing, without copying the items into one
//! more buffer.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

/// Buffers sent in order; the body's exact length is their sum, so HTTP/1.1 sends a
/// `Content-Length`, as for a body of one buffer.
#[derive(Debug, Default)]
pub(crate) struct Chunks {
    chunks: VecDeque<Bytes>,
    remaining: u64,
}

impl Chunks {
    /// A body of `chunks`, in order (empty ones are skipped).
    pub(crate) fn new(chunks: impl IntoIterator<Item = Bytes>) -> Self {
        let chunks: VecDeque<Bytes> = chunks.into_iter().filter(|c| !c.is_empty()).collect();
        let remaining = chunks.iter().map(|c| c.len() as u64).sum();
        Chunks { chunks, remaining }
    }
}

impl Body for Chunks {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let next = self.chunks.pop_front();
        if let Some(chunk) = &next {
            self.remaining -= chunk.len() as u64;
        }
        Poll::Ready(next.map(|chunk| Ok(Frame::data(chunk))))
    }

    fn is_end_stream(&self) -> bool {
        self.chunks.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;

    #[tokio::test]
    async fn sends_the_buffers_in_order_with_their_exact_length() {
        let body = Chunks::new([
            Bytes::from_static(b"{\"items\":["),
            Bytes::new(),
            Bytes::from_static(b"1,2"),
            Bytes::from_static(b"]}"),
        ]);
        assert_eq!(body.size_hint().exact(), Some(15));
        assert!(!body.is_end_stream());
        let mut body = body;
        let mut frames = Vec::new();
        while let Some(frame) = body.frame().await {
            frames.push(frame.unwrap().into_data().unwrap());
            assert_eq!(
                body.size_hint().exact(),
                Some(15 - frames.iter().map(|f| f.len() as u64).sum::<u64>())
            );
        }
        assert_eq!(frames, ["{\"items\":[", "1,2", "]}"]);
        assert!(body.is_end_stream());
    }

    #[tokio::test]
    async fn an_empty_body_ends_at_once() {
        let mut body = Chunks::new([Bytes::new()]);
        assert!(body.is_end_stream());
        assert_eq!(body.size_hint().exact(), Some(0));
        assert!(body.frame().await.is_none());
    }
}
