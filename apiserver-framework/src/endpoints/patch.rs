//! Patch documents: JSON Patch (RFC 6902), JSON Merge Patch (RFC 7386) and strategic merge
//! patch (see [`crate::endpoints::strategic`]).
//!
//! Growth is bounded as the patch applies, not only once it has: a JSON patch's `copy`
//! operations may add at most `MAX_JSON_PATCH_COPY_BYTES` in all (upstream's
//! `--json-patch-max-copy-bytes` default), counted before each copy is made, so a few dozen
//! bytes of `copy` that double the object each time are refused before the memory is taken.
//! The other operations, merge patches and strategic merge patches can only produce what the
//! object or the patch holds (no node is duplicated), so their results are at most the sum of
//! both; every result is then held to [`MAX_PATCH_RESULT_BYTES`].

use serde_json::Value;

use crate::error::ApiError;
use crate::schema::StructuralSchema;

/// The patch media types served.
pub(crate) const PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

/// Most operations a JSON patch may have (as upstream).
pub(crate) const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// The largest object a patch may produce, as large as a request body may be.
pub const MAX_PATCH_RESULT_BYTES: usize = crate::endpoints::handlers::MAX_BODY_BYTES;

/// The most a JSON patch's `copy` operations may add to the object in all (JSON-encoded), as
/// upstream's default `--json-patch-max-copy-bytes` (3 MiB).
pub(crate) const MAX_JSON_PATCH_COPY_BYTES: usize = 3 * 1024 * 1024;

/// The length of `value` encoded as JSON, counted without keeping the encoding.
fn encoded_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// A patch type, chosen by Content-Type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchKind {
    /// `application/json-patch+json`.
    Json,
    /// `application/merge-patch+json`.
    Merge,
    /// `application/strategic-merge-patch+json`.
    Strategic,
    /// `application/apply-patch+yaml` (server-side apply; JSON is YAML too).
    Apply,
}

impl PatchKind {
    /// The patch type of a Content-Type (parameters after `;` are ignored); others answer 415.
    pub fn from_content_type(content_type: &str) -> Result<Self, ApiError> {
        let base = content_type.split(';').next().unwrap_or("").trim();
        match base {
            "application/json-patch+json" => Ok(PatchKind::Json),
            "application/merge-patch+json" => Ok(PatchKind::Merge),
            "application/strategic-merge-patch+json" => Ok(PatchKind::Strategic),
            "application/apply-patch+yaml" => Ok(PatchKind::Apply),
            // Upstream's router refuses another type before its handler runs.
            _ => Err(crate::endpoints::negotiation::route_unsupported_media_type()),
        }
    }
}

/// A parsed patch, ready to apply.
#[derive(Clone, Debug)]
pub enum PatchDocument {
    /// A JSON patch.
    Json(json_patch::Patch),
    /// A merge patch.
    Merge(Value),
    /// A strategic merge patch, with the schema whose list semantics it follows.
    Strategic {
        /// The patch.
        patch: Value,
        /// The model of the patched object's schema.
        schema: StructuralSchema,
    },
}

impl PatchDocument {
    /// Parses a patch body; malformed patches answer 400, too many operations 413. `schema`
    /// is the model of the patched object's schema, which strategic merge patches follow.
    pub fn parse(kind: PatchKind, body: &[u8], schema: StructuralSchema) -> Result<Self, ApiError> {
        match kind {
            PatchKind::Json => {
                let raw: Value = serde_json::from_slice(body)
                    .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
                if let Some(ops) = raw.as_array()
                    && ops.len() > MAX_JSON_PATCH_OPERATIONS
                {
                    return Err(ApiError::too_large(&format!(
                        "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
                        ops.len()
                    )));
                }
                let patch: json_patch::Patch = serde_json::from_value(raw)
                    .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
                Ok(PatchDocument::Json(patch))
            }
            PatchKind::Apply => Err(ApiError::internal(
                "an apply patch is merged by server-side apply, not as a patch document",
            )),
            PatchKind::Merge | PatchKind::Strategic => {
                let v: Value = serde_json::from_slice(body)
                    .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
                if !v.is_object() {
                    return Err(ApiError::bad_request(
                        "error decoding patch: a merge patch must be a JSON object",
                    ));
                }
                Ok(if kind == PatchKind::Merge {
                    PatchDocument::Merge(v)
                } else {
                    PatchDocument::Strategic { patch: v, schema }
                })
            }
        }
    }

    /// Applies the patch to `current`; a patch that cannot apply answers 422, and one whose
    /// result is larger than a request body may be (3 MiB) answers 413.
    pub fn apply(&self, current: Value) -> Result<Value, ApiError> {
        let patched = self.apply_unchecked(current)?;
        if encoded_len(&patched) > MAX_PATCH_RESULT_BYTES {
            return Err(ApiError::too_large(&format!(
                "limit is {MAX_PATCH_RESULT_BYTES}"
            )));
        }
        Ok(patched)
    }

