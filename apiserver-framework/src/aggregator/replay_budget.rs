//! The bytes that every copy of a request body kept for a retry ([`super::replay`]) may hold
//! together.
//!
//! kube-aggregator keeps nothing of a proxied body (Go's transports retry only a request whose
//! body they can get again, and a proxied body cannot be), so whatever this aggregator keeps to
//! send a body to a second replica is memory upstream does not spend; the budget bounds it.
//! A body that finds no room in the budget is still proxied, streamed as it comes: it is only
//! never sent to a second endpoint once a byte of it went to the first.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The default bound of a [`ReplayBudget`]: 64 MiB, room for 64 bodies of the largest size
/// kept (1 MiB) or thousands of ordinary objects in flight at once, and of the order of what
/// the requests in flight cost a host anyway (900 open watches take about 25 MiB of a debug
/// build's memory with no body at all). Past it, requests are only not retried, which is all
/// upstream ever does with a proxied body.
pub const DEFAULT_REPLAY_BUDGET: usize = 64 * 1024 * 1024;

/// A bound on the bytes that copies of request bodies kept for retries hold together, shared
/// by every request the aggregator proxies. Cloning shares the same budget.
#[derive(Clone, Debug)]
pub struct ReplayBudget(Arc<Counter>);

#[derive(Debug)]
struct Counter {
    limit: usize,
    used: AtomicUsize,
}

impl ReplayBudget {
    /// A budget of `limit` bytes (0 keeps no copy at all: no body is ever sent twice once read).
    pub fn new(limit: usize) -> Self {
        ReplayBudget(Arc::new(Counter {
            limit,
            used: AtomicUsize::new(0),
        }))
    }

    /// The bound, in bytes.
    pub fn limit(&self) -> usize {
        self.0.limit
    }

    /// The bytes reserved by copies held now.
    pub fn used(&self) -> usize {
        self.0.used.load(Ordering::Acquire)
    }

    /// Reserves `bytes` for one copy, or `None` when they do not fit beside the copies held.
    /// The bytes are given back when the reservation is dropped.
    pub(crate) fn reserve(&self, bytes: usize) -> Option<Reservation> {
        let counter = &self.0;
        counter
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes)
                    .filter(|total| *total <= counter.limit)
            })
            .ok()?;
        Some(Reservation {
            budget: self.0.clone(),
            bytes,
        })
    }
}

impl Default for ReplayBudget {
    fn default() -> Self {
        ReplayBudget::new(DEFAULT_REPLAY_BUDGET)
    }
}

/// Bytes of a [`ReplayBudget`] held by one copy, given back when dropped.
#[derive(Debug)]
pub(crate) struct Reservation {
    budget: Arc<Counter>,
    bytes: usize,
}

impl Reservation {
    /// The bytes reserved.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_fit_within_the_limit_and_are_given_back_when_dropped() {
        let budget = ReplayBudget::new(100);
        let a = budget.reserve(60).expect("60 of 100");
        assert_eq!(budget.used(), 60);
        assert!(budget.reserve(41).is_none(), "101 of 100");
        assert_eq!(budget.used(), 60, "a refusal reserves nothing");
        let b = budget.reserve(40).expect("exactly the limit");
        assert_eq!(b.bytes(), 40);
        assert!(budget.reserve(1).is_none());
        drop(a);
        assert_eq!(budget.used(), 40);
        assert!(budget.reserve(60).is_some());
        drop(b);
        assert_eq!(budget.used(), 0);
        assert!(ReplayBudget::new(0).reserve(1).is_none());
        assert!(budget.reserve(usize::MAX).is_none(), "no overflow");
    }
}
