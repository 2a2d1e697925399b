//! Reads list and map semantics from a structural OpenAPI v3 schema.
//!
//! A [`Schema`] points at the schema of one value, or at nothing when that part of the tree is
//! not described (then maps merge and lists are replaced). Keys are looked up on the node
//! itself first, then in its `allOf`, `anyOf` and `oneOf` branches.

use std::sync::LazyLock;

use serde_json::{Value, json};

use super::error::StrategicPatchError;

/// How deep `allOf`/`anyOf`/`oneOf` branches are searched for a key.
const MAX_BRANCH_DEPTH: usize = 8;

/// The semantics of `metadata` (ObjectMeta) in every resource: finalizers merge as a set, owner
/// references merge by `uid`, labels and annotations are string maps; the rest is default.
static OBJECT_META: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {
            "finalizers": {
                "type": "array",
                "items": {"type": "string"},
                "x-kubernetes-patch-strategy": "merge"
            },
            "ownerReferences": {
                "type": "array",
                "items": {"type": "object"},
                "x-kubernetes-patch-strategy": "merge",
                "x-kubernetes-patch-merge-key": "uid"
            },
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "annotations": {"type": "object", "additionalProperties": {"type": "string"}}
        }
    })
});

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

/// The schema of one value in the object, or none.
#[derive(Clone, Copy, Debug)]
pub(super) struct Schema<'a> {
    node: Option<&'a Value>,
    /// Whether this value is a whole resource, whose `metadata` is ObjectMeta.
    resource: bool,
}

impl<'a> Schema<'a> {
    /// The schema of a whole resource.
    pub(super) fn root(schema: &'a Value) -> Self {
        Schema {
            node: schema.is_object().then_some(schema),
            resource: true,
        }
    }

    /// No schema: the default semantics.
    pub(super) fn unknown() -> Self {
        Schema {
            node: None,
            resource: false,
        }
    }

    fn at(node: &'a Value) -> Self {
        if !node.is_object() {
            return Schema::unknown();
        }
        Schema {
            node: Some(node),
            resource: node.get("x-kubernetes-embedded-resource") == Some(&Value::Bool(true)),
        }
    }

    fn lookup(&self, key: &str) -> Option<&'a Value> {
        self.node.and_then(|node| find(node, key, 0))
    }

    fn lookup_str(&self, key: &str) -> Option<&'a str> {
        self.lookup(key).and_then(Value::as_str)
    }

    /// The schema of the field `name` of this map: its property, else `additionalProperties`.
    pub(super) fn field(&self, name: &str) -> Schema<'a> {
        if self.resource && name == "metadata" {
            return Schema::at(&OBJECT_META);
        }
        if let Some(property) = self.lookup("properties").and_then(|p| p.get(name)) {
            return Schema::at(property);
        }
        match self.lookup("additionalProperties") {
            Some(additional) => Schema::at(additional),
            None => Schema::unknown(),
        }
    }

    /// The schema of the elements of this list.
    pub(super) fn items(&self) -> Schema<'a> {
        match self.lookup("items") {
            Some(items) => Schema::at(items),
            None => Schema::unknown(),
        }
    }

    fn patch_strategies(&self) -> Option<impl Iterator<Item = &'a str>> {
        self.lookup_str("x-kubernetes-patch-strategy")
            .map(|s| s.split(',').map(str::trim))
    }

    /// How this list is patched: `x-kubernetes-patch-strategy` first; without it,
    /// `x-kubernetes-list-type` `map` with one key merges by that key, `set` merges as a set,
    /// and anything else is replaced.
    pub(super) fn list_strategy(&self) -> ListStrategy<'a> {
        let single_map_key = || match self.lookup_str("x-kubernetes-list-type") {
            Some("map") => match self.lookup("x-kubernetes-list-map-keys") {
                Some(Value::Array(keys)) if keys.len() == 1 => keys[0].as_str(),
                _ => None,
            },
            _ => None,
        };
        if let Some(mut strategies) = self.patch_strategies() {
            if !strategies.any(|s| s == "merge") {
                return ListStrategy::Replace;
            }
            let key = self
                .lookup_str("x-kubernetes-patch-merge-key")
                .or_else(single_map_key);
            return ListStrategy::Merge { key };
        }
        match self.lookup_str("x-kubernetes-list-type") {
            Some("map") => match single_map_key() {
                Some(key) => ListStrategy::Merge { key: Some(key) },
                None => ListStrategy::Replace,
            },
            Some("set") => ListStrategy::Merge { key: None },
            _ => ListStrategy::Replace,
        }
    }

    /// Whether this map is replaced whole by a patch (`x-kubernetes-patch-strategy: replace`).
    pub(super) fn replaces_map(&self) -> bool {
        self.patch_strategies()
            .is_some_and(|mut strategies| strategies.any(|s| s == "replace"))
    }

    /// The declared `type`, from the node or its `allOf` branches (not `anyOf`/`oneOf`, which
    /// list alternatives).
    fn declared_type(&self) -> Option<&'a str> {
        let node = self.node?;
        let mut pending = vec![node];
        while let Some(node) = pending.pop() {
            if let Some(t) = node.get("type").and_then(Value::as_str) {
                return Some(t);
            }
            if let Some(Value::Array(branches)) = node.get("allOf") {
                pending.extend(branches.iter().rev());
            }
        }
        None
    }

    /// How error messages name this schema's type.
    pub(super) fn type_name(&self) -> String {
        self.declared_type().unwrap_or("Struct").to_string()
    }

    /// Checks that maps may merge here: the schema declares no other type.
    pub(super) fn expect_object(&self) -> Result<(), StrategicPatchError> {
        match self.declared_type() {
            Some(t) if t != "object" => Err(StrategicPatchError::NotAnObjectField {
                schema_type: t.to_string(),
            }),
            _ => Ok(()),
        }
    }

    /// Checks that lists may merge here: the schema declares no other type.
    pub(super) fn expect_array(&self) -> Result<(), StrategicPatchError> {
        match self.declared_type() {
            Some(t) if t != "array" => Err(StrategicPatchError::NotAListField {
                schema_type: t.to_string(),
            }),
            _ => Ok(()),
        }
    }
}

