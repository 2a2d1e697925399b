//! Detection of unknown and duplicate fields in write bodies, for `fieldValidation`
//! (`Ignore` / `Warn` / `Strict`).
//!
//! This module only finds the problems and words them; handlers decide what to do with them:
//! with `Warn` (also the default when the parameter is absent) each [`FieldIssue`] becomes one
//! `Warning` header (see [`crate::endpoints::warning`]), with `Strict` the request fails, with
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
//! Against a structural schema (every subschema inlined): `properties` declare fields,
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
//! and one check stops after [`MAX_ISSUES`] findings.

use std::collections::HashSet;
use std::fmt::{self, Write as _};
use std::sync::LazyLock;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, IgnoredAny, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};
use serde_json::{Value, json};

/// Most findings one check reports; later ones are dropped.
pub const MAX_ISSUES: usize = 100;

/// The structural schema of `ObjectMeta`, against which `metadata` is checked.
static OBJECT_META: LazyLock<Value> =
    LazyLock::new(crate::schema::structural_schema_of::<ObjectMeta>);

/// The shape of a JSON patch document: a list of operations with four known fields.
static JSON_PATCH_OPS: LazyLock<Value> = LazyLock::new(|| {
    json!({
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
    })
});

// ---------------------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------------------

/// Paths of the fields of `object` that `schema` does not declare, at most [`MAX_ISSUES`].
///
/// Object keys are visited in sorted order, list items in order; the value of an unknown field
/// is not looked into. `schema` is the resource's structural schema; `apiVersion` and `kind` are
/// always known at the top and `metadata` is checked against `ObjectMeta`.
pub fn unknown_fields(object: &Value, schema: &Value) -> Vec<String> {
    let mut found = Found::default();
    let mut path = String::new();
    unknown_in_value(
        object,
        &Shape::of(schema, schema),
        true,
        schema,
        &mut path,
        &mut found,
    );
    found.into_paths()
}

/// Paths of keys given more than once in the same object of a JSON document, in document order,
/// each reported once, at most [`MAX_ISSUES`].
///
/// Every object of the document counts (nothing is known about its schema). Malformed JSON
/// yields an empty list: the decoder that reads the body reports the syntax error.
pub fn duplicate_fields_json(body: &[u8]) -> Vec<String> {
    let empty = Value::Null;
    walk_json(body, Shape::free(), false, &empty)
        .map(Found::into_paths)
        .unwrap_or_default()
}

