//! A mutating policy's `JSONPatch` applied as upstream applies it. Upstream's policies use
//! evanphx/json-patch v4, which reads RFC 6902 loosely in places a policy author meets:
//!
//! - a `test` that fails leaves the object as it was: the whole patch is not applied, and this
//!   is not an error (upstream's `ErrTestFailed` case); a `test` of a missing field of an object
//!   fails so too, unless it tests for `null`;
//! - a `replace` of a missing field of an object adds it;
//! - a patch that does not apply fails with v4's message after upstream's `JSON Patch: `.
//!
//! The operations themselves are the `json-patch` crate's, applied one at a time; only the
//! readings above and the messages are written here (the messages of v4 for a missing field,
//! container or index).

use json_patch::{AddOperation, PatchErrorKind, PatchOperation};
use serde_json::Value;

/// `object` patched by `operations` (see the module's documentation); an error in upstream's
/// words.
pub(crate) fn apply(object: &Value, operations: &[PatchOperation]) -> Result<Value, String> {
    let mut doc = object.clone();
    for operation in operations {
        let operation = as_v4_reads(&doc, operation);
        let Err(e) = json_patch::patch(&mut doc, std::slice::from_ref(&operation)) else {
            continue;
        };
        if let PatchOperation::Test(test) = &operation {
            if matches!(e.kind, PatchErrorKind::TestFailed) {
                return Ok(object.clone());
            }
            let path = test.path.as_str();
            if let Some(Value::Object(map)) = container(&doc, path)
                && !map.contains_key(&last_token(path))
            {
                if test.value.is_null() {
                    continue;
                }
                return Ok(object.clone());
            }
        }
        return Err(format!("JSON Patch: {}", message(&doc, &operation)));
    }
    Ok(doc)
}

/// `operation` as v4 reads it on `doc`: a `replace` of a missing field of an object is an `add`.
fn as_v4_reads(doc: &Value, operation: &PatchOperation) -> PatchOperation {
    if let PatchOperation::Replace(replace) = operation {
        let path = replace.path.as_str();
        if let Some(Value::Object(map)) = container(doc, path)
            && !map.contains_key(&last_token(path))
        {
            return PatchOperation::Add(AddOperation {
                path: replace.path.clone(),
                value: replace.value.clone(),
            });
        }
    }
    operation.clone()
}

/// The object or array holding the value at `path` (v4's `findObject`): `None` when the path
/// is the root, or a step of it is missing or not a container.
fn container<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
    let (parent, _) = path.rsplit_once('/')?;
    doc.pointer(parent)
        .filter(|v| v.is_object() || v.is_array())
}

/// The last reference token of `path`, unescaped.
fn last_token(path: &str) -> String {
    let token = path.rsplit_once('/').map_or(path, |(_, t)| t);
    token.replace("~1", "/").replace("~0", "~")
}

/// v4's message for `operation`, which does not apply to `doc`.
fn message(doc: &Value, operation: &PatchOperation) -> String {
    let missing = "missing value";
    let invalid_index = |path: &str| {
        format!(
            "Unable to access invalid index: {}: invalid index referenced",
            last_token(path)
        )
    };
    match operation {
        PatchOperation::Add(add) => {
            let path = add.path.as_str();
            match container(doc, path) {
                None => format!(
                    "add operation does not apply: doc is missing path: \"{path}\": {missing}"
                ),
                Some(_) => format!("error in add for path: '{path}': {}", invalid_index(path)),
            }
        }
        PatchOperation::Remove(remove) => {
            let path = remove.path.as_str();
            match container(doc, path) {
                None => format!(
                    "remove operation does not apply: doc is missing path: \"{path}\": {missing}"
                ),
                Some(Value::Object(_)) => format!(
                    "error in remove for path: '{path}': Unable to remove nonexistent key: {}: {missing}",
                    last_token(path)
                ),
                Some(_) => format!(
                    "error in remove for path: '{path}': {}",
                    invalid_index(path)
                ),
            }
        }
        PatchOperation::Replace(replace) => {
            let path = replace.path.as_str();
            match container(doc, path) {
                None => format!(
                    "replace operation does not apply: doc is missing path: {path}: {missing}"
                ),
                Some(_) => format!(
                    "replace operation does not apply: doc is missing key: {path}: {missing}"
                ),
            }
        }
        PatchOperation::Move(op) => from_message("move", doc, op.from.as_str(), op.path.as_str()),
        PatchOperation::Copy(op) => from_message("copy", doc, op.from.as_str(), op.path.as_str()),
        PatchOperation::Test(test) => format!(
            "test operation does not apply: is missing path: {}: {missing}",
            test.path.as_str()
        ),
    }
}

