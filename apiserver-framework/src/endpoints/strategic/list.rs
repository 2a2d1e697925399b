//! Merging lists: maps by merge key, other values as a set; element directives; and the order
//! of the merged list.
//!
//! Order: the elements the patch (or `$setElementOrder`) names come in its order; an element
//! only the object has keeps its relative order and goes before the next placed element that
//! followed it in the object. An element new to the object has no place there, so it goes
//! before the object-only elements still to be placed: a patch that only adds `b` to `[a]`
//! yields `[b, a]`.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::error::StrategicPatchError;
use super::identity::{Identity, OwnedIdentity};
use super::merge::{Directive, directive, merge_map, new_map};
use super::render::{go_lists, go_type, go_value};
use super::semantics::type_name;
use crate::schema::SchemaNode;

/// The one JSON type of a list's elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ElementKind {
    /// Maps.
    Object,
    /// Strings, numbers, booleans or nulls (nulls go with any other scalar).
    Scalar,
}

/// The kind of the elements of `lists` taken together; `None` when they have no elements.
pub(super) fn element_kind(lists: &[&[Value]]) -> Result<Option<ElementKind>, StrategicPatchError> {
    #[derive(PartialEq)]
    enum Seen {
        Object,
        String,
        Number,
        Bool,
    }
    let mut seen: Option<Seen> = None;
    let mut any = false;
    for value in lists.iter().flat_map(|list| list.iter()) {
        any = true;
        let this = match value {
            Value::Array(_) => return Err(StrategicPatchError::ListOfLists),
            Value::Null => continue,
            Value::Object(_) => Seen::Object,
            Value::String(_) => Seen::String,
            Value::Number(_) => Seen::Number,
            Value::Bool(_) => Seen::Bool,
        };
        match &seen {
            Some(previous) if *previous != this => {
                return Err(StrategicPatchError::MixedListElements {
                    lists: go_lists(lists),
                });
            }
            Some(_) => {}
            None => seen = Some(this),
        }
    }
    let has_null = lists.iter().any(|list| list.iter().any(Value::is_null));
    match seen {
        Some(Seen::Object) if has_null => Err(StrategicPatchError::MixedListElements {
            lists: go_lists(lists),
        }),
        Some(Seen::Object) => Ok(Some(ElementKind::Object)),
        Some(_) => Ok(Some(ElementKind::Scalar)),
        None if any => Ok(Some(ElementKind::Scalar)),
        None => Ok(None),
    }
}

/// A merged list, and the object's list as a `$setElementOrder` on the same field then sees it.
pub(super) struct MergedList {
    /// The merged list, in the patch's order.
    pub(super) elements: Vec<Value>,
    /// The object's list after the patch's element deletions, with as many of the elements the
    /// patch added as there were deletions taking the freed places: where `$setElementOrder`
    /// does not name an element, its position here decides where it goes (as on Kubernetes
    /// API servers, where the merge reuses the list's storage in place).
    pub(super) server_view: Vec<Value>,
}

