//! A bounded cache whose entries expire, with a clock that tests can drive (upstream's
//! `LRUExpireCache`): when full, expired entries go first, then the least recently used.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where the time comes from.
pub trait Clock: Send + Sync + 'static {
    /// The current instant.
    fn now(&self) -> Instant;
}

/// The system's monotonic clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

struct Entry<V> {
    value: V,
    expires: Instant,
    used: u64,
}

/// Values by string key, each with its own time to live.
pub struct ExpiringCache<V> {
    entries: HashMap<String, Entry<V>>,
    capacity: usize,
    tick: u64,
    clock: Arc<dyn Clock>,
}

impl<V: Clone> ExpiringCache<V> {
    /// An empty cache of at most `capacity` entries (at least one) on `clock`.
    pub fn new(capacity: usize, clock: Arc<dyn Clock>) -> Self {
        ExpiringCache {
            entries: HashMap::new(),
            capacity: capacity.max(1),
            tick: 0,
            clock,
        }
    }

    /// The live value of `key`, if any; an expired one is dropped.
    pub fn get(&mut self, key: &str) -> Option<V> {
        let now = self.clock.now();
        self.tick += 1;
        match self.entries.get_mut(key) {
            Some(e) if e.expires > now => {
                e.used = self.tick;
                Some(e.value.clone())
            }
            Some(_) => {
                self.entries.remove(key);
                None
            }
            None => None,
        }
    }

    /// Keeps `value` under `key` for `ttl`.
    pub fn insert(&mut self, key: String, value: V, ttl: Duration) {
        let now = self.clock.now();
        self.tick += 1;
        if !self.entries.contains_key(&key) && self.entries.len() >= self.capacity {
            self.entries.retain(|_, e| e.expires > now);
            if self.entries.len() >= self.capacity
                && let Some(oldest) = self
                    .entries
                    .iter()
                    .min_by_key(|(_, e)| e.used)
                    .map(|(k, _)| k.clone())
            {
                self.entries.remove(&oldest);
            }
        }
        let entry = Entry {
            value,
            expires: now + ttl,
            used: self.tick,
        };
        self.entries.insert(key, entry);
    }

    /// How many entries are kept (live or not yet dropped).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no entries are kept.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use parking_lot::Mutex;

    /// A test double of a clock that only moves when told to.
    pub(crate) struct ManualClock(Mutex<Instant>);

    impl ManualClock {
        pub(crate) fn new() -> Arc<Self> {
            Arc::new(ManualClock(Mutex::new(Instant::now())))
        }

        pub(crate) fn advance(&self, by: Duration) {
            *self.0.lock() += by;
        }
    }

    impl Clock for ManualClock {
        fn now(&self) -> Instant {
            *self.0.lock()
        }
    }

    #[test]
    fn entries_expire() {
        let clock = ManualClock::new();
        let mut c = ExpiringCache::new(10, clock.clone());
        c.insert("a".into(), 1, Duration::from_secs(10));
        c.insert("b".into(), 2, Duration::from_secs(1));
        clock.advance(Duration::from_millis(999));
        assert_eq!((c.get("a"), c.get("b")), (Some(1), Some(2)));
        clock.advance(Duration::from_millis(1));
        assert_eq!((c.get("a"), c.get("b")), (Some(1), None));
        clock.advance(Duration::from_secs(9));
        assert_eq!(c.get("a"), None);
        assert!(c.is_empty());
    }

    #[test]
    fn full_cache_drops_expired_then_least_recently_used() {
        let clock = ManualClock::new();
        let mut c = ExpiringCache::new(2, clock.clone());
        c.insert("a".into(), 1, Duration::from_secs(10));
        c.insert("b".into(), 2, Duration::from_secs(10));
        assert_eq!(c.get("a"), Some(1));
        c.insert("c".into(), 3, Duration::from_secs(10));
        assert_eq!(
            (c.get("a"), c.get("b"), c.get("c")),
            (Some(1), None, Some(3))
        );
        c.insert("d".into(), 4, Duration::from_secs(1));
        assert_eq!(c.len(), 2);
        clock.advance(Duration::from_secs(2));
        c.insert("e".into(), 5, Duration::from_secs(10));
        assert_eq!(c.len(), 2);
        assert_eq!(c.get("e"), Some(5));
    }
}
