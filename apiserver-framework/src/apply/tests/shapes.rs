//! How lists, maps and structs merge and are owned, by the schema's markers (sets, map
//! lists, atomic and granular values) and by the value where the schema says nothing.

use serde_json::{Value, json};

use super::*;

#[test]
fn set_lists_merge_and_remove_items_by_value() {
    let (live, managed) = ok(apply_spec(
        None,
        json!({"tags": ["x", "y"]}),
        ManagedFields::new(),
        "a",
        false,
    ));
    let (live, managed) = ok(apply_spec(
        Some(&live),
        json!({"tags": ["z"]}),
        managed,
        "b",
        false,
    ));
    assert_eq!(live["spec"]["tags"], json!(["x", "y", "z"]));
    let (live, managed) = ok(apply_spec(
        Some(&live),
        json!({"tags": ["x"]}),
        managed,
        "a",
        false,
    ));
    assert_eq!(live["spec"]["tags"], json!(["x", "z"]));
    assert_eq!(
        owned(&managed, "a"),
        json!({"f:spec": {"f:tags": {"v:\"x\"": {}}}})
    );
    assert_eq!(
        owned(&managed, "b"),
        json!({"f:spec": {"f:tags": {"v:\"z\"": {}}}})
    );
}

#[test]
fn map_lists_merge_items_by_key_and_keep_upstream_order() {
    let (live, managed) = ok(apply_spec(
        None,
        json!({"toppings": [{"name": "cheese", "amount": 1}, {"name": "ham", "amount": 2}]}),
        ManagedFields::new(),
        "a",
        false,
    ));
    let (live, managed) = ok(apply_spec(
        Some(&live),
        json!({"toppings": [{"name": "olive", "amount": 3}, {"name": "cheese"}]}),
        managed,
        "b",
        false,
    ));
    // New items go where the configuration puts them relative to the shared items.
    assert_eq!(
        live["spec"]["toppings"],
        json!([{"name": "olive", "amount": 3}, {"name": "cheese", "amount": 1}, {"name": "ham", "amount": 2}])
    );
    let c = conflicts(apply_spec(
        Some(&live),
        json!({"toppings": [{"name": "cheese", "amount": 5}]}),
        managed.clone(),
        "b",
        false,
    ));
    assert_eq!(
        c.message(),
        "Apply failed with 1 conflict: conflict with \"a\": .spec.toppings[name=\"cheese\"].amount"
    );
    // a drops ham (only a applied it) and cheese (b applies cheese too: kept, amount goes).
    let (object, managed) = ok(apply_spec(
        Some(&live),
        json!({"toppings": [{"name": "ham", "amount": 2}]}),
        managed,
        "a",
        false,
    ));
    assert_eq!(
        object["spec"]["toppings"],
        json!([{"name": "olive", "amount": 3}, {"name": "cheese"}, {"name": "ham", "amount": 2}])
    );
    let (object, _) = ok(apply_spec(
        Some(&object),
        json!({"size": 1}),
        managed,
        "a",
        false,
    ));
    assert_eq!(
        object["spec"]["toppings"],
        json!([{"name": "olive", "amount": 3}, {"name": "cheese"}])
    );
}

#[test]
fn map_list_items_need_their_keys() {
    let r = apply_spec(
        None,
        json!({"toppings": [{"amount": 1}]}),
        ManagedFields::new(),
        "a",
        false,
    );
    match r {
        Err(ApplyError::Invalid(msg)) => assert!(msg.contains("omits key field \"name\""), "{msg}"),
        other => panic!("expected an invalid object, got {other:?}"),
    }
}

#[test]
fn atomic_lists_are_replaced_and_owned_whole() {
    let (live, managed) = ok(apply_spec(
        None,
        json!({"args": ["1", "2"]}),
        ManagedFields::new(),
        "a",
        false,
    ));
    let (live, managed) = ok(apply_spec(
        Some(&live),
        json!({"args": ["1", "2"]}),
        managed,
        "b",
        false,
    ));
    let c = conflicts(apply_spec(
        Some(&live),
        json!({"args": ["3"]}),
        managed.clone(),
        "b",
        false,
    ));
    assert_eq!(
        c.message(),
        "Apply failed with 1 conflict: conflict with \"a\": .spec.args"
    );
    let (object, managed) = ok(apply_spec(
        Some(&live),
        json!({"args": ["3"]}),
        managed,
        "b",
        true,
    ));
    assert_eq!(object["spec"]["args"], json!(["3"]));
    assert_eq!(owned(&managed, "a"), Value::Null);
    assert_eq!(owned(&managed, "b"), json!({"f:spec": {"f:args": {}}}));
}

