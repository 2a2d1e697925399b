//! Upstream structured-merge-diff and field manager behaviours, written as facts.

use serde_json::{Value, json};

use super::*;

const GV: &str = "wardle.example.com/v1alpha1";

fn schema() -> StructuralSchema {
    StructuralSchema::from_openapi(&json!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {"type": "object", "properties": {
                "size": {"type": "integer"},
                "color": {"type": "string"},
                "toppings": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "properties": {
                        "name": {"type": "string"}, "amount": {"type": "integer"}}}},
                "tags": {"type": "array", "x-kubernetes-list-type": "set",
                    "items": {"type": "string"}},
                "args": {"type": "array", "items": {"type": "string"}},
                "selector": {"type": "object", "x-kubernetes-map-type": "atomic",
                    "additionalProperties": {"type": "string"}},
                "params": {"type": "object", "additionalProperties": {"type": "string"}},
                "template": {"type": "object", "properties": {
                    "replicas": {"type": "integer"}, "image": {"type": "string"}}}
            }},
            "status": {"type": "object", "properties": {"phase": {"type": "string"}}}
        }
    }))
}

fn t(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn ctx<'a>(schema: &'a StructuralSchema, manager: &'a str) -> Context<'a> {
    Context {
        schema,
        manager,
        api_version: GV,
        subresource: None,
        reset_fields: reset_fields(None, true),
        now: t("2026-07-01T10:00:00Z"),
    }
}

fn obj(spec: Value) -> Value {
    json!({"apiVersion": GV, "kind": "Flunder", "metadata": {"name": "f"}, "spec": spec})
}

/// Applies `spec` as `manager` and returns the new object and managers.
fn apply_spec(
    live: Option<&Value>,
    spec: Value,
    managed: ManagedFields,
    manager: &str,
    force: bool,
) -> Result<(Value, ManagedFields), ApplyError> {
    let s = schema();
    apply(&ctx(&s, manager), live, &obj(spec), managed, force)
}

fn ok(r: Result<(Value, ManagedFields), ApplyError>) -> (Value, ManagedFields) {
    match r {
        Ok(v) => v,
        Err(e) => panic!("apply failed: {e}"),
    }
}

fn conflicts(r: Result<(Value, ManagedFields), ApplyError>) -> Conflicts {
    match r {
        Err(ApplyError::Conflicts(c)) => c,
        other => panic!("expected conflicts, got {other:?}"),
    }
}

/// The `fieldsV1` of `manager`'s entry (`Value::Null` when it has none).
fn owned(managed: &ManagedFields, manager: &str) -> Value {
    let found: Vec<&Entry> = managed
        .entries()
        .into_iter()
        .filter(|e| e.manager == manager)
        .collect();
    assert!(found.len() <= 1, "{manager} has several entries");
    found
        .first()
        .map(|e| e.fields.to_fields_v1())
        .unwrap_or(Value::Null)
}

#[test]
fn apply_creates_the_object_and_an_apply_entry() {
    let (object, managed) = ok(apply_spec(
        None,
        json!({"size": 1, "toppings": [{"name": "cheese", "amount": 1}]}),
        ManagedFields::new(),
        "kubectl",
        false,
    ));
    assert_eq!(
        object,
        obj(json!({"size": 1, "toppings": [{"name": "cheese", "amount": 1}]}))
    );
    assert_eq!(
        managed.encode().unwrap(),
        json!([{
            "manager": "kubectl", "operation": "Apply", "apiVersion": GV,
            "time": "2026-07-01T10:00:00Z", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:size": {}, "f:toppings": {
                "k:{\"name\":\"cheese\"}": {".": {}, "f:amount": {}, "f:name": {}}}}}
        }])
    );
}

#[test]
fn reapply_without_a_field_removes_it() {
    let (live, managed) = ok(apply_spec(
        None,
        json!({"size": 1, "color": "red"}),
        ManagedFields::new(),
        "a",
        false,
    ));
    let (object, managed) = ok(apply_spec(
        Some(&live),
        json!({"size": 1}),
        managed,
        "a",
        false,
    ));
    assert_eq!(object, obj(json!({"size": 1})));
    assert_eq!(owned(&managed, "a"), json!({"f:spec": {"f:size": {}}}));
}

