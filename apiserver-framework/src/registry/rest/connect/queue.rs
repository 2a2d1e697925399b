//! The queues between a connect session's handler and its connection: bounded in messages
//! and in bytes.
//!
//! A bound in messages alone holds as many of the largest messages as it has places: sixteen
//! places each way held 32 MiB per session of 1 MiB messages from a client that sends without
//! reading. Each message here is charged its length against the queue's byte budget (all of
//! it when longer), and the charge is paid back only when the receiver is done with the
//! message ([`Charge`]): for the connection's writer, once the message has been written.
//! A sender waits for the budget, so what does not fit stays with whoever sends: the client's
//! bytes in the kernel's socket buffers, a handler's in the handler.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

use super::Closed;

/// How much one direction of a session may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueBounds {
    /// Messages at most (at least 1).
    pub messages: usize,
    /// Bytes at most, counting each message's data (at least 1). A message longer than this
    /// waits until the queue is empty and is then charged the whole budget.
    pub bytes: usize,
}

/// A new queue within `bounds`.
pub fn queue<T>(bounds: QueueBounds) -> (QueueSender<T>, QueueReceiver<T>) {
    let (tx, rx) = mpsc::channel(bounds.messages.max(1));
    // The semaphore's permits are bytes: at most its maximum, and within a u32 for
    // `acquire_many`.
    let budget = bounds
        .bytes
        .clamp(1, Semaphore::MAX_PERMITS.min(u32::MAX as usize));
    let bytes = Arc::new(Semaphore::new(budget));
    (
        QueueSender {
            tx,
            bytes: bytes.clone(),
            budget,
        },
        QueueReceiver { rx, bytes },
    )
}

/// The sending end of a [`queue`].
#[derive(Debug)]
pub struct QueueSender<T> {
    tx: mpsc::Sender<Charged<T>>,
    bytes: Arc<Semaphore>,
    budget: usize,
}

/// The receiving end of a [`queue`]. Dropping it closes the queue: waiting senders get
/// [`Closed`].
#[derive(Debug)]
pub struct QueueReceiver<T> {
    rx: mpsc::Receiver<Charged<T>>,
    bytes: Arc<Semaphore>,
}

/// A message taken from a queue, still charged to it until dropped (or until its [`Charge`]
/// is dropped).
#[derive(Debug)]
pub struct Charged<T> {
    item: T,
    charge: Charge,
}