#[test]
fn atomic_maps_are_replaced_and_granular_maps_merge() {
    let (live, managed) = ok(apply_spec(
        None,
        json!({"selector": {"a": "1"}, "params": {"p1": "a"}}),
        ManagedFields::new(),
        "a",
        false,
    ));
    assert_eq!(
        owned(&managed, "a"),
        json!({"f:spec": {"f:selector": {}, "f:params": {"f:p1": {}}}})
    );
    let c = conflicts(apply_spec(
        Some(&live),
        json!({"selector": {"b": "2"}}),
        managed.clone(),
        "b",
        false,
    ));
    assert_eq!(c.causes()[0].field, ".spec.selector");
    let (live, managed) = ok(apply_spec(
        Some(&live),
        json!({"params": {"p2": "b"}}),
        managed,
        "b",
        false,
    ));
    assert_eq!(live["spec"]["params"], json!({"p1": "a", "p2": "b"}));
    let (object, _) = ok(apply_spec(
        Some(&live),
        json!({"selector": {"a": "1", "c": "3"}}),
        managed,
        "a",
        false,
    ));
    assert_eq!(object["spec"]["selector"], json!({"a": "1", "c": "3"}));
    assert_eq!(object["spec"]["params"], json!({"p2": "b"}));
}

#[test]
fn nested_structs_are_pruned_field_by_field() {
    let (live, managed) = ok(apply_spec(
        None,
        json!({"template": {"replicas": 1, "image": "x"}}),
        ManagedFields::new(),
        "a",
        false,
    ));
    let (live, managed) = ok(apply_spec(
        Some(&live),
        json!({"template": {"image": "x"}}),
        managed,
        "b",
        false,
    ));
    let (object, managed) = ok(apply_spec(
        Some(&live),
        json!({"size": 1}),
        managed,
        "a",
        false,
    ));
    assert_eq!(object, obj(json!({"size": 1, "template": {"image": "x"}})));
    let (object, _) = ok(apply_spec(Some(&object), json!({}), managed, "b", false));
    assert_eq!(object, obj(json!({"size": 1})));
}

/// ObjectMeta as upstream types it: finalizers a set, owner references a map list keyed by
/// `uid` whose items are atomic (`+structType=atomic`), so their fields are not listed.
#[test]
fn object_meta_lists_follow_upstream_markers() {
    let s = schema();
    let mut config = obj(json!({"size": 1}));
    config["metadata"]["finalizers"] = json!(["example.com/keep"]);
    config["metadata"]["ownerReferences"] =
        json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "u1"}]);
    let (_, managed) = ok(apply(
        &ctx(&s, "a"),
        None,
        &config,
        ManagedFields::new(),
        false,
    ));
    assert_eq!(
        owned(&managed, "a"),
        json!({
            "f:metadata": {
                "f:finalizers": {"v:\"example.com/keep\"": {}},
                "f:ownerReferences": {"k:{\"uid\":\"u1\"}": {}}
            },
            "f:spec": {"f:size": {}}
        })
    );
}

#[test]
fn preserve_unknown_fields_are_deduced_from_the_value() {
    let s = StructuralSchema::from_openapi(&json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}));
    let config = obj(json!({"free": {"a": {"b": 1}, "l": [1, 2]}}));
    let (_, managed) = ok(apply(
        &ctx(&s, "a"),
        None,
        &config,
        ManagedFields::new(),
        false,
    ));
    assert_eq!(
        owned(&managed, "a"),
        json!({"f:spec": {"f:free": {"f:a": {".": {}, "f:b": {}}, "f:l": {}}}})
    );
}

/// Items of keyed lists are found through indexes: applying 20k toppings over 20k others and
/// comparing the results takes time in proportion to their number (about 11 s in a debug build,
/// doubling with the count).
#[test]
fn long_keyed_lists_merge_in_linear_time() {
    let toppings = |prefix: &str| -> Value {
        (0..20_000)
            .map(|i| json!({"name": format!("{prefix}{i}"), "amount": i}))
            .collect()
    };
    let started = std::time::Instant::now();
    let (live, managed) = ok(apply_spec(
        None,
        json!({"toppings": toppings("a")}),
        ManagedFields::new(),
        "one",
        false,
    ));
    let (merged, _) = ok(apply_spec(
        Some(&live),
        json!({"toppings": toppings("b")}),
        managed,
        "two",
        false,
    ));
    assert_eq!(merged["spec"]["toppings"].as_array().unwrap().len(), 40_000);
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_secs(60), "{took:?}");
}
