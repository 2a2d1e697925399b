//! Unit tests of the directives and the schema-driven semantics.

use serde_json::{Value, json};

use super::{StrategicPatchError, apply};
use crate::schema::StructuralSchema;

/// A schema with a list of maps merging by `name`, a merging scalar list, an atomic list, a
/// string map, and a map that is replaced whole.
fn schema() -> StructuralSchema {
    StructuralSchema::from_openapi(&json!({
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "x-kubernetes-patch-strategy": "merge",
                "x-kubernetes-patch-merge-key": "name",
                "items": {"type": "object", "properties": {
                    "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"}
                }}
            },
            "ints": {"type": "array", "items": {"type": "integer"}, "x-kubernetes-patch-strategy": "merge"},
            "atomic": {"type": "array", "items": {"type": "integer"}},
            "map": {"type": "object", "additionalProperties": {"type": "string"}},
            "whole": {"type": "object", "x-kubernetes-patch-strategy": "replace"},
            "text": {"type": "string"}
        }
    }))
}

fn patched(original: Value, patch: Value) -> Value {
    match apply(&original, &patch, &schema()) {
        Ok(v) => v,
        Err(e) => panic!("patch {patch} failed: {e}"),
    }
}

fn refused(original: Value, patch: Value) -> StrategicPatchError {
    match apply(&original, &patch, &schema()) {
        Ok(v) => panic!("patch {patch} applied, giving {v}"),
        Err(e) => e,
    }
}

#[test]
fn maps_merge_and_null_deletes() {
    assert_eq!(
        patched(
            json!({"map": {"a": "1", "b": "2"}, "other": {"x": {"y": 1, "z": 2}}}),
            json!({"map": {"a": null, "c": "3"}, "other": {"x": {"z": null, "w": 3}}})
        ),
        json!({"map": {"b": "2", "c": "3"}, "other": {"x": {"y": 1, "w": 3}}})
    );
    // null for a missing key changes nothing, and nulls inside a new map are dropped.
    assert_eq!(
        patched(json!({}), json!({"gone": null, "new": {"a": null, "b": 1}})),
        json!({"new": {"b": 1}})
    );
}

#[test]
fn null_and_non_object_documents() {
    let original = json!({"a": 1});
    assert_eq!(patched(original.clone(), Value::Null), original);
    assert_eq!(patched(Value::Null, json!({"a": 1})), json!({"a": 1}));
    let err = refused(original.clone(), json!([1]));
    assert_eq!(
        err.to_string(),
        "json: cannot unmarshal array into Go value of type map[string]interface {}"
    );
    assert!(err.is_bad_request());
    let err = apply(&json!("x"), &json!({}), &schema()).unwrap_err();
    assert!(matches!(
        err,
        StrategicPatchError::OriginalNotAnObject { .. }
    ));
    assert!(!err.is_bad_request());
}

#[test]
fn patch_replace_on_a_map() {
    assert_eq!(
        patched(
            json!({"map": {"a": "1"}, "keep": 1}),
            json!({"map": {"$patch": "replace", "b": "2"}})
        ),
        json!({"map": {"b": "2"}, "keep": 1})
    );
    assert_eq!(
        patched(
            json!({"a": 1}),
            json!({"$patch": "replace", "b": {"c": null, "d": 1}})
        ),
        json!({"b": {"d": 1}})
    );
    // A map new to the object keeps the content of a replacing patch map.
    assert_eq!(
        patched(json!({}), json!({"map": {"$patch": "replace", "b": "2"}})),
        json!({"map": {"b": "2"}})
    );
}

#[test]
fn patch_delete_on_a_map() {
    assert_eq!(
        patched(
            json!({"map": {"a": "1"}}),
            json!({"map": {"$patch": "delete", "b": "2"}})
        ),
        json!({"map": {}})
    );
    assert_eq!(
        patched(json!({"x": 1}), json!({"map": {"$patch": "delete"}})),
        json!({"x": 1})
    );
    assert_eq!(
        patched(json!({"x": 1}), json!({"$patch": "delete"})),
        json!({})
    );
}

#[test]
fn patch_merge_is_the_default() {
    assert_eq!(
        patched(
            json!({"map": {"a": "1"}}),
            json!({"map": {"$patch": "merge", "b": "2"}})
        ),
        json!({"map": {"a": "1", "b": "2"}})
    );
}

