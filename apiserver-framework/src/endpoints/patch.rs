//! Patch documents: JSON Patch (RFC 6902), JSON Merge Patch (RFC 7386) and strategic merge
//! patch (see [`crate::endpoints::strategic`]).

use serde_json::Value;

use crate::error::ApiError;

/// The patch media types served.
pub const PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

/// Most operations a JSON patch may have (as upstream).
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// The largest object a patch may produce, as large as a request body may be.
pub const MAX_PATCH_RESULT_BYTES: usize = crate::endpoints::handlers::MAX_BODY_BYTES;

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
            _ => Err(ApiError::unsupported_media_type(PATCH_TYPES)),
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
        /// The structural schema of the patched object (`Value::Null` for none).
        schema: std::sync::Arc<Value>,
    },
}

impl PatchDocument {
    /// Parses a patch body; malformed patches answer 400, too many operations 413. `schema`
    /// is the structural schema of the patched object, which strategic merge patches follow.
    pub fn parse(
        kind: PatchKind,
        body: &[u8],
        schema: std::sync::Arc<Value>,
    ) -> Result<Self, ApiError> {
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
                // Upstream's generic 422: a fixed message, the library's error as the cause.
                json_patch::patch(&mut current, p).map_err(|e| {
                    ApiError::new(
                        422,
                        "Invalid",
                        "the server rejected our request due to an error in our request",
                    )
                    .with_details(crate::error::StatusDetails {
                        causes: vec![crate::error::StatusCause {
                            reason: "UnexpectedServerResponse".into(),
                            message: e.to_string(),
                            field: String::new(),
                        }],
                        ..Default::default()
                    })
                })?;
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
}
