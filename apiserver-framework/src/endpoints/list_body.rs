//! A JSON list's response body, written a piece at a time as it is sent: its opening, its
//! items one comma apart, its closing.
//!
//! Each piece is a fresh buffer of about [`PIECE`] bytes that the connection (and TLS)
//! reads right after it is written, while it is still in the processor's cache; the list's
//! objects are read once from the store's memory, where writing the whole page into one
//! buffer first made TLS read every byte again from memory. The body's length is known from
//! the start, so HTTP/1.1 still sends a `Content-Length`.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{BufMut, Bytes, BytesMut};
use http_body::{Body, Frame, SizeHint};

use crate::registry::rest::ListItems;
use crate::registry::store::encoding::Versioned;

/// The size a piece is filled to: a piece ends with the first item that reaches it. Small
/// enough that the pieces hyper queues before writing stay in the cache, large enough that
/// the cost of a frame is small next to its items'.
pub(crate) const PIECE: usize = 16 * 1024;

/// One item of a list, as the body writes it.
trait Item {
    fn len(&self) -> usize;
    fn put(&self, out: &mut BytesMut);
}

impl Item for Bytes {
    fn len(&self) -> usize {
        <[u8]>::len(self)
    }
    fn put(&self, out: &mut BytesMut) {
        out.put_slice(self);
    }
}

impl Item for Versioned {
    fn len(&self) -> usize {
        Versioned::len(self)
    }
    fn put(&self, out: &mut BytesMut) {
        Versioned::put(self, out);
    }
}

/// The body of a JSON list: `opening`, the items one comma apart, `closing`.
#[derive(Debug)]
pub(crate) struct ListBody {
    opening: Bytes,
    items: ListItems,
    /// The next item to write.
    next: usize,
    closing: &'static [u8],
    /// Bytes not sent yet.
    remaining: u64,
    done: bool,
}

impl ListBody {
    /// The body of `items` between `opening` and `closing`.
    pub(crate) fn new(opening: Bytes, items: ListItems, closing: &'static [u8]) -> Self {
        let items_len = match &items {
            ListItems::Written(items) => total(items),
            ListItems::Versioned(items) => total(items),
        };
        let commas = items.len().saturating_sub(1);
        let remaining = (opening.len() + items_len + commas + closing.len()) as u64;
        ListBody {
            opening,
            items,
            next: 0,
            closing,
            remaining,
            done: false,
        }
    }

    /// The whole body in one buffer.
    pub(crate) fn into_bytes(mut self) -> Bytes {
        self.piece(usize::MAX)
    }

    /// Writes the next piece: the opening first, then items until the piece reaches `size`
    /// bytes, then (after the last item) the closing.
    fn piece(&mut self, size: usize) -> Bytes {
        let capacity = (self.remaining as usize).min(size.saturating_add(1024));
        let mut out = BytesMut::with_capacity(capacity);
        if self.next == 0 {
            out.put_slice(&std::mem::take(&mut self.opening));
        }
        self.next = match &self.items {
            ListItems::Written(items) => fill(&mut out, items, self.next, size),
            ListItems::Versioned(items) => fill(&mut out, items, self.next, size),
        };
        if self.next == self.items.len() {
            out.put_slice(self.closing);
            self.done = true;
        }
        // Exactly zero after the last piece (the items' lengths are their written lengths,
        // tested); saturating, so that a miscount could never panic on the request path.
        self.remaining = self.remaining.saturating_sub(out.len() as u64);
        out.freeze()
    }
}

fn total<I: Item>(items: &[I]) -> usize {
    items.iter().map(Item::len).sum()
}

/// Writes `items` from `next` on into `out` until it holds `size` bytes or the items end;
/// the index of the first item not written.
fn fill<I: Item>(out: &mut BytesMut, items: &[I], mut next: usize, size: usize) -> usize {
    while let Some(item) = items.get(next) {
        if out.len() >= size {
            break;
        }
        if next > 0 {
            out.put_u8(b',');
        }
        item.put(out);
        next += 1;
    }
    next
}