#[test]
fn unknown_patch_type_is_refused_everywhere() {
    for patch in [
        json!({"$patch": "explode"}),
        json!({"map": {"$patch": "explode"}}),
        json!({"new": {"$patch": 3}}),
        json!({"items": [{"name": "a", "$patch": "explode"}]}),
        json!({"atomic": [{"$patch": "explode"}]}),
    ] {
        let err = refused(
            json!({"map": {}, "items": [{"name": "a"}], "atomic": [1]}),
            patch,
        );
        assert!(
            matches!(err, StrategicPatchError::UnknownPatchType { .. }),
            "{err}"
        );
        assert!(err.is_bad_request());
    }
    assert_eq!(
        refused(json!({}), json!({"$patch": "explode", "a": 1})).to_string(),
        "unknown patch type: explode in map: map[$patch:explode a:1]"
    );
}

#[test]
fn list_element_directives() {
    let original = json!({"items": [{"name": "a", "v": 1}, {"name": "b"}, {"name": "a", "v": 2}]});
    assert_eq!(
        patched(
            original.clone(),
            json!({"items": [{"name": "a", "$patch": "delete"}]})
        ),
        json!({"items": [{"name": "b"}]})
    );
    assert_eq!(
        patched(
            original.clone(),
            json!({"items": [{"name": "c", "x": null}, {"$patch": "replace"}]})
        ),
        json!({"items": [{"name": "c"}]})
    );
    let err = refused(original.clone(), json!({"items": [{"$patch": "delete"}]}));
    assert_eq!(
        err.to_string(),
        "map: map[$patch:delete] does not contain declared merge key: name"
    );
    assert!(err.is_bad_request());
    let err = refused(
        original,
        json!({"items": [{"name": "a", "$patch": "merge"}]}),
    );
    assert!(matches!(err, StrategicPatchError::MergeDirectiveInList));
}

#[test]
fn merging_lists_of_maps_merge_elements_by_key() {
    assert_eq!(
        patched(
            json!({"items": [{"name": "a", "tags": ["x"], "v": 1}, {"name": "b"}]}),
            json!({"items": [{"name": "a", "tags": ["y"], "v": null}]})
        ),
        // The new tag goes before the tags only the object has.
        json!({"items": [{"name": "a", "tags": ["y", "x"]}, {"name": "b"}]})
    );
    let err = refused(
        json!({"items": [{"v": 1}]}),
        json!({"items": [{"name": "a"}]}),
    );
    assert!(matches!(
        err,
        StrategicPatchError::MissingMergeKey {
            in_patch: false,
            ..
        }
    ));
    assert!(!err.is_bad_request());
}

#[test]
fn merging_scalar_lists_union_and_dedupe() {
    assert_eq!(
        patched(json!({"ints": [1, 2, 2]}), json!({"ints": [2, 3]})),
        json!({"ints": [1, 2, 3]})
    );
    assert_eq!(
        patched(json!({}), json!({"ints": [3, 3]})),
        json!({"ints": [3, 3]})
    );
}

#[test]
fn unmerged_lists_are_replaced_and_cleaned() {
    assert_eq!(
        patched(
            json!({"atomic": [1, 2], "free": [1]}),
            json!({"atomic": [3], "free": [2]})
        ),
        json!({"atomic": [3], "free": [2]})
    );
    assert_eq!(
        patched(
            json!({}),
            json!({"free": [{"a": null, "b": 1}, {"$patch": "delete"}, null, "s"]})
        ),
        json!({"free": [{"b": 1}, null, "s"]})
    );
}

#[test]
fn replace_strategy_maps_are_replaced_whole() {
    assert_eq!(
        patched(json!({"whole": {"a": 1}}), json!({"whole": {"b": 2}})),
        json!({"whole": {"b": 2}})
    );
    assert_eq!(
        patched(
            json!({"whole": {"a": 1}}),
            json!({"whole": {"$patch": "delete"}})
        ),
        json!({"whole": {}})
    );
}

#[test]
fn retain_keys_directive() {
    assert_eq!(
        patched(
            json!({"m": {"a": 1, "b": 2, "c": 3}}),
            json!({"m": {"$retainKeys": ["a", "d"], "d": 4, "b": null}})
        ),
        json!({"m": {"a": 1, "d": 4}})
    );
    for bad in [
        json!({"m": {"$retainKeys": "a"}}),
        json!({"m": {"$retainKeys": ["a", 1]}}),
        json!({"m": {"$retainKeys": ["a"], "b": 1}}),
    ] {
        let err = refused(json!({"m": {"a": 1}}), bad);
        assert_eq!(err.to_string(), "invalid patch format of retainKeys");
        assert!(err.is_bad_request());
    }
}