/// v4's message for a `move` or `copy` (`verb`) from `from` to `path` that does not apply: its
/// words when the source is missing (v4's own words when only the source's last step is missing
/// vary with the container; these are those of a missing container), else when the
/// destination's container is.
fn from_message(verb: &str, doc: &Value, from: &str, path: &str) -> String {
    if doc.pointer(from).is_none() {
        return format!(
            "{verb} operation does not apply: doc is missing from path: {from}: missing value"
        );
    }
    format!(
        "{verb} operation does not apply: doc is missing destination path: {path}: missing value"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn patch(object: &Value, ops: Value) -> Result<Value, String> {
        let ops: json_patch::Patch = serde_json::from_value(ops).unwrap();
        apply(object, &ops)
    }

    #[test]
    fn upstreams_readings_of_test_and_replace() {
        let object = json!({"metadata": {"name": "f"}, "spec": {"items": [1, 2]}});
        // A failed test: nothing applied, no error.
        assert_eq!(
            patch(
                &object,
                json!([
                    {"op": "add", "path": "/metadata/labels", "value": {"a": "b"}},
                    {"op": "test", "path": "/metadata/name", "value": "g"},
                ])
            ),
            Ok(object.clone())
        );
        assert_eq!(
            patch(
                &object,
                json!([{"op": "test", "path": "/metadata/missing", "value": "x"}])
            ),
            Ok(object.clone())
        );
        // A test for null of a missing field holds; a replace of one adds it.
        assert_eq!(
            patch(
                &object,
                json!([
                    {"op": "test", "path": "/metadata/missing", "value": null},
                    {"op": "replace", "path": "/metadata/labels", "value": {"a": "b"}},
                    {"op": "test", "path": "/metadata/labels/a", "value": "b"},
                ])
            ),
            Ok(json!({"metadata": {"name": "f", "labels": {"a": "b"}}, "spec": {"items": [1, 2]}}))
        );
    }

    #[test]
    fn patches_that_do_not_apply_fail_with_v4s_messages() {
        let object = json!({"metadata": {"name": "f"}, "spec": {"items": [1, 2]}});
        let cases = [
            (
                json!([{"op": "remove", "path": "/spec/nothing"}]),
                "JSON Patch: error in remove for path: '/spec/nothing': Unable to remove nonexistent key: nothing: missing value",
            ),
            (
                json!([{"op": "remove", "path": "/status/phase"}]),
                "JSON Patch: remove operation does not apply: doc is missing path: \"/status/phase\": missing value",
            ),
            (
                json!([{"op": "add", "path": "/status/phase", "value": "x"}]),
                "JSON Patch: add operation does not apply: doc is missing path: \"/status/phase\": missing value",
            ),
            (
                json!([{"op": "add", "path": "/spec/items/5", "value": 3}]),
                "JSON Patch: error in add for path: '/spec/items/5': Unable to access invalid index: 5: invalid index referenced",
            ),
            (
                json!([{"op": "replace", "path": "/status/phase", "value": "x"}]),
                "JSON Patch: replace operation does not apply: doc is missing path: /status/phase: missing value",
            ),
            (
                json!([{"op": "replace", "path": "/spec/items/7", "value": 3}]),
                "JSON Patch: replace operation does not apply: doc is missing key: /spec/items/7: missing value",
            ),
            (
                json!([{"op": "copy", "from": "/status/x", "path": "/spec/y"}]),
                "JSON Patch: copy operation does not apply: doc is missing from path: /status/x: missing value",
            ),
        ];
        for (ops, expected) in cases {
            assert_eq!(
                patch(&object, ops.clone()),
                Err(expected.to_string()),
                "{ops}"
            );
        }
    }
}
