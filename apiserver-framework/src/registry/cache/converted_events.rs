//! The watch events of one served version, converted once per change however many watchers
//! receive them.
//!
//! Every watcher of a kind receives the same shared bytes for a change (see
//! [`super::encoded_events`]); a version other than the storage version converts them, and a
//! version that is the storage version still checks that they decode as its type. Done per
//! watcher, that is a JSON decode (and a copy) for each of them: here it is done for the first
//! watcher to see a change, and the others get its answer.
//!
//! A change is recognised by its bytes: looked up by their address and length (the watchers
//! share one allocation), as the invariant of [`super`] allows: an entry keeps its input
//! alive, so it never answers another object's conversion.

use std::collections::{HashMap, VecDeque};

use bytes::{BufMut, Bytes};
use parking_lot::Mutex;

use crate::registry::rest::{ObjectEvent, WatchEventType};
use crate::registry::versions::conversion::ConversionError;

/// How many recent changes are kept converted.
pub const CAPACITY: usize = 4096;

/// Recently converted watch events of one version.
#[derive(Debug, Default)]
pub struct ConvertedEvents {
    inner: Mutex<Recent>,
}

/// A change's bytes as the watchers received them, and their conversion.
#[derive(Debug)]
struct Entry {
    input: Bytes,
    output: Result<ObjectEvent, ConversionError>,
}

/// The table's hasher: the keys are addresses, chosen by the allocator, not by a client.
type Hasher = foldhash::fast::RandomState;

#[derive(Debug, Default)]
struct Recent {
    by_input: HashMap<(usize, usize), Entry, Hasher>,
    order: VecDeque<(usize, usize)>,
}

impl ConvertedEvents {
    /// The conversion of `event`'s object, as an event of its type: the one made for another
    /// watcher of the same bytes, else `convert(object)`, kept for the others. An output
    /// equal to its input (a check that passed) is kept as the input event, so that it costs
    /// no memory of its own; another output is made in its line (see
    /// [`crate::registry::watch::line`]), which all the watchers share.
    pub fn get_or_convert(
        &self,
        event: &ObjectEvent,
        convert: impl FnOnce(&[u8]) -> Result<Bytes, ConversionError>,
    ) -> Result<ObjectEvent, ConversionError> {
        let object = &event.object;
        let id = (object.as_ptr() as usize, object.len());
        if let Some(entry) = self.inner.lock().by_input.get(&id)
            && same_bytes(&entry.input, object)
        {
            return entry.output.clone().map(|out| of_kind(out, event.kind));
        }
        let output = match convert(object) {
            Ok(out) if out == *object => Ok(event.clone()),
            Ok(out) => Ok(ObjectEvent::in_line(event.kind, out.len(), |line| {
                line.put_slice(&out)
            })),
            Err(e) => Err(e),
        };
        let mut recent = self.inner.lock();
        let previous = recent.by_input.insert(
            id,
            Entry {
                input: object.clone(),
                output: output.clone(),
            },
        );
        if previous.is_none() {
            recent.order.push_back(id);
        }
        while recent.order.len() > CAPACITY {
            if let Some(old) = recent.order.pop_front() {
                recent.by_input.remove(&old);
            }
        }
        output
    }
}

/// `event` as an event of `kind`: itself when it is of that type, else its object in an event
/// of its own (the same bytes seen as another type).
fn of_kind(event: ObjectEvent, kind: WatchEventType) -> ObjectEvent {
    if event.kind == kind {
        event
    } else {
        ObjectEvent::new(kind, event.object)
    }
}

/// Whether `a` and `b` are the same bytes in memory (the same address and length): for bytes
/// kept alive, the same contents, without reading them.
fn same_bytes(a: &Bytes, b: &Bytes) -> bool {
    a.as_ptr() == b.as_ptr() && a.len() == b.len()
}

#[cfg(test)]
mod tests {
    use crate::registry::watch::line::assert_shared;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    fn modified(object: &Bytes) -> ObjectEvent {
        ObjectEvent::new(WatchEventType::Modified, object.clone())
    }

    #[test]
    fn one_conversion_per_change() {
        let events = ConvertedEvents::default();
        let calls = AtomicUsize::new(0);
        let upper = |b: &[u8]| {
            calls.fetch_add(1, Ordering::Relaxed);
            Ok(Bytes::from(b.to_ascii_uppercase()))
        };
        let object = Bytes::from_static(b"{\"a\":1}");
        let (a, b) = (
            events.get_or_convert(&modified(&object), upper).unwrap(),
            events.get_or_convert(&modified(&object), upper).unwrap(),
        );
        assert_eq!(calls.load(Ordering::Relaxed), 1);
        assert_eq!(a.object, b"{\"A\":1}"[..]);
        assert_shared(&a, &b);
        assert_eq!(
            &a.json_line()[..],
            b"{\"type\":\"MODIFIED\",\"object\":{\"A\":1}}\n"
        );
        // The same bytes seen as another type: the shared conversion, in an event of that type.
        let added = ObjectEvent::new(WatchEventType::Added, object.clone());
        let c = events.get_or_convert(&added, upper).unwrap();
        assert_eq!(calls.load(Ordering::Relaxed), 1);
        assert_eq!(
            (c.kind, c.object.as_ptr()),
            (WatchEventType::Added, a.object.as_ptr())
        );
        assert_eq!(
            &c.json_line()[..],
            b"{\"type\":\"ADDED\",\"object\":{\"A\":1}}\n"
        );
        // Equal bytes elsewhere are converted on their own; a check that passes keeps the
        // input event, and so its line.
        let same = |b: &[u8]| Ok(Bytes::copy_from_slice(b));
        let lined = ObjectEvent::in_line(WatchEventType::Deleted, 7, |out| {
            out.put_slice(b"{\"a\":1}")
        });
        let d = events.get_or_convert(&lined, same).unwrap();
        assert_shared(&d, &lined);
        // Failures are shared too.
        let broken = Bytes::from_static(b"nope");
        let fail = |_: &[u8]| Err(ConversionError::NotJson("nope".into()));
        assert!(events.get_or_convert(&modified(&broken), fail).is_err());
        assert!(events.get_or_convert(&modified(&broken), upper).is_err());
    }

    #[test]
    fn an_entry_for_other_bytes_at_the_same_address_is_not_used() {
        let events = ConvertedEvents::default();
        let object = Bytes::from_static(b"abc");
        // An entry under this address and length whose input is other bytes (as if the first
        // object had been freed and its memory reused).
        events.inner.lock().by_input.insert(
            (object.as_ptr() as usize, object.len()),
            Entry {
                input: Bytes::from_static(b"xyz"),
                output: Ok(modified(&Bytes::from_static(b"XYZ"))),
            },
        );
        let upper = |b: &[u8]| Ok(Bytes::from(b.to_ascii_uppercase()));
        for _ in 0..2 {
            let out = events.get_or_convert(&modified(&object), upper).unwrap();
            assert_eq!(out.object, "ABC");
        }
    }

    #[test]
    fn old_changes_are_forgotten() {
        let events = ConvertedEvents::default();
        let objects: Vec<Bytes> = (0..CAPACITY + 10)
            .map(|i| Bytes::from(i.to_string()))
            .collect();
        for o in &objects {
            events
                .get_or_convert(&modified(o), |b| Ok(Bytes::copy_from_slice(b)))
                .unwrap();
        }
        let recent = events.inner.lock();
        assert_eq!(recent.order.len(), CAPACITY);
        assert_eq!(recent.by_input.len(), CAPACITY);
    }
}