#[test]
fn field_another_applier_owns_is_kept_and_equal_values_are_shared() {
    let (live, managed) = ok(apply_spec(
        None,
        json!({"color": "red"}),
        ManagedFields::new(),
        "a",
        false,
    ));
    // Same value: no conflict, both own it.
    let (live, managed) = ok(apply_spec(
        Some(&live),
        json!({"color": "red"}),
        managed,
        "b",
        false,
    ));
    assert_eq!(owned(&managed, "a"), json!({"f:spec": {"f:color": {}}}));
    assert_eq!(owned(&managed, "b"), json!({"f:spec": {"f:color": {}}}));
    let (object, managed) = ok(apply_spec(
        Some(&live),
        json!({"size": 3}),
        managed,
        "a",
        false,
    ));
    assert_eq!(object, obj(json!({"color": "red", "size": 3})));
    assert_eq!(owned(&managed, "a"), json!({"f:spec": {"f:size": {}}}));
}

#[test]
fn conflict_with_another_applier_and_force() {
    let (live, managed) = ok(apply_spec(
        None,
        json!({"size": 1, "color": "red"}),
        ManagedFields::new(),
        "a",
        false,
    ));
    let c = conflicts(apply_spec(
        Some(&live),
        json!({"size": 2}),
        managed.clone(),
        "b",
        false,
    ));
    assert_eq!(
        c.message(),
        "Apply failed with 1 conflict: conflict with \"a\": .spec.size"
    );
    assert_eq!(
        c.causes(),
        vec![ConflictCause {
            reason: "FieldManagerConflict",
            message: "conflict with \"a\"".into(),
            field: ".spec.size".into(),
        }]
    );
    let (object, managed) = ok(apply_spec(
        Some(&live),
        json!({"size": 2}),
        managed,
        "b",
        true,
    ));
    assert_eq!(object, obj(json!({"size": 2, "color": "red"})));
    assert_eq!(owned(&managed, "a"), json!({"f:spec": {"f:color": {}}}));
    assert_eq!(owned(&managed, "b"), json!({"f:spec": {"f:size": {}}}));
}

#[test]
fn conflict_messages_group_paths_by_sorted_manager() {
    let s = schema();
    let (live, managed) = ok(apply_spec(
        None,
        json!({"size": 1, "color": "red"}),
        ManagedFields::new(),
        "z",
        false,
    ));
    let c = conflicts(apply_spec(
        Some(&live),
        json!({"size": 2, "color": "blue"}),
        managed.clone(),
        "b",
        false,
    ));
    assert_eq!(
        c.message(),
        "Apply failed with 2 conflicts: conflicts with \"z\":\n- .spec.color\n- .spec.size"
    );
    // An Update manager takes the color: conflicts name both managers, sorted.
    let mut edited = live.clone();
    edited["spec"]["color"] = json!("green");
    let managed = update(&ctx(&s, "kubectl-edit"), Some(&live), &edited, managed).unwrap();
    let c = conflicts(apply_spec(
        Some(&edited),
        json!({"size": 2, "color": "blue"}),
        managed,
        "b",
        false,
    ));
    assert_eq!(
        c.message(),
        format!(
            "Apply failed with 2 conflicts: conflicts with \"kubectl-edit\" using {GV}:\n- .spec.color\nconflicts with \"z\":\n- .spec.size"
        )
    );
    assert_eq!(
        c.causes()[0].message,
        format!("conflict with \"kubectl-edit\" using {GV}")
    );
}

#[test]
fn update_on_create_owns_what_it_wrote_and_conflicts_with_apply() {
    let s = schema();
    let mut created = obj(json!({"size": 1}));
    created["metadata"]["labels"] = json!({"app": "x"});
    created["metadata"]["uid"] = json!("u-1");
    let managed = update(
        &ctx(&s, "kubectl-create"),
        None,
        &created,
        ManagedFields::new(),
    )
    .unwrap();
    assert_eq!(
        managed.encode().unwrap(),
        json!([{
            "manager": "kubectl-create", "operation": "Update", "apiVersion": GV,
            "time": "2026-07-01T10:00:00Z", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                "f:spec": {".": {}, "f:size": {}}}
        }])
    );
    let c = conflicts(apply_spec(
        Some(&created),
        json!({"size": 2}),
        managed,
        "kubectl",
        false,
    ));
    assert_eq!(
        c.message(),
        format!(
            "Apply failed with 1 conflict: conflict with \"kubectl-create\" using {GV}: .spec.size"
        )
    );
}

