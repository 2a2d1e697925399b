//! Strategic merge patch, table-driven: each case is a fact about how a Kubernetes API server
//! patches (object, patch, schema extensions, expected object or error).

use apiserver_framework::endpoints::strategic::apply;
use apiserver_framework::schema::StructuralSchema;
use serde_json::{Value, json};

/// The schema a case patches against.
enum Schema {
    /// The test type with every list and map flavour (see [`merge_item`]).
    MergeItem,
    /// No schema: maps merge, lists are replaced.
    None,
    /// A resource whose `metadata` is only declared as an object.
    Resource,
    /// A schema of its own, as JSON.
    Inline(&'static str),
}

/// What a case expects.
enum Expect {
    /// The patched object, as JSON.
    Object(&'static str),
    /// An error whose message contains the text, and whether it answers 400 (else 422).
    Error {
        contains: &'static str,
        bad_request: bool,
    },
}

struct Case {
    name: &'static str,
    schema: Schema,
    original: &'static str,
    patch: &'static str,
    expect: Expect,
}

/// A map type with merging and non-merging lists of itself (`mergingList` and `mergeItemPtr`
/// merge by `name`), a merging and a non-merging list of integers, a string map, a field that
/// is replaced whole (`replacingItem`), and the retainKeys flavours. `depth` bounds the nesting.
fn merge_item(depth: usize) -> Value {
    let item = if depth == 0 {
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
    } else {
        merge_item(depth - 1)
    };
    let merging = |strategy: &str| {
        json!({
            "type": "array",
            "items": item,
            "x-kubernetes-patch-strategy": strategy,
            "x-kubernetes-patch-merge-key": "name"
        })
    };
    let merging_ints = json!({
        "type": "array",
        "items": {"type": "integer"},
        "x-kubernetes-patch-strategy": "merge"
    });
    let non_merging = json!({"type": "array", "items": item});
    let string_map = json!({"type": "object", "additionalProperties": {"type": "string"}});
    json!({
        "type": "object",
        "properties": {
            "mergingList": merging("merge"),
            "mergeItemPtr": merging("merge"),
            "nonMergingList": non_merging,
            "mergingIntList": merging_ints,
            "nonMergingIntList": {"type": "array", "items": {"type": "integer"}},
            "simpleMap": string_map,
            "replacingItem": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": true,
                "x-kubernetes-patch-strategy": "replace"
            },
            "retainKeysMap": {
                "type": "object",
                "x-kubernetes-patch-strategy": "retainKeys",
                "properties": {
                    "simpleMap": string_map,
                    "mergingIntList": merging_ints,
                    "mergingList": merging("merge"),
                    "nonMergingList": non_merging
                }
            },
            "retainKeysMergingList": merging("merge,retainKeys")
        }
    })
}

/// A resource schema using list types instead of patch strategies.
const LIST_TYPES: &str = r#"{"type": "object", "properties": {"spec": {"type": "object", "properties": {
    "ports": {
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["port"],
        "items": {"type": "object", "properties": {
            "names": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}
        }}
    },
    "hosts": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
    "args": {"type": "array", "x-kubernetes-list-type": "atomic", "items": {"type": "string"}},
    "plain": {"type": "array", "items": {"type": "string"}}
}}}}"#;

