//! [`Upgrade`]: what becomes of a connection answered `101 Switching Protocols` (a WebSocket
//! connect session, or a connection the aggregator splices to a backend's).
//!
//! Once it has answered 101, hyper hands the connection's byte stream to whoever takes the
//! upgrade and lets go of it. The connection's own task stays with the stream anyway: the
//! connection stays among the open connections, counted against `--max-open-connections`
//! until the stream is dropped, and busy: it is never closed to make room for a new one (as a
//! connection with a watch in flight is not), so at the bound new connections are refused.
//!
//! The stream ([`TrackedIo`](super::tracked_io::TrackedIo)) tells this state when it is
//! dropped.

use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

/// The upgrade state of one connection.
#[derive(Debug, Default)]
pub(crate) struct Upgrade {
    /// The connection answered 101: its stream outlives hyper's serving.
    upgraded: AtomicBool,
    /// The stream was dropped.
    dropped: Notify,
}

impl Upgrade {
    /// The connection answers 101: from now on its stream is held.
    pub fn begin(&self) {
        self.upgraded.store(true, Ordering::Release);
    }

    /// Whether the connection answered 101.
    pub fn upgraded(&self) -> bool {
        self.upgraded.load(Ordering::Acquire)
    }

    /// The stream was dropped.
    pub fn stream_dropped(&self) {
        self.dropped.notify_one();
    }

    /// Stays with an upgraded connection until its stream is dropped.
    pub async fn hold(&self) {
        // The stream notifies once, when dropped; the notice waits for this if it comes
        // first.
        self.dropped.notified().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn it_is_held_until_the_stream_is_dropped() {
        let upgrade = std::sync::Arc::new(Upgrade::default());
        upgrade.begin();
        assert!(upgrade.upgraded());
        let held = tokio::spawn({
            let upgrade = upgrade.clone();
            async move { upgrade.hold().await }
        });
        tokio::time::sleep(Duration::from_secs(24 * 3600)).await;
        assert!(!held.is_finished());
        upgrade.stream_dropped();
        held.await.unwrap();
    }
}