#[test]
fn update_moves_ownership_away_from_an_applier() {
    let s = schema();
    let (live, managed) = ok(apply_spec(
        None,
        json!({"size": 1, "color": "red"}),
        ManagedFields::new(),
        "a",
        false,
    ));
    let mut edited = live.clone();
    edited["spec"]["size"] = json!(5);
    let managed = update(&ctx(&s, "kubectl-edit"), Some(&live), &edited, managed).unwrap();
    assert_eq!(owned(&managed, "a"), json!({"f:spec": {"f:color": {}}}));
    assert_eq!(
        owned(&managed, "kubectl-edit"),
        json!({"f:spec": {"f:size": {}}})
    );
    // A write that changes nothing leaves the managers alone.
    let again = update(&ctx(&s, "other"), Some(&edited), &edited, managed.clone()).unwrap();
    assert_eq!(again, managed);
    // Removing a field takes it from its owner.
    let mut removed = edited.clone();
    removed["spec"].as_object_mut().unwrap().remove("color");
    let managed = update(&ctx(&s, "kubectl-edit"), Some(&edited), &removed, managed).unwrap();
    assert_eq!(owned(&managed, "a"), Value::Null);
}

#[test]
fn untracked_objects_stay_untracked_until_the_first_apply() {
    let s = schema();
    let live = obj(json!({"size": 1, "color": "red"}));
    let mut edited = live.clone();
    edited["spec"]["size"] = json!(2);
    let managed = update(
        &ctx(&s, "kubectl-edit"),
        Some(&live),
        &edited,
        ManagedFields::new(),
    )
    .unwrap();
    assert!(managed.is_empty());
    let c = conflicts(apply_spec(
        Some(&edited),
        json!({"size": 3}),
        ManagedFields::new(),
        "kubectl",
        false,
    ));
    assert_eq!(
        c.message(),
        format!(
            "Apply failed with 1 conflict: conflict with \"before-first-apply\" using {GV}: .spec.size"
        )
    );
    let (object, managed) = ok(apply_spec(
        Some(&edited),
        json!({"size": 3}),
        ManagedFields::new(),
        "kubectl",
        true,
    ));
    assert_eq!(object, obj(json!({"size": 3, "color": "red"})));
    assert_eq!(
        owned(&managed, BEFORE_FIRST_APPLY),
        json!({"f:spec": {".": {}, "f:color": {}}})
    );
    assert_eq!(
        owned(&managed, "kubectl"),
        json!({"f:spec": {"f:size": {}}})
    );
}

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

#[test]
fn status_is_not_owned_on_the_main_resource_and_spec_not_on_status() {
    let s = schema();
    let mut config = obj(json!({"size": 1}));
    config["status"] = json!({"phase": "Pending"});
    let (live, managed) = ok(apply(
        &ctx(&s, "a"),
        None,
        &config,
        ManagedFields::new(),
        false,
    ));
    assert_eq!(owned(&managed, "a"), json!({"f:spec": {"f:size": {}}}));

    let mut status_ctx = ctx(&s, "controller");
    status_ctx.subresource = Some("status");
    status_ctx.reset_fields = reset_fields(Some("status"), true);
    let mut status = obj(json!({"size": 9}));
    status["status"] = json!({"phase": "Running"});
    let (live, managed) = ok(apply(&status_ctx, Some(&live), &status, managed, false));
    let entry = managed
        .entries()
        .into_iter()
        .find(|e| e.manager == "controller")
        .cloned()
        .unwrap();
    assert_eq!(entry.subresource, "status");
    assert_eq!(
        entry.fields.to_fields_v1(),
        json!({"f:status": {"f:phase": {}}})
    );
    assert_eq!(owned(&managed, "a"), json!({"f:spec": {"f:size": {}}}));
    assert_eq!(entry.to_json()["subresource"], json!("status"));

    let mut other_ctx = status_ctx.clone();
    other_ctx.manager = "other";
    status["status"] = json!({"phase": "Failed"});
    let c = conflicts(apply(&other_ctx, Some(&live), &status, managed, false));
    assert_eq!(
        c.message(),
        "Apply failed with 1 conflict: conflict with \"controller\" with subresource \"status\": .status.phase"
    );
}