/// `key` on `node`, else on its `allOf`, `anyOf` and `oneOf` branches, depth first.
fn find<'a>(node: &'a Value, key: &str, depth: usize) -> Option<&'a Value> {
    if let Some(value) = node.get(key) {
        return Some(value);
    }
    if depth >= MAX_BRANCH_DEPTH {
        return None;
    }
    ["allOf", "anyOf", "oneOf"]
        .iter()
        .filter_map(|combinator| node.get(combinator).and_then(Value::as_array))
        .flatten()
        .find_map(|branch| find(branch, key, depth + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strategy(field: Value) -> ListStrategy<'static> {
        let schema: &'static Value = Box::leak(Box::new(
            json!({"type": "object", "properties": {"l": field}}),
        ));
        Schema::root(schema).field("l").list_strategy()
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
    fn fields_come_from_properties_additional_properties_and_branches() {
        let schema = json!({
            "type": "object",
            "properties": {
                "byName": {
                    "type": "object",
                    "additionalProperties": {"type": "array", "x-kubernetes-list-type": "set"}
                },
                "combined": {"allOf": [{"properties": {"l": {"x-kubernetes-list-type": "set"}}}]}
            }
        });
        let root = Schema::root(&schema);
        assert_eq!(
            root.field("byName").field("anything").list_strategy(),
            ListStrategy::Merge { key: None }
        );
        assert_eq!(
            root.field("combined").field("l").list_strategy(),
            ListStrategy::Merge { key: None }
        );
        assert!(root.field("missing").node.is_none());
    }

    #[test]
    fn metadata_is_object_meta_in_resources_only() {
        let schema = json!({
            "type": "object",
            "properties": {
                "metadata": {"type": "object"},
                "spec": {"type": "object", "properties": {
                    "template": {"type": "object", "x-kubernetes-embedded-resource": true},
                    "plain": {"type": "object"}
                }}
            }
        });
        let root = Schema::root(&schema);
        let meta = root.field("metadata");
        assert_eq!(
            meta.field("finalizers").list_strategy(),
            ListStrategy::Merge { key: None }
        );
        assert_eq!(
            meta.field("ownerReferences").list_strategy(),
            ListStrategy::Merge { key: Some("uid") }
        );
        assert_eq!(
            meta.field("managedFields").list_strategy(),
            ListStrategy::Replace
        );
        let embedded = root.field("spec").field("template").field("metadata");
        assert_eq!(
            embedded.field("finalizers").list_strategy(),
            ListStrategy::Merge { key: None }
        );
        let plain = root.field("spec").field("plain").field("metadata");
        assert_eq!(
            plain.field("finalizers").list_strategy(),
            ListStrategy::Replace
        );
    }

    #[test]
    fn declared_types_guard_merging() {
        let schema = json!({"type": "object", "properties": {
            "s": {"type": "string"},
            "o": {"allOf": [{"type": "object"}]},
            "ios": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]}
        }});
        let root = Schema::root(&schema);
        assert_eq!(
            root.field("s").expect_object().unwrap_err().to_string(),
            "merging an object in json but data type is not struct, instead is: string"
        );
        assert!(root.field("o").expect_object().is_ok());
        assert!(root.field("o").expect_array().is_err());
        assert!(root.field("ios").expect_object().is_ok());
        assert!(Schema::unknown().expect_array().is_ok());
        assert_eq!(root.field("o").type_name(), "object");
        assert_eq!(Schema::unknown().type_name(), "Struct");
    }

    #[test]
    fn replace_strategy_on_maps() {
        let schema = json!({"properties": {"m": {"x-kubernetes-patch-strategy": "replace"}}});
        assert!(Schema::root(&schema).field("m").replaces_map());
        assert!(!Schema::root(&schema).field("n").replaces_map());
    }
}