/// Bytes charged to a queue; dropping it gives them back.
#[derive(Debug)]
pub struct Charge(#[allow(dead_code)] OwnedSemaphorePermit);

/// Room in a queue for one message of up to the bytes reserved ([`QueueSender::reserve`]).
#[derive(Debug)]
pub struct Reserved<T> {
    slot: mpsc::OwnedPermit<Charged<T>>,
    charge: OwnedSemaphorePermit,
}

impl<T> QueueSender<T> {
    /// The charge of a message of `len` bytes: its length, at most the whole budget.
    fn charge_of(&self, len: usize) -> u32 {
        // The budget fits in a u32 (see `queue`).
        len.min(self.budget) as u32
    }

    /// Waits for room for a message of `len` bytes, then queues `item` as that message.
    pub async fn send(&self, item: T, len: usize) -> Result<(), Closed> {
        self.reserve(len).await?.send(item, len);
        Ok(())
    }

    /// Waits for room for a message of up to `len` bytes, before the message exists: a
    /// reader reserves room for the largest message it accepts before it reads one, so that
    /// what it has read and not yet handed over is within the budget too.
    pub async fn reserve(&self, len: usize) -> Result<Reserved<T>, Closed> {
        let charge = self
            .bytes
            .clone()
            .acquire_many_owned(self.charge_of(len))
            .await
            .map_err(|_| Closed)?;
        let slot = self.tx.clone().reserve_owned().await.map_err(|_| Closed)?;
        Ok(Reserved { slot, charge })
    }
}

impl<T> Reserved<T> {
    /// Queues `item`, a message of `len` bytes, giving back what was reserved beyond `len`.
    pub fn send(self, item: T, len: usize) {
        let Reserved { slot, mut charge } = self;
        let keep = len.min(charge.num_permits());
        let charge = charge.split(keep).unwrap_or(charge);
        slot.send(Charged {
            item,
            charge: Charge(charge),
        });
    }
}

impl<T> QueueReceiver<T> {
    /// The next message; `None` once every sender is gone and the queue is empty.
    pub async fn recv(&mut self) -> Option<Charged<T>> {
        self.rx.recv().await
    }
}

impl<T> Drop for QueueReceiver<T> {
    fn drop(&mut self) {
        self.bytes.close();
    }
}

impl<T> Charged<T> {
    /// The message; its bytes are given back to the queue.
    pub fn into_inner(self) -> T {
        self.item
    }

    /// The message and its charge, to give the bytes back once done with it.
    pub fn into_parts(self) -> (T, Charge) {
        (self.item, self.charge)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;

    const BOUNDS: QueueBounds = QueueBounds {
        messages: 16,
        bytes: 100,
    };

    /// Whether `f` has to wait: it is not ready when first polled (room in a queue is taken
    /// on the first poll when there is some).
    fn waits<F: Future>(f: F) -> bool {
        f.now_or_never().is_none()
    }

    #[tokio::test]
    async fn bytes_bound_the_queue_until_the_receiver_is_done() {
        let (tx, mut rx) = queue::<&str>(BOUNDS);
        tx.send("a", 60).await.unwrap();
        tx.send("b", 40).await.unwrap();
        // Full in bytes, far from full in messages.
        assert!(waits(tx.send("c", 1)));
        let a = rx.recv().await.unwrap();
        // Taken but not done with: still charged.
        assert!(waits(tx.send("c", 1)));
        let (item, charge) = a.into_parts();
        assert_eq!(item, "a");
        drop(charge);
        assert!(!waits(tx.send("c", 60)));
        assert_eq!(rx.recv().await.unwrap().into_inner(), "b");
        assert_eq!(rx.recv().await.unwrap().into_inner(), "c");
    }

    #[tokio::test]
    async fn a_message_larger_than_the_budget_waits_for_an_empty_queue() {
        let (tx, mut rx) = queue::<&str>(BOUNDS);
        tx.send("small", 1).await.unwrap();
        assert!(waits(tx.send("huge", 1000)));
        drop(rx.recv().await.unwrap());
        assert!(!waits(tx.send("huge", 1000)));
        assert!(waits(tx.send("any", 1)));
    }

    #[tokio::test]
    async fn a_reservation_keeps_only_what_the_message_needs() {
        let (tx, mut rx) = queue::<&str>(BOUNDS);
        let room = tx.reserve(100).await.unwrap();
        assert!(waits(tx.reserve(1)));
        room.send("short", 30);
        // 70 bytes came back.
        assert!(!waits(tx.send("rest", 70)));
        assert!(waits(tx.send("more", 1)));
        assert_eq!(rx.recv().await.unwrap().into_inner(), "short");
    }

    #[tokio::test]
    async fn messages_bound_the_queue_too() {
        let (tx, _rx) = queue::<()>(QueueBounds {
            messages: 2,
            bytes: 100,
        });
        tx.send((), 0).await.unwrap();
        tx.send((), 0).await.unwrap();
        assert!(waits(tx.send((), 0)));
    }

    #[tokio::test]
    async fn a_sender_waiting_for_room_learns_the_receiver_is_gone() {
        let (tx, mut rx) = queue::<&str>(BOUNDS);
        tx.send("a", 100).await.unwrap();
        let held = rx.recv().await.unwrap();
        let mut waiting = Box::pin(tx.send("b", 1));
        assert!((&mut waiting).now_or_never().is_none());
        drop(rx);
        assert_eq!(waiting.await, Err(Closed));
        // A message still held gives its bytes back to a closed queue without harm.
        drop(held);
        assert_eq!(tx.send("c", 1).await, Err(Closed));
    }
}