fn cases() -> Vec<Case> {
    use Expect::{Error, Object};
    use Schema::{Inline, MergeItem, Resource};
    vec![
        // Merging lists of maps.
        Case {
            // An element new to the object cannot be placed relative to the object's elements,
            // so it goes first.
            name: "merging list: a new element goes before the object's elements",
            schema: MergeItem,
            original: r#"{"mergingList": [{"name": "a"}]}"#,
            patch: r#"{"mergingList": [{"name": "b"}]}"#,
            expect: Object(r#"{"mergingList": [{"name": "b"}, {"name": "a"}]}"#),
        },
        Case {
            name: "merging list: matching elements merge, in the patch's order",
            schema: MergeItem,
            original: r#"{"mergingList": [{"name": 1}, {"name": 2, "value": "b"}, {"name": 3}]}"#,
            patch: r#"{"mergingList": [
                {"name": 3, "value": "c"}, {"name": 1, "value": "a"}, {"name": 2, "other": "x"}]}"#,
            expect: Object(
                r#"{"mergingList": [
                {"name": 3, "value": "c"}, {"name": 1, "value": "a"},
                {"name": 2, "value": "b", "other": "x"}]}"#,
            ),
        },
        Case {
            name: "merging list: elements the patch leaves out keep their place",
            schema: MergeItem,
            original: r#"{"mergingList": [{"name": 1}, {"name": 2, "value": "b"}, {"name": 3}]}"#,
            patch: r#"{"mergingList": [{"name": 3, "value": "c"}, {"name": 1, "value": "a"}]}"#,
            expect: Object(
                r#"{"mergingList": [
                {"name": 2, "value": "b"}, {"name": 3, "value": "c"}, {"name": 1, "value": "a"}]}"#,
            ),
        },
        Case {
            name: "merging list nested in a merging list merges too",
            schema: MergeItem,
            original: r#"{"mergingList": [
                {"name": 1, "other": "a", "mergingList": [{"name": 1}, {"name": 2, "value": 2}]},
                {"name": 2, "other": "b"}]}"#,
            patch: r#"{
                "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}],
                "mergingList": [{
                    "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}],
                    "name": 1,
                    "mergingList": [{"name": 1, "value": 1}]
                }]}"#,
            expect: Object(
                r#"{"mergingList": [
                {"name": 1, "other": "a", "mergingList": [
                    {"name": 1, "value": 1}, {"name": 2, "value": 2}]},
                {"name": 2, "other": "b"}]}"#,
            ),
        },
        Case {
            name: "non-merging list nested in a merging list is replaced",
            schema: MergeItem,
            original: r#"{"mergingList": [
                {"name": 1, "other": "a", "nonMergingList": [{"name": 1}, {"name": 2, "value": 2}]},
                {"name": 2, "other": "b"}]}"#,
            patch: r#"{
                "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}],
                "mergingList": [{"name": 1, "nonMergingList": [{"name": 1, "value": 1}]}]}"#,
            expect: Object(
                r#"{"mergingList": [
                {"name": 1, "other": "a", "nonMergingList": [{"name": 1, "value": 1}]},
                {"name": 2, "other": "b"}]}"#,
            ),
        },
        Case {
            name: "merging list: $patch delete removes every element with the key",
            schema: MergeItem,
            original: r#"{"mergingList": [
                {"name": 1}, {"name": 1}, {"name": 2, "value": "a"}, {"name": 3}, {"name": 3}]}"#,
            patch: r#"{"mergingList": [{"name": 1, "$patch": "delete"}, {"name": 3, "$patch": "delete"}]}"#,
            expect: Object(r#"{"mergingList": [{"name": 2, "value": "a"}]}"#),
        },
        Case {
            name: "merging list: $patch delete with $setElementOrder",
            schema: MergeItem,
            original: r#"{"mergingList": [{"name": 1}, {"name": 2}]}"#,
            patch: r#"{"$setElementOrder/mergingList": [{"name": 2}],
                "mergingList": [{"name": 1, "$patch": "delete"}]}"#,
            expect: Object(r#"{"mergingList": [{"name": 2}]}"#),
        },
        Case {
            name: "merging list: a {$patch: replace} element alone empties the list",
            schema: MergeItem,
            original: r#"{"mergingList": [{"name": 1}, {"name": 2}]}"#,
            patch: r#"{"mergingList": [{"$patch": "replace"}]}"#,
            expect: Object(r#"{"mergingList": []}"#),
        },
        Case {
            name: "merging list new to the object drops deletions of missing elements",
            schema: MergeItem,
            original: r#"{"name": "hi"}"#,
            patch: r#"{"mergingList": [{"name": "hello"}, {"$patch": "delete", "name": "doesntexist"}]}"#,
            expect: Object(r#"{"name": "hi", "mergingList": [{"name": "hello"}]}"#),
        },
        // $setElementOrder.
        Case {
            name: "$setElementOrder: elements only the object has go last when they were last",
            schema: MergeItem,
            original: r#"{"mergingList": [
                {"name": 1, "other": "a"}, {"name": 3, "value": 3}, {"name": 4, "value": 4},
                {"name": 2, "value": 2}, {"name": 9}]}"#,
            patch: r#"{"$setElementOrder/mergingList": [{"name": 4}, {"name": 2}, {"name": 3}, {"name": 1}]}"#,
            expect: Object(
                r#"{"mergingList": [
                {"name": 4, "value": 4}, {"name": 2, "value": 2}, {"name": 3, "value": 3},
                {"name": 1, "other": "a"}, {"name": 9}]}"#,
            ),
        },
        Case {
            name: "$setElementOrder: elements only the object has stay between their neighbours",
            schema: MergeItem,
            original: r#"{"mergingList": [
                {"name": 1, "other": "a"}, {"name": 2, "value": 2}, {"name": 7}, {"name": 9},
                {"name": 8}, {"name": 3, "value": 3}, {"name": 4, "value": 4}]}"#,
            patch: r#"{"$setElementOrder/mergingList": [{"name": 2}, {"name": 1}, {"name": 4}, {"name": 3}]}"#,
            expect: Object(
                r#"{"mergingList": [
                {"name": 2, "value": 2}, {"name": 1, "other": "a"}, {"name": 7}, {"name": 9},
                {"name": 8}, {"name": 4, "value": 4}, {"name": 3, "value": 3}]}"#,
            ),
        },
        Case {
            name: "$setElementOrder places new elements",
            schema: MergeItem,
            original: r#"{"mergingList": [{"name": 1, "other": "a"}, {"name": 2, "value": 2, "other": "b"}]}"#,
            patch: r#"{"$setElementOrder/mergingList": [{"name": 4}, {"name": 1}, {"name": 2}, {"name": 3}],
                "mergingList": [{"name": 4, "value": 4}, {"name": 3, "value": 3}]}"#,
            expect: Object(
                r#"{"mergingList": [
                {"name": 4, "value": 4}, {"name": 1, "other": "a"},
                {"name": 2, "value": 2, "other": "b"}, {"name": 3, "value": 3}]}"#,
            ),
        },
        Case {
            // The added element takes the place the deleted one freed, so the element only the
            // object has stays before it.
            name: "$setElementOrder: adding and deleting in one patch",
            schema: MergeItem,
            original: r#"{"mergingList": [{"name": 1}, {"name": 2, "other": "b"}, {"name": 4, "other": "c"}]}"#,
            patch: r#"{"$setElementOrder/mergingList": [{"name": 2}, {"name": 3}],
                "mergingList": [{"name": 3}, {"name": 1, "$patch": "delete"}]}"#,
            expect: Object(
                r#"{"mergingList": [{"name": 2, "other": "b"}, {"name": 4, "other": "c"}, {"name": 3}]}"#,
            ),
        },
        Case {
            name: "$setElementOrder may name elements neither list has",
            schema: MergeItem,
            original: r#"{"mergingList": [{"name": 1}, {"name": 3}]}"#,
            patch: r#"{"$setElementOrder/mergingList": [{"name": 3}, {"name": 2}, {"name": 1}],
                "mergingList": [{"name": 3, "value": 3}, {"name": 1, "value": 1}]}"#,
            expect: Object(
                r#"{"mergingList": [{"name": 3, "value": 3}, {"name": 1, "value": 1}]}"#,
            ),
        },
        Case {
            name: "$setElementOrder with a new element and one only the object has",
            schema: MergeItem,
            original: r#"{"name": "hi", "mergingList": [{"name": "hello2"}]}"#,
            patch: r#"{"$setElementOrder/mergingList": [{"name": "hello"}, {"name": "doesntexist"}],
                "mergingList": [{"name": "hello"}]}"#,
            expect: Object(
                r#"{"name": "hi", "mergingList": [{"name": "hello"}, {"name": "hello2"}]}"#,
            ),
        },
        Case {
            name: "$setElementOrder: duplicates of a key gather at its first place",
            schema: MergeItem,
            original: r#"{"mergingList": [
                {"name": 1}, {"name": 2, "value": "dup1"}, {"name": 3},
                {"name": 2, "value": "dup2"}, {"name": 4}]}"#,
            patch: r#"{"$setElementOrder/mergingList": [
                {"name": 2}, {"name": 1}, {"name": 4}, {"name": 3}, {"name": 2}]}"#,
            expect: Object(
                r#"{"mergingList": [
                {"name": 2, "value": "dup1"}, {"name": 2, "value": "dup2"},
                {"name": 1}, {"name": 4}, {"name": 3}]}"#,
            ),
        },
        Case {
            name: "$setElementOrder reorders two lists, one also deleting",
            schema: MergeItem,
            original: r#"{
                "mergingList": [{"name": "a", "value": "a"}, {"name": "b", "value": "b"}],
                "mergeItemPtr": [{"name": "c", "value": "c"}, {"name": "d", "value": "d"}]}"#,
            patch: r#"{
                "$setElementOrder/mergingList": [{"name": "b"}],
                "$setElementOrder/mergeItemPtr": [{"name": "d"}, {"name": "c"}],
                "mergingList": [{"$patch": "delete", "name": "a"}]}"#,
            expect: Object(
                r#"{
                "mergingList": [{"name": "b", "value": "b"}],
                "mergeItemPtr": [{"name": "d", "value": "d"}, {"name": "c", "value": "c"}]}"#,
            ),
        },
        // Merging lists of scalars and $deleteFromPrimitiveList.
        Case {
            name: "merging int list: union without duplicates",
            schema: MergeItem,
            original: r#"{"mergingIntList": [1, 2]}"#,
            patch: r#"{"mergingIntList": [2, 3]}"#,
            expect: Object(r#"{"mergingIntList": [1, 2, 3]}"#),
        },
        Case {
            name: "merging int list: the patch's order wins",
            schema: MergeItem,
            original: r#"{"mergingIntList": [1, 2, 3]}"#,
            patch: r#"{"mergingIntList": [3, 1]}"#,
            expect: Object(r#"{"mergingIntList": [2, 3, 1]}"#),
        },
        Case {
            name: "merging int list with $setElementOrder and a value only the object has",
            schema: MergeItem,
            original: r#"{"mergingIntList": [1, 2, 4]}"#,
            patch: r#"{"$setElementOrder/mergingIntList": [1, 2, 3], "mergingIntList": [3]}"#,
            expect: Object(r#"{"mergingIntList": [1, 2, 3, 4]}"#),
        },
        Case {
            name: "$deleteFromPrimitiveList on a merging list",
            schema: MergeItem,
            original: r#"{"mergingIntList": [1, 2, 3]}"#,
            patch: r#"{"$deleteFromPrimitiveList/mergingIntList": [2]}"#,
            expect: Object(r#"{"mergingIntList": [1, 3]}"#),
        },
        Case {
            name: "$deleteFromPrimitiveList on a non-merging list",
            schema: MergeItem,
            original: r#"{"nonMergingIntList": [1, 2, 3]}"#,
            patch: r#"{"$deleteFromPrimitiveList/nonMergingIntList": [2]}"#,
            expect: Object(r#"{"nonMergingIntList": [1, 3]}"#),
        },
        Case {
            name: "$deleteFromPrimitiveList with $setElementOrder",
            schema: MergeItem,
            original: r#"{"mergingIntList": [1, 2, 3, 4]}"#,
            patch: r#"{"$setElementOrder/mergingIntList": [1, 2],
                "$deleteFromPrimitiveList/mergingIntList": [3]}"#,
            expect: Object(r#"{"mergingIntList": [1, 2, 4]}"#),
        },
        Case {
            name: "$deleteFromPrimitiveList adds no list the object lacks",
            schema: MergeItem,
            original: r#"{"foo": ["bar"]}"#,
            patch: r#"{"$deleteFromPrimitiveList/mergingIntList": [3]}"#,
            expect: Object(r#"{"foo": ["bar"]}"#),
        },
        // Maps: null, $patch, $retainKeys, replace strategy.
        Case {
            name: "map: $patch replace keeps only the patch's keys",
            schema: MergeItem,
            original: r#"{"name": 1, "value": 1}"#,
            patch: r#"{"other": "a", "$patch": "replace"}"#,
            expect: Object(r#"{"other": "a"}"#),
        },
        Case {
            name: "map: $patch delete empties it",
            schema: MergeItem,
            original: r#"{"simpleMap": {"key1": "1", "key2": "1"}}"#,
            patch: r#"{"simpleMap": {"$patch": "delete"}}"#,
            expect: Object(r#"{"simpleMap": {}}"#),
        },
        Case {
            name: "map: null deletes a key",
            schema: MergeItem,
            original: r#"{"retainKeysMap": {"name": "foo", "value": "a"}}"#,
            patch: r#"{"retainKeysMap": {"value": null}}"#,
            expect: Object(r#"{"retainKeysMap": {"name": "foo"}}"#),
        },
        Case {
            name: "$retainKeys keeps only the listed keys, after merging",
            schema: MergeItem,
            original: r#"{"retainKeysMap": {"name": "foo", "other": "a"}}"#,
            patch: r#"{"retainKeysMap": {"$retainKeys": ["name", "value"], "value": "bar"}}"#,
            expect: Object(r#"{"retainKeysMap": {"name": "foo", "value": "bar"}}"#),
        },
        Case {
            name: "$retainKeys switches a union's member",
            schema: MergeItem,
            original: r#"{"retainKeysMap": {"name": "type1", "value": "foo"}}"#,
            patch: r#"{"retainKeysMap": {"$retainKeys": ["name", "other"], "name": "type2", "other": "bar"}}"#,
            expect: Object(r#"{"retainKeysMap": {"name": "type2", "other": "bar"}}"#),
        },
        Case {
            name: "$retainKeys with a nested merging list and $setElementOrder",
            schema: MergeItem,
            original: r#"{"retainKeysMap": {"name": "foo",
                "mergingList": [{"name": "a"}, {"name": "b"}, {"name": "x"}]}}"#,
            patch: r#"{"retainKeysMap": {
                "$retainKeys": ["mergingList", "name"],
                "$setElementOrder/mergingList": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
                "mergingList": [{"name": "c"}]}}"#,
            expect: Object(
                r#"{"retainKeysMap": {"name": "foo",
                "mergingList": [{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "x"}]}}"#,
            ),
        },
        Case {
            name: "$retainKeys in an element of a merging list",
            schema: MergeItem,
            original: r#"{"retainKeysMergingList": [
                {"name": "bar"}, {"name": "foo", "value": "a", "other": "x"}]}"#,
            patch: r#"{
                "$setElementOrder/retainKeysMergingList": [{"name": "bar"}, {"name": "foo"}],
                "retainKeysMergingList": [{"$retainKeys": ["name", "value"], "name": "foo"}]}"#,
            expect: Object(
                r#"{"retainKeysMergingList": [{"name": "bar"}, {"name": "foo", "value": "a"}]}"#,
            ),
        },
        Case {
            name: "replace patch strategy replaces a map whole",
            schema: MergeItem,
            original: r#"{"name": "my-object", "mergingList": [{"name": 1}, {"name": 2}],
                "replacingItem": {"Some": "Generic", "Yaml": "Inside", "The": "RawExtension", "Field": "Period"}}"#,
            patch: r#"{"replacingItem": {"Newly": "Modified", "Yaml": "Inside", "The": "RawExtension"}}"#,
            expect: Object(
                r#"{"name": "my-object", "mergingList": [{"name": 1}, {"name": 2}],
                "replacingItem": {"Newly": "Modified", "Yaml": "Inside", "The": "RawExtension"}}"#,
            ),
        },
        // Parts without a schema.
        Case {
            name: "no schema: null deletes, lists and scalars are kept",
            schema: Schema::None,
            original: r#"{"name": "foo", "scalar": true, "complex": {"nested": true}, "array": [1, 2, 3]}"#,
            patch: r#"{"complex": null, "scalar": null}"#,
            expect: Object(r#"{"name": "foo", "array": [1, 2, 3]}"#),
        },
        Case {
            name: "no schema: maps merge deeply, lists are replaced",
            schema: Schema::None,
            original: r#"{"a": {"b": {"c": 1, "d": [1, 2]}}, "keep": null}"#,
            patch: r#"{"a": {"b": {"e": 2, "d": [3]}}}"#,
            expect: Object(r#"{"a": {"b": {"c": 1, "d": [3], "e": 2}}, "keep": null}"#),
        },
        Case {
            name: "new values lose nulls in maps, lists keep null elements",
            schema: Schema::None,
            original: r#"{}"#,
            patch: r#"{"complex": [{"inner": {"key_one": "foo", "key_two": null}}],
                "plain": ["key1", null, "key2"]}"#,
            expect: Object(
                r#"{"complex": [{"inner": {"key_one": "foo"}}], "plain": ["key1", null, "key2"]}"#,
            ),
        },
        // List types and ObjectMeta.
        Case {
            name: "list-type map with one key merges by it",
            schema: Inline(LIST_TYPES),
            original: r#"{"spec": {"ports": [{"port": 80, "names": ["http"]}, {"port": 443}]}}"#,
            patch: r#"{"spec": {"ports": [{"port": 80, "names": ["web"], "protocol": "TCP"}]}}"#,
            expect: Object(
                r#"{"spec": {"ports": [
                {"port": 80, "names": ["web", "http"], "protocol": "TCP"}, {"port": 443}]}}"#,
            ),
        },
        Case {
            name: "list-type set merges as a set",
            schema: Inline(LIST_TYPES),
            original: r#"{"spec": {"hosts": ["a", "b"]}}"#,
            patch: r#"{"spec": {"hosts": ["b", "c"], "$deleteFromPrimitiveList/hosts": ["a"]}}"#,
            expect: Object(r#"{"spec": {"hosts": ["b", "c"]}}"#),
        },
        Case {
            name: "atomic lists and lists without a list type are replaced",
            schema: Inline(LIST_TYPES),
            original: r#"{"spec": {"args": ["a", "b"], "plain": ["x"]}}"#,
            patch: r#"{"spec": {"args": ["c"], "plain": ["y", "z"]}}"#,
            expect: Object(r#"{"spec": {"args": ["c"], "plain": ["y", "z"]}}"#),
        },
        Case {
            name: "metadata: finalizers merge, ownerReferences merge by uid, labels null deletes",
            schema: Resource,
            original: r#"{"metadata": {"name": "x", "labels": {"a": "1", "b": "2"},
                "finalizers": ["f1", "f2"],
                "ownerReferences": [{"uid": "u1", "name": "one"}, {"uid": "u2", "name": "two"}]}}"#,
            patch: r#"{"metadata": {"labels": {"a": null, "c": "3"}, "finalizers": ["f3"],
                "ownerReferences": [{"uid": "u2", "controller": true}]}}"#,
            expect: Object(
                r#"{"metadata": {"name": "x", "labels": {"b": "2", "c": "3"},
                "finalizers": ["f3", "f1", "f2"],
                "ownerReferences": [{"uid": "u1", "name": "one"},
                    {"uid": "u2", "name": "two", "controller": true}]}}"#,
            ),
        },
        Case {
            name: "metadata: $deleteFromPrimitiveList/finalizers",
            schema: Resource,
            original: r#"{"metadata": {"finalizers": ["a", "b", "c"]}}"#,
            patch: r#"{"metadata": {"$deleteFromPrimitiveList/finalizers": ["b"]}}"#,
            expect: Object(r#"{"metadata": {"finalizers": ["a", "c"]}}"#),
        },
        // Errors.
        Case {
            name: "error: unknown $patch value",
            schema: MergeItem,
            original: r#"{"simpleMap": {"a": "1"}}"#,
            patch: r#"{"simpleMap": {"$patch": "nonsense"}}"#,
            expect: Error {
                contains: "unknown patch type: nonsense in map: map[$patch:nonsense]",
                bad_request: true,
            },
        },
        Case {
            name: "error: an element of a merging list lacks the merge key",
            schema: MergeItem,
            original: r#"{"mergingList": [{"name": 1, "value": "a"}]}"#,
            patch: r#"{"mergingList": [{"value": "b"}]}"#,
            expect: Error {
                contains: "map: map[value:b] does not contain declared merge key: name",
                bad_request: true,
            },
        },
        Case {
            name: "error: the patch is not an object",
            schema: MergeItem,
            original: r#"{"name": 1}"#,
            patch: r#"[{"op": "add", "path": "/name", "value": 2}]"#,
            expect: Error {
                contains: "cannot unmarshal array into Go value of type map[string]interface {}",
                bad_request: true,
            },
        },
        Case {
            name: "error: the patch list's order contradicts $setElementOrder",
            schema: MergeItem,
            original: r#"{"mergingList": [{"name": 1}, {"name": 3}, {"name": 2}]}"#,
            patch: r#"{"$setElementOrder/mergingList": [{"name": 1}, {"name": 2}, {"name": 3}],
                "mergingList": [{"name": 3, "value": 3}, {"name": 1, "value": 1}]}"#,
            expect: Error {
                contains: "doesn't match $setElementOrder list",
                bad_request: true,
            },
        },
        Case {
            name: "error: the patch sets a key $retainKeys does not list",
            schema: MergeItem,
            original: r#"{"retainKeysMap": {"name": "foo"}}"#,
            patch: r#"{"retainKeysMap": {"$retainKeys": ["name"], "value": "bar"}}"#,
            expect: Error {
                contains: "invalid patch format of retainKeys",
                bad_request: true,
            },
        },
        Case {
            name: "error: a merging list of lists",
            schema: MergeItem,
            original: r#"{"mergingIntList": [[1]]}"#,
            patch: r#"{"mergingIntList": [[2]]}"#,
            expect: Error {
                contains: "lists of lists are not supported",
                bad_request: false,
            },
        },
    ]
}