/// Keys given more than once in the same mapping of a YAML document, in the order they are
/// reported (a repeated key after anything repeated inside its value), at most [`MAX_ISSUES`].
///
/// Malformed YAML, or a stream of several documents, yields an empty list.
pub fn duplicate_fields_yaml(body: &[u8]) -> Vec<YamlDuplicateKey> {
    let mut walk = YamlWalk::new(None);
    if yaml_walk(body, &mut walk).is_err() {
        return Vec::new();
    }
    let mut lines = walk.lines;
    let mut found = walk.found;
    found.truncate(MAX_ISSUES);
    // A value without any scalar (`{}`, `[]`) takes one more pass that stops at it, as long as
    // those passes stay within the budget.
    let mut budget = YAML_PASS_BUDGET / body.len().max(1);
    for pending in &found {
        if lines[pending.slot].is_some() || budget == 0 {
            continue;
        }
        budget -= 1;
        let mut stop = YamlWalk::new(Some(pending.slot));
        if let Err(err) = yaml_walk(body, &mut stop)
            && err.to_string().contains(PROBE)
        {
            lines[pending.slot] = err.location().map(|l| l.line());
        }
    }
    found
        .into_iter()
        .map(|pending| YamlDuplicateKey {
            line: lines[pending.slot],
            key: pending.key,
            path: pending.path,
        })
        .collect()
}

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
    pub fn from_json(body: &[u8], schema: &Value) -> Self {
        let issues = walk_json(body, Shape::of(schema, schema), true, schema)
            .map(|found| found.issues)
            .unwrap_or_default();
        Self { issues }
    }

    /// Findings of a YAML create or update body: its duplicate keys, then the unknown fields
    /// of `object` (the body as decoded, before any defaulting) in sorted-key order.
    pub fn from_yaml(body: &[u8], object: &Value, schema: &Value) -> Self {
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
    pub fn merge_patch(patch: &[u8], patched: &Value, schema: &Value) -> Self {
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
    pub fn strategic_merge_patch(patch: &[u8], patched: &Value, schema: &Value) -> Self {
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
    pub fn json_patch(patch: &[u8], patched: &Value, schema: &Value) -> Self {
        let ops = &*JSON_PATCH_OPS;
        let mut issues: Vec<FieldIssue> = walk_json(patch, Shape::of(ops, ops), false, ops)
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

// ---------------------------------------------------------------------------------------------
// Schema reading
// ---------------------------------------------------------------------------------------------

/// The schemas that apply at one place of a document (a schema and the branches of its
/// `anyOf` / `oneOf` / `allOf`), or free form.
#[derive(Clone, Default)]
struct Shape<'s> {
    schemas: Vec<&'s Value>,
    /// Some applicable schema says nothing about keys or items.
    free: bool,
}

/// Where a key of an object leads.
enum Slot<'s> {
    /// A declared field, a map entry or a key of a free-form object: check for repeats and
    /// descend with this shape.
    Known(Shape<'s>),
    /// Not declared: report, do not descend.
    Unknown,
}

impl<'s> Shape<'s> {
    fn free() -> Self {
        Shape {
            schemas: Vec::new(),
            free: true,
        }
    }

    fn of(schema: &'s Value, root: &'s Value) -> Self {
        let mut shape = Shape::default();
        shape.add(schema, root, 0);
        shape
    }

    fn object_meta() -> Self {
        Shape::of(&OBJECT_META, &OBJECT_META)
    }

    fn add(&mut self, schema: &'s Value, root: &'s Value, depth: usize) {
        let map = match schema {
            Value::Object(map) => map,
            Value::Bool(true) => {
                self.free = true;
                return;
            }
            _ => return,
        };
        if depth > 32 {
            self.free = true;
            return;
        }
        if let Some(Value::String(reference)) = map.get("$ref") {
            match resolve(root, reference) {
                Some(target) => self.add(target, root, depth + 1),
                None => self.free = true,
            }
        }
        self.schemas.push(schema);
        for keyword in ["allOf", "anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = map.get(keyword) {
                for branch in branches {
                    self.add(branch, root, depth + 1);
                }
            }
        }
    }

    fn flag(&self, name: &str) -> bool {
        self.schemas
            .iter()
            .any(|s| s.get(name) == Some(&Value::Bool(true)))
    }

    /// Where `key` of an object at this place leads; `top` for the document's top level.
    fn slot(&self, key: &str, top: bool, root: &'s Value) -> Slot<'s> {
        let embedded = top || self.flag("x-kubernetes-embedded-resource");
        if embedded {
            match key {
                "apiVersion" | "kind" => return Slot::Known(Shape::free()),
                "metadata" => return Slot::Known(Shape::object_meta()),
                _ => {}
            }
        }
        let mut declared = false;
        let mut typed = false;
        let mut field = Shape::default();
        let mut map_values: Option<Shape<'s>> = None;
        for schema in &self.schemas {
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                typed = true;
                if let Some(property) = properties.get(key) {
                    declared = true;
                    field.add(property, root, 0);
                }
            }
            match schema.get("additionalProperties") {
                Some(Value::Bool(false)) => typed = true,
                Some(values @ (Value::Bool(true) | Value::Object(_))) => {
                    map_values
                        .get_or_insert_with(Shape::default)
                        .add(values, root, 0);
                }
                _ => {}
            }
        }
        if declared {
            return Slot::Known(field);
        }
        if let Some(values) = map_values {
            return Slot::Known(values);
        }
        if self.free || !typed || self.flag("x-kubernetes-preserve-unknown-fields") {
            return Slot::Known(Shape::free());
        }
        Slot::Unknown
    }

    /// The shape of the items of a list at this place.
    fn items(&self, root: &'s Value) -> Shape<'s> {
        let mut out = Shape::default();
        let mut any = false;
        for schema in &self.schemas {
            match schema.get("items") {
                Some(Value::Array(list)) => {
                    any = true;
                    for item in list {
                        out.add(item, root, 0);
                    }
                }
                Some(item) => {
                    any = true;
                    out.add(item, root, 0);
                }
                None => {}
            }
        }
        if self.free || !any {
            out.free = true;
        }
        out
    }
}

/// The schema a local `$ref` (`#/components/schemas/Name`) points at: looked up from the
/// document's root, else from the first nested schema that holds that pointer (a field's
/// schema built on its own keeps its recursive definitions under its own `components`).
fn resolve<'s>(root: &'s Value, reference: &str) -> Option<&'s Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if let Some(target) = node.pointer(pointer) {
            return Some(target);
        }
        match node {
            Value::Object(map) => stack.extend(map.values().rev()),
            Value::Array(list) => stack.extend(list.iter().rev()),
            _ => {}
        }
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Collecting
// ---------------------------------------------------------------------------------------------

/// Findings of one check: de-duplicated, at most [`MAX_ISSUES`].
#[derive(Default)]
struct Found {
    issues: Vec<FieldIssue>,
    seen: HashSet<FieldIssue>,
}

impl Found {
    fn push(&mut self, issue: FieldIssue) {
        if self.issues.len() < MAX_ISSUES && self.seen.insert(issue.clone()) {
            self.issues.push(issue);
        }
    }

    fn into_paths(self) -> Vec<String> {
        self.issues
            .into_iter()
            .filter_map(|issue| match issue {
                FieldIssue::Unknown(path) | FieldIssue::Duplicate(path) => Some(path),
                _ => None,
            })
            .collect()
    }
}

/// Appends `.key` (or `key` at the start) to `path`; returns the length to truncate back to.
fn push_key(path: &mut String, key: &str) -> usize {
    let len = path.len();
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
    len
}

/// Appends `[index]` to `path`; returns the length to truncate back to.
fn push_index(path: &mut String, index: usize) -> usize {
    let len = path.len();
    let _ = write!(path, "[{index}]");
    len
}

// ---------------------------------------------------------------------------------------------
// Unknown fields of a decoded value
// ---------------------------------------------------------------------------------------------

fn unknown_in_value<'s>(
    value: &Value,
    shape: &Shape<'s>,
    top: bool,
    root: &'s Value,
    path: &mut String,
    found: &mut Found,
) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            for key in keys {
                let mark = push_key(path, key);
                match shape.slot(key, top, root) {
                    Slot::Known(child) => {
                        unknown_in_value(&map[key.as_str()], &child, false, root, path, found)
                    }
                    Slot::Unknown => found.push(FieldIssue::Unknown(path.clone())),
                }
                path.truncate(mark);
            }
        }
        Value::Array(list) => {
            let items = shape.items(root);
            for (i, item) in list.iter().enumerate() {
                let mark = push_index(path, i);
                unknown_in_value(item, &items, false, root, path, found);
                path.truncate(mark);
            }
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// JSON bodies: one pass over the document, unknown and duplicate fields in document order
// ---------------------------------------------------------------------------------------------

struct JsonWalk<'s> {
    root: &'s Value,
    path: String,
    found: Found,
}

