//! The findings ([`FieldIssue`], [`FieldIssues`]) and their texts.

use std::fmt;
use std::sync::LazyLock;

use serde_json::{Value, json};

use super::json::{decode_json, walk_json};
use super::{duplicate_fields_json, duplicate_fields_yaml, unknown_fields};
use crate::quote::go_quote;
use crate::schema::StructuralSchema;

/// The shape of a JSON patch document: a list of operations with four known fields.
static JSON_PATCH_OPS: LazyLock<StructuralSchema> = LazyLock::new(|| {
    StructuralSchema::from_openapi_value(&json!({
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "op": {"type": "string"},
                "path": {"type": "string"},
                "from": {"type": "string"},
                "value": {}
            }
        }
    }))
});

/// A key repeated in one YAML mapping.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct YamlDuplicateKey {
    /// 1-based line where the repeated key's value starts; `None` in the rare case it was not
    /// worked out (a value without scalars in a body too large for another pass).
    pub line: Option<usize>,
    /// The key as Go's `%#v` writes it: `"name"` (quoted) for strings, `1`, `true`, `<nil>`.
    pub key: String,
    /// Path of the repeated key, in the form of [`FieldIssue::Duplicate`].
    pub path: String,
}

/// One unknown or duplicate field.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum FieldIssue {
    /// A field the schema does not declare, by path: `unknown field "<path>"`.
    Unknown(String),
    /// A key given twice in one JSON object, by path: `duplicate field "<path>"`.
    Duplicate(String),
    /// A key given twice in one YAML mapping: `line <n>: key <key> already set in map`, or
    /// `duplicate field "<path>"` when the line is not known.
    YamlDuplicate(YamlDuplicateKey),
    /// A finding in the operation list of a JSON patch: `json patch <finding>`.
    InJsonPatch(Box<FieldIssue>),
}

impl FieldIssue {
    /// The finding as one warning text, e.g. `unknown field "spec.foo"`.
    pub fn message(&self) -> String {
        self.to_string()
    }

    /// A YAML repeated key worded with its line (grouped under `yaml: unmarshal errors:`).
    fn is_yaml_duplicate(&self) -> bool {
        matches!(self, FieldIssue::YamlDuplicate(d) if d.line.is_some())
    }
}

impl fmt::Display for FieldIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldIssue::Unknown(path) => write!(f, "unknown field {}", go_quote(path)),
            FieldIssue::Duplicate(path) => write!(f, "duplicate field {}", go_quote(path)),
            FieldIssue::YamlDuplicate(d) => match d.line {
                Some(line) => write!(f, "line {line}: key {} already set in map", d.key),
                None => write!(f, "duplicate field {}", go_quote(&d.path)),
            },
            FieldIssue::InJsonPatch(inner) => write!(f, "json patch {inner}"),
        }
    }
}

/// The findings of one write body, in the order a Kubernetes API server reports them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldIssues {
    /// The findings, in report order.
    pub issues: Vec<FieldIssue>,
}

impl FieldIssues {
    /// Findings of a JSON create or update body: unknown and duplicate fields interleaved in
    /// document order.
    ///
    /// Malformed JSON yields no findings (the decoder reports the syntax error).
    pub fn from_json(body: &[u8], schema: &StructuralSchema) -> Self {
        Self::decode_json(body, schema)
            .map(|(_, issues)| issues)
            .unwrap_or_default()
    }

    /// A JSON create or update body decoded (the value and the errors of
    /// `serde_json::from_slice::<Value>`) with the findings of [`from_json`](Self::from_json),
    /// in one pass over its bytes.
    pub fn decode_json(
        body: &[u8],
        schema: &StructuralSchema,
    ) -> Result<(Value, Self), serde_json::Error> {
        let (value, found) = decode_json(body, schema.root())?;
        Ok((
            value,
            Self {
                issues: found.issues,
            },
        ))
    }

    /// Findings of a YAML create or update body: its duplicate keys, then the unknown fields
    /// of `object` (the body as decoded, before any defaulting) in sorted-key order.
    pub fn from_yaml(body: &[u8], object: &Value, schema: &StructuralSchema) -> Self {
        let mut issues: Vec<FieldIssue> = duplicate_fields_yaml(body)
            .into_iter()
            .map(FieldIssue::YamlDuplicate)
            .collect();
        issues.extend(
            unknown_fields(object, schema)
                .into_iter()
                .map(FieldIssue::Unknown),
        );
        Self { issues }
    }

    /// Findings of a JSON merge patch: duplicate keys of the patch document, then the unknown
    /// fields of `patched` (the object after the patch) in sorted-key order.
    pub fn merge_patch(patch: &[u8], patched: &Value, schema: &StructuralSchema) -> Self {
        let mut issues: Vec<FieldIssue> = duplicate_fields_json(patch)
            .into_iter()
            .map(FieldIssue::Duplicate)
            .collect();
        issues.extend(
            unknown_fields(patched, schema)
                .into_iter()
                .map(FieldIssue::Unknown),
        );
        Self { issues }
    }

