//! The encoded form of recent changes, shared by every watcher of a store: each change's
//! object (with its `resourceVersion` written in) is encoded once, however many watchers
//! receive it.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::registry::encoding::with_resource_version;
use crate::storage::KeyValue;

/// How many recent changes are kept encoded.
pub const CAPACITY: usize = 4096;

/// Recently encoded changes, by revision.
#[derive(Debug, Default)]
pub struct EncodedEvents {
    inner: Mutex<Recent>,
}

/// A change's key and its encoded object.
#[derive(Debug)]
struct Entry {
    key: Arc<str>,
    bytes: Bytes,
}

/// The table's hasher: revisions are the storage's counter, not chosen by a client.
type Hasher = foldhash::fast::RandomState;

#[derive(Debug, Default)]
struct Recent {
    /// Looked up by revision (no key is built to look one up); the key is checked, as a
    /// revision could change more than one key.
    by_revision: HashMap<u64, Entry, Hasher>,
    order: VecDeque<u64>,
}

impl EncodedEvents {
    /// The object of `kv` at its revision: the shared bytes when another watcher asked first,
    /// else encoded now and kept for the others.
    pub fn get_or_encode(&self, kv: &KeyValue) -> Bytes {
        let Ok(mut recent) = self.inner.lock() else {
            return with_resource_version(&kv.value, kv.mod_revision);
        };
        if let Some(entry) = recent.by_revision.get(&kv.mod_revision) {
            // Every watcher's event shares the key the cache holds: the same pointer, most
            // of the time, spares comparing the strings.
            if Arc::ptr_eq(&entry.key, &kv.key) || entry.key == kv.key {
                return entry.bytes.clone();
            }
            // Another key of the same revision: encoded, not kept.
            return with_resource_version(&kv.value, kv.mod_revision);
        }
        let bytes = with_resource_version(&kv.value, kv.mod_revision);
        recent.by_revision.insert(
            kv.mod_revision,
            Entry {
                key: kv.key.clone(),
                bytes: bytes.clone(),
            },
        );
        recent.order.push_back(kv.mod_revision);
        while recent.order.len() > CAPACITY {
            if let Some(old) = recent.order.pop_front() {
                recent.by_revision.remove(&old);
            }
        }
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_encoding_per_change() {
        let events = EncodedEvents::default();
        let kv = KeyValue {
            key: "/g/r/a".into(),
            value: Bytes::from_static(br#"{"metadata":{"name":"a"}}"#),
            create_revision: 3,
            mod_revision: 3,
        };
        let a = events.get_or_encode(&kv);
        let b = events.get_or_encode(&kv);
        assert_eq!(a.as_ptr(), b.as_ptr(), "the same bytes are shared");
        assert!(
            std::str::from_utf8(&a)
                .unwrap()
                .contains(r#""resourceVersion":"3""#)
        );
        for rev in 4..(4 + CAPACITY as u64) {
            events.get_or_encode(&KeyValue {
                mod_revision: rev,
                ..kv.clone()
            });
        }
        let c = events.get_or_encode(&kv);
        assert_ne!(a.as_ptr(), c.as_ptr(), "old changes are forgotten");
        assert_eq!(a, c);
        // Another key at a kept revision gets its own object.
        let other = KeyValue {
            key: "/g/r/b".into(),
            value: Bytes::from_static(br#"{"metadata":{"name":"b"}}"#),
            ..kv.clone()
        };
        let d = events.get_or_encode(&other);
        assert!(std::str::from_utf8(&d).unwrap().contains(r#""name":"b""#));
        assert_eq!(events.get_or_encode(&kv), c);
    }
}
