//! The mapping between storage keys and etcd keys: `<prefix><key>`.

use std::sync::Arc;

use super::proto;
use crate::KeyValue;

/// The keys of one store inside etcd.
#[derive(Clone, Debug)]
pub(super) struct Keys {
    prefix: String,
}

impl Keys {
    /// Keys under `prefix` (already without a trailing `/`).
    pub(super) fn new(prefix: String) -> Self {
        Keys { prefix }
    }

    /// The etcd key of a storage key.
    pub(super) fn full(&self, key: &str) -> Vec<u8> {
        let mut k = Vec::with_capacity(self.prefix.len() + key.len());
        k.extend_from_slice(self.prefix.as_bytes());
        k.extend_from_slice(key.as_bytes());
        k
    }

    /// A key to read when only the response (its header, an error) matters: the prefix
    /// itself, or `/` for the empty prefix (etcd refuses an empty key).
    pub(super) fn probe(&self) -> Vec<u8> {
        if self.prefix.is_empty() {
            b"/".to_vec()
        } else {
            self.prefix.as_bytes().to_vec()
        }
    }

    /// The storage key of an etcd key of this store.
    pub(super) fn strip(&self, key: &[u8]) -> Arc<str> {
        let rest = key.strip_prefix(self.prefix.as_bytes()).unwrap_or(key);
        String::from_utf8_lossy(rest).into()
    }

    /// The etcd range `[start, end)` of the keys starting with `prefix`, strictly after
    /// `start_after` when given.
    pub(super) fn range(&self, prefix: &str, start_after: Option<&str>) -> (Vec<u8>, Vec<u8>) {
        let low = self.full(prefix);
        let end = prefix_end(&low);
        let start = match start_after {
            Some(after) => {
                // The smallest key after `after` is `after` followed by a zero byte.
                let mut s = self.full(after);
                s.push(0);
                s.max(low)
            }
            None if low.is_empty() => vec![0],
            None => low,
        };
        (start, end)
    }

    /// A storage key-value from an etcd one.
    pub(super) fn key_value(&self, kv: proto::KeyValue) -> KeyValue {
        KeyValue {
            key: self.strip(&kv.key),
            value: kv.value,
            create_revision: revision(kv.create_revision),
            mod_revision: revision(kv.mod_revision),
        }
    }
}

/// The end of the etcd range of all keys starting with `prefix`: the prefix with its last
/// byte below 0xff incremented (and what follows dropped); `\0` (no end) when there is none.
pub(super) fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// A revision from etcd (never negative) as the storage's unsigned revision.
pub(super) fn revision(rev: i64) -> u64 {
    u64::try_from(rev).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_prefix_then_key() {
        let keys = Keys::new("/registry".into());
        assert_eq!(keys.full("/g/p/ns/n"), b"/registry/g/p/ns/n");
        assert_eq!(&*keys.strip(b"/registry/g/p/ns/n"), "/g/p/ns/n");
    }

    #[test]
    fn ranges_cover_the_prefix_and_start_after_a_key() {
        let keys = Keys::new("/r".into());
        assert_eq!(
            keys.range("/a/", None),
            (b"/r/a/".to_vec(), b"/r/a0".to_vec())
        );
        assert_eq!(
            keys.range("/a/", Some("/a/x")),
            (b"/r/a/x\0".to_vec(), b"/r/a0".to_vec())
        );
        // A start before the prefix is clamped to the prefix.
        assert_eq!(keys.range("/b/", Some("/a/x")).0, b"/r/b/".to_vec());
        // An empty store prefix and key prefix: every key.
        assert_eq!(Keys::new(String::new()).range("", None), (vec![0], vec![0]));
    }

    #[test]
    fn prefix_end_skips_trailing_ff() {
        assert_eq!(prefix_end(b"ab"), b"ac");
        assert_eq!(prefix_end(&[b'a', 0xff]), b"b");
        assert_eq!(prefix_end(&[0xff]), vec![0]);
    }
}
