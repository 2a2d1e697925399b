//! Who owns which field: applies, updates and their conflicts, as upstream decides them.

use serde_json::{Value, json};

use super::*;

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