#[test]
fn delete_from_primitive_list_directive() {
    assert_eq!(
        patched(
            json!({"ints": [1, 2, 3, 2], "atomic": [1, 2]}),
            json!({"$deleteFromPrimitiveList/ints": [2], "$deleteFromPrimitiveList/atomic": [1]})
        ),
        json!({"ints": [1, 3], "atomic": [2]})
    );
    // Deletion applies after the list merged.
    assert_eq!(
        patched(
            json!({"ints": [1, 2]}),
            json!({"ints": [5], "$deleteFromPrimitiveList/ints": [5, 1]})
        ),
        json!({"ints": [2]})
    );
    assert_eq!(
        patched(json!({}), json!({"$deleteFromPrimitiveList/ints": [1]})),
        json!({})
    );
    for bad in [
        json!({"$deleteFromPrimitiveList/ints": 1}),
        json!({"$deleteFromPrimitiveList/ints": null}),
        json!({"$deleteFromPrimitiveList": [1]}),
    ] {
        let err = refused(json!({"ints": [1]}), bad);
        assert_eq!(err.to_string(), "invalid patch format of primitive list");
        assert!(err.is_bad_request());
    }
}

#[test]
fn set_element_order_directive() {
    assert_eq!(
        patched(
            json!({"items": [{"name": "a"}, {"name": "b"}, {"name": "s"}, {"name": "c"}]}),
            json!({
                "$setElementOrder/items": [{"name": "c"}, {"name": "a"}, {"name": "b"}],
                "items": [{"name": "b", "v": 1}]
            })
        ),
        // `s` stays before `c`, which followed it in the object.
        json!({"items": [{"name": "s"}, {"name": "c"}, {"name": "a"}, {"name": "b", "v": 1}]})
    );
    assert_eq!(
        patched(
            json!({"ints": [1, 2, 3]}),
            json!({"$setElementOrder/ints": [3, 2, 1]})
        ),
        json!({"ints": [3, 2, 1]})
    );
    // Orders a list that is new to the object, too.
    assert_eq!(
        patched(
            json!({}),
            json!({"$setElementOrder/ints": [2, 1], "ints": [2, 1]})
        ),
        json!({"ints": [2, 1]})
    );
    let err = refused(json!({}), json!({"$setElementOrder": [1]}));
    assert_eq!(
        err.to_string(),
        "invalid patch format of setElementOrder list"
    );
    let err = refused(json!({}), json!({"$setElementOrder/ints": "x"}));
    assert_eq!(
        err.to_string(),
        "expected a []interface {}, but received a string"
    );
    assert!(err.is_bad_request());
    let err = refused(json!({"ints": 5}), json!({"$setElementOrder/ints": [1]}));
    assert!(!err.is_bad_request());
    let err = refused(
        json!({"items": [{"name": "a"}]}),
        json!({"$setElementOrder/items": [{"name": "a"}], "items": [{"name": "b"}]}),
    );
    assert!(matches!(
        err,
        StrategicPatchError::SetElementOrderMismatch { .. }
    ));
}

#[test]
fn directives_never_reach_the_result() {
    let result = patched(
        json!({}),
        json!({"new": {
            "$retainKeys": ["a", "l"],
            "a": {"$patch": "replace", "b": 1},
            "$setElementOrder/l": [2, 1],
            "l": [2, 1],
            "$deleteFromPrimitiveList/l": [9]
        }}),
    );
    assert_eq!(result, json!({"new": {"a": {"b": 1}, "l": [2, 1]}}));
    // Keys that merely start with `$` are data.
    assert_eq!(
        patched(json!({}), json!({"$ref": "#/x", "$schema": "s"})),
        json!({"$ref": "#/x", "$schema": "s"})
    );
}

