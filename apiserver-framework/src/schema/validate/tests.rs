use serde_json::{Value, json};

use super::SchemaValidator;

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "required": ["size"],
                "x-kubernetes-validations": [
                    {"rule": "self.size <= self.max", "message": "size must not exceed max",
                     "fieldPath": ".size"},
                    {"rule": "self.size == oldSelf.size || !has(self.mode) || self.mode != 'Locked'",
                     "message": "size is locked", "reason": "FieldValueForbidden"},
                ],
                "properties": {
                    "size": {"type": "integer", "minimum": 1, "maximum": 10},
                    "max": {"type": "integer"},
                    "ratio": {"type": "number", "exclusiveMaximum": true, "maximum": 1.5},
                    "name": {"type": "string", "minLength": 2, "maxLength": 5,
                             "pattern": "^[a-z]+$"},
                    "mode": {"type": "string", "enum": ["Open", "Locked"]},
                    "tags": {"type": "array", "maxItems": 2, "minItems": 1,
                             "x-kubernetes-list-type": "set",
                             "items": {"type": "string"}},
                    "note": {"type": "string", "nullable": false,
                             "x-kubernetes-validations": [
                                 {"rule": "self.startsWith('n')",
                                  "messageExpression": "'note ' + self + ' must start with n'"}]},
                    "ports": {"type": "array", "x-kubernetes-list-type": "map",
                              "x-kubernetes-list-map-keys": ["name"],
                              "items": {"type": "object", "properties": {
                                  "name": {"type": "string"},
                                  "port": {"type": "integer", "maximum": 100}}}},
                },
            },
        },
    })
}

fn messages(v: &SchemaValidator, new: Value, old: Option<Value>) -> Vec<String> {
    v.validate(&new, old.as_ref())
        .iter()
        .map(|e| format!("{} [{}]", e, e.cause_type()))
        .collect()
}

fn obj(spec: Value) -> Value {
    json!({"metadata": {"name": "x"}, "spec": spec})
}

#[test]
fn constraints_have_upstream_messages() {
    let v = SchemaValidator::new(&schema()).unwrap();
    assert!(messages(&v, obj(json!({"size": 3, "max": 5})), None).is_empty());
    assert_eq!(
        messages(&v, obj(json!({"size": 0, "max": 5})), None),
        [
            "spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1 [FieldValueInvalid]"
        ]
    );
    assert_eq!(
        messages(&v, obj(json!({"size": 1, "max": 5, "ratio": 1.5})), None),
        [
            "spec.ratio: Invalid value: 1.5: spec.ratio in body should be less than 1.5 [FieldValueInvalid]"
        ]
    );
    assert_eq!(
        messages(
            &v,
            obj(json!({"size": 1, "max": 5, "name": "abcdef9"})),
            None
        ),
        [
            "spec.name: Too long: may not be more than 5 bytes [FieldValueTooLong]",
            "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation [FieldValueInvalid]",
        ]
    );
    assert_eq!(
        messages(&v, obj(json!({"size": 1, "max": 5, "name": "A1"})), None),
        [
            "spec.name: Invalid value: \"A1\": spec.name in body should match '^[a-z]+$' [FieldValueInvalid]"
        ]
    );
    assert_eq!(
        messages(&v, obj(json!({"size": 1, "max": 5, "name": "a"})), None),
        [
            "spec.name: Invalid value: \"a\": spec.name in body should be at least 2 chars long [FieldValueInvalid]"
        ]
    );
    let e = messages(&v, obj(json!({"size": 1, "max": 5, "mode": "x"})), None);
    assert_eq!(
        e[0],
        "spec.mode: Unsupported value: \"x\": supported values: \"Open\", \"Locked\" [FieldValueNotSupported]"
    );
    let e = messages(
        &v,
        obj(json!({"size": 1, "max": 5, "tags": ["a", "b", "a"]})),
        None,
    );
    assert_eq!(
        e[..2],
        [
            "spec.tags: Too many: 3: must have at most 2 items [FieldValueTooMany]",
            "spec.tags[2]: Duplicate value: \"a\" [FieldValueDuplicate]",
        ]
    );
    let e = messages(&v, obj(json!({"max": 5})), None);
    assert_eq!(e[0], "spec.size: Required value [FieldValueRequired]");
    // A null where the schema does not allow one is pruned, as upstream: it is missing.
    assert!(messages(&v, obj(json!({"size": 1, "max": 5, "note": null})), None).is_empty());
    let e = messages(&v, obj(json!({"size": null, "max": 5})), None);
    assert_eq!(e[0], "spec.size: Required value [FieldValueRequired]");
}

