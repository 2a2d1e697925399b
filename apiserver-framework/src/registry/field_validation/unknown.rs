//! Which fields are known, read from the structural schema model, and the unknown fields of a
//! decoded value.

use serde_json::Value;

use super::FieldIssue;
use super::collect::{Found, push_index, push_key};
use crate::schema::{Field, SchemaNode};

/// Where a key of an object leads.
pub(super) enum Slot<'s> {
    /// A declared field, a map entry or a key of a free-form object: check for repeats and
    /// descend with this node.
    Known(SchemaNode<'s>),
    /// Not declared: report, do not descend.
    Unknown,
}

/// Where `key` of an object at `node` leads: declared fields and map entries to their nodes,
/// keys the schema keeps or says nothing about to the absent node (anything goes below), other
/// keys of an object that declares its fields nowhere.
pub(super) fn slot<'s>(node: SchemaNode<'s>, key: &str) -> Slot<'s> {
    match node.field(key) {
        Field::Declared(child) | Field::Entry(child) => Slot::Known(child),
        Field::Preserved | Field::Unspecified => Slot::Known(node.absent()),
        Field::Unknown => Slot::Unknown,
    }
}

/// Reports the unknown fields of `value` (at `node`) under `path`; keys in sorted order.
pub(super) fn unknown_in_value(
    value: &Value,
    node: SchemaNode<'_>,
    path: &mut String,
    found: &mut Found,
) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            for key in keys {
                let mark = push_key(path, key);
                match slot(node, key) {
                    Slot::Known(child) => unknown_in_value(&map[key.as_str()], child, path, found),
                    Slot::Unknown => found.push(FieldIssue::Unknown(path.clone())),
                }
                path.truncate(mark);
            }
        }
        Value::Array(list) => {
            let items = node.item_node();
            for (i, item) in list.iter().enumerate() {
                let mark = push_index(path, i);
                unknown_in_value(item, items, path, found);
                path.truncate(mark);
            }
        }
        _ => {}
    }
}