impl Body for ListBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.done {
            return Poll::Ready(None);
        }
        Poll::Ready(Some(Ok(Frame::data(self.piece(PIECE)))))
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;
    use crate::registry::store::encoding::KnownStart;

    /// Every piece, checking the announced length as it goes.
    async fn pieces(mut body: ListBody) -> Vec<Bytes> {
        let total = body.size_hint().exact().unwrap();
        let mut out = Vec::new();
        while let Some(frame) = body.frame().await {
            out.push(frame.unwrap().into_data().unwrap());
            let sent: u64 = out.iter().map(|p| p.len() as u64).sum();
            assert_eq!(body.size_hint().exact(), Some(total - sent));
        }
        assert!(body.is_end_stream());
        assert_eq!(body.size_hint().exact(), Some(0));
        out
    }

    fn object(i: usize) -> Bytes {
        Bytes::from(format!(
            r#"{{"apiVersion":"g/v1","kind":"K","metadata":{{"name":"o{i}"}},"spec":"{}"}}"#,
            "x".repeat(i % 700)
        ))
    }

    #[tokio::test]
    async fn a_big_list_goes_in_pieces_of_about_the_piece_size() {
        let start = KnownStart::new("g/v1", "K");
        let objects: Vec<Bytes> = (0..500).map(object).collect();
        let versioned: Vec<Versioned> = objects
            .iter()
            .enumerate()
            .map(|(i, o)| start.versioned(o.clone(), 10 + i as u64))
            .collect();
        let expected_items: Vec<Bytes> = versioned
            .iter()
            .map(|v| {
                let mut out = BytesMut::new();
                v.put(&mut out);
                out.freeze()
            })
            .collect();
        let mut expected = b"{\"items\":[".to_vec();
        expected.extend_from_slice(&expected_items.join(&b","[..]));
        expected.extend_from_slice(b"]}");
        for items in [
            ListItems::Versioned(versioned),
            ListItems::Written(expected_items),
        ] {
            let body = ListBody::new(Bytes::from_static(b"{\"items\":["), items.clone(), b"]}");
            assert_eq!(body.size_hint().exact(), Some(expected.len() as u64));
            let whole = ListBody::new(Bytes::from_static(b"{\"items\":["), items, b"]}");
            assert_eq!(whole.into_bytes(), expected);
            let pieces = pieces(body).await;
            assert_eq!(pieces.concat(), expected);
            assert!(pieces.len() > expected.len() / (PIECE + 1024));
            // Every piece but the last reaches the piece size and passes it by less than an
            // item and its comma.
            for p in &pieces[..pieces.len() - 1] {
                assert!(p.len() >= PIECE && p.len() < PIECE + 800, "{}", p.len());
            }
            let parsed: serde_json::Value = serde_json::from_slice(&expected).unwrap();
            assert_eq!(parsed["items"][499]["metadata"]["resourceVersion"], "509");
        }
    }

    #[tokio::test]
    async fn an_empty_list_and_an_item_bigger_than_a_piece() {
        let empty = ListBody::new(
            Bytes::from_static(b"{\"items\":["),
            ListItems::default(),
            b"]}",
        );
        assert_eq!(pieces(empty).await, [Bytes::from_static(b"{\"items\":[]}")]);
        let big = Bytes::from(vec![b'7'; 3 * PIECE]);
        let small = Bytes::from_static(b"1");
        let items = ListItems::Written(vec![small.clone(), big.clone(), small]);
        let pieces = pieces(ListBody::new(Bytes::from_static(b"["), items, b"]")).await;
        assert_eq!(pieces.len(), 2);
        assert_eq!(pieces[0].len(), 1 + 1 + 1 + big.len());
        assert_eq!(&pieces[1][..], b",1]");
    }
}