#[test]
fn update_entries_are_capped_into_ancient_changes() {
    let s = schema();
    let mut managed = ManagedFields::new();
    let mut live = obj(json!({"params": {}}));
    for i in 0..11 {
        managed.insert(Entry {
            manager: format!("m{i:02}"),
            operation: Operation::Update,
            api_version: GV.into(),
            time: Some(t(&format!("2026-07-01T09:00:{i:02}Z"))),
            subresource: String::new(),
            fields: Set::from_paths([Path::fields(&["spec", "params", &format!("p{i}")])]),
        });
        live["spec"]["params"][format!("p{i}")] = json!("v");
    }
    let mut new = live.clone();
    new["spec"]["size"] = json!(1);
    let managed = update(&ctx(&s, "m11"), Some(&live), &new, managed).unwrap();
    let managers: Vec<String> = managed
        .entries()
        .iter()
        .map(|e| e.manager.clone())
        .collect();
    assert_eq!(managers.len(), MAX_UPDATE_MANAGERS);
    // The bucket carries the time of the newest entry merged into it (m02).
    assert_eq!(managers[0], "ancient-changes");
    assert_eq!(managers[1], "m03");
    assert_eq!(managers[9], "m11");
    assert!(!managers.contains(&"m00".to_string()));
    assert_eq!(
        owned(&managed, "ancient-changes"),
        json!({"f:spec": {"f:params": {"f:p0": {}, "f:p1": {}, "f:p2": {}}}})
    );
}

#[test]
fn apply_requests_are_checked() {
    let s = schema();
    let mut config = obj(json!({}));
    config["metadata"]["managedFields"] = json!([]);
    match apply(&ctx(&s, "a"), None, &config, ManagedFields::new(), false) {
        Err(ApplyError::BadRequest(m)) => assert_eq!(m, "metadata.managedFields must be nil"),
        other => panic!("{other:?}"),
    }
    let config = json!({"apiVersion": "wardle.example.com/v1beta1", "kind": "Flunder"});
    match apply(&ctx(&s, "a"), None, &config, ManagedFields::new(), false) {
        Err(ApplyError::BadRequest(m)) => assert_eq!(
            m,
            "Incorrect version specified in apply patch. Specified patch version: wardle.example.com/v1beta1, expected: wardle.example.com/v1alpha1"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn managed_fields_decode_errors_and_encoding_order() {
    let entry = |op: &str, av: &str, ft: &str| json!([{"manager": "m", "operation": op, "apiVersion": av, "fieldsType": ft, "fieldsV1": {}}]);
    let err = |v: Value| ManagedFields::decode(Some(&v)).unwrap_err().to_string();
    assert_eq!(
        err(entry("Patch", GV, "FieldsV1")),
        "operation must be `Apply` or `Update`"
    );
    assert_eq!(
        err(entry("Apply", "", "FieldsV1")),
        "apiVersion must not be empty"
    );
    assert_eq!(
        err(entry("Apply", GV, "")),
        "missing fieldsType in managed fields entry 0"
    );
    assert_eq!(
        err(entry("Apply", GV, "FieldsV2")),
        "invalid fieldsType \"FieldsV2\" in managed fields entry 0"
    );
    let stored = json!([
        {"manager": "z", "operation": "Update", "apiVersion": GV, "time": "2026-07-01T09:00:00Z",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:size": {}}}},
        {"manager": "b", "operation": "Update", "apiVersion": GV, "time": "2026-07-01T08:00:00Z",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:color": {}}}},
        {"manager": "y", "operation": "Apply", "apiVersion": GV, "time": "2026-07-01T11:00:00Z",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:tags": {"v:\"a\"": {}}}},
         "subresource": "status"}
    ]);
    let managed = ManagedFields::decode(Some(&stored)).unwrap();
    let encoded = managed.encode().unwrap();
    // The typed form is the JSON form read back.
    let typed: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry> =
        serde_json::from_value(encoded.clone()).unwrap();
    assert_eq!(managed.encode_typed().unwrap(), typed);
    let order: Vec<&str> = encoded
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["manager"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["y", "b", "z"]);
    assert_eq!(encoded[0], stored[2]);
    let mut object = obj(json!({}));
    managed.write_to(&mut object);
    assert_eq!(ManagedFields::from_object(&object).unwrap(), managed);
    ManagedFields::new().write_to(&mut object);
    assert!(object["metadata"].get("managedFields").is_none());
}

#[test]
fn updates_take_managed_fields_from_the_request_or_the_live_object() {
    let stored = json!([{"manager": "a", "operation": "Apply", "apiVersion": GV,
        "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:size": {}}}}]);
    let mut live = obj(json!({"size": 1}));
    live["metadata"]["managedFields"] = stored.clone();
    let from_live = ManagedFields::decode(Some(&stored)).unwrap();
    let new = obj(json!({"size": 1}));
    assert_eq!(
        ManagedFields::for_update(Some(&live), &new, false),
        from_live
    );
    let mut reset = new.clone();
    reset["metadata"]["managedFields"] = json!([{}]);
    assert!(ManagedFields::for_update(Some(&live), &reset, false).is_empty());
    let mut broken = new.clone();
    broken["metadata"]["managedFields"] = json!([{"operation": "Nope"}]);
    assert_eq!(
        ManagedFields::for_update(Some(&live), &broken, false),
        from_live
    );
    assert_eq!(
        ManagedFields::for_update(Some(&live), &reset, true),
        from_live
    );
}

