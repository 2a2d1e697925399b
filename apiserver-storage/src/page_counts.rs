//! Remembered counts of what follows a page, so that paging through a collection does not count
//! the rest of it again on every page.
//!
//! A page's `remaining` (upstream's `remainingItemCount`) is the number of keys under the
//! prefix after the page's last key, at the page's revision. Counting it means walking every
//! following key: on a sweep of `n` objects in pages of `limit`, `n² / (2·limit)` keys in all.
//! But the state at a revision never changes, and the next page of a sweep starts right after
//! the last key of the previous one at the same revision, so its count is the previous count
//! minus the page's items. The embedded store and the watch cache keep the last few such
//! counts; a page whose start is among them reads only its own items and the one after them
//! (to know that more follow). A page that misses (the first page, a page continued on another
//! replica, an evicted count) counts in full.

use std::collections::VecDeque;

use parking_lot::Mutex;

/// How many counts are kept: enough for this many sweeps going on at once.
const KEPT: usize = 64;

/// Where a page ends: the keys under `prefix` after `after`, at `revision`.
#[derive(PartialEq, Eq)]
struct Cursor {
    revision: u64,
    prefix: String,
    after: String,
}

/// The last [`KEPT`] counts of keys after a page's last key.
#[derive(Default)]
pub(crate) struct PageCounts(Mutex<VecDeque<(Cursor, u64)>>);

impl PageCounts {
    /// The number of keys under `prefix` after `after` at `revision`, if a page ending at
    /// `after` counted them.
    pub(crate) fn after(&self, revision: u64, prefix: &str, after: &str) -> Option<u64> {
        self.0
            .lock()
            .iter()
            .find(|(c, _)| c.revision == revision && c.after == after && c.prefix == prefix)
            .map(|(_, n)| *n)
    }

    /// Remembers that `count` keys under `prefix` follow `after` at `revision`.
    pub(crate) fn remember(&self, revision: u64, prefix: &str, after: &str, count: u64) {
        let cursor = Cursor {
            revision,
            prefix: prefix.to_string(),
            after: after.to_string(),
        };
        let mut kept = self.0.lock();
        if kept.iter().any(|(c, _)| *c == cursor) {
            return;
        }
        if kept.len() >= KEPT {
            kept.pop_front();
        }
        kept.push_back((cursor, count));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_only_the_same_revision_prefix_and_key() {
        let counts = PageCounts::default();
        counts.remember(7, "/a/", "/a/5", 10);
        assert_eq!(counts.after(7, "/a/", "/a/5"), Some(10));
        assert_eq!(counts.after(8, "/a/", "/a/5"), None);
        assert_eq!(counts.after(7, "/a", "/a/5"), None);
        assert_eq!(counts.after(7, "/a/", "/a/6"), None);
    }

    #[test]
    fn keeps_the_latest_counts() {
        let counts = PageCounts::default();
        for i in 0..(KEPT as u64 + 1) {
            counts.remember(i, "/", "/k", i);
        }
        assert_eq!(counts.after(0, "/", "/k"), None, "the oldest is evicted");
        assert_eq!(counts.after(KEPT as u64, "/", "/k"), Some(KEPT as u64));
        assert_eq!(counts.after(1, "/", "/k"), Some(1));
    }
}