/// Merges the patch list into the object's list of a merging field (`schema` is the list's).
pub(super) fn merge_list(
    original: Vec<Value>,
    patch: &[Value],
    key: Option<&str>,
    schema: SchemaNode<'_>,
) -> Result<MergedList, StrategicPatchError> {
    if original.is_empty() && patch.is_empty() {
        return Ok(MergedList {
            elements: Vec::new(),
            server_view: Vec::new(),
        });
    }
    let items = schema.item_node();
    if element_kind(&[&original, patch])? != Some(ElementKind::Object) {
        let server_view = original.clone();
        let all: Vec<Value> = original.into_iter().chain(patch.iter().cloned()).collect();
        let first: Vec<bool> = {
            let mut seen = HashSet::with_capacity(all.len());
            all.iter().map(|v| seen.insert(Identity(v))).collect()
        };
        let merged: Vec<Value> = all
            .into_iter()
            .zip(first)
            .filter_map(|(value, first)| first.then_some(value))
            .collect();
        let (in_patch, server_only) = partition(merged, patch, None)?;
        let elements = normalize_order(in_patch, server_only, patch, &server_view, None)?;
        return Ok(MergedList {
            elements,
            server_view,
        });
    }
    let Some(key) = key else {
        return Err(StrategicPatchError::NoMergeKey {
            schema: type_name(items),
        });
    };

    // Element directives: `$patch: delete` drops the elements with that key, `$patch: replace`
    // makes the other patch elements the whole list.
    let original_len = original.len();
    let mut original = original;
    let mut plain: Vec<&Map<String, Value>> = Vec::new();
    let mut replace = false;
    let mut deleted: HashSet<Identity> = HashSet::new();
    for element in patch.iter().filter_map(Value::as_object) {
        match directive(element)? {
            None => plain.push(element),
            Some(Directive::Delete) => {
                deleted.insert(Identity(merge_key_of(element, key, true)?));
            }
            Some(Directive::Replace) => replace = true,
            Some(Directive::Merge) => return Err(StrategicPatchError::MergeDirectiveInList),
        }
    }
    if !deleted.is_empty() {
        original.retain(|e| !e.get(key).is_some_and(|v| deleted.contains(&Identity(v))));
    }
    if replace {
        let mut replacement = Vec::with_capacity(plain.len());
        for element in plain {
            merge_key_of(element, key, true)?;
            if let Some(value) = new_map(element, items)? {
                replacement.push(value);
            }
        }
        let order = replacement.clone();
        let elements = normalize_order(Vec::new(), replacement, &[], &order, Some(key))?;
        return Ok(MergedList {
            elements,
            server_view: original,
        });
    }

    let server_order = original.clone();
    let mut free_places = original_len - original.len();
    let mut server_view = original.clone();
    let mut merged = original;
    // Where the first element with each merge key is.
    let mut at: HashMap<OwnedIdentity, usize> = HashMap::with_capacity(merged.len());
    for (i, e) in merged.iter().enumerate() {
        if let Some(v) = e.get(key) {
            at.entry(OwnedIdentity(v.clone())).or_insert(i);
        }
    }
    for element in &plain {
        let value = merge_key_of(element, key, true)?;
        match at.get(&OwnedIdentity(value.clone())).copied() {
            Some(i) => {
                let existing = match std::mem::take(&mut merged[i]) {
                    Value::Object(map) => map,
                    _ => Map::new(),
                };
                merged[i] = Value::Object(merge_map(existing, element, items)?);
            }
            None => {
                if let Some(value) = new_map(element, items)? {
                    if free_places > 0 {
                        free_places -= 1;
                        server_view.push(value.clone());
                    }
                    if let Some(k) = value.get(key) {
                        at.entry(OwnedIdentity(k.clone())).or_insert(merged.len());
                    }
                    merged.push(value);
                }
            }
        }
    }
    let patch_order: Vec<Value> = plain.into_iter().cloned().map(Value::Object).collect();
    let (in_patch, server_only) = partition(merged, &patch_order, Some(key))?;
    let elements = normalize_order(
        in_patch,
        server_only,
        &patch_order,
        &server_order,
        Some(key),
    )?;
    Ok(MergedList {
        elements,
        server_view,
    })
}

/// Puts `merged` in the order of `order` (a `$setElementOrder` list); elements it does not name
/// keep their relative order from `server_order` (the object's list).
pub(super) fn apply_order(
    merged: Vec<Value>,
    order: &[Value],
    server_order: &[Value],
    key: Option<&str>,
) -> Result<Vec<Value>, StrategicPatchError> {
    if merged.is_empty() {
        return Ok(merged);
    }
    for element in order {
        if key.is_some() && !element.is_object() {
            return Err(type_mismatch(element, true));
        }
    }
    let (in_order, server_only) = partition(merged, order, key)?;
    normalize_order(in_order, server_only, order, server_order, key)
}

