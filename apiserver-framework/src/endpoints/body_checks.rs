//! `fieldValidation` applied to write bodies: unknown and duplicate fields fail the request
//! (`Strict`), become `Warning` headers (`Warn`, the default) or are ignored (`Ignore`). Unknown
//! fields are never stored either way: objects are decoded into their Rust types.

use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::endpoints::patch::PatchKind;
use crate::error::{ApiError, FieldError};
use crate::registry::field_validation::FieldIssues;
use crate::registry::rest::options::FieldValidation;
use crate::resource::ResourceInfo;
use crate::schema::StructuralSchema;

/// The warnings a request collects for its response; shared with patch closures, which may run
/// more than once (only the last run's findings count).
#[derive(Clone, Debug, Default)]
pub struct Collected(Arc<Mutex<Vec<String>>>);

impl Collected {
    /// Replaces the collected texts.
    pub fn set(&self, texts: Vec<String>) {
        if let Ok(mut guard) = self.0.lock() {
            *guard = texts;
        }
    }

    /// The collected texts.
    pub fn texts(&self) -> Vec<String> {
        self.0.lock().map(|g| g.clone()).unwrap_or_default()
    }
}

/// What the findings of a create or update body `object` come to under `mode` (a JSON body's
/// from [`FieldIssues::decode_json`], a YAML one's from [`FieldIssues::from_yaml`]):
/// `Strict` findings answer 400 as upstream,
/// `<Kind> in version "<v>" cannot be handled as a <Kind>: strict decoding error: …`; `Warn`
/// findings become `Warning` texts; `Ignore` keeps none.
pub fn answer(
    info: &ResourceInfo,
    mode: FieldValidation,
    issues: FieldIssues,
    object: &Value,
    warnings: &Collected,
) -> Result<(), ApiError> {
    if mode == FieldValidation::Ignore || issues.is_empty() {
        return Ok(());
    }
    if mode == FieldValidation::Strict {
        let body_kind = object
            .get("kind")
            .and_then(Value::as_str)
            .filter(|k| !k.is_empty())
            .unwrap_or(&info.kind);
        let body_version = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .map(|v| v.rsplit('/').next().unwrap_or(v))
            .filter(|v| !v.is_empty())
            .unwrap_or(&info.version);
        return Err(ApiError::bad_request(issues.strict_request_message(
            body_kind,
            body_version,
            &info.kind,
        )));
    }
    warnings.set(issues.warnings());
    Ok(())
}

/// Checks a patch and the object it produced. `Strict` findings answer 422 as upstream: an
/// Invalid error on field `patch` whose detail is the strict decoding text.
pub fn check_patch(
    schema: &StructuralSchema,
    mode: FieldValidation,
    kind: PatchKind,
    patch: &[u8],
    patched: &Value,
    warnings: &Collected,
) -> Result<(), ApiError> {
    if mode == FieldValidation::Ignore {
        return Ok(());
    }
    let issues = match kind {
        PatchKind::Json => FieldIssues::json_patch(patch, patched, schema),
        PatchKind::Merge => FieldIssues::merge_patch(patch, patched, schema),
        PatchKind::Strategic => FieldIssues::strategic_merge_patch(patch, patched, schema),
        PatchKind::Apply => FieldIssues::apply_patch(patch),
    };
    if issues.is_empty() {
        warnings.set(Vec::new());
        return Ok(());
    }
    if mode == FieldValidation::Strict {
        return Err(ApiError::invalid_with(
            "",
            "",
            "",
            "",
            &[FieldError::invalid(
                "patch",
                patched.to_string(),
                issues.strict_message(),
            )],
        ));
    }
    warnings.set(issues.warnings());
    Ok(())
}
