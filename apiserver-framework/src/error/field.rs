//! Field errors: what is wrong with which field of an object, as upstream's
//! `k8s.io/apimachinery/pkg/util/validation/field`. A validation returns them; an
//! [`ApiError::invalid`](super::ApiError::invalid) carries them as the causes of a 422.

use std::fmt;

use serde_json::Value;

use super::StatusCause;

/// What is wrong with a field, mirroring upstream's `field.ErrorType`.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldErrorKind {
    /// A required value is missing (`FieldValueRequired`).
    Required,
    /// The value is invalid (`FieldValueInvalid`).
    Invalid(Value),
    /// The value is not one of the supported ones (`FieldValueNotSupported`).
    NotSupported(Value, Vec<String>),
    /// The value is not allowed (`FieldValueForbidden`).
    Forbidden,
    /// The value duplicates another (`FieldValueDuplicate`).
    Duplicate(Value),
    /// The value is too long (`FieldValueTooLong`).
    TooLong,
    /// A referenced value was not found (`FieldValueNotFound`).
    NotFound(Value),
    /// The value has the wrong type (`FieldValueTypeInvalid`).
    TypeInvalid(Value),
    /// A list or map has too many items; the value is how many (`FieldValueTooMany`).
    TooMany(Value),
}

/// One validation error: a field path, what is wrong, and an optional detail.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldError {
    /// The field path, e.g. `spec.reference` or `items[0].name`.
    pub field: String,
    /// What is wrong.
    pub kind: FieldErrorKind,
    /// More text (may be empty).
    pub detail: String,
}

impl FieldError {
    /// A required value is missing.
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(field, FieldErrorKind::Required, detail)
    }

    /// The value is invalid.
    pub fn invalid(
        field: impl Into<String>,
        value: impl Into<Value>,
        detail: impl Into<String>,
    ) -> Self {
        Self::new(field, FieldErrorKind::Invalid(value.into()), detail)
    }

    /// The value is not one of `supported`.
    pub fn not_supported(
        field: impl Into<String>,
        value: impl Into<Value>,
        supported: &[&str],
    ) -> Self {
        Self::new(
            field,
            FieldErrorKind::NotSupported(
                value.into(),
                supported.iter().map(|s| s.to_string()).collect(),
            ),
            "",
        )
    }

    /// The value is longer than `max` bytes (`Too long: may not be more than <max> bytes`,
    /// upstream's `field.TooLong` of the pinned release).
    pub fn too_long(field: impl Into<String>, max: usize) -> Self {
        let unit = if max == 1 { "byte" } else { "bytes" };
        Self::new(
            field,
            FieldErrorKind::TooLong,
            format!("may not be more than {max} {unit}"),
        )
    }

    /// The value is forbidden.
    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(field, FieldErrorKind::Forbidden, detail)
    }

    /// Any kind of error.
    pub fn new(field: impl Into<String>, kind: FieldErrorKind, detail: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            kind,
            detail: detail.into(),
        }
    }

    /// The upstream cause type, e.g. `FieldValueInvalid`.
    pub fn cause_type(&self) -> &'static str {
        match self.kind {
            FieldErrorKind::Required => "FieldValueRequired",
            FieldErrorKind::Invalid(_) => "FieldValueInvalid",
            FieldErrorKind::NotSupported(..) => "FieldValueNotSupported",
            FieldErrorKind::Forbidden => "FieldValueForbidden",
            FieldErrorKind::Duplicate(_) => "FieldValueDuplicate",
            FieldErrorKind::TooLong => "FieldValueTooLong",
            FieldErrorKind::NotFound(_) => "FieldValueNotFound",
            FieldErrorKind::TypeInvalid(_) => "FieldValueTypeInvalid",
            FieldErrorKind::TooMany(_) => "FieldValueTooMany",
        }
    }

    /// The message without the field path (the cause's `message`).
    pub fn body(&self) -> String {
        let (text, value, mut detail) = match &self.kind {
            FieldErrorKind::Required => ("Required value", None, self.detail.clone()),
            FieldErrorKind::Invalid(v) => ("Invalid value", Some(v), self.detail.clone()),
            FieldErrorKind::NotSupported(v, supported) => {
                let list = supported
                    .iter()
                    .map(|s| format!("{s:?}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                let d = if supported.is_empty() {
                    self.detail.clone()
                } else {
                    format!("supported values: {list}")
                };
                ("Unsupported value", Some(v), d)
            }
            FieldErrorKind::Forbidden => ("Forbidden", None, self.detail.clone()),
            FieldErrorKind::Duplicate(v) => ("Duplicate value", Some(v), self.detail.clone()),
            FieldErrorKind::TooLong => ("Too long", None, self.detail.clone()),
            FieldErrorKind::NotFound(v) => ("Not found", Some(v), self.detail.clone()),
            FieldErrorKind::TypeInvalid(v) => ("Invalid value", Some(v), self.detail.clone()),
            FieldErrorKind::TooMany(v) => ("Too many", Some(v), self.detail.clone()),
        };
        let mut out = text.to_string();
        if let Some(v) = value {
            out.push_str(": ");
            out.push_str(&render_value(v));
        }
        if !detail.is_empty() {
            out.push_str(": ");
            out.push_str(&std::mem::take(&mut detail));
        }
        out
    }

    /// The `details.causes[]` entry for this error.
    pub fn to_cause(&self) -> StatusCause {
        StatusCause {
            reason: self.cause_type().into(),
            message: self.body(),
            field: self.field.clone(),
        }
    }
}

/// Renders a value the way upstream's field errors do: strings quoted, numbers and booleans
/// bare, anything else as JSON.
fn render_value(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".into(),
        other => other.to_string(),
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_match_upstream_shapes() {
        let e = FieldError::required("spec.reference", "");
        assert_eq!(e.to_string(), "spec.reference: Required value");
        let e = FieldError::invalid("spec.size", json!(-1), "must be >= 0");
        assert_eq!(e.to_string(), "spec.size: Invalid value: -1: must be >= 0");
        let e = FieldError::invalid("metadata.name", "A_B", "bad");
        assert_eq!(e.body(), "Invalid value: \"A_B\": bad");
        let e = FieldError::not_supported("spec.referenceType", "X", &["Flunder", "Fischer"]);
        assert_eq!(
            e.to_string(),
            "spec.referenceType: Unsupported value: \"X\": supported values: \"Flunder\", \"Fischer\""
        );
        assert_eq!(e.to_cause().reason, "FieldValueNotSupported");
    }
}
