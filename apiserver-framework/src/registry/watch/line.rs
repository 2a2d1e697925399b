//! A watch event as the line a JSON watcher receives, `{"type":"…","object":…}\n`.
//!
//! An event that every watcher of a change receives is made in its line once (see
//! [`crate::registry::cache::encoded_events`] and
//! [`crate::registry::cache::converted_events`]): its object is a slice of that line, so each
//! watcher sends the shared line as it is instead of writing (allocating and copying) its own.
//! An event knows its line by the address of its object, under the invariant of
//! [`crate::registry::cache`].

use bytes::{BufMut, Bytes, BytesMut};

use crate::registry::rest::{ObjectEvent, WatchEventType};
use crate::registry::store::encoding::{RESOURCE_VERSION_LEN, put_with_resource_version};
use crate::storage::KeyValue;

/// What a line holds after its object.
const CLOSING: &[u8] = b"}\n";

/// What a line of `kind` holds before its object.
fn opening(kind: WatchEventType) -> &'static [u8] {
    match kind {
        WatchEventType::Added => br#"{"type":"ADDED","object":"#,
        WatchEventType::Modified => br#"{"type":"MODIFIED","object":"#,
        WatchEventType::Deleted => br#"{"type":"DELETED","object":"#,
        WatchEventType::Bookmark => br#"{"type":"BOOKMARK","object":"#,
        WatchEventType::Error => br#"{"type":"ERROR","object":"#,
    }
}

/// The line of an event of `kind` whose object `write` appends (about `len` bytes).
fn line(kind: WatchEventType, len: usize, write: impl FnOnce(&mut BytesMut)) -> Bytes {
    let open = opening(kind);
    let mut line = BytesMut::with_capacity(open.len() + len + CLOSING.len());
    line.put_slice(open);
    write(&mut line);
    line.put_slice(CLOSING);
    line.freeze()
}

impl ObjectEvent {
    /// An event of `kind` made in its line: its object is what `write` appends (about `len`
    /// bytes), and [`json_line`](Self::json_line) answers the line itself, for every clone.
    pub(crate) fn in_line(
        kind: WatchEventType,
        len: usize,
        write: impl FnOnce(&mut BytesMut),
    ) -> Self {
        let line = line(kind, len, write);
        let object = line.slice(opening(kind).len()..line.len() - CLOSING.len());
        ObjectEvent {
            kind,
            object,
            line: Some(line),
        }
    }

    /// An event of `kind` for the change `kv`, its object written with its `resourceVersion`
    /// (the change's revision), made in its line.
    pub(crate) fn of_change(kind: WatchEventType, kv: &KeyValue) -> Self {
        ObjectEvent::in_line(kind, kv.value.len() + RESOURCE_VERSION_LEN, |out| {
            put_with_resource_version(out, &kv.value, kv.mod_revision)
        })
    }

    /// The event as the line a JSON watcher receives: the one it was made in (shared, not
    /// copied) while its kind and object are still those of that line, else written now.
    pub fn json_line(&self) -> Bytes {
        match &self.line {
            Some(line) if self.is_object_of(line) => line.clone(),
            _ => line(self.kind, self.object.len(), |out| {
                out.put_slice(&self.object)
            }),
        }
    }

    /// Whether `line` is this event's kind's opening, then this event's object (the very same
    /// bytes in memory: compared by address and length, never by content), then the closing.
    fn is_object_of(&self, line: &Bytes) -> bool {
        let open = opening(self.kind);
        line.len() == open.len() + self.object.len() + CLOSING.len()
            && line[open.len()..].as_ptr() == self.object.as_ptr()
            && line.starts_with(open)
    }
}

/// Asserts that `a` and `b` are one shared event: the same object and the same line in
/// memory, not equal copies.
#[cfg(test)]
pub(crate) fn assert_shared(a: &ObjectEvent, b: &ObjectEvent) {
    assert_eq!(
        a.object.as_ptr(),
        b.object.as_ptr(),
        "the same bytes are shared"
    );
    assert_eq!(
        a.json_line().as_ptr(),
        b.json_line().as_ptr(),
        "and the same line"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    const KINDS: [WatchEventType; 5] = [
        WatchEventType::Added,
        WatchEventType::Modified,
        WatchEventType::Deleted,
        WatchEventType::Bookmark,
        WatchEventType::Error,
    ];

    /// Asserts that `line` is an event of `kind` carrying `object`, as the wire format says:
    /// one JSON object `{"type":…,"object":…}` and a newline, the object as it is.
    fn assert_line(line: &[u8], kind: WatchEventType, object: &[u8]) {
        let parsed: serde_json::Value = serde_json::from_slice(line).unwrap();
        let object_value: serde_json::Value = serde_json::from_slice(object).unwrap();
        assert_eq!(
            parsed,
            serde_json::json!({"type": kind.as_str(), "object": object_value})
        );
        assert!(line.ends_with(b"}\n"));
        let open = format!(r#"{{"type":"{}","object":"#, kind.as_str());
        assert_eq!(&line[..open.len()], open.as_bytes());
        assert_eq!(&line[open.len()..line.len() - 2], object);
    }

    #[test]
    fn an_event_made_in_its_line_shares_it_and_any_other_writes_its_own() {
        let object = br#"{"kind":"K","metadata":{"name":"a"}}"#;
        for kind in KINDS {
            let event = ObjectEvent::in_line(kind, object.len(), |out| out.put_slice(object));
            assert_eq!(&event.object[..], object);
            let (a, b) = (event.json_line(), event.clone().json_line());
            assert_eq!(a.as_ptr(), b.as_ptr(), "every clone answers the same line");
            assert_line(&a, kind, object);
            let plain = ObjectEvent::new(kind, Bytes::from_static(object));
            assert_line(&plain.json_line(), kind, object);
            assert_ne!(plain.json_line().as_ptr(), plain.json_line().as_ptr());
        }
    }

    #[test]
    fn a_changed_kind_or_object_is_not_answered_with_the_old_line() {
        let object = br#"{"metadata":{"name":"a"}}"#;
        let made = ObjectEvent::in_line(WatchEventType::Modified, 0, |out| out.put_slice(object));
        let mut retyped = made.clone();
        retyped.kind = WatchEventType::Added;
        assert_line(&retyped.json_line(), WatchEventType::Added, object);
        // Equal bytes elsewhere, a part of the object, another object.
        let other = br#"{"metadata":{"name":"b"}}"#;
        for object_now in [
            Bytes::copy_from_slice(object),
            made.object.slice(..made.object.len() - 1),
            made.object.slice(1..),
            Bytes::from_static(other),
        ] {
            let mut changed = made.clone();
            changed.object = object_now.clone();
            let line = changed.json_line();
            assert!(line.starts_with(br#"{"type":"MODIFIED","object":"#));
            let open = opening(WatchEventType::Modified).len();
            assert_eq!(&line[open..line.len() - CLOSING.len()], &object_now[..]);
            assert_ne!(line.as_ptr(), made.json_line().as_ptr());
        }
    }
}
