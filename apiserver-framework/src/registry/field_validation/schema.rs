//! Schema reading: which fields are known at each place of a document, and the unknown
//! fields of a decoded value.

use std::sync::LazyLock;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;

use super::FieldIssue;
use super::collect::{Found, push_index, push_key};

/// The structural schema of `ObjectMeta`, against which `metadata` is checked.
pub(super) static OBJECT_META: LazyLock<Value> =
    LazyLock::new(crate::schema::structural_schema_of::<ObjectMeta>);

/// The schemas that apply at one place of a document (a schema and the branches of its
/// `anyOf` / `oneOf` / `allOf`), or free form.
#[derive(Clone, Default)]
pub(super) struct Shape<'s> {
    schemas: Vec<&'s Value>,
    /// Some applicable schema says nothing about keys or items.
    free: bool,
}

/// Where a key of an object leads.
pub(super) enum Slot<'s> {
    /// A declared field, a map entry or a key of a free-form object: check for repeats and
    /// descend with this shape.
    Known(Shape<'s>),
    /// Not declared: report, do not descend.
    Unknown,
}

impl<'s> Shape<'s> {
    pub(super) fn free() -> Self {
        Shape {
            schemas: Vec::new(),
            free: true,
        }
    }

    pub(super) fn of(schema: &'s Value, root: &'s Value) -> Self {
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
    pub(super) fn slot(&self, key: &str, top: bool, root: &'s Value) -> Slot<'s> {
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
    pub(super) fn items(&self, root: &'s Value) -> Shape<'s> {
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

pub(super) fn unknown_in_value<'s>(
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
