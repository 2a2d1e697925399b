//! Strategic merge patch (`application/strategic-merge-patch+json`), with the semantics of
//! Kubernetes API servers.
//!
//! A strategic merge patch is a JSON merge patch whose lists can merge instead of being
//! replaced. How each list merges comes from the resource's structural schema model
//! ([`crate::schema::StructuralSchema`], built once from its OpenAPI v3 schema):
//!
//! - `x-kubernetes-patch-strategy: merge` (or `merge,retainKeys`) merges a list: maps by
//!   `x-kubernetes-patch-merge-key`, other values as a set. `replace` on a map replaces it whole.
//! - Without a patch strategy, `x-kubernetes-list-type: map` with one key in
//!   `x-kubernetes-list-map-keys` merges by that key, `set` merges as a set, and `atomic` (or no
//!   list type) replaces the list.
//! - `metadata` of a resource (the root, and objects marked `x-kubernetes-embedded-resource`)
//!   is ObjectMeta: `finalizers` merge as a set, `ownerReferences` merge by `uid`.
//! - Where the schema says nothing, maps merge and lists are replaced.
//!
//! Maps merge recursively and `null` deletes a key. The directives, none of which reach the
//! result:
//!
//! - `"$patch": "replace"` in a map replaces the object's map with the rest of the patch map;
//!   `{"$patch": "replace"}` as an element of a merging list makes the other patch elements the
//!   whole list.
//! - `"$patch": "delete"` in a map empties the object's map (and drops a map new to the object);
//!   `{"<key>": v, "$patch": "delete"}` in a merging list deletes the elements with that key.
//! - `"$patch": "merge"` in a map is the default, merging.
//! - `"$retainKeys": [..]` keeps only the named keys of the object's map; the patch may only set
//!   named keys.
//! - `"$deleteFromPrimitiveList/<field>": [..]` removes those values from the list `<field>`,
//!   whatever its strategy.
//! - `"$setElementOrder/<field>": [..]` gives the order of the merged list `<field>`: maps as
//!   `{"<key>": v}`, other values as themselves. Elements only the object has keep their
//!   relative order.
//!
//! Order of a merged list: the elements the patch names come in the patch's order (or the
//! `$setElementOrder` order); an element only the object has keeps its relative order and goes
//! before the next placed element that followed it in the object. An element new to the object
//! has no place there, so it goes before the object-only elements still to be placed: adding
//! `b` to `[a]` yields `[b, a]`, as on Kubernetes API servers.

mod error;
mod identity;
mod list;
mod merge;
mod render;
mod semantics;
#[cfg(test)]
mod tests;

use serde_json::{Map, Value};

use crate::schema::StructuralSchema;

pub(crate) use error::StrategicPatchError;

/// Applies a strategic merge patch to `original` using the list/map semantics of `schema`.
///
/// `original` is the whole object (a JSON object; `null` counts as `{}`), `patch` the patch
/// document (a JSON object; `null` changes nothing) and `schema` the resource's model
/// ([`StructuralSchema::none`] when there is no schema). The result is the patched object, free
/// of directives; it is not validated against the schema.
///
/// ```
/// use apiserver_framework::endpoints::strategic::apply;
/// use apiserver_framework::schema::StructuralSchema;
/// use serde_json::json;
///
/// let schema = StructuralSchema::from_openapi(&json!({"type": "object", "properties": {
///     "spec": {"type": "object", "properties": {
///         "ports": {
///             "type": "array",
///             "items": {"type": "object"},
///             "x-kubernetes-list-type": "map",
///             "x-kubernetes-list-map-keys": ["name"]
///         }
///     }}
/// }}));
/// let original = json!({"spec": {"ports": [{"name": "http", "port": 80}]}});
/// let patch = json!({"spec": {"ports": [{"name": "http", "port": 8080}]}});
/// let patched = apply(&original, &patch, &schema).unwrap();
/// assert_eq!(patched, json!({"spec": {"ports": [{"name": "http", "port": 8080}]}}));
/// ```
pub fn apply(
    original: &Value,
    patch: &Value,
    schema: &StructuralSchema,
) -> Result<Value, StrategicPatchError> {
    let original = match original {
        Value::Object(map) => map.clone(),
        Value::Null => Map::new(),
        other => {
            return Err(StrategicPatchError::OriginalNotAnObject {
                found: render::json_type(other),
            });
        }
    };
    let patch = match patch {
        Value::Object(map) => map,
        Value::Null => return Ok(Value::Object(original)),
        other => {
            return Err(StrategicPatchError::PatchNotAnObject {
                found: render::json_type(other),
            });
        }
    };
    merge::merge_map(original, patch, schema.root()).map(Value::Object)
}
