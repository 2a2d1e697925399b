//! Merging maps, and the directives that live in a patch map: `$patch`, `$retainKeys`,
//! `$deleteFromPrimitiveList/<field>` and `$setElementOrder/<field>`.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::error::StrategicPatchError;
use super::identity::Identity;
use super::list::{ElementKind, apply_order, element_kind, merge_list, validate_order};
use super::render::{go_type, go_value};
use super::semantics::{ListStrategy, expect_array, expect_object, list_strategy, replaces_map};
use crate::schema::SchemaNode;

/// The key of the `$patch` directive.
const PATCH: &str = "$patch";
/// The key of the `$retainKeys` directive.
const RETAIN_KEYS: &str = "$retainKeys";
/// The prefix of `$deleteFromPrimitiveList/<field>` keys.
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
/// The prefix of `$setElementOrder/<field>` keys.
const SET_ELEMENT_ORDER: &str = "$setElementOrder";

/// A `$patch` directive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Directive {
    /// `$patch: replace`.
    Replace,
    /// `$patch: merge`, the default.
    Merge,
    /// `$patch: delete`.
    Delete,
}

/// The `$patch` directive of a patch map, if it has one.
pub(super) fn directive(
    map: &Map<String, Value>,
) -> Result<Option<Directive>, StrategicPatchError> {
    match map.get(PATCH) {
        None => Ok(None),
        Some(Value::String(s)) if s == "replace" => Ok(Some(Directive::Replace)),
        Some(Value::String(s)) if s == "merge" => Ok(Some(Directive::Merge)),
        Some(Value::String(s)) if s == "delete" => Ok(Some(Directive::Delete)),
        Some(other) => Err(StrategicPatchError::UnknownPatchType {
            value: go_value(other),
            map: go_value(&Value::Object(map.clone())),
        }),
    }
}

/// Merges a patch map into the object's map (`schema` is the map's).
pub(super) fn merge_map(
    original: Map<String, Value>,
    patch: &Map<String, Value>,
    schema: SchemaNode<'_>,
) -> Result<Map<String, Value>, StrategicPatchError> {
    match directive(patch)? {
        Some(Directive::Replace) => merge_fields(Map::new(), patch, schema),
        Some(Directive::Delete) => Ok(Map::new()),
        Some(Directive::Merge) | None => merge_fields(original, patch, schema),
    }
}

/// A patch map where the object has no map: its content without directives or `null`s, or
/// `None` for `$patch: delete`.
pub(super) fn new_map(
    patch: &Map<String, Value>,
    schema: SchemaNode<'_>,
) -> Result<Option<Value>, StrategicPatchError> {
    match directive(patch)? {
        Some(Directive::Delete) => Ok(None),
        _ => merge_fields(Map::new(), patch, schema).map(|map| Some(Value::Object(map))),
    }
}

/// A patch value where the object has none, or one of another type.
fn new_value(value: &Value, schema: SchemaNode<'_>) -> Result<Option<Value>, StrategicPatchError> {
    match value {
        Value::Object(map) => new_map(map, schema),
        Value::Array(items) => new_list(items, schema.item_node()).map(|l| Some(Value::Array(l))),
        other => Ok(Some(other.clone())),
    }
}

/// A patch list that replaces the object's (or is new to it): maps carrying `$patch` are
/// dropped, maps lose their directives and `null` values; `null` elements stay.
fn new_list(items: &[Value], schema: SchemaNode<'_>) -> Result<Vec<Value>, StrategicPatchError> {
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Value::Object(map) => {
                if directive(map)?.is_none() {
                    out.push(Value::Object(merge_fields(Map::new(), map, schema)?));
                }
            }
            Value::Array(inner) => out.push(Value::Array(new_list(inner, schema.item_node())?)),
            other => out.push(other.clone()),
        }
    }
    Ok(out)
}

/// Merges the fields of a patch map (its `$patch` already handled) into `original`.
fn merge_fields(
    mut original: Map<String, Value>,
    patch: &Map<String, Value>,
    schema: SchemaNode<'_>,
) -> Result<Map<String, Value>, StrategicPatchError> {
    if let Some(keys) = patch.get(RETAIN_KEYS) {
        retain_keys(&mut original, keys, patch)?;
    }

    // `$setElementOrder/<field>` merges its field too, so the field is done after it.
    let mut ordered: HashSet<&str> = HashSet::new();
    for (key, order) in patch {
        if key.starts_with(SET_ELEMENT_ORDER) {
            let field = directive_field(key, SET_ELEMENT_ORDER)
                .ok_or(StrategicPatchError::BadSetElementOrder)?;
            set_element_order(
                &mut original,
                field,
                order,
                patch.get(field),
                schema.field_node(field),
            )?;
            ordered.insert(field);
        }
    }

    // Deletions from primitive lists apply after the lists merged.
    let mut deletions: Vec<(&str, &Value)> = Vec::new();
    for (key, value) in patch {
        if key == PATCH || key == RETAIN_KEYS || key.starts_with(SET_ELEMENT_ORDER) {
            continue;
        }
        if key.starts_with(DELETE_FROM_PRIMITIVE_LIST) {
            let field = directive_field(key, DELETE_FROM_PRIMITIVE_LIST)
                .ok_or(StrategicPatchError::BadDeleteFromPrimitiveList)?;
            deletions.push((field, value));
            continue;
        }
        if !ordered.contains(key.as_str()) {
            merge_field(&mut original, key, value, schema.field_node(key))?;
        }
    }
    for (field, values) in deletions {
        delete_from_primitive_list(&mut original, field, values)?;
    }
    Ok(original)
}