#[test]
fn rules_have_upstream_messages() {
    let v = SchemaValidator::new(&schema()).unwrap();
    assert_eq!(
        messages(&v, obj(json!({"size": 6, "max": 5})), None),
        ["spec.size: Invalid value: \"object\": size must not exceed max [FieldValueInvalid]"]
    );
    assert_eq!(
        messages(&v, obj(json!({"size": 1, "max": 5, "note": "x"})), None),
        ["spec.note: Invalid value: \"string\": note x must start with n [FieldValueInvalid]"]
    );
    // A transition rule: checked on update only.
    let locked = obj(json!({"size": 2, "max": 5, "mode": "Locked"}));
    assert!(messages(&v, locked.clone(), None).is_empty());
    assert_eq!(
        messages(
            &v,
            obj(json!({"size": 3, "max": 5, "mode": "Locked"})),
            Some(locked)
        ),
        ["spec: Forbidden: size is locked [FieldValueForbidden]"]
    );
}

#[test]
fn unchanged_invalid_values_ratchet() {
    let v = SchemaValidator::new(&schema()).unwrap();
    let old = obj(json!({"size": 20, "max": 30, "name": "A"}));
    // The invalid size and name are left as they are: the update passes.
    let new = obj(json!({"size": 20, "max": 40, "name": "A"}));
    assert!(messages(&v, new, Some(old.clone())).is_empty());
    // Changing the size to another invalid value fails it.
    let new = obj(json!({"size": 21, "max": 40, "name": "A"}));
    assert_eq!(
        messages(&v, new, Some(old)),
        [
            "spec.size: Invalid value: 21: spec.size in body should be less than or equal to 10 [FieldValueInvalid]"
        ]
    );
    // A rule on an unchanged value ratchets; on a changed one it fails.
    let old = obj(json!({"size": 6, "max": 5}));
    assert!(messages(&v, old.clone(), Some(old.clone())).is_empty());
    let e = messages(&v, obj(json!({"size": 6, "max": 4})), Some(old));
    assert_eq!(e.len(), 1, "{e:?}");
    // Items of a map list correlate by key, not by index.
    let old = obj(json!({"size": 1, "max": 5, "ports": [{"name": "a", "port": 500}]}));
    let new = obj(json!({"size": 1, "max": 5,
        "ports": [{"name": "b", "port": 1}, {"name": "a", "port": 500}]}));
    assert!(messages(&v, new, Some(old.clone())).is_empty());
    let new = obj(json!({"size": 1, "max": 5, "ports": [{"name": "b", "port": 500}]}));
    assert_eq!(messages(&v, new, Some(old)).len(), 1);
}

#[test]
fn bad_rules_refuse_the_schema() {
    let bad = |rule: Value| {
        let schema = json!({"type": "object", "properties": {"spec": {
            "type": "object", "x-kubernetes-validations": [rule],
            "properties": {"items": {"type": "array", "items": {"type": "string"}}}}}});
        SchemaValidator::new(&schema).unwrap_err().to_string()
    };
    let e = bad(json!({"rule": "self.x >"}));
    assert!(
        e.starts_with("x-kubernetes-validations rule \"self.x >\" at spec: compilation failed"),
        "{e}"
    );
    let e = bad(json!({"rule": "true", "reason": "Nope"}));
    assert!(e.contains("unsupported reason \"Nope\""), "{e}");
    let e = bad(
        json!({"rule": "self.items.all(a, self.items.all(b, self.items.all(c, a + b + c != '')))"}),
    );
    assert!(e.contains("estimated rule cost exceeds budget"), "{e}");
}

#[test]
fn a_schema_without_checks_is_empty() {
    let plain = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"reference": {"type": "string", "nullable": true}}}}});
    assert!(SchemaValidator::new(&plain).unwrap().is_empty());
    assert!(!SchemaValidator::new(&schema()).unwrap().is_empty());
}

#[test]
fn message_expressions_use_kubernetes_cel_libraries() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "owners": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 10},
                   "x-kubernetes-validations": [{"rule": "self.size() <= 2",
                       "messageExpression": "'at most 2 owners, not ' + string(self.size())"}]}}}}});
    let v = SchemaValidator::new(&schema).unwrap();
    assert_eq!(
        messages(&v, obj(json!({"owners": ["a", "b", "c"]})), None),
        ["spec.owners: Invalid value: \"array\": at most 2 owners, not 3 [FieldValueInvalid]"]
    );
}

#[test]
fn a_rule_over_the_runtime_budget_stops_with_upstreams_error() {
    // The estimate cannot know `n`: the rule is loaded, and stopped when it runs.
    let rule = "lists.range(self.n).all(x, x + 1 > x)";
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"n": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": rule}, {"rule": "false", "message": "not reached"}]}}});
    let v = SchemaValidator::new(&schema).unwrap();
    assert!(
        messages(&v, obj(json!({"n": 10})), None)
            .iter()
            .all(|m| m.contains("not reached"))
    );
    let started = std::time::Instant::now();
    assert_eq!(
        messages(&v, obj(json!({"n": 400_000})), None),
        [format!(
            "spec: Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {rule} [FieldValueInvalid]"
        )]
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}
