//! The encoded form of recent changes, shared by every watcher of a store: each change's
//! event (its object with its `resourceVersion` written in, made in its JSON line) is encoded
//! once for each of its types, however many watchers receive it.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use crate::registry::rest::{ObjectEvent, WatchEventType};
use crate::storage::KeyValue;

/// How many recent changes are kept encoded.
pub const CAPACITY: usize = 4096;

/// Recently encoded changes, by revision.
#[derive(Debug, Default)]
pub struct EncodedEvents {
    inner: Mutex<Recent>,
}

/// A change's key and its events, by type: `ADDED`, `MODIFIED`, `DELETED` (a change is seen
/// as another type by a watcher whose selectors it enters or leaves).
#[derive(Debug)]
struct Entry {
    key: Arc<str>,
    events: [Option<ObjectEvent>; 3],
}

/// Where `kind`'s event is kept in an [`Entry`]: only the types a change is seen as.
fn slot(kind: WatchEventType) -> Option<usize> {
    match kind {
        WatchEventType::Added => Some(0),
        WatchEventType::Modified => Some(1),
        WatchEventType::Deleted => Some(2),
        WatchEventType::Bookmark | WatchEventType::Error => None,
    }
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
    /// The event of `kind` for `kv` at its revision: the shared one when another watcher asked
    /// first, else encoded now and kept for the others.
    pub fn get_or_encode(&self, kind: WatchEventType, kv: &KeyValue) -> ObjectEvent {
        let Some(slot) = slot(kind) else {
            return ObjectEvent::of_change(kind, kv);
        };
        let Ok(mut recent) = self.inner.lock() else {
            return ObjectEvent::of_change(kind, kv);
        };
        if let Some(entry) = recent.by_revision.get_mut(&kv.mod_revision) {
            // Every watcher's event shares the key the cache holds: the same pointer, most
            // of the time, spares comparing the strings.
            if !(Arc::ptr_eq(&entry.key, &kv.key) || entry.key == kv.key) {
                // Another key of the same revision: encoded, not kept.
                return ObjectEvent::of_change(kind, kv);
            }
            return entry.events[slot]
                .get_or_insert_with(|| ObjectEvent::of_change(kind, kv))
                .clone();
        }
        let event = ObjectEvent::of_change(kind, kv);
        let mut events = [None, None, None];
        events[slot] = Some(event.clone());
        recent.by_revision.insert(
            kv.mod_revision,
            Entry {
                key: kv.key.clone(),
                events,
            },
        );
        recent.order.push_back(kv.mod_revision);
        while recent.order.len() > CAPACITY {
            if let Some(old) = recent.order.pop_front() {
                recent.by_revision.remove(&old);
            }
        }
        event
    }
}

#[cfg(test)]
mod tests {
    use crate::registry::watch::line::assert_shared;
    use bytes::Bytes;

    use super::*;

    #[test]
    fn one_encoding_per_change_and_type() {
        let events = EncodedEvents::default();
        let kv = KeyValue {
            key: "/g/r/a".into(),
            value: Bytes::from_static(br#"{"metadata":{"name":"a"}}"#),
            create_revision: 3,
            mod_revision: 3,
        };
        let modified = WatchEventType::Modified;
        let a = events.get_or_encode(modified, &kv);
        let b = events.get_or_encode(modified, &kv);
        assert_shared(&a, &b);
        let line: serde_json::Value = serde_json::from_slice(&a.json_line()).unwrap();
        assert_eq!(
            line,
            serde_json::json!({"type": "MODIFIED", "object": {"metadata": {"name": "a", "resourceVersion": "3"}}})
        );
        // The same change seen as added (a watcher whose selector it entered): its own line,
        // shared too, with the same object.
        let added = events.get_or_encode(WatchEventType::Added, &kv);
        assert_eq!(added.kind, WatchEventType::Added);
        assert_eq!(added.object, a.object);
        assert!(
            added
                .json_line()
                .starts_with(br#"{"type":"ADDED","object":"#)
        );
        let again = events.get_or_encode(WatchEventType::Added, &kv);
        assert_shared(&added, &again);
        assert_shared(&a, &b);
        for rev in 4..(4 + CAPACITY as u64) {
            events.get_or_encode(
                modified,
                &KeyValue {
                    mod_revision: rev,
                    ..kv.clone()
                },
            );
        }
        let c = events.get_or_encode(modified, &kv);
        assert_ne!(
            a.object.as_ptr(),
            c.object.as_ptr(),
            "old changes are forgotten"
        );
        assert_eq!(a.object, c.object);
        // Another key at a kept revision gets its own object.
        let other = KeyValue {
            key: "/g/r/b".into(),
            value: Bytes::from_static(br#"{"metadata":{"name":"b"}}"#),
            ..kv.clone()
        };
        let d = events.get_or_encode(modified, &other);
        assert!(
            std::str::from_utf8(&d.object)
                .unwrap()
                .contains(r#""name":"b""#)
        );
        assert_eq!(
            events.get_or_encode(modified, &kv).object.as_ptr(),
            c.object.as_ptr()
        );
    }
}
