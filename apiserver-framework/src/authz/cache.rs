//! A bounded cache whose entries expire, with a clock that tests can drive (upstream's
//! `LRUExpireCache`), bounded both by its number of entries and by the bytes they hold.
//!
//! Keys and values may come from clients (a SubjectAccessReview's attributes carry the
//! request's selectors), so each entry is weighed when inserted: its caller states the bytes
//! its key and value hold, and the cache adds what it spends per entry. When an insert would
//! go past either bound, the least recently used entries go first. Expired entries are
//! dropped at every access (each access removes those whose time is up, oldest first), so
//! they are never kept past their time to live while the cache is in use.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
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

/// What the cache spends per entry besides its key and value: the entry, its key's shared
/// allocation and its places in the three indexes.
pub const ENTRY_OVERHEAD: usize = 192;

struct Entry<V> {
    value: V,
    /// The entry's place in the expiry index.
    expires: (Instant, u64),
    /// The entry's place in the use index.
    used: u64,
    /// The bytes it is counted for (its stated size and [`ENTRY_OVERHEAD`]).
    bytes: usize,
}

/// Values by key, each with its own time to live, within a number of entries and of bytes.
pub struct ExpiringCache<K, V> {
    entries: HashMap<Arc<K>, Entry<V>>,
    /// Every entry by expiry (then insertion order).
    by_expiry: BTreeMap<(Instant, u64), Arc<K>>,
    /// Every entry by last use.
    by_use: BTreeMap<u64, Arc<K>>,
    max_entries: usize,
    max_bytes: usize,
    bytes: usize,
    tick: u64,
    clock: Arc<dyn Clock>,
}

impl<K: Hash + Eq, V: Clone> ExpiringCache<K, V> {
    /// An empty cache of at most `max_entries` entries (at least one) holding at most
    /// `max_bytes` bytes, on `clock`.
    pub fn new(max_entries: usize, max_bytes: usize, clock: Arc<dyn Clock>) -> Self {
        ExpiringCache {
            entries: HashMap::new(),
            by_expiry: BTreeMap::new(),
            by_use: BTreeMap::new(),
            max_entries: max_entries.max(1),
            max_bytes,
            bytes: 0,
            tick: 0,
            clock,
        }
    }

    fn next_tick(&mut self) -> u64 {
        self.tick += 1;
        self.tick
    }

    /// The live value of `key`, if any.
    pub fn get(&mut self, key: &K) -> Option<V> {
        self.remove_expired();
        let tick = self.next_tick();
        let entry = self.entries.get_mut(key)?;
        let shared = self.by_use.remove(&entry.used)?;
        entry.used = tick;
        self.by_use.insert(tick, shared);
        Some(entry.value.clone())
    }

    /// Keeps `value` under `key` for `ttl`; `size` is what the key and the value hold, in
    /// bytes. An entry that alone would exceed the byte bound is not kept.
    pub fn insert(&mut self, key: K, value: V, ttl: Duration, size: usize) {
        self.remove_expired();
        self.remove(&key);
        let bytes = size.saturating_add(ENTRY_OVERHEAD);
        if bytes > self.max_bytes {
            return;
        }
        while !self.entries.is_empty()
            && (self.entries.len() >= self.max_entries || self.bytes + bytes > self.max_bytes)
        {
            let Some((_, oldest)) = self.by_use.pop_first() else {
                break;
            };
            self.remove(&oldest);
        }
        let now = self.clock.now();
        let tick = self.next_tick();
        let key = Arc::new(key);
        let expires = (now + ttl, tick);
        self.by_expiry.insert(expires, key.clone());
        self.by_use.insert(tick, key.clone());
        self.entries.insert(
            key,
            Entry {
                value,
                expires,
                used: tick,
                bytes,
            },
        );
        self.bytes += bytes;
    }

    fn remove(&mut self, key: &K) {
        if let Some(entry) = self.entries.remove(key) {
            self.by_expiry.remove(&entry.expires);
            self.by_use.remove(&entry.used);
            self.bytes -= entry.bytes;
        }
    }