/// Checks a patch list against its `$setElementOrder` list: the patch's elements (deletions
/// and directives aside) must all appear there, in the same relative order.
pub(super) fn validate_order(
    patch: &[Value],
    order: &[Value],
    key: Option<&str>,
) -> Result<(), StrategicPatchError> {
    if patch.is_empty() || order.is_empty() {
        return Ok(());
    }
    let mut kept: Vec<&Value> = Vec::with_capacity(patch.len());
    for element in patch {
        if key.is_some() {
            let map = element
                .as_object()
                .ok_or_else(|| type_mismatch(element, true))?;
            if map.get("$patch").and_then(Value::as_str) == Some("delete") {
                continue;
            }
        }
        kept.push(element);
    }
    let (mut p, mut o) = (0, 0);
    while p < kept.len() && o < order.len() {
        if kept[p].get("$patch").is_some() {
            p += 1;
            continue;
        }
        let same = match key {
            Some(key) => {
                let left = kept[p]
                    .as_object()
                    .ok_or_else(|| type_mismatch(kept[p], true))?;
                let right = order[o]
                    .as_object()
                    .ok_or_else(|| type_mismatch(&order[o], true))?;
                merge_key_of(left, key, true)? == merge_key_of(right, key, true)?
            }
            None => kept[p] == &order[o],
        };
        if same {
            p += 1;
        }
        o += 1;
    }
    if p < kept.len() && o >= order.len() {
        return Err(StrategicPatchError::SetElementOrderMismatch {
            patch: go_value(&Value::Array(patch.to_vec())),
            order: go_value(&Value::Array(order.to_vec())),
        });
    }
    Ok(())
}

/// The merge key's value in a map element.
fn merge_key_of<'v>(
    element: &'v Map<String, Value>,
    key: &str,
    in_patch: bool,
) -> Result<&'v Value, StrategicPatchError> {
    element
        .get(key)
        .ok_or_else(|| StrategicPatchError::MissingMergeKey {
            element: go_value(&Value::Object(element.clone())),
            key: key.to_string(),
            in_patch,
        })
}

fn type_mismatch(value: &Value, in_patch: bool) -> StrategicPatchError {
    StrategicPatchError::TypeMismatch {
        expected: "map[string]interface {}",
        received: go_type(value),
        in_patch,
    }
}

/// Splits `merged` into the elements `order` names and the others, keeping their order.
fn partition(
    merged: Vec<Value>,
    order: &[Value],
    key: Option<&str>,
) -> Result<(Vec<Value>, Vec<Value>), StrategicPatchError> {
    let mut named = Vec::with_capacity(merged.len());
    let mut others = Vec::with_capacity(merged.len());
    let in_order: HashSet<Identity> = order
        .iter()
        .filter_map(|o| identity(o, key))
        .map(Identity)
        .collect();
    for element in merged {
        let present = match key {
            Some(key) => {
                let map = element
                    .as_object()
                    .ok_or_else(|| type_mismatch(&element, false))?;
                let value = merge_key_of(map, key, false)?;
                in_order.contains(&Identity(value))
            }
            None => in_order.contains(&Identity(&element)),
        };
        if present {
            named.push(element);
        } else {
            others.push(element);
        }
    }
    Ok((named, others))
}

/// What identifies an element: its merge key's value, or the element itself.
fn identity<'v>(element: &'v Value, key: Option<&str>) -> Option<&'v Value> {
    match key {
        Some(key) => element.get(key),
        None => Some(element),
    }
}

/// Where the first element of a list with each identity is (elements without one share the
/// identity `None`).
struct Positions<'v>(HashMap<Option<Identity<'v>>, usize>);

impl<'v> Positions<'v> {
    fn of(list: &'v [Value], key: Option<&str>) -> Self {
        let mut at = HashMap::with_capacity(list.len());
        for (i, e) in list.iter().enumerate() {
            at.entry(identity(e, key).map(Identity)).or_insert(i);
        }
        Positions(at)
    }

    /// Where the first element with the identity of `element` is.
    fn index_of(&self, element: &Value, key: Option<&str>) -> Option<usize> {
        self.0.get(&identity(element, key).map(Identity)).copied()
    }
}

/// Sorts both parts by their orders, then interleaves them.
fn normalize_order(
    in_patch: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    key: Option<&str>,
) -> Result<Vec<Value>, StrategicPatchError> {
    if let Some(key) = key {
        for (list, in_patch) in [(patch_order, true), (server_order, false)] {
            for element in list {
                let map = element
                    .as_object()
                    .ok_or_else(|| type_mismatch(element, in_patch))?;
                merge_key_of(map, key, in_patch)?;
            }
        }
    }
    let in_patch = sort_by_order(in_patch, patch_order, key);
    let server_only = sort_by_order(server_only, server_order, key);
    Ok(interleave(server_only, in_patch, server_order, key))
}

