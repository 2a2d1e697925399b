//! Merging an applied configuration into a live object (structured-merge-diff's `Merge` with
//! "keep the right-hand side") and removing owned items (`RemoveItems`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::error::ApplyError;
use super::fieldpath::{PathElement, Set};
use super::typed::{
    Shape, as_map, field, index_items, is_empty_container, list_item_pe, positions, shape_pair,
};
use crate::schema::SchemaNode;

/// `config` merged into `live`: struct fields and granular maps merge key by key, `set` and
/// `map` lists item by item, anything else (scalars, atomic lists and maps) is replaced.
pub fn merge(live: &Value, config: &Value, node: SchemaNode<'_>) -> Result<Value, ApplyError> {
    Ok(merge_node(node, Some(live), Some(config))?.unwrap_or_else(|| Value::Object(Map::new())))
}

fn merge_node(
    node: SchemaNode<'_>,
    l: Option<&Value>,
    r: Option<&Value>,
) -> Result<Option<Value>, ApplyError> {
    let leaf = || Ok(r.or(l).cloned());
    match shape_pair(node, l, r) {
        Shape::Leaf => leaf(),
        Shape::Map { node, atomic } => {
            if atomic || (is_empty_container(l) && is_empty_container(r)) {
                return leaf();
            }
            let (lm, rm) = (as_map(l), as_map(r));
            let mut out = Map::new();
            if let Some(lm) = lm {
                for (k, lv) in lm {
                    if let Some(v) =
                        merge_node(field(node, k).0, Some(lv), rm.and_then(|m| m.get(k)))?
                    {
                        out.insert(k.clone(), v);
                    }
                }
            }
            if let Some(rm) = rm {
                for (k, rv) in rm {
                    if lm.is_some_and(|m| m.contains_key(k)) {
                        continue;
                    }
                    if let Some(v) = merge_node(field(node, k).0, None, Some(rv))? {
                        out.insert(k.clone(), v);
                    }
                }
            }
            Ok((!out.is_empty()).then_some(Value::Object(out)))
        }
        Shape::List {
            items,
            atomic,
            keys,
        } => {
            if atomic || (is_empty_container(l) && is_empty_container(r)) {
                return leaf();
            }
            let lhs = index_items(keys, l)?;
            let rhs = index_items(keys, r)?;
            let out = merge_list_items(items, &lhs, &rhs)?;
            Ok((!out.is_empty()).then_some(Value::Array(out)))
        }
    }
}

/// The item of `items` with identity `pe`, looked up through `at` (its [`positions`]).
fn find<'a>(
    items: &[(PathElement, &'a Value)],
    at: &BTreeMap<&PathElement, usize>,
    pe: &PathElement,
) -> Option<&'a Value> {
    at.get(pe).map(|&i| items[i].1)
}

/// Upstream's list merge order: live items keep their places, applied items that are new are
/// inserted where the configuration puts them relative to shared items, and shared items follow
/// the configuration's order.
fn merge_list_items(
    items: SchemaNode<'_>,
    lhs: &[(PathElement, &Value)],
    rhs: &[(PathElement, &Value)],
) -> Result<Vec<Value>, ApplyError> {
    let mut out = Vec::with_capacity(lhs.len().max(rhs.len()));
    let (l_at, r_at) = (positions(lhs), positions(rhs));
    let mut shared = rhs
        .iter()
        .filter(|(pe, _)| l_at.contains_key(pe))
        .map(|(pe, _)| pe);
    let mut next_shared = shared.next();
    let mut merged_rhs: BTreeSet<&PathElement> = BTreeSet::new();
    let (mut li, mut ri) = (0, 0);
    let mut push = |v: Option<Value>| {
        if let Some(v) = v {
            out.push(v);
        }
    };
    while li < lhs.len() || ri < rhs.len() {
        if li < lhs.len() && ri < rhs.len() {
            let pe = &lhs[li].0;
            if *pe == rhs[ri].0 {
                merged_rhs.insert(pe);
                push(merge_node(items, Some(lhs[li].1), Some(rhs[ri].1))?);
                li += 1;
                ri += 1;
                next_shared = shared.next();
                continue;
            }
            if r_at.contains_key(pe) && next_shared.is_some_and(|n| n != pe) {
                li += 1;
                continue;
            }
        }
        if li < lhs.len() {
            let pe = &lhs[li].0;
            if !r_at.contains_key(pe) {
                push(merge_node(items, Some(lhs[li].1), None)?);
                li += 1;
                continue;
            } else if merged_rhs.contains(&pe) {
                li += 1;
                continue;
            }
        }
        if ri < rhs.len() {
            let pe = &rhs[ri].0;
            merged_rhs.insert(pe);
            push(merge_node(items, find(lhs, &l_at, pe), Some(rhs[ri].1))?);
            ri += 1;
            if next_shared == Some(pe) {
                next_shared = shared.next();
            }
        }
    }
    Ok(out)
}

/// `value` without the paths that are members of `to_remove` (a removed map key or list item
/// goes with everything below it). Containers emptied by the removal are dropped, as the
/// apiserver prunes the `null` structured-merge-diff leaves there.
pub fn remove_items(value: &Value, to_remove: &Set, node: SchemaNode<'_>) -> Value {
    remove_node(node, value, to_remove).unwrap_or_else(|| Value::Object(Map::new()))
}

fn remove_node(node: SchemaNode<'_>, v: &Value, to_remove: &Set) -> Option<Value> {
    match shape_pair(node, Some(v), None) {
        Shape::Leaf => Some(v.clone()),
        Shape::Map { atomic: true, .. } | Shape::List { atomic: true, .. } => None,
        Shape::Map { node, .. } => {
            let Value::Object(map) = v else {
                return Some(v.clone());
            };
            let mut out = Map::new();
            for (k, child) in map {
                let pe = PathElement::Field(k.clone());
                if to_remove.has_member(&pe) {
                    continue;
                }
                let kept = match to_remove.child(&pe) {
                    Some(sub) => remove_node(field(node, k).0, child, sub),
                    None => Some(child.clone()),
                };
                if let Some(kept) = kept {
                    out.insert(k.clone(), kept);
                }
            }
            (!out.is_empty() || map.is_empty()).then_some(Value::Object(out))
        }
        Shape::List { items, keys, .. } => {
            let Value::Array(list) = v else {
                return Some(v.clone());
            };
            let mut out = Vec::new();
            for (i, item) in list.iter().enumerate() {
                let Ok(pe) = list_item_pe(keys, i, item) else {
                    out.push(item.clone());
                    continue;
                };
                if to_remove.has_member(&pe) {
                    continue;
                }
                let kept = match to_remove.child(&pe) {
                    Some(sub) => remove_node(items, item, sub),
                    None => Some(item.clone()),
                };
                if let Some(kept) = kept {
                    out.push(kept);
                }
            }
            (!out.is_empty() || list.is_empty()).then_some(Value::Array(out))
        }
    }
}
