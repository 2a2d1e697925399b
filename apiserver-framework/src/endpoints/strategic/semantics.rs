//! How the structural schema model decides a strategic merge: which lists merge, by which key,
//! which maps are replaced whole, and which types may merge at all.
//!
//! - `x-kubernetes-patch-strategy` comes first: with `merge` (also `merge,retainKeys`) a list
//!   merges, by `x-kubernetes-patch-merge-key` (or the one key of a `map` list) if it has one,
//!   else as a set; without `merge` it is replaced. `replace` on a map replaces it whole.
//! - Without a patch strategy, a `map` list with one key merges by that key, a `set` merges as a
//!   set, and any other list is replaced.
//! - Where the schema says nothing (the absent node), maps merge and lists are replaced.

use crate::schema::{ListType, SchemaNode};

use super::error::StrategicPatchError;

/// How a list field is patched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ListStrategy<'a> {
    /// The patch's list replaces the object's list.
    Replace,
    /// The lists merge: maps by the merge key, other values as a set.
    Merge {
        /// The key that identifies a map element.
        key: Option<&'a str>,
    },
}

impl<'a> ListStrategy<'a> {
    /// The merge key, if the list merges by one.
    pub(super) fn merge_key(self) -> Option<&'a str> {
        match self {
            ListStrategy::Replace => None,
            ListStrategy::Merge { key } => key,
        }
    }
}