fn walk_json<'s>(body: &[u8], shape: Shape<'s>, top: bool, root: &'s Value) -> Option<Found> {
    let mut walk = JsonWalk {
        root,
        path: String::new(),
        found: Found::default(),
    };
    let mut de = serde_json::Deserializer::from_slice(body);
    JsonNode {
        walk: &mut walk,
        shape,
        top,
    }
    .deserialize(&mut de)
    .ok()?;
    de.end().ok()?;
    Some(walk.found)
}

/// One value of a JSON document, with the schemas that apply to it.
struct JsonNode<'w, 's> {
    walk: &'w mut JsonWalk<'s>,
    shape: Shape<'s>,
    top: bool,
}

impl<'de> DeserializeSeed<'de> for JsonNode<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for JsonNode<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let items = self.shape.items(self.walk.root);
        let mut index = 0;
        loop {
            let mark = push_index(&mut self.walk.path, index);
            let item = seq.next_element_seed(JsonNode {
                walk: &mut *self.walk,
                shape: items.clone(),
                top: false,
            })?;
            self.walk.path.truncate(mark);
            if item.is_none() {
                return Ok(());
            }
            index += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen: HashSet<String> = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let mark = push_key(&mut self.walk.path, &key);
            match self.shape.slot(&key, self.top, self.walk.root) {
                Slot::Known(child) => {
                    if !seen.insert(key) {
                        let path = self.walk.path.clone();
                        self.walk.found.push(FieldIssue::Duplicate(path));
                    }
                    map.next_value_seed(JsonNode {
                        walk: &mut *self.walk,
                        shape: child,
                        top: false,
                    })?;
                }
                Slot::Unknown => {
                    let path = self.walk.path.clone();
                    self.walk.found.push(FieldIssue::Unknown(path));
                    map.next_value::<IgnoredAny>()?;
                }
            }
            self.walk.path.truncate(mark);
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// YAML bodies: repeated keys with the line of their value
// ---------------------------------------------------------------------------------------------

/// Message of the errors raised on purpose to learn the position of a value.
const PROBE: &str = "field-validation position probe";

/// Bytes the extra passes of [`duplicate_fields_yaml`] may parse in all.
const YAML_PASS_BUDGET: usize = 4 << 20;

/// A repeated key, reported once its value has been walked.
struct Pending {
    /// Index into [`YamlWalk::lines`]; repeated keys are numbered in the order they are read.
    slot: usize,
    key: String,
    path: String,
}

/// State of one pass over a YAML document.
///
/// The YAML deserializer tells positions only in its errors. Raising an error on a scalar
/// leaves it in a consistent state (the scalar is consumed), so the pass raises one at the first
/// scalar of each repeated key's value, reads the position from it and carries on. For block
/// mappings and lists that scalar starts on the line where the value starts. (Known
/// inexactness: a value that is an alias gives the line of its anchor, and a list item whose
/// content starts on the line after its `-` gives the content's line.)
struct YamlWalk {
    path: String,
    found: Vec<Pending>,
    /// Line of the value of each repeated key, by slot.
    lines: Vec<Option<usize>>,
    /// The slot whose line the next scalar gives: the value of a repeated key starts where its
    /// first scalar is (values starting with an empty collection are left to the extra pass).
    want: Option<usize>,
    /// Stop the pass with an error at the value of this slot (to learn where it starts when
    /// it holds no scalar).
    stop_at: Option<usize>,
}

impl YamlWalk {
    fn new(stop_at: Option<usize>) -> Self {
        YamlWalk {
            path: String::new(),
            found: Vec::new(),
            lines: Vec::new(),
            want: None,
            stop_at,
        }
    }

    /// A list or mapping ended before any scalar: the first scalar of the wanted value, if any,
    /// comes after an empty collection and does not mark where the value starts.
    fn collection_done(&mut self) {
        self.want = None;
    }

    /// Takes a probe error raised for [`YamlWalk::want`]: records its line and reports success;
    /// any other error is passed on.
    fn catch<E: de::Error>(&mut self, err: E) -> Result<(), E> {
        let text = err.to_string();
        match self.want {
            Some(slot) if text.contains(PROBE) => {
                self.lines[slot] = line_of(&text);
                self.want = None;
                Ok(())
            }
            _ => Err(err),
        }
    }
}

/// The line in a YAML error text ending `... at line <n> column <m>`.
fn line_of(text: &str) -> Option<usize> {
    let (_, tail) = text.rsplit_once(" at line ")?;
    tail.split(' ').next()?.parse().ok()
}

fn yaml_walk(body: &[u8], walk: &mut YamlWalk) -> Result<(), serde_yaml_ng::Error> {
    YamlNode { walk }.deserialize(serde_yaml_ng::Deserializer::from_slice(body))
}

/// A mapping key as YAML typed it; keys of different types never collide.
#[derive(Clone, PartialEq, Eq, Hash)]
enum YamlKey {
    Str(String),
    Int(i128),
    Float(u64),
    Bool(bool),
    Null,
}

impl YamlKey {
    /// The key as Go's `%#v` writes it.
    fn go_repr(&self) -> String {
        match self {
            YamlKey::Str(s) => go_quote(s),
            YamlKey::Int(i) => i.to_string(),
            YamlKey::Float(bits) => go_float(f64::from_bits(*bits)),
            YamlKey::Bool(b) => b.to_string(),
            YamlKey::Null => "<nil>".into(),
        }
    }

    /// The key as it appears in a path.
    fn path_text(&self) -> String {
        match self {
            YamlKey::Str(s) => s.clone(),
            YamlKey::Null => "null".into(),
            other => other.go_repr(),
        }
    }
}

fn go_float(f: f64) -> String {
    if f.is_nan() {
        "NaN".into()
    } else if f.is_infinite() {
        if f > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        f.to_string()
    }
}

/// Reads a mapping key. With `probe`, keeps the key in `stash` and fails, so the error gives
/// the key's position.
struct KeySeed<'a> {
    probe: bool,
    stash: &'a mut Option<YamlKey>,
}

