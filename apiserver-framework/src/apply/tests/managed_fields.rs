//! The `managedFields` entries themselves: their cap, their decoding and encoding, where an
//! update takes them from, and the checks of an apply request.

use serde_json::{Value, json};

use super::*;

#[test]
fn update_entries_are_capped_into_ancient_changes() {
    let s = schema();
    let mut managed = ManagedFields::new();
    let mut live = obj(json!({"params": {}}));
    for i in 0..11 {
        managed.insert(Entry {
            manager: format!("m{i:02}"),
            operation: ManagedFieldsOperation::Update,
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
