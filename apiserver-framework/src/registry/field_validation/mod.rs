//! Detection of unknown and duplicate fields in write bodies, for `fieldValidation`
//! (`Ignore` / `Warn` / `Strict`).
//!
//! This module only finds the problems and words them; handlers decide what to do with them:
//! with `Warn` (also the default when the parameter is absent) each [`FieldIssue`] becomes one
//! `Warning` header (see `endpoints::warning`), with `Strict` the request fails, with
//! `Ignore` nothing is checked.
//!
//! # Wording
//!
//! Paths join object keys with `.` and add list indexes as `[i]`, with no leading dot:
//! `spec.template.spec.containers[0].image`; a document whose top level is a list starts with
//! the index (`[1].path`). Map keys are appended as they are, dots included
//! (`metadata.labels.app.kubernetes.io/name`). The path is quoted Go-style (`"` and `\`
//! escaped, control and other non-printable characters as `\n`, `\x01`, `\u00a0`).
//!
//! * JSON: `unknown field "<path>"`, `duplicate field "<path>"`.
//! * YAML duplicate keys: `line <n>: key <key> already set in map`, where `<n>` is the 1-based
//!   line where the repeated key's *value* starts and `<key>` is the key as written by Go's `%#v`
//!   (`"name"` for strings, `1` / `true` for plain numbers and booleans).
//! * JSON patch operation lists: the item texts prefixed with `json patch `.
//!
//! Failure texts for `Strict` ([`FieldIssues::strict_message`]): `strict decoding error: `
//! followed by the findings joined with `, `; a YAML body's duplicate keys form the first item,
//! `yaml: unmarshal errors:` followed by each finding on its own line indented by two spaces.
//! Create and update answer 400 BadRequest with that text behind
//! `<Kind> in version "<version>" cannot be handled as a <Kind>: `
//! ([`FieldIssues::strict_request_message`]). Patches (merge, JSON, strategic) answer 422 Invalid
//! with kind and name empty and one cause on field `patch` whose value is the patched object and
//! whose detail is that text. Apply answers 400 BadRequest with
//! [`FieldIssues::apply_strict_message`].
//!
//! # Which fields are known
//!
//! Against the resource's structural schema model ([`crate::schema::StructuralSchema`], built
//! once from its OpenAPI v3 schema): `properties` declare fields,
//! `additionalProperties` makes a map whose values follow its schema, `items` gives list items,
//! `anyOf` / `oneOf` / `allOf` add their branches' declarations, `$ref` to `#/...` is followed.
//! An object with `x-kubernetes-preserve-unknown-fields: true` may hold any key (its declared
//! properties are still checked), and so may an object whose schema says nothing about keys (`{}`, `{"type":"object"}`, a scalar type,
//! `x-kubernetes-int-or-string`). At the top level `apiVersion` and `kind` are always known and
//! `metadata` is checked against `ObjectMeta`; the same holds under
//! `x-kubernetes-embedded-resource: true`.
//!
//! The value of an unknown field is not looked into. Duplicates are reported for every key of
//! maps and free-form objects but only for declared fields of typed objects, so a key that is
//! both unknown and repeated is reported once, as unknown. Identical findings are reported once
//! and one check stops after `MAX_ISSUES` findings.

mod collect;
mod issues;
mod json;
#[cfg(test)]
mod tests;
mod unknown;
mod yaml;

use serde_json::Value;

use crate::schema::StructuralSchema;
use collect::Found;
use json::walk_json;
use unknown::unknown_in_value;

pub use issues::{FieldIssue, FieldIssues, YamlDuplicateKey};
pub(crate) use yaml::duplicate_fields_yaml;

/// Most findings one check reports; later ones are dropped.
pub(crate) const MAX_ISSUES: usize = 100;

/// Paths of the fields of `object` that `schema` does not declare, at most [`MAX_ISSUES`].
///
/// Object keys are visited in sorted order, list items in order; the value of an unknown field
/// is not looked into. `schema` is the resource's model; `apiVersion` and `kind` are always
/// known at the top and `metadata` is checked against `ObjectMeta`.
pub(crate) fn unknown_fields(object: &Value, schema: &StructuralSchema) -> Vec<String> {
    let mut found = Found::default();
    let mut path = String::new();
    unknown_in_value(object, schema.root(), &mut path, &mut found);
    found.into_paths()
}

/// Paths of keys given more than once in the same object of a JSON document, in document order,
/// each reported once, at most [`MAX_ISSUES`].
///
/// Every object of the document counts (nothing is known about its schema). Malformed JSON
/// yields an empty list: the decoder that reads the body reports the syntax error.
pub(crate) fn duplicate_fields_json(body: &[u8]) -> Vec<String> {
    let schema = StructuralSchema::none();
    walk_json(body, schema.root().absent())
        .map(Found::into_paths)
        .unwrap_or_default()
}
