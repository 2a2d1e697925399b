//! Building a [`super::StructuralSchema`] from OpenAPI v3 JSON, once per resource.
//!
//! Every place of the document (the root, a property, map values, list items) becomes one node,
//! read from the schemas that apply there: the schema itself, the target of its `$ref` (a local
//! `#/...` pointer) and the branches of its `allOf`, `anyOf` and `oneOf`, recursively. Fields and
//! map values are the union of what they declare; a string or list extension comes from the
//! first schema that has it (the schema itself first, then its `$ref` target, then `allOf`,
//! `anyOf`, `oneOf` in order), a boolean one from any of them. The declared `type` is not taken
//! from `anyOf`/`oneOf` alternatives.
//!
//! A place seen again with the same schemas (a recursive `$ref`) becomes the same node, so
//! recursive schemas make a finite graph. Flattening stops after [`MAX_BRANCH_DEPTH`] nested
//! references and branches (the place then keeps any keys), nesting after [`MAX_DEPTH`] levels
//! and the model after [`MAX_NODES`] nodes (further places are absent): a schema comes from the
//! server's code, but its size still bounds the work.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::{Map, Value};

use super::object_meta::OBJECT_META;
use super::structural::{
    ListType, Model, NodeData, NodeId, PatchStrategy, Rest, ScalarType, Shape,
};

/// How deep `$ref`s and `allOf`/`anyOf`/`oneOf` branches are followed from one place.
pub(super) const MAX_BRANCH_DEPTH: usize = 32;
/// How deep places nest (properties in properties, items in items…).
pub(super) const MAX_DEPTH: usize = 256;
/// The most nodes a model has.
pub(super) const MAX_NODES: usize = 200_000;

/// The schema that allows anything.
static ANYTHING: Value = Value::Bool(true);

/// Builds the model of `schema`; with `resource`, its root is a resource (`apiVersion`, `kind`,
/// ObjectMeta `metadata`).
pub(super) fn build(schema: &Value, resource: bool) -> Model {
    let mut builder = Builder {
        nodes: vec![NodeData::absent()],
        memo: HashMap::new(),
        refs: HashMap::new(),
        object_meta: None,
        string: None,
    };
    let root = builder.place(&[schema], schema, 0);
    let root = if resource {
        builder.make_resource(root)
    } else {
        root
    };
    Model {
        nodes: builder.nodes,
        root,
    }
}

struct Builder<'s> {
    nodes: Vec<NodeData>,
    /// The node of each list of schemas already placed (by address, in order; null for
    /// "anything goes").
    memo: HashMap<Vec<*const Map<String, Value>>, NodeId>,
    /// The target of each `$ref` already resolved, by document and reference.
    refs: HashMap<(*const Value, &'s str), Option<&'s Value>>,
    object_meta: Option<NodeId>,
    string: Option<NodeId>,
}

/// The schemas that apply at one place, flattened.
#[derive(Default)]
struct Flat<'s> {
    /// Each schema, and whether it was reached through an `anyOf`/`oneOf` alternative.
    schemas: Vec<(&'s Map<String, Value>, bool)>,
    /// Some applicable schema allows anything (`true`, an unresolvable `$ref`, too deep).
    free: bool,
}

impl<'s> Flat<'s> {
    fn first_str(&self, key: &str) -> Option<&'s str> {
        self.schemas
            .iter()
            .find_map(|(s, _)| s.get(key).and_then(Value::as_str))
    }

    fn any_true(&self, key: &str) -> bool {
        self.schemas
            .iter()
            .any(|(s, _)| s.get(key) == Some(&Value::Bool(true)))
    }
}

impl<'s> Builder<'s> {
    fn push(&mut self, data: NodeData) -> NodeId {
        self.nodes.push(data);
        NodeId((self.nodes.len() - 1) as u32)
    }