    /// Findings of a strategic merge patch: duplicate keys of the patch document, then the
    /// unknown fields of `patched` sorted by their text.
    pub fn strategic_merge_patch(patch: &[u8], patched: &Value, schema: &StructuralSchema) -> Self {
        let mut issues: Vec<FieldIssue> = duplicate_fields_json(patch)
            .into_iter()
            .map(FieldIssue::Duplicate)
            .collect();
        let mut unknown: Vec<FieldIssue> = unknown_fields(patched, schema)
            .into_iter()
            .map(FieldIssue::Unknown)
            .collect();
        unknown.sort_by_cached_key(FieldIssue::message);
        issues.extend(unknown);
        Self { issues }
    }

    /// Findings of a JSON patch: unknown (other than `op`, `path`, `from`, `value`) and
    /// duplicate keys of its operations as [`FieldIssue::InJsonPatch`], then the unknown fields
    /// of `patched` in sorted-key order.
    pub fn json_patch(patch: &[u8], patched: &Value, schema: &StructuralSchema) -> Self {
        let mut issues: Vec<FieldIssue> = walk_json(patch, JSON_PATCH_OPS.root())
            .map(|found| found.issues)
            .unwrap_or_default()
            .into_iter()
            .map(|issue| FieldIssue::InJsonPatch(Box::new(issue)))
            .collect();
        issues.extend(
            unknown_fields(patched, schema)
                .into_iter()
                .map(FieldIssue::Unknown),
        );
        Self { issues }
    }

    /// Findings of a server-side apply body (YAML, or JSON read as YAML): its duplicate keys.
    /// Unknown fields of an apply are not reported here.
    pub fn apply_patch(patch: &[u8]) -> Self {
        let issues = duplicate_fields_yaml(patch)
            .into_iter()
            .map(FieldIssue::YamlDuplicate)
            .collect();
        Self { issues }
    }

    /// Whether nothing was found.
    pub fn is_empty(&self) -> bool {
        self.issues.is_empty()
    }

    /// Paths of the unknown fields, in report order (JSON patch operations excluded).
    pub fn unknown(&self) -> Vec<&str> {
        self.issues
            .iter()
            .filter_map(|issue| match issue {
                FieldIssue::Unknown(path) => Some(path.as_str()),
                _ => None,
            })
            .collect()
    }

    /// Paths of the repeated keys, JSON and YAML, in report order (JSON patch operations
    /// excluded).
    pub fn duplicate(&self) -> Vec<&str> {
        self.issues
            .iter()
            .filter_map(|issue| match issue {
                FieldIssue::Duplicate(path) => Some(path.as_str()),
                FieldIssue::YamlDuplicate(d) => Some(d.path.as_str()),
                _ => None,
            })
            .collect()
    }

    /// One warning text per finding, in report order (for `fieldValidation=Warn`).
    pub fn warnings(&self) -> Vec<String> {
        self.issues.iter().map(FieldIssue::message).collect()
    }

    /// The failure text for `fieldValidation=Strict`: `strict decoding error: ` and the
    /// findings joined with `, `, the YAML duplicate keys grouped into one leading item
    /// `yaml: unmarshal errors:\n  line 5: key "name" already set in map\n  line 9: ...`.
    ///
    /// Create and update send it inside [`FieldIssues::strict_request_message`]; patches other
    /// than apply as the detail of a 422 Invalid cause on field `patch`.
    pub fn strict_message(&self) -> String {
        let mut items: Vec<String> = Vec::new();
        let yaml = self.yaml_block();
        if !yaml.is_empty() {
            items.push(format!("yaml: unmarshal errors:\n{yaml}"));
        }
        items.extend(
            self.issues
                .iter()
                .filter(|issue| !issue.is_yaml_duplicate())
                .map(FieldIssue::message),
        );
        format!("strict decoding error: {}", items.join(", "))
    }

    /// The 400 BadRequest message of a create or update under `fieldValidation=Strict`:
    /// `<body_kind> in version "<body_version>" cannot be handled as a <kind>: ` and
    /// [`FieldIssues::strict_message`].
    ///
    /// `body_kind` and `body_version` are the body's `kind` and the version part of its
    /// `apiVersion`, each defaulted to the served kind and version when the body omits it; `kind`
    /// is the resource's kind.
    pub fn strict_request_message(
        &self,
        body_kind: &str,
        body_version: &str,
        kind: &str,
    ) -> String {
        format!(
            "{body_kind} in version {} cannot be handled as a {kind}: {}",
            go_quote(body_version),
            self.strict_message()
        )
    }

    /// The failure text of a server-side apply under `fieldValidation=Strict`, sent as a 400
    /// BadRequest message: `error strict decoding patch: error converting YAML to JSON: yaml:
    /// unmarshal errors:` followed by each duplicate key on its own line indented by two spaces.
    pub fn apply_strict_message(&self) -> String {
        let lines: Vec<String> = self
            .issues
            .iter()
            .map(|issue| format!("  {issue}"))
            .collect();
        format!(
            "error strict decoding patch: error converting YAML to JSON: yaml: unmarshal errors:\n{}",
            lines.join("\n")
        )
    }

    /// The YAML duplicate keys, each on its own line indented by two spaces.
    fn yaml_block(&self) -> String {
        self.issues
            .iter()
            .filter(|issue| issue.is_yaml_duplicate())
            .map(|issue| format!("  {issue}"))
            .collect::<Vec<_>>()
            .join("\n")
    }
}
