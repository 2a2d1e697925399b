//! The shape of a resource for server-side apply, read from its structural OpenAPI v3 schema the
//! way apiextensions-apiserver turns a CRD schema into a structured-merge-diff schema.
//!
//! - `properties` make a struct (its fields are not members of field sets themselves);
//!   `additionalProperties` make a map (its keys are members); `x-kubernetes-map-type: atomic`
//!   makes either atomic (owned and replaced as a whole).
//! - Arrays are atomic unless `x-kubernetes-list-type` is `set` (items identified by value) or
//!   `map` (items identified by `x-kubernetes-list-map-keys`).
//! - `x-kubernetes-preserve-unknown-fields` (and schemaless nodes) are *deduced* from the value:
//!   objects are granular maps, arrays atomic lists, anything else a scalar.
//! - `metadata` is always upstream's `ObjectMeta`: `labels`/`annotations` granular maps,
//!   `finalizers` a set, `ownerReferences` a map list keyed by `uid`, other fields scalars.

use std::collections::BTreeMap;

use serde_json::Value;

/// How the items of a list are identified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListType {
    /// Owned and replaced as a whole.
    Atomic,
    /// Scalar items identified by their value.
    Set,
    /// Object items identified by the values of these key fields.
    Map(Vec<String>),
}

/// The type of one node of an object.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// A string, number, boolean or null (also `x-kubernetes-int-or-string`).
    Scalar,
    /// A JSON object: named `fields` (a struct) and/or `elements` for other keys (a map).
    Map {
        /// Declared properties.
        fields: BTreeMap<String, Node>,
        /// The type of keys that are not declared properties (`None`: deduced).
        elements: Option<Box<Node>>,
        /// `x-kubernetes-map-type: atomic`.
        atomic: bool,
    },
    /// A JSON array.
    List {
        /// The item type.
        items: Box<Node>,
        /// How items are identified.
        list_type: ListType,
    },
    /// Typed by the value itself (`x-kubernetes-preserve-unknown-fields`, no schema).
    Deduced,
}

pub(crate) static DEDUCED: Node = Node::Deduced;
static SCALAR: Node = Node::Scalar;

impl Node {
    /// The type of field or key `name` of a map node, and whether it is a declared field.
    pub(crate) fn field(&self, name: &str) -> (&Node, bool) {
        match self {
            Node::Map {
                fields, elements, ..
            } => match fields.get(name) {
                Some(n) => (n, true),
                None => (elements.as_deref().unwrap_or(&DEDUCED), false),
            },
            Node::Deduced => (&DEDUCED, false),
            _ => (&SCALAR, false),
        }
    }

    /// The item type of a list node.
    pub(crate) fn items(&self) -> &Node {
        match self {
            Node::List { items, .. } => items,
            Node::Deduced => &DEDUCED,
            _ => &SCALAR,
        }
    }
}

/// A resource's schema for server-side apply.
#[derive(Debug, Clone, PartialEq)]
pub struct Schema {
    root: Node,
}

impl Schema {
    /// Reads a structural schema of a whole object; `metadata` becomes `ObjectMeta`, and
    /// `apiVersion`/`kind` scalars.
    pub fn from_openapi(schema: &Value) -> Schema {
        let mut root = node_from_openapi(schema);
        if let Node::Map { fields, .. } = &mut root {
            fields.insert("metadata".into(), object_meta());
            fields.insert("apiVersion".into(), Node::Scalar);
            fields.insert("kind".into(), Node::Scalar);
        } else {
            let mut fields = BTreeMap::new();
            fields.insert("metadata".into(), object_meta());
            fields.insert("apiVersion".into(), Node::Scalar);
            fields.insert("kind".into(), Node::Scalar);
            root = Node::Map {
                fields,
                elements: None,
                atomic: false,
            };
        }
        Schema { root }
    }

    /// The type of the whole object.
    pub fn root(&self) -> &Node {
        &self.root
    }
}

fn bool_ext(schema: &Value, name: &str) -> bool {
    schema.get(name).and_then(Value::as_bool).unwrap_or(false)
}

