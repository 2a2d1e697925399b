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
    if let Some(at) = find_root_metadata(object) {
        let insert_at = at + METADATA_OPEN.len();
        let mut out = BytesMut::with_capacity(object.len() + 32);
        out.put_slice(&object[..insert_at]);
        out.put_slice(b"\"resourceVersion\":\"");
        let _ = std::fmt::Write::write_fmt(&mut out, format_args!("{rv}"));
        out.put_u8(b'"');
        if object.get(insert_at) != Some(&b'}') {
            out.put_u8(b',');
        }
        out.put_slice(&object[insert_at..]);
        return out.freeze();
    }
    slow_path(object, rv)
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
        while let Some(&c) = object.get(*pos) {
            match c {
                b'"' => {
                    *pos += 1;
                    return Some(());
                }
                b'\\' => return None,
                _ => *pos += 1,
            }
        }
        None
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
}