impl KeySeed<'_> {
    fn key<E: de::Error>(self, key: YamlKey) -> Result<YamlKey, E> {
        if self.probe {
            *self.stash = Some(key);
            Err(E::custom(PROBE))
        } else {
            Ok(key)
        }
    }
}

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = YamlKey;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<YamlKey, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = YamlKey;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a scalar mapping key")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<YamlKey, E> {
        self.key(YamlKey::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<YamlKey, E> {
        self.key(YamlKey::Int(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<YamlKey, E> {
        self.key(YamlKey::Int(v.into()))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<YamlKey, E> {
        self.key(YamlKey::Int(v))
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<YamlKey, E> {
        match i128::try_from(v) {
            Ok(v) => self.key(YamlKey::Int(v)),
            Err(_) => Err(E::custom("integer key out of range")),
        }
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<YamlKey, E> {
        // 0.0 and -0.0 are the same key.
        self.key(YamlKey::Float(if v == 0.0 { 0 } else { v.to_bits() }))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<YamlKey, E> {
        self.key(YamlKey::Str(v.to_owned()))
    }

    fn visit_unit<E: de::Error>(self) -> Result<YamlKey, E> {
        self.key(YamlKey::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<YamlKey, E> {
        self.key(YamlKey::Null)
    }
}

/// One value of a YAML document.
struct YamlNode<'w> {
    walk: &'w mut YamlWalk,
}

impl YamlNode<'_> {
    /// A scalar value: fails if its position is wanted.
    fn scalar<E: de::Error>(self) -> Result<(), E> {
        match self.walk.want {
            Some(_) => Err(E::custom(PROBE)),
            None => Ok(()),
        }
    }
}

impl<'de> DeserializeSeed<'de> for YamlNode<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for YamlNode<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a YAML value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.scalar()
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.scalar()
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.scalar()
    }

    fn visit_i128<E: de::Error>(self, _: i128) -> Result<(), E> {
        self.scalar()
    }

    fn visit_u128<E: de::Error>(self, _: u128) -> Result<(), E> {
        self.scalar()
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.scalar()
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.scalar()
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.scalar()
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.scalar()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
        // A value with a local tag (`!thing ...`): look into the tagged value.
        let (_, variant) = data.variant::<IgnoredAny>()?;
        variant.newtype_variant_seed(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0;
        loop {
            let mark = push_index(&mut self.walk.path, index);
            let item = match seq.next_element_seed(YamlNode {
                walk: &mut *self.walk,
            }) {
                Ok(item) => item.is_some(),
                Err(err) => self.walk.catch(err).map(|()| true)?,
            };
            self.walk.path.truncate(mark);
            if !item {
                self.walk.collection_done();
                return Ok(());
            }
            index += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen: HashSet<YamlKey> = HashSet::new();
        loop {
            let mut stash = None;
            let seed = KeySeed {
                probe: self.walk.want.is_some(),
                stash: &mut stash,
            };
            let key = match map.next_key_seed(seed) {
                Ok(Some(key)) => key,
                Ok(None) => {
                    self.walk.collection_done();
                    return Ok(());
                }
                Err(err) => {
                    self.walk.catch(err)?;
                    stash.ok_or_else(|| <A::Error as de::Error>::custom("mapping key lost"))?
                }
            };
            let mark = push_key(&mut self.walk.path, &key.path_text());
            let slot = if seen.insert(key.clone()) {
                None
            } else {
                self.walk.lines.push(None);
                Some(self.walk.lines.len() - 1)
            };
            if slot.is_some() && slot == self.walk.stop_at {
                map.next_value_seed(Stop)?;
            }
            if slot.is_some() {
                self.walk.want = slot;
            }
            if let Err(err) = map.next_value_seed(YamlNode {
                walk: &mut *self.walk,
            }) {
                self.walk.catch(err)?;
            }
            // Reported after its value, so repeats inside the value come first.
            if let Some(slot) = slot {
                self.walk.found.push(Pending {
                    slot,
                    key: key.go_repr(),
                    path: self.walk.path.clone(),
                });
            }
            self.walk.path.truncate(mark);
        }
    }
}

/// Fails on whatever value it meets, so the error carries the position where that value
/// starts.
struct Stop;

impl<'de> DeserializeSeed<'de> for Stop {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Stop {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(PROBE)
    }
}

// ---------------------------------------------------------------------------------------------
// Go-style quoting
// ---------------------------------------------------------------------------------------------

/// `s` in double quotes as Go's `strconv.Quote` writes it: `"` and `\` escaped, printable
/// characters as they are, others as `\n`-style, `\xHH`, `\uHHHH` or `\UHHHHHHHH` escapes.
///
/// Printability follows Unicode categories (letters, marks, numbers, punctuation, symbols and
/// the ASCII space) as far as the standard library tells them apart: controls, separators other
/// than the space, the common format characters, private-use characters and noncharacters are
/// escaped; unassigned code points are written as they are.
fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{07}' => out.push_str("\\a"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{0b}' => out.push_str("\\v"),
            c if c < ' ' || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if !is_go_printable(c) => {
                if (c as u32) < 0x10000 {
                    let _ = write!(out, "\\u{:04x}", c as u32);
                } else {
                    let _ = write!(out, "\\U{:08x}", c as u32);
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn is_go_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    let u = c as u32;
    let format = matches!(
        u,
        0xAD | 0x600..=0x605
            | 0x61C
            | 0x6DD
            | 0x70F
            | 0x890..=0x891
            | 0x8E2
            | 0x180E
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0001
            | 0xE0020..=0xE007F
    );
    let private_use = matches!(u, 0xE000..=0xF8FF | 0xF0000..=0xFFFFD | 0x100000..=0x10FFFD);
    let noncharacter = (0xFDD0..=0xFDEF).contains(&u) || (u & 0xFFFE) == 0xFFFE;
    !(format || private_use || noncharacter)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{object_schema, structural_schema_of};

    /// A resource schema in the shape the framework builds: `metadata` is a placeholder.
    fn widget_schema() -> Value {
        let spec = json!({
            "type": "object",
            "properties": {
                "replicas": {"type": "integer"},
                "paused": {"type": "boolean"},
                "selector": {
                    "type": "object",
                    "properties": {
                        "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}}
                    }
                },
                "ports": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}
                    }
                },
                "backends": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "properties": {"url": {"type": "string"}}
                    }
                },
                "extra": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": true,
                    "properties": {
                        "known": {"type": "object", "properties": {"a": {"type": "string"}}}
                    }
                },
                "raw": {},
                "opaque": {"type": "object"},
                "size": {"x-kubernetes-int-or-string": true},
                "template": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": true,
                    "properties": {
                        "spec": {"type": "object", "properties": {"image": {"type": "string"}}}
                    }
                },
                "choice": {
                    "type": "object",
                    "anyOf": [
                        {"properties": {"a": {"type": "string"}}},
                        {"properties": {"b": {"type": "object", "properties": {"c": {"type": "string"}}}}}
                    ]
                }
            }
        });
        let status = json!({"type": "object", "properties": {"ready": {"type": "boolean"}}});
        object_schema("A widget.", spec, Some(status), false)
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn object_meta_schema_has_the_standard_fields() {
        let props = OBJECT_META["properties"].as_object().unwrap();
        for field in [
            "name",
            "namespace",
            "labels",
            "annotations",
            "finalizers",
            "managedFields",
            "ownerReferences",
            "resourceVersion",
            "uid",
        ] {
            assert!(props.contains_key(field), "ObjectMeta lacks {field}");
        }
        let entry = &props["managedFields"]["items"]["properties"];
        assert!(entry.get("fieldsV1").is_some());
    }

    #[test]
    fn reports_nested_unknown_fields_without_descending() {
        let object = json!({
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w"},
            "spec": {
                "replicas": 1,
                "foo": {"deeper": {"still": 1}},
                "selector": {"matchLabels": {"app": "w"}, "bar": 1}
            },
            "status": {"ready": true, "phase": "x"},
            "zzz": 1
        });
        assert_eq!(
            unknown_fields(&object, &widget_schema()),
            strings(&["spec.foo", "spec.selector.bar", "status.phase", "zzz"])
        );
    }

    #[test]
    fn reports_unknown_fields_in_list_items_and_map_values() {
        let object = json!({
            "spec": {
                "ports": [{"name": "a", "port": 1}, {"name": "b", "bogus": true}],
                "backends": {
                    "primary": {"url": "http://a"},
                    "backup": {"url": "http://b", "timeout": 3}
                },
                "selector": {"matchLabels": {"any.key/at-all": "fine"}}
            }
        });
        assert_eq!(
            unknown_fields(&object, &widget_schema()),
            strings(&["spec.backends.backup.timeout", "spec.ports[1].bogus"])
        );
    }

    #[test]
    fn preserve_unknown_and_free_form_subtrees_are_not_checked() {
        let object = json!({
            "spec": {
                "extra": {"anything": {"deep": [1, {"x": 2}]}, "known": {"a": "ok", "zzz": 1}},
                "raw": {"whatever": {"nested": true}},
                "opaque": {"any": 1},
                "size": {"not": "a scalar"}
            }
        });
        // A declared field under a preserve-unknown object is still checked.
        assert_eq!(
            unknown_fields(&object, &widget_schema()),
            strings(&["spec.extra.known.zzz"])
        );
    }

    #[test]
    fn metadata_is_checked_against_object_meta() {
        let object = json!({
            "metadata": {
                "name": "w",
                "labels": {"app.kubernetes.io/name": "w"},
                "annotations": {"a": "b"},
                "foo": "bar",
                "managedFields": [{
                    "manager": "kubectl",
                    "fieldsV1": {"f:spec": {"f:replicas": {}}},
                    "bogus": 1
                }],
                "ownerReferences": [{
                    "apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u", "bogus": 2
                }]
            }
        });
        assert_eq!(
            unknown_fields(&object, &widget_schema()),
            strings(&[
                "metadata.foo",
                "metadata.managedFields[0].bogus",
                "metadata.ownerReferences[0].bogus",
            ])
        );
        let known = json!({"metadata": {"name": "w", "labels": {"a": "b"}}});
        assert!(unknown_fields(&known, &widget_schema()).is_empty());
    }

    #[test]
    fn embedded_resources_and_unions() {
        let object = json!({
            "spec": {
                "template": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "cm", "color": "red"},
                    "spec": {"image": "x", "tag": "y"},
                    "other": 1
                },
                "choice": {"a": "x", "b": {"c": "y", "d": "z"}, "e": 1}
            }
        });
        assert_eq!(
            unknown_fields(&object, &widget_schema()),
            strings(&[
                "spec.choice.b.d",
                "spec.choice.e",
                "spec.template.metadata.color",
                "spec.template.other",
                "spec.template.spec.tag",
            ])
        );
    }

    #[test]
    fn schemas_derived_from_rust_types_including_recursive_ones() {
        #[derive(schemars::JsonSchema)]
        #[schemars(rename_all = "camelCase")]
        #[allow(dead_code)]
        struct Node {
            node_name: String,
            child: Option<Box<Node>>,
        }
        #[derive(schemars::JsonSchema)]
        #[schemars(rename_all = "camelCase")]
        #[allow(dead_code)]
        struct Spec {
            first_name: String,
            tags: Vec<Tag>,
            by_name: std::collections::BTreeMap<String, Tag>,
            anything: serde_json::Value,
            tree: Option<Node>,
        }
        #[derive(schemars::JsonSchema)]
        #[allow(dead_code)]
        struct Tag {
            key: String,
        }
        let schema = object_schema("", structural_schema_of::<Spec>(), None, false);
        let object = json!({
            "spec": {
                "firstName": "a",
                "first_name": "b",
                "tags": [{"key": "k", "value": "v"}],
                "byName": {"x": {"key": "k", "oops": 1}},
                "anything": {"free": true},
                "tree": {"nodeName": "r", "child": {"nodeName": "c", "child": {"nodeName": "d", "x": 1}}}
            }
        });
        assert_eq!(
            unknown_fields(&object, &schema),
            strings(&[
                "spec.byName.x.oops",
                "spec.first_name",
                "spec.tags[0].value",
                "spec.tree.child.child.x",
            ])
        );
    }

    #[test]
    fn unknown_fields_are_capped() {
        let spec: serde_json::Map<String, Value> =
            (0..150).map(|i| (format!("f{i:03}"), json!(i))).collect();
        let object = json!({"spec": spec});
        let found = unknown_fields(&object, &widget_schema());
        assert_eq!(found.len(), MAX_ISSUES);
        assert_eq!(found[0], "spec.f000");
        assert_eq!(found[99], "spec.f099");
    }

    #[test]
    fn duplicate_json_keys_at_every_level() {
        let body = br#"{"a":1,"a":2,"a":3,"b":{"c":1,"c":2,"c":3},"l":[{"x":1},{"x":1,"y":0,"x":2}],"m":{"d":{"e":{"f":1,"f":2}}}}"#;
        assert_eq!(
            duplicate_fields_json(body),
            strings(&["a", "b.c", "l[1].x", "m.d.e.f"])
        );
        assert_eq!(
            duplicate_fields_json(br#"[{"op":"add","op":"remove"}]"#),
            strings(&["[0].op"])
        );
        assert_eq!(
            duplicate_fields_json(br#"{"metadata":{"labels":{"app.kubernetes.io/name":"a","app.kubernetes.io/name":"b"}}}"#),
            strings(&["metadata.labels.app.kubernetes.io/name"])
        );
        assert!(duplicate_fields_json(br#"{"a":1,"b":2}"#).is_empty());
    }

    #[test]
    fn malformed_json_yields_nothing() {
        assert!(duplicate_fields_json(br#"{"a":1,"a":2"#).is_empty());
        assert!(duplicate_fields_json(br#"{"a":1,"a":2}}"#).is_empty());
        assert!(duplicate_fields_json(b"").is_empty());
        assert!(FieldIssues::from_json(br#"{"spec":{"x":1,}}"#, &widget_schema()).is_empty());
    }

    #[test]
    fn duplicate_yaml_keys_with_lines_in_report_order() {
        let body = b"a: 1
b:
  c: 1
  c: 2
a: 3
l:
- x: 1
  x: 2
";
        let found = duplicate_fields_yaml(body);
        let messages: Vec<String> = found
            .iter()
            .map(|d| FieldIssue::YamlDuplicate(d.clone()).message())
            .collect();
        assert_eq!(
            messages,
            [
                r#"line 4: key "c" already set in map"#,
                r#"line 5: key "a" already set in map"#,
                r#"line 8: key "x" already set in map"#,
            ]
        );
        let paths: Vec<&str> = found.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(paths, ["b.c", "a", "l[0].x"]);
    }

    #[test]
    fn duplicate_yaml_key_is_reported_at_its_value_after_repeats_inside_it() {
        let body = b"kind: Widget
spec:
  name: a
spec:
  name: b
  name: c
";
        let found = duplicate_fields_yaml(body);
        let summary: Vec<(usize, &str, &str)> = found
            .iter()
            .map(|d| (d.line.unwrap(), d.key.as_str(), d.path.as_str()))
            .collect();
        assert_eq!(
            summary,
            [(6, r#""name""#, "spec.name"), (5, r#""spec""#, "spec")]
        );
    }

    #[test]
    fn yaml_lines_for_lists_flow_values_and_values_without_scalars() {
        let body = b"a: {}
a: {}
l:
- 1
l:
- 2
f: {x: 1}
f:
  {x: 2}
s: [[], [3]]
s:
  - []
  - [4]
e: []
e:

  []
";
        let found: Vec<(Option<usize>, String)> = duplicate_fields_yaml(body)
            .into_iter()
            .map(|d| (d.line, d.path))
            .collect();
        assert_eq!(
            found,
            [
                (Some(2), "a".to_owned()),
                (Some(6), "l".to_owned()),
                (Some(9), "f".to_owned()),
                (Some(12), "s".to_owned()),
                (Some(17), "e".to_owned()),
            ]
        );
    }

    #[test]
    fn yaml_duplicate_without_a_line_uses_the_path_wording() {
        let issues = FieldIssues {
            issues: vec![
                FieldIssue::YamlDuplicate(YamlDuplicateKey {
                    line: Some(3),
                    key: r#""a""#.into(),
                    path: "a".into(),
                }),
                FieldIssue::YamlDuplicate(YamlDuplicateKey {
                    line: None,
                    key: r#""b""#.into(),
                    path: "spec.b".into(),
                }),
                FieldIssue::Unknown("spec.c".into()),
            ],
        };
        assert_eq!(
            issues.warnings(),
            [
                r#"line 3: key "a" already set in map"#,
                r#"duplicate field "spec.b""#,
                r#"unknown field "spec.c""#,
            ]
        );
        assert_eq!(
            issues.strict_message(),
            "strict decoding error: yaml: unmarshal errors:\n  line 3: key \"a\" already set in map, duplicate field \"spec.b\", unknown field \"spec.c\""
        );
        assert_eq!(issues.duplicate(), ["a", "spec.b"]);
    }

    #[test]
    fn yaml_keys_keep_their_types() {
        let body = b"1: a\n1: b\ntrue: x\ntrue: y\n\"1\": z\n";
        let messages: Vec<String> = duplicate_fields_yaml(body)
            .into_iter()
            .map(|d| FieldIssue::YamlDuplicate(d).message())
            .collect();
        assert_eq!(
            messages,
            [
                "line 2: key 1 already set in map",
                "line 4: key true already set in map",
            ]
        );
    }

    #[test]
    fn malformed_or_multi_document_yaml_yields_nothing() {
        assert!(duplicate_fields_yaml(b"a: [1, 2\na: 3\n").is_empty());
        assert!(duplicate_fields_yaml(b"a: 1\na: 2\n---\nb: 1\n").is_empty());
        assert!(duplicate_fields_yaml(b"").is_empty());
        assert!(duplicate_fields_yaml(b"a: 1\nb: 2\n").is_empty());
    }

    const WIDGET_JSON: &str = r#"{
  "apiVersion": "example.com/v1",
  "kind": "Widget",
  "metadata": {"name": "a", "name": "b", "labels": {"x": "y"}, "color": "red"},
  "spec": {
    "bogus": 1,
    "twice": 1,
    "twice": 2,
    "paused": true,
    "paused": false,
    "ports": [{"name": "p", "extra": 1, "port": 1, "port": 2}]
  }
}"#;

    const WIDGET_YAML: &str = "apiVersion: example.com/v1
kind: Widget
metadata:
  name: a
  name: b
  labels:
    x: y
  color: red
spec:
  bogus: 1
  twice: 1
  twice: 2
  paused: true
  paused: false
  ports:
  - name: p
    extra: 1
    port: 1
    port: 2
";

    #[test]
    fn json_body_findings_interleave_in_document_order() {
        let issues = FieldIssues::from_json(WIDGET_JSON.as_bytes(), &widget_schema());
        assert_eq!(
            issues.warnings(),
            [
                r#"duplicate field "metadata.name""#,
                r#"unknown field "metadata.color""#,
                r#"unknown field "spec.bogus""#,
                r#"unknown field "spec.twice""#,
                r#"duplicate field "spec.paused""#,
                r#"unknown field "spec.ports[0].extra""#,
                r#"duplicate field "spec.ports[0].port""#,
            ]
        );
        assert_eq!(
            issues.strict_message(),
            r#"strict decoding error: duplicate field "metadata.name", unknown field "metadata.color", unknown field "spec.bogus", unknown field "spec.twice", duplicate field "spec.paused", unknown field "spec.ports[0].extra", duplicate field "spec.ports[0].port""#
        );
        assert_eq!(
            issues.unknown(),
            [
                "metadata.color",
                "spec.bogus",
                "spec.twice",
                "spec.ports[0].extra"
            ]
        );
        assert_eq!(
            issues.duplicate(),
            ["metadata.name", "spec.paused", "spec.ports[0].port"]
        );
    }

    #[test]
    fn create_and_update_wrap_the_strict_text() {
        let issues =
            FieldIssues::from_json(br#"{"kind":"Widget","spec":{"foo":1}}"#, &widget_schema());
        assert_eq!(
            issues.strict_request_message("Widget", "v1alpha1", "Widget"),
            r#"Widget in version "v1alpha1" cannot be handled as a Widget: strict decoding error: unknown field "spec.foo""#
        );
    }

    #[test]
    fn json_body_without_problems() {
        let body =
            br#"{"apiVersion":"v","kind":"Widget","metadata":{"name":"a"},"spec":{"replicas":2}}"#;
        assert!(FieldIssues::from_json(body, &widget_schema()).is_empty());
    }

    #[test]
    fn yaml_body_findings_put_duplicate_keys_first() {
        let object: Value = serde_yaml_ng::from_str(WIDGET_YAML).unwrap();
        let issues = FieldIssues::from_yaml(WIDGET_YAML.as_bytes(), &object, &widget_schema());
        assert_eq!(
            issues.warnings(),
            [
                r#"line 5: key "name" already set in map"#,
                r#"line 12: key "twice" already set in map"#,
                r#"line 14: key "paused" already set in map"#,
                r#"line 19: key "port" already set in map"#,
                r#"unknown field "metadata.color""#,
                r#"unknown field "spec.bogus""#,
                r#"unknown field "spec.ports[0].extra""#,
                r#"unknown field "spec.twice""#,
            ]
        );
        assert_eq!(
            issues.strict_message(),
            "strict decoding error: yaml: unmarshal errors:\n  line 5: key \"name\" already set in map\n  line 12: key \"twice\" already set in map\n  line 14: key \"paused\" already set in map\n  line 19: key \"port\" already set in map, unknown field \"metadata.color\", unknown field \"spec.bogus\", unknown field \"spec.ports[0].extra\", unknown field \"spec.twice\""
        );
        assert_eq!(
            issues.duplicate(),
            [
                "metadata.name",
                "spec.twice",
                "spec.paused",
                "spec.ports[0].port"
            ]
        );
    }

    #[test]
    fn merge_and_strategic_patches_report_patch_duplicates_then_sorted_unknowns() {
        let patch = br#"{"spec":{"zeta":1,"zeta":2,"paused":true,"paused":false,"ports":[{"name":"p","alpha":1}]}}"#;
        let patched =
            json!({"spec": {"zeta": 2, "paused": false, "ports": [{"name": "p", "alpha": 1}]}});
        let expected = [
            r#"duplicate field "spec.zeta""#,
            r#"duplicate field "spec.paused""#,
            r#"unknown field "spec.ports[0].alpha""#,
            r#"unknown field "spec.zeta""#,
        ];
        let merge = FieldIssues::merge_patch(patch, &patched, &widget_schema());
        assert_eq!(merge.warnings(), expected);
        let smp = FieldIssues::strategic_merge_patch(patch, &patched, &widget_schema());
        assert_eq!(smp.warnings(), expected);
        assert_eq!(
            smp.strict_message(),
            format!("strict decoding error: {}", expected.join(", "))
        );
    }

    #[test]
    fn json_patch_operations_are_checked_and_prefixed() {
        let patch = br#"[
            {"op": "add", "path": "/spec/foo", "value": "x", "foo": "bar"},
            {"op": "add", "path": "/spec/a", "path": "/spec/b", "value": {"k": 1, "k": 2}},
            {"op": "replace", "path": "/spec/replicas", "value": 3}
        ]"#;
        let patched = json!({"spec": {"foo": "x", "b": {"k": 2}, "replicas": 3}});
        let issues = FieldIssues::json_patch(patch, &patched, &widget_schema());
        assert_eq!(
            issues.warnings(),
            [
                r#"json patch unknown field "[0].foo""#,
                r#"json patch duplicate field "[1].path""#,
                r#"json patch duplicate field "[1].value.k""#,
                r#"unknown field "spec.b""#,
                r#"unknown field "spec.foo""#,
            ]
        );
        assert!(issues.unknown() == ["spec.b", "spec.foo"]);
        assert!(issues.duplicate().is_empty());
    }

    #[test]
    fn apply_reports_yaml_duplicates_even_for_json_bodies() {
        let body = br#"{
  "apiVersion": "example.com/v1",
  "kind": "Widget",
  "spec": {
    "paused": false,
    "paused": true
  }
}"#;
        let issues = FieldIssues::apply_patch(body);
        assert_eq!(
            issues.warnings(),
            [r#"line 6: key "paused" already set in map"#]
        );
        assert_eq!(
            issues.apply_strict_message(),
            "error strict decoding patch: error converting YAML to JSON: yaml: unmarshal errors:\n  line 6: key \"paused\" already set in map"
        );
    }

    #[test]
    fn repeated_unknown_keys_are_reported_once() {
        let body = br#"{"spec":{"nope":1,"nope":2,"nope":{"x":1,"x":2}}}"#;
        let issues = FieldIssues::from_json(body, &widget_schema());
        assert_eq!(issues.warnings(), [r#"unknown field "spec.nope""#]);
    }

    #[test]
    fn one_check_stops_at_the_cap() {
        let fields: Vec<String> = (0..150).map(|i| format!("\"f{i}\":{i}")).collect();
        let body = format!("{{\"spec\":{{{}}}}}", fields.join(","));
        let issues = FieldIssues::from_json(body.as_bytes(), &widget_schema());
        assert_eq!(issues.issues.len(), MAX_ISSUES);
    }

    #[test]
    fn paths_are_quoted_go_style() {
        assert_eq!(go_quote(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(go_quote("a\nb\tc\u{1}\u{7f}"), r#""a\nb\tc\x01\x7f""#);
        assert_eq!(go_quote("é ✓ 日本"), "\"é ✓ 日本\"");
        assert_eq!(
            go_quote("\u{a0}\u{200b}\u{feff}"),
            r#""\u00a0\u200b\ufeff""#
        );
        assert_eq!(go_quote("\u{f0000}"), r#""\U000f0000""#);
        let body = b"{\"spec\":{\"a\\nb\":1}}";
        let issues = FieldIssues::from_json(body, &widget_schema());
        assert_eq!(issues.warnings(), [r#"unknown field "spec.a\nb""#]);
    }
}