#[test]
fn fields_an_updater_also_owns_survive_when_the_applier_drops_them() {
    let s = schema();
    let (live, managed) = ok(apply_spec(
        None,
        json!({"size": 1, "color": "red"}),
        ManagedFields::new(),
        "a",
        false,
    ));
    let mut edited = live.clone();
    edited["spec"]["params"] = json!({"p": "x"});
    let managed = update(&ctx(&s, "kubectl-edit"), Some(&live), &edited, managed).unwrap();
    // kubectl-edit re-writes color with the same value: nothing changes hands.
    assert_eq!(
        owned(&managed, "a"),
        json!({"f:spec": {"f:color": {}, "f:size": {}}})
    );
    let mut shared = managed.clone();
    let mut edit_entry = shared
        .entries()
        .into_iter()
        .find(|e| e.manager == "kubectl-edit")
        .cloned()
        .unwrap();
    edit_entry.fields = edit_entry
        .fields
        .union(&Set::from_paths([Path::fields(&["spec", "color"])]));
    shared.insert(edit_entry);
    let (object, managed) = ok(apply_spec(
        Some(&edited),
        json!({"size": 1}),
        shared,
        "a",
        false,
    ));
    assert_eq!(
        object["spec"],
        json!({"size": 1, "color": "red", "params": {"p": "x"}})
    );
    assert_eq!(owned(&managed, "a"), json!({"f:spec": {"f:size": {}}}));
}

#[test]
fn a_no_op_apply_keeps_the_entry_time() {
    let s = schema();
    let (live, managed) = ok(apply_spec(
        None,
        json!({"size": 1}),
        ManagedFields::new(),
        "a",
        false,
    ));
    let mut later = ctx(&s, "a");
    later.now = t("2026-07-02T10:00:00Z");
    let (again, managed2) = ok(apply(
        &later,
        Some(&live),
        &obj(json!({"size": 1})),
        managed.clone(),
        false,
    ));
    assert_eq!(again, live);
    assert_eq!(managed2, managed);
    let (_, managed3) = ok(apply(
        &later,
        Some(&live),
        &obj(json!({"size": 2})),
        managed,
        false,
    ));
    assert_eq!(managed3.entries()[0].time, Some(t("2026-07-02T10:00:00Z")));
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
