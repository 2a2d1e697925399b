//! Fast edits of serialized objects: setting `metadata.resourceVersion` without re-encoding.
//!
//! Objects are stored without a resourceVersion (the storage revision is the version); on
//! every read the version is written into the bytes. Objects produced by the derive always
//! start with `{"apiVersion":…,"kind":…,"metadata":{`, so the field can be spliced in right
//! after the metadata's opening brace. Anything else takes the slow path through
//! `serde_json::Value`.

use bytes::{BufMut, Bytes, BytesMut};
use serde_json::Value;

const METADATA_OPEN: &[u8] = b"\"metadata\":{";

/// Returns `object` with `metadata.resourceVersion` set to `rv`.
///
/// `object` must not already carry a resourceVersion (stored objects never do).
pub fn with_resource_version(object: &[u8], rv: u64) -> Bytes {
    match find_root_metadata(object) {
        Some(at) => {
            let mut out = BytesMut::with_capacity(object.len() + RESOURCE_VERSION_LEN);
            splice(&mut out, object, at, rv);
            out.freeze()
        }
        None => slow_path(object, rv),
    }
}

/// Appends the bytes of [`with_resource_version`] to `out`.
pub(crate) fn put_with_resource_version(out: &mut BytesMut, object: &[u8], rv: u64) {
    match find_root_metadata(object) {
        Some(at) => splice(out, object, at, rv),
        None => out.put_slice(&slow_path(object, rv)),
    }
}

/// The most bytes the fast path adds to an object: `"resourceVersion":"<20 digits>",`.
pub(crate) const RESOURCE_VERSION_LEN: usize = 41;

/// The start the derive gives every object of one apiVersion and kind,
/// `{"apiVersion":"<v>","kind":"<k>","metadata":{`: an object that starts with it has its
/// root metadata found by one comparison instead of a scan, which is most of the cost of
/// writing the resourceVersion into each object of a list.
pub(crate) struct KnownStart(Option<Box<[u8]>>);

impl KnownStart {
    /// The start of the objects of `api_version` and `kind`. Names that JSON would escape
    /// give no known start (every object then takes the scan).
    pub(crate) fn new(api_version: &str, kind: &str) -> Self {
        let plain = |s: &str| !s.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20);
        if !plain(api_version) || !plain(kind) {
            return KnownStart(None);
        }
        let mut start = Vec::with_capacity(api_version.len() + kind.len() + 40);
        start.extend_from_slice(b"{\"apiVersion\":\"");
        start.extend_from_slice(api_version.as_bytes());
        start.extend_from_slice(b"\",\"kind\":\"");
        start.extend_from_slice(kind.as_bytes());
        start.extend_from_slice(b"\",");
        start.extend_from_slice(METADATA_OPEN);
        KnownStart(Some(start.into_boxed_slice()))
    }

    /// `object` at revision `rv`, its resourceVersion to be written when it is put
    /// ([`Versioned::put`]): the bytes of [`with_resource_version`], its root metadata found
    /// by one comparison when the object starts as the derive writes this kind's objects.
    pub(crate) fn versioned(&self, object: Bytes, rv: u64) -> Versioned {
        let at = match &self.0 {
            Some(start) if object.starts_with(start) => Some(start.len() - METADATA_OPEN.len()),
            _ => find_root_metadata(&object),
        };
        match at {
            Some(at) => Versioned {
                object,
                splice: Some((rv, at)),
            },
            None => Versioned {
                object: slow_path(&object, rv),
                splice: None,
            },
        }
    }
}

/// A stored object and its revision, the resourceVersion written in only when the object is
/// put into a buffer: a list's items are written this way piece by piece as the response is
/// sent, each read once from the store's memory into a small buffer that TLS then reads while
/// it is still in the cache, rather than copied first into one buffer of the whole page.
#[derive(Clone, Debug)]
pub(crate) struct Versioned {
    object: Bytes,
    /// The revision, and where the root metadata's key starts in `object`; `None` when
    /// `object` is already written with its resourceVersion (an object of another layout,
    /// which took the slow path).
    splice: Option<(u64, usize)>,
}

impl Versioned {
    /// How many bytes [`put`](Self::put) appends.
    pub(crate) fn len(&self) -> usize {
        match self.splice {
            Some((rv, at)) => self.object.len() + inserted_len(&self.object, at, rv),
            None => self.object.len(),
        }
    }

    /// Appends the object with its resourceVersion: the bytes of [`with_resource_version`].
    pub(crate) fn put(&self, out: &mut BytesMut) {
        match self.splice {
            Some((rv, at)) => splice(out, &self.object, at, rv),
            None => out.put_slice(&self.object),
        }
    }
}

/// The bytes [`splice`] inserts: `"resourceVersion":"<digits>"`, and a comma unless the
/// metadata is empty.
fn inserted_len(object: &[u8], at: usize, rv: u64) -> usize {
    let insert_at = at + METADATA_OPEN.len();
    let comma = usize::from(object.get(insert_at) != Some(&b'}'));
    let digits = rv.checked_ilog10().map_or(1, |d| d as usize + 1);
    RV_KEY.len() + digits + 1 + comma
}

/// The key [`splice`] writes, with its opening quote of the value.
const RV_KEY: &[u8] = b"\"resourceVersion\":\"";