    /// The node of the place where `schemas` apply; `doc` is the document their `$ref`s
    /// point into.
    fn place(&mut self, schemas: &[&'s Value], doc: &'s Value, depth: usize) -> NodeId {
        if depth > MAX_DEPTH || self.nodes.len() >= MAX_NODES {
            return NodeId::ABSENT;
        }
        let mut flat = Flat::default();
        let mut seen = HashSet::new();
        for schema in schemas {
            self.flatten(schema, doc, false, 0, &mut flat, &mut seen);
        }
        let key: Vec<*const Map<String, Value>> = flat
            .schemas
            .iter()
            .map(|(s, _)| *s as *const Map<String, Value>)
            .chain(flat.free.then_some(std::ptr::null()))
            .collect();
        if let Some(id) = self.memo.get(&key) {
            return *id;
        }
        // Reserved before the children are built, so a recursive reference finds it. A place
        // without schemas has nothing to share.
        let id = self.push(NodeData::absent());
        if !key.is_empty() {
            self.memo.insert(key, id);
        }
        let data = self.node(&flat, doc, depth);
        self.nodes[id.0 as usize] = data;
        if self.nodes[id.0 as usize].embedded_resource {
            self.make_resource(id);
        }
        id
    }

    /// Adds `schema`, its `$ref` target and its branches to `flat`.
    fn flatten(
        &mut self,
        schema: &'s Value,
        doc: &'s Value,
        alternative: bool,
        depth: usize,
        flat: &mut Flat<'s>,
        seen: &mut HashSet<*const Value>,
    ) {
        let map = match schema {
            Value::Object(map) => map,
            Value::Bool(true) => {
                flat.free = true;
                return;
            }
            _ => return,
        };
        if depth > MAX_BRANCH_DEPTH {
            flat.free = true;
            return;
        }
        if !seen.insert(schema as *const Value) {
            return;
        }
        flat.schemas.push((map, alternative));
        if let Some(Value::String(reference)) = map.get("$ref") {
            match self.resolve(doc, reference) {
                Some(target) => self.flatten(target, doc, alternative, depth + 1, flat, seen),
                None => flat.free = true,
            }
        }
        for (keyword, is_alternative) in [("allOf", false), ("anyOf", true), ("oneOf", true)] {
            if let Some(Value::Array(branches)) = map.get(keyword) {
                for branch in branches {
                    let alternative = alternative || is_alternative;
                    self.flatten(branch, doc, alternative, depth + 1, flat, seen);
                }
            }
        }
    }

    /// The schema a local `$ref` (`#/components/schemas/Name`) points at: looked up from the
    /// document's root, else from the first nested schema that holds that pointer (a field's
    /// schema built on its own keeps its recursive definitions under its own `components`).
    fn resolve(&mut self, doc: &'s Value, reference: &'s str) -> Option<&'s Value> {
        let key = (doc as *const Value, reference);
        if let Some(found) = self.refs.get(&key) {
            return *found;
        }
        let found = resolve(doc, reference);
        self.refs.insert(key, found);
        found
    }