    fn apply_unchecked(&self, mut current: Value) -> Result<Value, ApiError> {
        match self {
            PatchDocument::Json(p) => {
                // One operation at a time, so the size of each copy is known before it is made;
                // a failed patch leaves `current` half-patched, but it is dropped.
                let mut copied = 0usize;
                for (i, op) in p.0.iter().enumerate() {
                    if let json_patch::PatchOperation::Copy(copy) = op {
                        copied += current.pointer(copy.from.as_str()).map_or(0, encoded_len);
                        if copied > MAX_JSON_PATCH_COPY_BYTES {
                            return Err(json_patch_failed(format!(
                                "Unable to complete the copy, the accumulated size increase of copy is {copied}, exceeding the limit {MAX_JSON_PATCH_COPY_BYTES}"
                            )));
                        }
                    }
                    json_patch::patch_unsafe(&mut current, std::slice::from_ref(op)).map_err(
                        |e| {
                            json_patch_failed(format!(
                                "operation '/{i}' failed at path '{}': {}",
                                e.path, e.kind
                            ))
                        },
                    )?;
                }
                Ok(current)
            }
            PatchDocument::Merge(p) => {
                json_patch::merge(&mut current, p);
                Ok(current)
            }
            PatchDocument::Strategic { patch, schema } => {
                crate::endpoints::strategic::apply(&current, patch, schema).map_err(|e| {
                    if e.is_bad_request() {
                        ApiError::bad_request(format!("error applying patch: {e}"))
                    } else {
                        ApiError::new(422, "Invalid", e.to_string())
                    }
                })
            }
        }
    }
}

/// Upstream's generic 422 for a JSON patch that cannot apply: a fixed message, the reason as
/// the cause.
fn json_patch_failed(cause: String) -> ApiError {
    ApiError::new(
        422,
        "Invalid",
        "the server rejected our request due to an error in our request",
    )
    .with_details(crate::error::StatusDetails {
        causes: vec![crate::error::StatusCause {
            reason: "UnexpectedServerResponse".into(),
            message: cause,
            field: String::new(),
        }],
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_and_json_patch() {
        let cur = json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"x": 1}});
        let p = PatchDocument::parse(
            PatchKind::Merge,
            br#"{"metadata":{"labels":{"a":null,"c":"3"}}}"#,
            Default::default(),
        )
        .unwrap();
        assert_eq!(
            p.apply(cur.clone()).unwrap(),
            json!({"metadata": {"labels": {"b": "2", "c": "3"}}, "spec": {"x": 1}})
        );
        let p = PatchDocument::parse(
            PatchKind::Json,
            br#"[{"op":"replace","path":"/spec/x","value":2}]"#,
            Default::default(),
        )
        .unwrap();
        assert_eq!(p.apply(cur.clone()).unwrap()["spec"]["x"], 2);
        let p = PatchDocument::parse(
            PatchKind::Json,
            br#"[{"op":"test","path":"/spec/x","value":5}]"#,
            Default::default(),
        )
        .unwrap();
        assert_eq!(p.apply(cur).unwrap_err().code, 422);
        assert_eq!(
            PatchDocument::parse(PatchKind::Json, b"{", Default::default())
                .unwrap_err()
                .code,
            400
        );
        assert_eq!(
            PatchKind::from_content_type("application/apply-patch+yaml").unwrap(),
            PatchKind::Apply
        );
        assert_eq!(
            PatchKind::from_content_type("application/yaml")
                .unwrap_err()
                .code,
            415
        );
        assert_eq!(
            PatchKind::from_content_type("application/merge-patch+json; charset=utf-8").unwrap(),
            PatchKind::Merge
        );
    }

    #[test]
    fn failing_operations_are_named_by_their_index() {
        let p = PatchDocument::parse(
            PatchKind::Json,
            br#"[{"op":"add","path":"/spec/y","value":1},{"op":"remove","path":"/nope"}]"#,
            Default::default(),
        )
        .unwrap();
        let err = p.apply(json!({"spec": {}})).unwrap_err();
        assert_eq!(err.code, 422);
        assert_eq!(
            err.details.unwrap().causes[0].message,
            "operation '/1' failed at path '/nope': path is invalid"
        );
    }

    /// One `add` of 1 KiB and copies of `/spec` into itself, each doubling it: refused once
    /// the copies add more than 3 MiB, long before the object would reach gigabytes.
    #[test]
    fn copies_are_bounded_as_they_apply() {
        let mut ops = vec![json!({"op": "add", "path": "/spec/a", "value": "x".repeat(1024)})];
        // 14 copies would make 16 MiB: before the bound, this answered 413 only after that.
        for i in 0..14 {
            ops.push(json!({"op": "copy", "from": "/spec", "path": format!("/spec/c{i}")}));
        }
        let body = serde_json::to_vec(&ops).unwrap();
        let p = PatchDocument::parse(PatchKind::Json, &body, Default::default()).unwrap();
        let started = std::time::Instant::now();
        let err = p.apply(json!({"spec": {}})).unwrap_err();
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
        assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
        let cause = &err.details.unwrap().causes[0].message;
        assert!(
            cause.starts_with(
                "Unable to complete the copy, the accumulated size increase of copy is "
            ) && cause.ends_with(", exceeding the limit 3145728"),
            "{cause}"
        );
        // Copies within the bound apply.
        let p = PatchDocument::parse(PatchKind::Json, &body[..], Default::default()).unwrap();
        let PatchDocument::Json(mut few) = p else {
            unreachable!()
        };
        few.0.truncate(4);
        let patched = PatchDocument::Json(few).apply(json!({"spec": {}})).unwrap();
        assert!(patched.pointer("/spec/c2/c1/c0/a").is_some());
    }
}