    /// Drops every entry whose time is up.
    fn remove_expired(&mut self) {
        let now = self.clock.now();
        while let Some(entry) = self.by_expiry.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let key = entry.remove();
            self.remove(&key);
        }
    }

    /// How many entries are kept (expired ones go at the next access).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no entries are kept.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The bytes the kept entries are counted for.
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.bytes
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

    fn k(s: &str) -> String {
        s.to_string()
    }

    const MIB: usize = 1 << 20;

    #[test]
    fn entries_expire() {
        let clock = ManualClock::new();
        let mut c = ExpiringCache::new(10, MIB, clock.clone());
        c.insert(k("a"), 1, Duration::from_secs(10), 1);
        c.insert(k("b"), 2, Duration::from_secs(1), 1);
        clock.advance(Duration::from_millis(999));
        assert_eq!((c.get(&k("a")), c.get(&k("b"))), (Some(1), Some(2)));
        clock.advance(Duration::from_millis(1));
        assert_eq!((c.get(&k("a")), c.get(&k("b"))), (Some(1), None));
        clock.advance(Duration::from_secs(9));
        assert_eq!(c.get(&k("a")), None);
        assert!(c.is_empty());
        assert_eq!(c.bytes(), 0);
    }

    #[test]
    fn full_cache_drops_expired_then_least_recently_used() {
        let clock = ManualClock::new();
        let mut c = ExpiringCache::new(2, MIB, clock.clone());
        c.insert(k("a"), 1, Duration::from_secs(10), 1);
        c.insert(k("b"), 2, Duration::from_secs(10), 1);
        assert_eq!(c.get(&k("a")), Some(1));
        c.insert(k("c"), 3, Duration::from_secs(10), 1);
        assert_eq!(
            (c.get(&k("a")), c.get(&k("b")), c.get(&k("c"))),
            (Some(1), None, Some(3))
        );
        c.insert(k("d"), 4, Duration::from_secs(1), 1);
        assert_eq!(c.len(), 2);
        clock.advance(Duration::from_secs(2));
        c.insert(k("e"), 5, Duration::from_secs(10), 1);
        assert_eq!(c.len(), 2);
        assert_eq!(c.get(&k("e")), Some(5));
    }

    #[test]
    fn bytes_are_bounded_and_accounted() {
        let clock = ManualClock::new();
        let mut c = ExpiringCache::new(1000, 100 * 1024, clock.clone());
        // Ten entries of 10 KiB fill 100 KiB (with the overhead, only nine fit).
        for i in 0..10 {
            c.insert(format!("{i}"), i, Duration::from_secs(10), 10 * 1024);
        }
        assert_eq!(c.len(), 9);
        assert_eq!(c.bytes(), 9 * (10 * 1024 + ENTRY_OVERHEAD));
        assert_eq!(c.get(&k("0")), None, "the least recently used went");
        assert_eq!(c.get(&k("9")), Some(9));
        // Whatever is inserted, the bound holds.
        for i in 0..1000 {
            c.insert(format!("x{i}"), i, Duration::from_secs(10), i * 37 % 20_000);
            assert!(c.bytes() <= 100 * 1024);
        }
        // An entry larger than the whole budget is not kept (and drops nothing).
        let before = c.len();
        c.insert(k("huge"), 0, Duration::from_secs(10), 200 * 1024);
        assert_eq!(c.get(&k("huge")), None);
        assert_eq!(c.len(), before);
        // Replacing an entry counts it once.
        c.insert(k("r"), 1, Duration::from_secs(10), 100);
        let with_r = c.bytes();
        c.insert(k("r"), 2, Duration::from_secs(10), 100);
        assert_eq!(c.bytes(), with_r);
        assert_eq!(c.get(&k("r")), Some(2));
    }

    #[test]
    fn expired_entries_go_at_the_next_access_whatever_its_key() {
        let clock = ManualClock::new();
        let mut c = ExpiringCache::new(8192, 64 * MIB, clock.clone());
        for i in 0..1000 {
            c.insert(format!("{i}"), i, Duration::from_secs(10), 40 * 1024);
        }
        assert!(c.bytes() > 30 * MIB);
        clock.advance(Duration::from_secs(10));
        assert_eq!(c.get(&k("unrelated")), None);
        assert!(c.is_empty());
        assert_eq!(c.bytes(), 0);
    }
}