#[test]
fn type_errors() {
    let err = refused(json!({"items": [1]}), json!({"items": [{"name": "a"}]}));
    assert!(matches!(err, StrategicPatchError::MixedListElements { .. }));
    assert!(!err.is_bad_request());
    let err = refused(json!({"ints": [[1]]}), json!({"ints": [[2]]}));
    assert_eq!(err.to_string(), "lists of lists are not supported");
    assert!(!err.is_bad_request());
    let err = refused(json!({"text": {"a": 1}}), json!({"text": {"b": 1}}));
    assert_eq!(
        err.to_string(),
        "merging an object in json but data type is not struct, instead is: string"
    );
    let err = refused(json!({"map": [1]}), json!({"map": [2]}));
    assert_eq!(
        err.to_string(),
        "expected slice or array type, but got: object"
    );
    // A different type in the patch simply replaces.
    assert_eq!(
        patched(json!({"map": {"a": "1"}}), json!({"map": "flat"})),
        json!({"map": "flat"})
    );
    let set_of_maps = StructuralSchema::from_openapi(
        &json!({"properties": {"s": {"x-kubernetes-list-type": "set"}}}),
    );
    let err = apply(
        &json!({"s": [{"a": 1}]}),
        &json!({"s": [{"a": 2}]}),
        &set_of_maps,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot merge lists without merge key for Struct"
    );
}

#[test]
fn metadata_has_object_meta_semantics() {
    let original = json!({"metadata": {
        "name": "x",
        "labels": {"a": "1", "b": "2"},
        "finalizers": ["f1"],
        "ownerReferences": [{"uid": "u1", "name": "o1"}, {"uid": "u2", "name": "o2"}],
        "managedFields": [{"manager": "m1"}]
    }});
    let patch = json!({"metadata": {
        "labels": {"a": null},
        "finalizers": ["f1", "f2"],
        "ownerReferences": [{"uid": "u2", "controller": true}],
        "managedFields": [{"manager": "m2"}]
    }});
    assert_eq!(
        apply(
            &original,
            &patch,
            &StructuralSchema::from_openapi(
                &json!({"type": "object", "properties": {"metadata": {"type": "object"}}})
            )
        )
        .unwrap(),
        json!({"metadata": {
            "name": "x",
            "labels": {"b": "2"},
            "finalizers": ["f1", "f2"],
            "ownerReferences": [{"uid": "u1", "name": "o1"}, {"uid": "u2", "name": "o2", "controller": true}],
            "managedFields": [{"manager": "m2"}]
        }})
    );
}

#[test]
fn error_classes() {
    use StrategicPatchError as E;
    let bad = [
        E::BadRetainKeys,
        E::BadDeleteFromPrimitiveList,
        E::BadSetElementOrder,
        E::MergeDirectiveInList,
        E::MissingMergeKey {
            element: String::new(),
            key: "k".into(),
            in_patch: true,
        },
    ];
    assert!(bad.iter().all(E::is_bad_request));
    let unprocessable = [
        E::ListOfLists,
        E::MissingMergeKey {
            element: String::new(),
            key: "k".into(),
            in_patch: false,
        },
        E::NoMergeKey {
            schema: String::new(),
        },
    ];
    assert!(!unprocessable.iter().any(E::is_bad_request));
}

/// Elements are found by merge key and by value through hash indexes: merging 20k keyed
/// elements (half new, half updates, some deleted) and 20k integers into lists of 20k takes
/// time in proportion to their number, and keeps upstream's order.
#[test]
fn long_lists_merge_in_linear_time() {
    let n = 20_000;
    let items: Vec<Value> = (0..n).map(|i| json!({"name": format!("a{i}")})).collect();
    let mut patch_items: Vec<Value> = (0..n)
        .map(|i| json!({"name": format!("a{}", i * 2), "v": i}))
        .collect();
    patch_items.push(json!({"name": "a1", "$patch": "delete"}));
    let original = json!({"items": items, "ints": (0..n).collect::<Vec<_>>()});
    let patch = json!({"items": patch_items, "ints": (n / 2..n + n / 2).collect::<Vec<_>>()});
    let started = std::time::Instant::now();
    let out = patched(original, patch);
    let took = started.elapsed();
    let merged = out["items"].as_array().unwrap();
    // 20k originals, less one deleted, plus the 10k new even names past the originals.
    assert_eq!(merged.len(), n - 1 + n / 2);
    assert_eq!(merged[0], json!({"name": "a0", "v": 0}));
    assert!(!merged.iter().any(|e| e["name"] == "a1"));
    assert_eq!(out["ints"].as_array().unwrap().len(), n + n / 2);
    assert!(took < std::time::Duration::from_secs(30), "{took:?}");
}
