//! Which stored values of a kind are known to decode, so that each is checked once, not on
//! every read.
//!
//! A multi-version kind checks that every object it serves decodes as its version's type (a
//! value written around the server, or by an older release, may not). Decoding is by far the
//! most expensive part of a read, so the verdict is remembered per key and revision: a key's
//! value only changes with its revision, so the pair names one value for good.
//!
//! Keys are remembered by a 64-bit hash (with a per-process random seed), not by their text:
//! an entry costs 16 bytes, not the key's length again. Two keys would have to share the hash
//! *and* the revision for a value to be taken as checked without being so; revisions name one
//! write each, so that takes a collision between two keys of one multi-key transaction, which
//! the framework never writes. The table is bounded ([`MAX_ENTRIES`]) and starts afresh when
//! full, at the cost of checking each value once more.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::RwLock;

/// The most keys remembered (about 16 MiB at the bound); when it is reached the table is
/// emptied.
pub(crate) const MAX_ENTRIES: usize = 1 << 20;

/// The revision at which each key's value was last found to decode.
#[derive(Default)]
pub(crate) struct CheckedValues {
    revisions: RwLock<HashMap<u64, u64>>,
    seed: RandomState,
}

impl CheckedValues {
    fn hash(&self, key: &str) -> u64 {
        self.seed.hash_one(key)
    }

    /// Whether the value of `key` at `revision` is known to decode.
    pub(crate) fn contains(&self, key: &str, revision: u64) -> bool {
        let hash = self.hash(key);
        let revisions = self.revisions.read().unwrap_or_else(|e| e.into_inner());
        revisions.get(&hash) == Some(&revision)
    }

    /// The positions in `values` (key and revision) that are not known to decode.
    pub(crate) fn unchecked<'a>(
        &self,
        values: impl IntoIterator<Item = (&'a str, u64)>,
    ) -> Vec<usize> {
        let revisions = self.revisions.read().unwrap_or_else(|e| e.into_inner());
        values
            .into_iter()
            .enumerate()
            .filter(|(_, (key, revision))| revisions.get(&self.hash(key)) != Some(revision))
            .map(|(i, _)| i)
            .collect()
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
        assert_eq!(checked.unchecked([("/a", 1), ("/b", 2)]), [0, 1]);
        checked.record([("/a", 1)]);
        assert_eq!(checked.unchecked([("/a", 1), ("/b", 2)]), [1]);
        assert!(checked.contains("/a", 1) && !checked.contains("/b", 2));
        // A new revision of the key is a new value.
        assert_eq!(checked.unchecked([("/a", 3)]), [0]);
        checked.record([("/a", 3)]);
        assert_eq!(checked.unchecked([("/a", 1), ("/a", 3)]), [0]);
        checked.forget("/a");
        assert_eq!(checked.unchecked([("/a", 3)]), [0]);
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