/// How the list at `node` is patched.
pub(super) fn list_strategy(node: SchemaNode<'_>) -> ListStrategy<'_> {
    let single_map_key = || match node.list_type() {
        Some(ListType::Map(keys)) if keys.len() == 1 => Some(keys[0].as_str()),
        _ => None,
    };
    if let Some(strategy) = node.patch_strategy() {
        if !strategy.merge {
            return ListStrategy::Replace;
        }
        let key = node.patch_merge_key().or_else(single_map_key);
        return ListStrategy::Merge { key };
    }
    match node.list_type() {
        Some(ListType::Map(_)) => match single_map_key() {
            Some(key) => ListStrategy::Merge { key: Some(key) },
            None => ListStrategy::Replace,
        },
        Some(ListType::Set) => ListStrategy::Merge { key: None },
        _ => ListStrategy::Replace,
    }
}

/// Whether the map at `node` is replaced whole by a patch (`x-kubernetes-patch-strategy:
/// replace`).
pub(super) fn replaces_map(node: SchemaNode<'_>) -> bool {
    node.patch_strategy().is_some_and(|s| s.replace)
}

/// How error messages name the type of `node`.
pub(super) fn type_name(node: SchemaNode<'_>) -> String {
    node.declared_type().unwrap_or("Struct").to_string()
}

/// Checks that maps may merge at `node`: its schema declares no other type.
pub(super) fn expect_object(node: SchemaNode<'_>) -> Result<(), StrategicPatchError> {
    match node.declared_type() {
        Some(t) if t != "object" => Err(StrategicPatchError::NotAnObjectField {
            schema_type: t.to_string(),
        }),
        _ => Ok(()),
    }
}

/// Checks that lists may merge at `node`: its schema declares no other type.
pub(super) fn expect_array(node: SchemaNode<'_>) -> Result<(), StrategicPatchError> {
    match node.declared_type() {
        Some(t) if t != "array" => Err(StrategicPatchError::NotAListField {
            schema_type: t.to_string(),
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::StructuralSchema;
    use serde_json::{Value, json};

    fn strategy(field: Value) -> ListStrategy<'static> {
        let model: &'static StructuralSchema = Box::leak(Box::new(StructuralSchema::from_openapi(
            &json!({"type": "object", "properties": {"l": field}}),
        )));
        list_strategy(model.root().field_node("l"))
    }

    #[test]
    fn patch_strategy_comes_before_list_type() {
        assert_eq!(
            strategy(json!({
                "type": "array",
                "x-kubernetes-patch-strategy": "merge",
                "x-kubernetes-patch-merge-key": "name",
                "x-kubernetes-list-type": "atomic"
            })),
            ListStrategy::Merge { key: Some("name") }
        );
        assert_eq!(
            strategy(json!({"x-kubernetes-patch-strategy": "retainKeys"})),
            ListStrategy::Replace
        );
        assert_eq!(
            strategy(json!({
                "x-kubernetes-patch-strategy": "merge,retainKeys",
                "x-kubernetes-patch-merge-key": "port"
            })),
            ListStrategy::Merge { key: Some("port") }
        );
        assert_eq!(
            strategy(json!({
                "x-kubernetes-patch-strategy": "merge",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["id"]
            })),
            ListStrategy::Merge { key: Some("id") }
        );
    }

    #[test]
    fn list_types_without_patch_strategy() {
        assert_eq!(
            strategy(json!({"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"]})),
            ListStrategy::Merge { key: Some("k") }
        );
        assert_eq!(
            strategy(
                json!({"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a", "b"]})
            ),
            ListStrategy::Replace
        );
        assert_eq!(
            strategy(json!({"x-kubernetes-list-type": "set"})),
            ListStrategy::Merge { key: None }
        );
        assert_eq!(
            strategy(json!({"x-kubernetes-list-type": "atomic"})),
            ListStrategy::Replace
        );
        assert_eq!(strategy(json!({"type": "array"})), ListStrategy::Replace);
    }

    #[test]
    fn object_meta_lists_in_resources_only() {
        let model = StructuralSchema::from_openapi(&json!({
            "type": "object",
            "properties": {
                "metadata": {"type": "object"},
                "spec": {"type": "object", "properties": {
                    "template": {"type": "object", "x-kubernetes-embedded-resource": true},
                    "plain": {"type": "object"}
                }}
            }
        }));
        let root = model.root();
        let meta = root.field_node("metadata");
        assert_eq!(
            list_strategy(meta.field_node("finalizers")),
            ListStrategy::Merge { key: None }
        );
        assert_eq!(
            list_strategy(meta.field_node("ownerReferences")),
            ListStrategy::Merge { key: Some("uid") }
        );
        assert_eq!(
            list_strategy(meta.field_node("managedFields")),
            ListStrategy::Replace
        );
        let spec = root.field_node("spec");
        let embedded = spec.field_node("template").field_node("metadata");
        assert_eq!(
            list_strategy(embedded.field_node("finalizers")),
            ListStrategy::Merge { key: None }
        );
        let plain = spec.field_node("plain").field_node("metadata");
        assert_eq!(
            list_strategy(plain.field_node("finalizers")),
            ListStrategy::Replace
        );
    }

    #[test]
    fn declared_types_guard_merging() {
        let model = StructuralSchema::from_openapi(&json!({"type": "object", "properties": {
            "s": {"type": "string"},
            "o": {"allOf": [{"type": "object"}]},
            "ios": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]}
        }}));
        let root = model.root();
        assert_eq!(
            expect_object(root.field_node("s")).unwrap_err().to_string(),
            "merging an object in json but data type is not struct, instead is: string"
        );
        assert!(expect_object(root.field_node("o")).is_ok());
        assert!(expect_array(root.field_node("o")).is_err());
        assert!(expect_object(root.field_node("ios")).is_ok());
        assert!(expect_array(root.absent()).is_ok());
        assert_eq!(type_name(root.field_node("o")), "object");
        assert_eq!(type_name(root.absent()), "Struct");
    }

    #[test]
    fn replace_strategy_on_maps() {
        let model = StructuralSchema::from_openapi(
            &json!({"properties": {"m": {"x-kubernetes-patch-strategy": "replace"}}}),
        );
        assert!(replaces_map(model.root().field_node("m")));
        assert!(!replaces_map(model.root().field_node("n")));
    }
}