    /// The node of a flattened place.
    fn node(&mut self, flat: &Flat<'s>, doc: &'s Value, depth: usize) -> NodeData {
        let declared_type = flat
            .schemas
            .iter()
            .filter(|(_, alternative)| !alternative)
            .find_map(|(s, _)| s.get("type").and_then(Value::as_str))
            .map(str::to_string);
        let preserve = flat.any_true("x-kubernetes-preserve-unknown-fields");
        let mut data = NodeData {
            shape: Shape::Deduced,
            declared_type,
            patch_strategy: flat
                .first_str("x-kubernetes-patch-strategy")
                .map(PatchStrategy::parse),
            patch_merge_key: flat
                .first_str("x-kubernetes-patch-merge-key")
                .map(str::to_string),
            preserve_unknown_fields: preserve,
            embedded_resource: flat.any_true("x-kubernetes-embedded-resource"),
        };

        // What the schemas declare about keys and items.
        let mut properties: Vec<(&'s str, Vec<&'s Value>)> = Vec::new();
        let mut property_at: HashMap<&'s str, usize> = HashMap::new();
        let mut has_properties = false;
        let mut values: Vec<&'s Value> = Vec::new();
        let (mut has_additional, mut additional_true, mut additional_false) = (false, false, false);
        let mut items: Vec<&'s Value> = Vec::new();
        let mut has_items = false;
        for (schema, _) in &flat.schemas {
            if let Some(Value::Object(props)) = schema.get("properties") {
                has_properties = true;
                for (name, sub) in props {
                    match property_at.get(name.as_str()) {
                        Some(&at) => properties[at].1.push(sub),
                        None => {
                            property_at.insert(name.as_str(), properties.len());
                            properties.push((name.as_str(), vec![sub]));
                        }
                    }
                }
            }
            match schema.get("additionalProperties") {
                None => {}
                Some(Value::Bool(false)) => (has_additional, additional_false) = (true, true),
                Some(Value::Bool(true)) => (has_additional, additional_true) = (true, true),
                Some(other) => {
                    has_additional = true;
                    if other.is_object() {
                        values.push(other);
                    }
                }
            }
            match schema.get("items") {
                None => {}
                Some(Value::Array(tuple)) => {
                    has_items = true;
                    items.extend(tuple);
                }
                Some(item) => {
                    has_items = true;
                    items.push(item);
                }
            }
        }
        let list_type = flat.first_str("x-kubernetes-list-type");

        let declared = data.declared_type.as_deref();
        data.shape = if flat.any_true("x-kubernetes-int-or-string") {
            Shape::Scalar(ScalarType::IntOrString)
        } else if declared == Some("array")
            || (declared.is_none()
                && !has_properties
                && !has_additional
                && (has_items || list_type.is_some()))
        {
            let items = has_items.then(|| self.place(&items, doc, depth + 1));
            let list_type = match list_type {
                Some("set") => ListType::Set,
                Some("map") => ListType::Map(map_keys(
                    flat.schemas
                        .iter()
                        .find_map(|(s, _)| s.get("x-kubernetes-list-map-keys")),
                )),
                _ => ListType::Atomic,
            };
            Shape::List { items, list_type }
        } else if declared == Some("object")
            || (declared.is_none() && (has_properties || has_additional))
        {
            if declared.is_some() && !has_properties && !has_additional && preserve {
                Shape::Deduced
            } else {
                let mut fields = BTreeMap::new();
                for (name, subs) in &properties {
                    let id = self.place(subs, doc, depth + 1);
                    fields.insert((*name).to_string(), id);
                }
                let rest = if !values.is_empty() {
                    if additional_true {
                        values.push(&ANYTHING);
                    }
                    Rest::Values(self.place(&values, doc, depth + 1))
                } else if additional_true || preserve {
                    Rest::Preserved
                } else if flat.free {
                    Rest::Unspecified
                } else if has_properties || additional_false {
                    Rest::Unknown
                } else {
                    Rest::Unspecified
                };
                Shape::Object {
                    fields,
                    rest,
                    atomic: flat.first_str("x-kubernetes-map-type") == Some("atomic"),
                }
            }
        } else {
            match declared {
                None => Shape::Deduced,
                Some("string") => Shape::Scalar(ScalarType::String),
                Some("integer") => Shape::Scalar(ScalarType::Integer),
                Some("number") => Shape::Scalar(ScalarType::Number),
                Some("boolean") => Shape::Scalar(ScalarType::Boolean),
                Some(_) => Shape::Scalar(ScalarType::Other),
            }
        };
        data
    }

    /// Makes node `id` a resource: an object whose `apiVersion` and `kind` are strings and
    /// whose `metadata` is ObjectMeta. A node that is not an object becomes one that declares
    /// only these (its other keys keep what it said about them). Returns `id`.
    fn make_resource(&mut self, id: NodeId) -> NodeId {
        let string = self.string_node();
        let meta = self.object_meta_node();
        let data = &mut self.nodes[id.0 as usize];
        if !matches!(data.shape, Shape::Object { .. }) {
            let rest = if data.preserve_unknown_fields {
                Rest::Preserved
            } else {
                Rest::Unspecified
            };
            data.shape = Shape::Object {
                fields: BTreeMap::new(),
                rest,
                atomic: false,
            };
        }
        if let Shape::Object { fields, .. } = &mut data.shape {
            fields.insert("apiVersion".into(), string);
            fields.insert("kind".into(), string);
            fields.insert("metadata".into(), meta);
        }
        id
    }

    fn string_node(&mut self) -> NodeId {
        if let Some(id) = self.string {
            return id;
        }
        let id = self.push(NodeData {
            shape: Shape::Scalar(ScalarType::String),
            declared_type: Some("string".into()),
            ..NodeData::absent()
        });
        self.string = Some(id);
        id
    }

    /// ObjectMeta's node, built once per model.
    fn object_meta_node(&mut self) -> NodeId {
        if let Some(id) = self.object_meta {
            return id;
        }
        let meta: &'static Value = &OBJECT_META;
        // Its own document: ObjectMeta's schema is inlined and has no `$ref`s.
        let id = self.place(&[meta], meta, 1);
        self.object_meta = Some(id);
        id
    }
}

/// The target of a local `$ref` in `doc`, see [`Builder::resolve`].
/// The keys an `x-kubernetes-list-map-keys` value names (none when absent).
pub(crate) fn map_keys(keys: Option<&Value>) -> Vec<String> {
    keys.and_then(Value::as_array)
        .map(|keys| {
            keys.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn resolve<'s>(doc: &'s Value, reference: &str) -> Option<&'s Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(doc);
    }
    let mut stack = vec![doc];
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
