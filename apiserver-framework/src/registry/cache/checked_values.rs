//! Which stored values of a kind are known to decode, so that each is checked once, not on
//! every read.
//!
//! A multi-version kind checks that every object it serves decodes as its version's type (a
//! value written around the server, or by an older release, may not). Decoding is by far the
//! most expensive part of a read, so the verdict is remembered per key and revision: a key's
//! value only changes with its revision, so the pair names one value for good.
//!
//! Keys are remembered by a 64-bit hash (foldhash, with a random seed per process and table),
//! not by their text: an entry costs 16 bytes, not the key's length again, and a lookup hashes
//! the key once, cheaply, as every object of every read is looked up. Why a hash with the
//! revision names one value is the invariant of [`super`]. The table is bounded
//! ([`MAX_ENTRIES`]) and starts afresh when full, at the cost of checking each value once more.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::{OnceLock, RwLock, RwLockReadGuard};

use foldhash::SharedSeed;

/// The hash of the keys, seeded from the operating system's randomness (once per process, and
/// once per table), so that a client cannot choose keys that collide.
type KeyHash = foldhash::quality::SeedableRandomState;
/// The table's own hash of the (already hashed) keys.
type TableHash = foldhash::fast::RandomState;

/// A key hash with random seeds.
fn key_hash() -> KeyHash {
    static PROCESS_SEED: OnceLock<SharedSeed> = OnceLock::new();
    let shared = PROCESS_SEED.get_or_init(|| SharedSeed::from_u64(rand::random()));
    KeyHash::with_seed(rand::random(), shared)
}

/// The most keys remembered (about 16 MiB at the bound); when it is reached the table is
/// emptied.
pub(crate) const MAX_ENTRIES: usize = 1 << 20;

/// The revision at which each key's value was last found to decode.
pub(crate) struct CheckedValues {
    revisions: RwLock<HashMap<u64, u64, TableHash>>,
    seed: KeyHash,
}

/// A read of the table, for looking up many values under one lock.
pub(crate) struct Known<'a> {
    revisions: RwLockReadGuard<'a, HashMap<u64, u64, TableHash>>,
    seed: &'a KeyHash,
}

impl Known<'_> {
    /// Whether the value of `key` at `revision` is known to decode.
    pub(crate) fn contains(&self, key: &str, revision: u64) -> bool {
        self.revisions.get(&self.seed.hash_one(key)) == Some(&revision)
    }
}

impl Default for CheckedValues {
    fn default() -> Self {
        CheckedValues {
            revisions: RwLock::default(),
            seed: key_hash(),
        }
    }
}

impl CheckedValues {
    fn hash(&self, key: &str) -> u64 {
        self.seed.hash_one(key)
    }

    /// The table as it is now, to look values up in.
    pub(crate) fn known(&self) -> Known<'_> {
        Known {
            revisions: self.revisions.read().unwrap_or_else(|e| e.into_inner()),
            seed: &self.seed,
        }
    }

    /// Whether the value of `key` at `revision` is known to decode.
    pub(crate) fn contains(&self, key: &str, revision: u64) -> bool {
        self.known().contains(key, revision)
    }

    /// Remembers that the values of `keys` (key and revision) decode.
    pub(crate) fn record<'a>(&self, values: impl IntoIterator<Item = (&'a str, u64)>) {
        let mut revisions = self.revisions.write().unwrap_or_else(|e| e.into_inner());
        for (key, revision) in values {
            if revisions.len() >= MAX_ENTRIES {
                revisions.clear();
            }
            revisions.insert(self.hash(key), revision);
        }
    }

    /// Forgets `key` (it was deleted).
    pub(crate) fn forget(&self, key: &str) {
        let hash = self.hash(key);
        self.revisions
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&hash);
    }

    /// How many keys are remembered.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.revisions.read().unwrap().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_checked_once_per_revision() {
        let checked = CheckedValues::default();
        assert!(!checked.contains("/a", 1) && !checked.contains("/b", 2));
        checked.record([("/a", 1)]);
        assert!(checked.contains("/a", 1) && !checked.contains("/b", 2));
        let known = checked.known();
        assert!(known.contains("/a", 1) && !known.contains("/b", 2));
        drop(known);
        // A new revision of the key is a new value.
        assert!(!checked.contains("/a", 3));
        checked.record([("/a", 3)]);
        assert!(checked.contains("/a", 3) && !checked.contains("/a", 1));
        checked.forget("/a");
        assert!(!checked.contains("/a", 3));
    }

    #[test]
    fn tables_hash_keys_with_their_own_seeds() {
        // Two tables (as two processes) hash the same keys differently.
        let (a, b) = (CheckedValues::default(), CheckedValues::default());
        let keys = ["/a", "/b", "/c", "/d"];
        assert!(keys.iter().any(|k| a.hash(k) != b.hash(k)));
        // Within a table, a key's hash is stable.
        assert!(keys.iter().all(|k| a.hash(k) == a.hash(k)));
    }

    #[test]
    fn the_table_is_bounded() {
        let checked = CheckedValues::default();
        let keys: Vec<String> = (0..MAX_ENTRIES + 10).map(|i| format!("/k{i}")).collect();
        checked.record(keys.iter().map(|k| (k.as_str(), 1)));
        assert!(checked.len() <= MAX_ENTRIES, "{}", checked.len());
        assert!(checked.len() >= 10);
    }
}