fn parse(what: &str, name: &str, text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("case {name:?}: bad {what} JSON: {e}"))
}

#[test]
fn strategic_merge_patch_cases() {
    let cases = cases();
    let merge_item = merge_item(3);
    let resource = json!({"type": "object", "properties": {"metadata": {"type": "object"}}});
    let mut failures = Vec::new();
    for case in &cases {
        let inline;
        let schema = match case.schema {
            Schema::MergeItem => &merge_item,
            Schema::None => &Value::Null,
            Schema::Resource => &resource,
            Schema::Inline(text) => {
                inline = parse("schema", case.name, text);
                &inline
            }
        };
        let original = parse("original", case.name, case.original);
        let patch = parse("patch", case.name, case.patch);
        let result = apply(&original, &patch, &StructuralSchema::from_openapi(schema));
        match (&case.expect, result) {
            (Expect::Object(expected), Ok(actual)) => {
                let expected = parse("expected", case.name, expected);
                if actual != expected {
                    failures.push(format!(
                        "{}:\n  expected {expected}\n  got      {actual}",
                        case.name
                    ));
                }
            }
            (Expect::Object(_), Err(e)) => {
                failures.push(format!("{}: unexpected error: {e}", case.name));
            }
            (Expect::Error { .. }, Ok(actual)) => {
                failures.push(format!("{}: expected an error, got {actual}", case.name));
            }
            (
                Expect::Error {
                    contains,
                    bad_request,
                },
                Err(e),
            ) => {
                if !e.to_string().contains(contains) || e.is_bad_request() != *bad_request {
                    failures.push(format!(
                        "{}: expected an error containing {contains:?} (bad request: {bad_request}), \
                         got {:?} (bad request: {})",
                        case.name,
                        e.to_string(),
                        e.is_bad_request()
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn the_object_and_the_patch_are_left_untouched() {
    let original = json!({"mergingList": [{"name": 1}], "simpleMap": {"a": "1"}});
    let patch = json!({"mergingList": [{"name": 1, "$patch": "delete"}], "simpleMap": {"a": null}});
    let (original_before, patch_before) = (original.clone(), patch.clone());
    let schema = StructuralSchema::from_openapi(&merge_item(1));
    let patched = apply(&original, &patch, &schema).unwrap();
    assert_eq!(patched, json!({"mergingList": [], "simpleMap": {}}));
    assert_eq!(original, original_before);
    assert_eq!(patch, patch_before);
}