/// The field a `<prefix>/<field>` directive key names.
fn directive_field<'k>(key: &'k str, prefix: &str) -> Option<&'k str> {
    key.strip_prefix(prefix)?.strip_prefix('/')
}

/// Merges one patch field into the object's map.
fn merge_field(
    original: &mut Map<String, Value>,
    key: &str,
    value: &Value,
    schema: SchemaNode<'_>,
) -> Result<(), StrategicPatchError> {
    if value.is_null() {
        original.remove(key);
        return Ok(());
    }
    let merged = match (original.get_mut(key), value) {
        (Some(Value::Object(existing)), Value::Object(patch)) => {
            expect_object(schema)?;
            if replaces_map(schema) {
                Some(Value::Object(merge_map(Map::new(), patch, schema)?))
            } else {
                let merged = merge_map(std::mem::take(existing), patch, schema)?;
                Some(Value::Object(merged))
            }
        }
        (Some(Value::Array(existing)), Value::Array(patch)) => {
            expect_array(schema)?;
            let merged = match list_strategy(schema) {
                ListStrategy::Merge { key } => {
                    merge_list(std::mem::take(existing), patch, key, schema)?.elements
                }
                ListStrategy::Replace => new_list(patch, schema.item_node())?,
            };
            Some(Value::Array(merged))
        }
        _ => new_value(value, schema)?,
    };
    match merged {
        Some(merged) => {
            original.insert(key.to_string(), merged);
        }
        None => {
            original.remove(key);
        }
    }
    Ok(())
}

/// `$retainKeys`: drops the object's keys the list does not name. Every key the patch sets must
/// be named.
fn retain_keys(
    original: &mut Map<String, Value>,
    keys: &Value,
    patch: &Map<String, Value>,
) -> Result<(), StrategicPatchError> {
    let Value::Array(keys) = keys else {
        return Err(StrategicPatchError::BadRetainKeys);
    };
    let keys = keys
        .iter()
        .map(|k| k.as_str().ok_or(StrategicPatchError::BadRetainKeys))
        .collect::<Result<HashSet<&str>, _>>()?;
    let sets_unlisted_key = patch.iter().any(|(key, value)| {
        !value.is_null()
            && key != PATCH
            && key != RETAIN_KEYS
            && !key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            && !key.starts_with(SET_ELEMENT_ORDER)
            && !keys.contains(key.as_str())
    });
    if sets_unlisted_key {
        return Err(StrategicPatchError::BadRetainKeys);
    }
    original.retain(|key, _| keys.contains(key.as_str()));
    Ok(())
}

/// `$deleteFromPrimitiveList/<field>`: removes the listed values from the object's list, whatever
/// the list's patch strategy.
fn delete_from_primitive_list(
    original: &mut Map<String, Value>,
    field: &str,
    values: &Value,
) -> Result<(), StrategicPatchError> {
    let Value::Array(remove) = values else {
        return Err(StrategicPatchError::BadDeleteFromPrimitiveList);
    };
    if let Some(Value::Array(list)) = original.get_mut(field) {
        element_kind(&[list, remove])?;
        let remove: HashSet<Identity> = remove.iter().map(Identity).collect();
        list.retain(|value| !remove.contains(&Identity(value)));
    }
    Ok(())
}

/// `$setElementOrder/<field>`: merges the field's patch list (if any), then orders the result.
fn set_element_order(
    original: &mut Map<String, Value>,
    field: &str,
    order: &Value,
    patch_list: Option<&Value>,
    schema: SchemaNode<'_>,
) -> Result<(), StrategicPatchError> {
    let not_a_list = |value: &Value, in_patch| StrategicPatchError::TypeMismatch {
        expected: "[]interface {}",
        received: go_type(value),
        in_patch,
    };
    let Value::Array(order) = order else {
        return Err(not_a_list(order, true));
    };
    let existing = match original.get(field) {
        None | Some(Value::Null) => None,
        Some(Value::Array(list)) => Some(list.clone()),
        Some(other) => return Err(not_a_list(other, false)),
    };
    let patch_list = match patch_list {
        None => None,
        Some(Value::Array(list)) => Some(list.as_slice()),
        Some(other) => return Err(not_a_list(other, true)),
    };
    let strategy = list_strategy(schema);
    validate_order(patch_list.unwrap_or_default(), order, strategy.merge_key())?;

    let (merged, server_order) = match (existing, patch_list) {
        (None, None) => return Ok(()),
        (Some(existing), None) => (existing.clone(), existing),
        (None, Some(patch)) => (new_list(patch, schema.item_node())?, Vec::new()),
        (Some(existing), Some(patch)) => match strategy {
            ListStrategy::Merge { key } => {
                let merged = merge_list(existing, patch, key, schema)?;
                (merged.elements, merged.server_view)
            }
            ListStrategy::Replace => (new_list(patch, schema.item_node())?, existing),
        },
    };
    let kind = element_kind(&[&server_order, patch_list.unwrap_or_default()])?;
    let key = strategy
        .merge_key()
        .filter(|_| kind == Some(ElementKind::Object));
    let ordered = apply_order(merged, order, &server_order, key)?;
    original.insert(field.to_string(), Value::Array(ordered));
    Ok(())
}