/// A stable sort by position in `order`; elements it lacks go last.
fn sort_by_order(mut list: Vec<Value>, order: &[Value], key: Option<&str>) -> Vec<Value> {
    let at = Positions::of(order, key);
    list.sort_by_cached_key(|element| at.index_of(element, key).unwrap_or(usize::MAX));
    list
}

/// Merges two sorted lists, keeping the order within each: an element of `left` goes before
/// the next element of `right` only when both are in `server_order` and it comes first there.
fn interleave(
    left: Vec<Value>,
    right: Vec<Value>,
    server_order: &[Value],
    key: Option<&str>,
) -> Vec<Value> {
    let mut out = Vec::with_capacity(left.len() + right.len());
    let at = Positions::of(server_order, key);
    let mut left = left.into_iter().peekable();
    let mut right = right.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => matches!(
                (at.index_of(l, key), at.index_of(r, key)),
                (Some(li), Some(ri)) if li < ri
            ),
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn values(v: Value) -> Vec<Value> {
        match v {
            Value::Array(items) => items,
            _ => panic!("not a list"),
        }
    }

    #[test]
    fn element_kinds() {
        let kind = |v: Value| element_kind(&[&values(v)]);
        assert_eq!(kind(json!([])).unwrap(), None);
        assert_eq!(kind(json!([{}, {}])).unwrap(), Some(ElementKind::Object));
        assert_eq!(kind(json!(["a", null])).unwrap(), Some(ElementKind::Scalar));
        assert_eq!(kind(json!([null])).unwrap(), Some(ElementKind::Scalar));
        assert!(matches!(
            kind(json!([[1]])),
            Err(StrategicPatchError::ListOfLists)
        ));
        assert_eq!(
            element_kind(&[&values(json!([1])), &values(json!(["a"]))])
                .unwrap_err()
                .to_string(),
            "list element types are not identical: [[1] [a]]"
        );
        assert!(kind(json!([{}, null])).is_err());
    }

    #[test]
    fn interleave_places_server_only_elements_by_their_old_position() {
        let server = values(json!([1, 2, 3, 4]));
        // 9 is new: it cannot be compared, so it goes before the server-only elements.
        let out = interleave(
            values(json!([1, 3])),
            values(json!([4, 9, 2])),
            &server,
            None,
        );
        assert_eq!(out, values(json!([1, 3, 4, 9, 2])));
    }

    #[test]
    fn sort_by_order_is_stable_for_duplicates() {
        let order = values(json!([{"k": 2}, {"k": 1}]));
        let list = values(json!([{"k": 1, "v": "a"}, {"k": 2, "v": "b"}, {"k": 1, "v": "c"}]));
        assert_eq!(
            sort_by_order(list, &order, Some("k")),
            values(json!([{"k": 2, "v": "b"}, {"k": 1, "v": "a"}, {"k": 1, "v": "c"}]))
        );
    }

    #[test]
    fn validate_order_accepts_subsets_in_order_and_refuses_others() {
        let order = values(json!([{"n": 1}, {"n": 2}, {"n": 3}]));
        assert!(validate_order(&values(json!([{"n": 1}, {"n": 3}])), &order, Some("n")).is_ok());
        assert!(
            validate_order(
                &values(json!([{"n": 9, "$patch": "delete"}, {"n": 2}])),
                &order,
                Some("n")
            )
            .is_ok()
        );
        let err =
            validate_order(&values(json!([{"n": 3}, {"n": 1}])), &order, Some("n")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "The order in patch list:\n[map[n:3] map[n:1]]\n doesn't match $setElementOrder list:\n[map[n:1] map[n:2] map[n:3]]\n"
        );
        assert!(err.is_bad_request());
        assert!(validate_order(&values(json!([2, 1])), &values(json!([1, 2])), None).is_err());
        let err = validate_order(&values(json!([{"x": 1}])), &order, Some("n")).unwrap_err();
        assert!(matches!(
            err,
            StrategicPatchError::MissingMergeKey { in_patch: true, .. }
        ));
    }
}
