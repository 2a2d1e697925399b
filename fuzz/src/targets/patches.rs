//! PATCH bodies: JSON patch, JSON merge patch and strategic merge patch, applied to a stored
//! object.

use apiserver_framework::endpoints::patch::{MAX_PATCH_RESULT_BYTES, PatchDocument, PatchKind};
use apiserver_framework::registry::field_validation::FieldIssues;
use serde_json::Value;

use super::assert_client_error;
use crate::schema;

/// Parses `data` as a patch of `kind` and applies it to the live object, then to its own
/// result; returns the results. Every refusal is a 4xx and every result is within the bound.
fn patch_twice(kind: PatchKind, data: &[u8]) -> Vec<Value> {
    let input = String::from_utf8_lossy(data);
    let structural = schema::structural();
    let patch = match PatchDocument::parse(kind, data, structural.clone()) {
        Ok(p) => p,
        Err(e) => {
            assert_client_error(&e, &input);
            return Vec::new();
        }
    };
    let mut results = Vec::new();
    let mut current = schema::live_object();
    for _ in 0..2 {
        match patch.apply(current.clone()) {
            Ok(patched) => {
                let len = serde_json::to_vec(&patched).map(|v| v.len()).unwrap_or(0);
                assert!(len <= MAX_PATCH_RESULT_BYTES, "{input:?}: {len} bytes");
                let issues = match kind {
                    PatchKind::Json => FieldIssues::json_patch(data, &patched, &structural),
                    PatchKind::Merge => FieldIssues::merge_patch(data, &patched, &structural),
                    _ => FieldIssues::strategic_merge_patch(data, &patched, &structural),
                };
                let _ = (issues.warnings(), issues.strict_message());
                results.push(patched.clone());
                current = patched;
            }
            Err(e) => {
                assert_client_error(&e, &input);
                break;
            }
        }
    }
    results
}

/// A JSON patch (RFC 6902): refusals are 4xx (413 past 10,000 operations or 3 MiB of copies)
/// and results stay within the body bound.
pub fn json_patch(data: &[u8]) {
    patch_twice(PatchKind::Json, data);
}

/// A JSON merge patch (RFC 7386): besides the bounds, applying it twice changes nothing the
/// second time, as a merge patch is idempotent.
pub fn merge_patch(data: &[u8]) {
    let results = patch_twice(PatchKind::Merge, data);
    if let [once, twice] = results.as_slice() {
        assert_eq!(
            once,
            twice,
            "{:?} is not idempotent",
            String::from_utf8_lossy(data)
        );
    }
}

/// A strategic merge patch with its directives (`$patch`, `$retainKeys`,
/// `$setElementOrder`, `$deleteFromPrimitiveList`) following the schema's list semantics:
/// refusals are 400 or 422 and results stay within the body bound.
pub fn strategic_merge_patch(data: &[u8]) {
    patch_twice(PatchKind::Strategic, data);
}