/// Appends `object` to `out` with the resourceVersion written in after the opening brace of
/// the root metadata, whose key starts at `at`.
fn splice(out: &mut BytesMut, object: &[u8], at: usize, rv: u64) {
    let insert_at = at + METADATA_OPEN.len();
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(rv).as_bytes();
    out.reserve(object.len() + RESOURCE_VERSION_LEN);
    out.put_slice(&object[..insert_at]);
    out.put_slice(RV_KEY);
    out.put_slice(digits);
    out.put_u8(b'"');
    if object.get(insert_at) != Some(&b'}') {
        out.put_u8(b',');
    }
    out.put_slice(&object[insert_at..]);
}

/// Finds `"metadata":{` at the root level, when the object starts with the derive's layout
/// (`{"apiVersion":"…","kind":"…","metadata":{`). Only the simple layout is accepted.
fn find_root_metadata(object: &[u8]) -> Option<usize> {
    // Skip `{"apiVersion":"<no quotes or escapes>","kind":"<same>",` then expect metadata.
    let mut pos = 0;
    let expect = |pos: &mut usize, lit: &[u8]| -> Option<()> {
        if object.get(*pos..*pos + lit.len())? == lit {
            *pos += lit.len();
            Some(())
        } else {
            None
        }
    };
    let simple_string = |pos: &mut usize| -> Option<()> {
        let end = *pos + memchr::memchr2(b'"', b'\\', object.get(*pos..)?)?;
        (object[end] == b'"').then(|| *pos = end + 1)
    };
    expect(&mut pos, b"{\"apiVersion\":\"")?;
    simple_string(&mut pos)?;
    expect(&mut pos, b",\"kind\":\"")?;
    simple_string(&mut pos)?;
    expect(&mut pos, b",")?;
    if object.get(pos..pos + METADATA_OPEN.len())? == METADATA_OPEN {
        Some(pos)
    } else {
        None
    }
}

fn slow_path(object: &[u8], rv: u64) -> Bytes {
    let Ok(mut v) = serde_json::from_slice::<Value>(object) else {
        return Bytes::copy_from_slice(object);
    };
    if let Some(map) = v.as_object_mut() {
        let meta = map
            .entry("metadata")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
    }
    Bytes::from(serde_json::to_vec(&v).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splices_into_metadata() {
        let o = br#"{"apiVersion":"g/v1","kind":"K","metadata":{"name":"a"},"spec":{}}"#;
        let out = with_resource_version(o, 42);
        assert_eq!(
            &out[..],
            br#"{"apiVersion":"g/v1","kind":"K","metadata":{"resourceVersion":"42","name":"a"},"spec":{}}"#
        );
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["metadata"]["resourceVersion"], "42");
    }

    #[test]
    fn empty_metadata_and_other_layouts() {
        let o = br#"{"apiVersion":"g/v1","kind":"K","metadata":{}}"#;
        let v: Value = serde_json::from_slice(&with_resource_version(o, 7)).unwrap();
        assert_eq!(v["metadata"]["resourceVersion"], "7");
        let o = br#"{"spec":{"metadata":{}},"kind":"K","metadata":{"name":"x"}}"#;
        let v: Value = serde_json::from_slice(&with_resource_version(o, 9)).unwrap();
        assert_eq!(v["metadata"]["resourceVersion"], "9");
        assert!(v["spec"]["metadata"].get("resourceVersion").is_none());
    }

    #[test]
    fn written_when_put_the_same_bytes_as_announced() {
        let objects: [&[u8]; 4] = [
            br#"{"apiVersion":"g/v1","kind":"K","metadata":{"name":"a"},"spec":{}}"#,
            br#"{"apiVersion":"g/v1","kind":"K","metadata":{}}"#,
            br#"{"kind":"K","metadata":{"name":"x"}}"#,
            b"not json",
        ];
        let revisions = [0, 7, u64::MAX, 12];
        let expected: Vec<u8> = objects
            .iter()
            .zip(revisions)
            .flat_map(|(o, rv)| with_resource_version(o, rv).to_vec())
            .collect();
        // With the known start, without it (another version), and without any (a name JSON
        // escapes): the same bytes, as many as announced.
        for start in [
            KnownStart::new("g/v1", "K"),
            KnownStart::new("g/v2", "K"),
            KnownStart::new("g\"/v1", "K"),
        ] {
            let mut put = BytesMut::new();
            for (i, (o, rv)) in objects.iter().zip(revisions).enumerate() {
                let versioned = start.versioned(Bytes::copy_from_slice(o), rv);
                let before = put.len();
                versioned.put(&mut put);
                assert_eq!(put.len() - before, versioned.len(), "object {i}");
            }
            assert_eq!(&put[..], &expected[..]);
        }
        // Every count of digits, for both layouts of the metadata.
        let start = KnownStart::new("g/v1", "K");
        for rv in (0..20)
            .map(|p| 10u64.pow(p))
            .flat_map(|n| [n - 1, n])
            .chain([u64::MAX])
        {
            for o in &objects[..2] {
                let versioned = start.versioned(Bytes::copy_from_slice(o), rv);
                let mut put = BytesMut::new();
                versioned.put(&mut put);
                assert_eq!(put, with_resource_version(o, rv), "{rv}");
                assert_eq!(put.len(), versioned.len(), "{rv}");
            }
        }
        let max = with_resource_version(objects[0], u64::MAX);
        assert_eq!(max.len(), objects[0].len() + RESOURCE_VERSION_LEN);
        assert!(max.starts_with(
            br#"{"apiVersion":"g/v1","kind":"K","metadata":{"resourceVersion":"18446744073709551615","#
        ));
    }
}