/// Converts one node of a structural schema.
pub fn node_from_openapi(schema: &Value) -> Node {
    if bool_ext(schema, "x-kubernetes-int-or-string") {
        return Node::Scalar;
    }
    let ty = schema.get("type").and_then(Value::as_str);
    let preserve = bool_ext(schema, "x-kubernetes-preserve-unknown-fields");
    let has_props = schema.get("properties").is_some();
    let additional = schema.get("additionalProperties");
    match ty {
        Some("array") => {
            let items = schema
                .get("items")
                .map(node_from_openapi)
                .unwrap_or(Node::Deduced);
            let list_type = match schema.get("x-kubernetes-list-type").and_then(Value::as_str) {
                Some("set") => ListType::Set,
                Some("map") => ListType::Map(
                    schema
                        .get("x-kubernetes-list-map-keys")
                        .and_then(Value::as_array)
                        .map(|keys| {
                            keys.iter()
                                .filter_map(Value::as_str)
                                .map(str::to_string)
                                .collect()
                        })
                        .unwrap_or_default(),
                ),
                _ => ListType::Atomic,
            };
            Node::List {
                items: Box::new(items),
                list_type,
            }
        }
        Some("object") | None if has_props || additional.is_some() || ty.is_some() => {
            if !has_props && additional.is_none() && (preserve || ty.is_none()) {
                return Node::Deduced;
            }
            let mut fields = BTreeMap::new();
            if let Some(Value::Object(props)) = schema.get("properties") {
                for (name, sub) in props {
                    fields.insert(name.clone(), node_from_openapi(sub));
                }
            }
            // Undeclared keys (additionalProperties: true, preserve-unknown-fields) are deduced.
            let elements = match additional {
                Some(Value::Object(sub)) if !sub.is_empty() => {
                    Some(Box::new(node_from_openapi(&Value::Object(sub.clone()))))
                }
                _ => None,
            };
            Node::Map {
                fields,
                elements,
                atomic: schema.get("x-kubernetes-map-type").and_then(Value::as_str)
                    == Some("atomic"),
            }
        }
        None => Node::Deduced,
        Some(_) => Node::Scalar,
    }
}

fn string_map() -> Node {
    Node::Map {
        fields: BTreeMap::new(),
        elements: Some(Box::new(Node::Scalar)),
        atomic: false,
    }
}

fn strukt(fields: &[(&str, Node)]) -> Node {
    Node::Map {
        fields: fields
            .iter()
            .map(|(n, t)| ((*n).to_string(), t.clone()))
            .collect(),
        elements: None,
        atomic: false,
    }
}

/// Upstream `ObjectMeta` as structured-merge-diff sees it.
fn object_meta() -> Node {
    let owner_reference = strukt(&[
        ("apiVersion", Node::Scalar),
        ("kind", Node::Scalar),
        ("name", Node::Scalar),
        ("uid", Node::Scalar),
        ("controller", Node::Scalar),
        ("blockOwnerDeletion", Node::Scalar),
    ]);
    let managed_fields_entry = strukt(&[
        ("manager", Node::Scalar),
        ("operation", Node::Scalar),
        ("apiVersion", Node::Scalar),
        ("time", Node::Scalar),
        ("fieldsType", Node::Scalar),
        (
            "fieldsV1",
            Node::Map {
                fields: BTreeMap::new(),
                elements: None,
                atomic: true,
            },
        ),
        ("subresource", Node::Scalar),
    ]);
    strukt(&[
        ("name", Node::Scalar),
        ("generateName", Node::Scalar),
        ("namespace", Node::Scalar),
        ("selfLink", Node::Scalar),
        ("uid", Node::Scalar),
        ("resourceVersion", Node::Scalar),
        ("generation", Node::Scalar),
        ("creationTimestamp", Node::Scalar),
        ("deletionTimestamp", Node::Scalar),
        ("deletionGracePeriodSeconds", Node::Scalar),
        ("labels", string_map()),
        ("annotations", string_map()),
        (
            "ownerReferences",
            Node::List {
                items: Box::new(owner_reference),
                list_type: ListType::Map(vec!["uid".into()]),
            },
        ),
        (
            "finalizers",
            Node::List {
                items: Box::new(Node::Scalar),
                list_type: ListType::Set,
            },
        ),
        (
            "managedFields",
            Node::List {
                items: Box::new(managed_fields_entry),
                list_type: ListType::Atomic,
            },
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_structural_schema_extensions() {
        let schema = Schema::from_openapi(&json!({
            "type": "object",
            "properties": {
                "metadata": {"type": "object"},
                "spec": {"type": "object", "properties": {
                    "plain": {"type": "array", "items": {"type": "string"}},
                    "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                    "byName": {"type": "array", "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                    "sel": {"type": "object", "x-kubernetes-map-type": "atomic",
                        "additionalProperties": {"type": "string"}},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "port": {"x-kubernetes-int-or-string": true}
                }}
            }
        }));
        let spec = schema.root().field("spec").0;
        assert!(matches!(
            spec.field("plain").0,
            Node::List {
                list_type: ListType::Atomic,
                ..
            }
        ));
        assert!(matches!(
            spec.field("set").0,
            Node::List {
                list_type: ListType::Set,
                ..
            }
        ));
        assert!(
            matches!(spec.field("byName").0, Node::List { list_type: ListType::Map(k), .. } if k == &vec!["name".to_string()])
        );
        assert!(matches!(
            spec.field("sel").0,
            Node::Map { atomic: true, .. }
        ));
        assert_eq!(spec.field("free").0, &Node::Deduced);
        assert_eq!(spec.field("port").0, &Node::Scalar);
        let meta = schema.root().field("metadata").0;
        assert!(matches!(
            meta.field("finalizers").0,
            Node::List {
                list_type: ListType::Set,
                ..
            }
        ));
        assert!(meta.field("labels").1);
        assert_eq!(meta.field("labels").0.field("app"), (&Node::Scalar, false));
    }
}
