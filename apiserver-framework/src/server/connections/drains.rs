//! [`Drains`]: how many unread request bodies may be read in the background at once, on one
//! connection and on the whole listener.
//!
//! Reading an unread body's rest (see `unread_body`) keeps its stream open for up to
//! [`ConnectionLimits::unread_body_drain_timeout`] while costing its client nothing but a
//! request's headers: unbounded, 200 HTTP/2 connections of 1,000 such streams held about
//! 950 MB of stream state. Past either bound a body is not read at all: its stream is reset
//! (`RST_STREAM`, `NO_ERROR`) once its answer is sent, as Go's server always does.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::limits::ConnectionLimits;

/// The listener's bound on bodies being read at once, shared by its connections.
#[derive(Clone, Debug)]
pub(crate) struct Drains {
    all: Arc<Semaphore>,
}

impl Drains {
    /// The bound `limits` set for the whole listener.
    pub fn new(limits: &ConnectionLimits) -> Self {
        Drains {
            all: Arc::new(Semaphore::new(limits.max_draining_bodies)),
        }
    }

    /// The bodies one connection may have read at once, within this bound.
    pub fn connection(&self, limits: &ConnectionLimits) -> ConnectionDrains {
        ConnectionDrains {
            all: self.all.clone(),
            own: Arc::new(Semaphore::new(limits.max_draining_bodies_per_connection)),
        }
    }

    /// A place for one body outside any connection's own bound (HTTP/1.1, whose connection
    /// reads one body at a time), if the listener has one free.
    pub fn permit(&self) -> Option<DrainPermit> {
        let all = self.all.clone().try_acquire_owned().ok()?;
        Some(DrainPermit {
            _all: all,
            _own: None,
        })
    }
}

/// One connection's bound on bodies being read at once, within the listener's.
#[derive(Clone, Debug)]
pub(crate) struct ConnectionDrains {
    all: Arc<Semaphore>,
    own: Arc<Semaphore>,
}

impl ConnectionDrains {
    /// A place for one body, if both the connection and the listener have one free.
    pub fn permit(&self) -> Option<DrainPermit> {
        let own = self.own.clone().try_acquire_owned().ok()?;
        let all = self.all.clone().try_acquire_owned().ok()?;
        Some(DrainPermit {
            _all: all,
            _own: Some(own),
        })
    }
}

/// A body's place among those being read; freed when dropped.
#[derive(Debug)]
pub(crate) struct DrainPermit {
    _all: OwnedSemaphorePermit,
    _own: Option<OwnedSemaphorePermit>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_bounds_hold() {
        let limits = ConnectionLimits {
            max_draining_bodies: 3,
            max_draining_bodies_per_connection: 2,
            ..ConnectionLimits::default()
        };
        let drains = Drains::new(&limits);
        let (a, b) = (drains.connection(&limits), drains.connection(&limits));
        let a1 = a.permit().expect("a's first");
        let _a2 = a.permit().expect("a's second");
        assert!(a.permit().is_none(), "a connection's own bound");
        let _b1 = b.permit().expect("b's first");
        assert!(b.permit().is_none(), "the listener's bound");
        assert!(
            drains.permit().is_none(),
            "the listener's bound, for HTTP/1.1 too"
        );
        drop(a1);
        assert!(b.permit().is_some(), "a place freed is taken again");
    }
}
