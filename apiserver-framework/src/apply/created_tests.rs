//! A create's one walk (`compare_created`) against the general comparison with the empty
//! object of the kind: the same comparison, the same managers, the same `managedFields`
//! bytes, the same errors.

use serde_json::{Value, json};

use super::typed::compare;
use super::*;

const GV: &str = "wardle.example.com/v1alpha1";

/// A schema with every kind of node the model has.
fn schema() -> StructuralSchema {
    StructuralSchema::from_openapi(&json!({
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {
                "size": {"type": "integer"},
                "color": {"type": "string"},
                "port": {"x-kubernetes-int-or-string": true},
                "nested": {"type": "object", "properties": {
                    "deeper": {"type": "object", "properties": {
                        "leaf": {"type": "string"},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}}
                    }}
                }},
                "toppings": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "properties": {
                        "name": {"type": "string"}, "amount": {"type": "integer"},
                        "tags": {"type": "array", "x-kubernetes-list-type": "set",
                            "items": {"type": "string"}}}}},
                "ports": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["port", "protocol"],
                    "items": {"type": "object", "properties": {
                        "port": {"type": "integer"}, "protocol": {"type": "string"},
                        "name": {"type": "string"}}}},
                "tags": {"type": "array", "x-kubernetes-list-type": "set",
                    "items": {"type": "string"}},
                "args": {"type": "array", "items": {"type": "string"}},
                "atomicList": {"type": "array", "x-kubernetes-list-type": "atomic",
                    "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
                "selector": {"type": "object", "x-kubernetes-map-type": "atomic",
                    "additionalProperties": {"type": "string"}},
                "granular": {"type": "object", "x-kubernetes-map-type": "granular",
                    "properties": {"x": {"type": "string"}, "y": {"type": "string"}}},
                "params": {"type": "object", "additionalProperties": {"type": "string"}},
                "matrix": {"type": "object", "additionalProperties": {
                    "type": "object", "additionalProperties": {"type": "integer"}}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "open": {"type": "object", "additionalProperties": true},
                "anything": {},
                "embedded": {"type": "object", "x-kubernetes-embedded-resource": true,
                    "properties": {"spec": {"type": "object", "properties": {
                        "image": {"type": "string"}}}}},
                "unspecified": {"type": "object"}
            }},
            "status": {"type": "object", "properties": {
                "phase": {"type": "string"},
                "conditions": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["type"],
                    "items": {"type": "object", "properties": {
                        "type": {"type": "string"}, "status": {"type": "string"}}}}
            }}
        }
    }))
}

fn obj(spec: Value) -> Value {
    json!({
        "apiVersion": GV,
        "kind": "Flunder",
        "metadata": {"name": "f", "namespace": "ns", "uid": "u", "generation": 1,
            "labels": {"a": "b"}, "annotations": {"x": "y"}, "finalizers": ["one", "two"],
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "1"}]},
        "spec": spec
    })
}

/// The comparison against the empty object, as updates of other writes compute it.
fn general(new: &Value, s: &StructuralSchema) -> Result<typed::Comparison, ApplyError> {
    compare(&empty_like(new), new, s.root())
}

/// Asserts the walk equals the general comparison, and that a create's managers (and their
/// JSON bytes) are the same for every subresource and reset set; returns the walk's result.
fn same(new: &Value, s: &StructuralSchema) -> Result<typed::Comparison, ApplyError> {
    let walked = compare_created(new, s.root());
    let expected = general(new, s);
    match (&walked, &expected) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "comparison of {new}"),
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "error of {new}"),
        _ => panic!("{new}: walk {walked:?}, general {expected:?}"),
    }
    for (subresource, status_subresource) in [
        (None, true),
        (None, false),
        (Some("status"), true),
        (Some("scale"), true),
    ] {
        let ctx = Context {
            schema: s,
            manager: "creator",
            api_version: GV,
            subresource,
            reset_fields: reset_fields(subresource, status_subresource),
            now: "2026-07-01T10:00:00Z".parse().unwrap(),
        };
        // Without managers (the walk that leaves fields out as it goes), and with managers
        // the request brought (the walk's comparison, then the general steps).
        // Straight to the typed managedFields, without a set of paths.
        let direct = update_typed(&ctx, None, new, ManagedFields::new());
        let empty = empty_like(new);
        let mut by_compare = ManagedFields::new();
        let general = tracked_update(&ctx, None, "creator", Some(&empty), new, &mut by_compare);
        match (direct, general) {
            (Ok(direct), Ok(())) => assert_eq!(
                serde_json::to_vec(&direct).unwrap(),
                serde_json::to_vec(&by_compare.encode_typed()).unwrap(),
                "typed managedFields of {new} ({subresource:?})"
            ),
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
            (a, b) => panic!("{new}: direct {a:?}, general {b:?}"),
        }
        for before in [ManagedFields::new(), others()] {
            let mut by_walk = before.clone();
            let walk = tracked_update(&ctx, None, "creator", None, new, &mut by_walk);
            let mut by_compare = before;
            let empty = empty_like(new);
            let general = tracked_update(&ctx, None, "creator", Some(&empty), new, &mut by_compare);
            match (walk, general) {
                (Ok(()), Ok(())) => {
                    assert_eq!(by_walk, by_compare, "managers of {new} ({subresource:?})");
                    let bytes = |m: &ManagedFields| serde_json::to_vec(&m.encode()).unwrap();
                    assert_eq!(bytes(&by_walk), bytes(&by_compare));
                    let typed = |m: &ManagedFields| serde_json::to_vec(&m.encode_typed()).unwrap();
                    assert_eq!(typed(&by_walk), typed(&by_compare));
                }
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
                (a, b) => panic!("{new}: walk {a:?}, general {b:?}"),
            }
        }
    }
    walked
}

/// Managers a create's request may bring along: an applier and an updater, one of them on
/// the status subresource.
fn others() -> ManagedFields {
    let entry = |manager: &str, operation, subresource: &str, fields: Value| Entry {
        manager: manager.into(),
        operation,
        api_version: GV.into(),
        time: Some("2026-06-01T10:00:00Z".parse().unwrap()),
        subresource: subresource.into(),
        fields: Set::from_fields_v1(&fields).unwrap(),
    };
    let mut m = ManagedFields::new();
    m.insert(entry(
        "applier",
        ManagedFieldsOperation::Apply,
        "",
        json!({"f:metadata": {"f:labels": {"f:a": {}}}, "f:spec": {"f:size": {}, "f:color": {}}}),
    ));
    m.insert(entry(
        "creator",
        ManagedFieldsOperation::Update,
        "",
        json!({"f:spec": {"f:tags": {}, "f:elsewhere": {}}}),
    ));
    m.insert(entry(
        "controller",
        ManagedFieldsOperation::Update,
        "status",
        json!({"f:status": {"f:phase": {}}}),
    ));
    m
}

fn fields(new: &Value, s: &StructuralSchema) -> Value {
    let ctx = Context {
        schema: s,
        manager: "creator",
        api_version: GV,
        subresource: None,
        reset_fields: reset_fields(None, true),
        now: "2026-07-01T10:00:00Z".parse().unwrap(),
    };
    let managed = update(&ctx, None, new, ManagedFields::new()).unwrap();
    managed
        .map()
        .values()
        .next()
        .map_or(Value::Null, |e| e.fields.to_fields_v1())
}

#[test]
fn nested_maps_and_scalars() {
    let s = schema();
    let new = obj(json!({
        "size": 3, "color": "red", "port": "http",
        "nested": {"deeper": {"leaf": "x", "labels": {"k": "v", "l": "w"}}},
        "params": {"a": "1", "b": "2"},
        "matrix": {"r1": {"c1": 1, "c2": 2}, "r2": {}},
        "granular": {"x": "1"}
    }));
    same(&new, &s).unwrap();
    assert_eq!(
        fields(&new, &s)["f:spec"]["f:nested"],
        json!({".": {}, "f:deeper": {".": {}, "f:labels": {".": {}, "f:k": {}, "f:l": {}}, "f:leaf": {}}})
    );
}

#[test]
fn lists_of_every_type() {
    let s = schema();
    let new = obj(json!({
        "toppings": [
            {"name": "cheese", "amount": 2, "tags": ["a", "b"]},
            {"name": "ham"},
            // A second item with a known key: only the first is walked.
            {"name": "cheese", "amount": 9, "tags": [{"not": "a scalar"}]}
        ],
        "ports": [{"port": 80, "protocol": "TCP", "name": "http"}, {"port": 80, "protocol": "UDP"}],
        "tags": ["x", "y", "x", 1, true, null],
        "args": ["--a", "--b"],
        "atomicList": [{"a": "1"}, {"a": "2"}]
    }));
    same(&new, &s).unwrap();
    let f = fields(&new, &s);
    assert_eq!(f["f:spec"]["f:args"], json!({}));
    assert_eq!(f["f:spec"]["f:atomicList"], json!({}));
    assert_eq!(
        f["f:spec"]["f:tags"],
        json!({".": {}, "v:\"x\"": {}, "v:\"y\"": {}, "v:1": {}, "v:true": {}, "v:null": {}})
    );
    assert_eq!(
        f["f:spec"]["f:ports"]["k:{\"port\":80,\"protocol\":\"TCP\"}"],
        json!({".": {}, "f:name": {}, "f:port": {}, "f:protocol": {}})
    );
}

#[test]
fn kubernetes_extensions() {
    let s = schema();
    let new = obj(json!({
        "selector": {"app": "x", "tier": "y"},
        "free": {"anything": {"goes": [1, 2, {"x": 1}]}, "n": 1},
        "open": {"a": {"b": "c"}, "d": [1]},
        "anything": {"deep": {"list": [1, 2]}, "s": "t"},
        "embedded": {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"a": "b"}, "finalizers": ["f"]},
            "spec": {"image": "i"}},
        "unspecified": {"a": 1, "b": {"c": 2}},
        "unknownField": {"x": 1}
    }));
    same(&new, &s).unwrap();
    let f = fields(&new, &s);
    assert_eq!(
        f["f:spec"]["f:selector"],
        json!({}),
        "an atomic map is a leaf"
    );
}

#[test]
fn status_is_reset_on_the_main_resource_and_spec_on_status() {
    let s = schema();
    let mut new = obj(json!({"size": 1}));
    new["status"] = json!({"phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}]});
    let c = same(&new, &s).unwrap();
    assert!(c.added.has(&Path::fields(&["status", "phase"])));
    let f = fields(&new, &s);
    assert!(f.get("f:status").is_none(), "{f}");
    assert!(f.get("f:spec").is_some(), "{f}");
}

#[test]
fn empty_objects_maps_and_lists() {
    let s = schema();
    for new in [
        json!({}),
        json!({"apiVersion": GV}),
        json!({"apiVersion": GV, "kind": "Flunder"}),
        json!({"kind": "Flunder", "metadata": {}}),
        json!({"apiVersion": GV, "kind": "Flunder", "metadata": {"name": "f"}}),
        obj(json!({})),
        obj(json!(null)),
        obj(
            json!({"params": {}, "toppings": [], "tags": [], "args": [], "selector": {},
            "nested": {"deeper": {}}, "free": {}, "anything": [], "matrix": {"r": {}}}),
        ),
        obj(json!({"params": null, "toppings": null, "nested": null, "size": null})),
    ] {
        same(&new, &s).unwrap();
    }
    assert_eq!(
        compare_created(&json!({}), s.root()).unwrap(),
        Default::default()
    );
}

#[test]
fn values_of_another_type_than_declared_are_leaves() {
    let s = schema();
    let new = obj(json!({
        "toppings": {"name": "x"},
        "params": ["a"],
        "size": {"not": "a number"},
        "nested": "text",
        "tags": 3,
        "anything": 4
    }));
    same(&new, &s).unwrap();
}

#[test]
fn bad_list_items_fail_with_the_same_error() {
    let s = schema();
    for spec in [
        json!({"tags": [{"a": 1}]}),
        json!({"tags": [[1]]}),
        json!({"toppings": [{"amount": 1}]}),
        json!({"toppings": ["x"]}),
        json!({"ports": [{"port": 80}]}),
        json!({"toppings": [{"name": "a", "tags": [{"x": 1}]}]}),
        // The first bad list met fails the write: the comparison's order of keys and items.
        json!({"ports": [{"port": 1}], "tags": [[1]], "toppings": [{"name": "a", "tags": [[2]]}]}),
        json!({"toppings": [{"name": "a", "tags": [[1]]}, {"amount": 2}]}),
        json!({"matrix": {"r": []}, "toppings": [{"name": "a", "tags": [{"x": 1}, [2]]}]}),
    ] {
        let new = obj(spec);
        let err = same(&new, &s).unwrap_err();
        assert!(matches!(err, ApplyError::Invalid(_)), "{err:?}");
    }
    let err = same(
        &obj(json!({"toppings": [{"name": "a", "tags": [[1]]}]})),
        &s,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        general(
            &obj(json!({"toppings": [{"name": "a", "tags": [[1]]}]})),
            &s
        )
        .unwrap_err()
        .to_string()
    );
    assert!(
        err.to_string().contains(".spec.toppings[name=\"a\"].tags"),
        "{err}"
    );
    // A reset field owns nothing, but its lists are checked all the same.
    let mut new = obj(json!({"size": 1}));
    new["status"] = json!({"conditions": [{"status": "True"}]});
    let err = same(&new, &s).unwrap_err();
    assert!(err.to_string().contains(".status.conditions"), "{err}");
    // Metadata's own lists: finalizers are a set.
    let mut new = obj(json!({}));
    new["metadata"]["finalizers"] = json!([{"x": 1}]);
    same(&new, &s).unwrap_err();
}

#[test]
fn roots_the_walk_does_not_take_fall_back_to_the_comparison() {
    let atomic_root = StructuralSchema::from_openapi_value(&json!({
        "type": "object", "x-kubernetes-map-type": "atomic",
        "properties": {"a": {"type": "string"}}
    }));
    let list_root = StructuralSchema::from_openapi_value(&json!({
        "type": "array", "items": {"type": "string"}
    }));
    let no_schema = StructuralSchema::none();
    for s in [&atomic_root, &list_root, &no_schema] {
        for new in [
            json!({"a": "x"}),
            json!({}),
            json!([1]),
            json!("s"),
            obj(json!({"a": 1})),
        ] {
            let _ = same(&new, s);
        }
    }
    // Without the resource's fields at the root, `apiVersion` and `kind` are whatever the
    // schema makes them.
    let odd = StructuralSchema::from_openapi_value(&json!({
        "type": "object", "properties": {
            "apiVersion": {"type": "array", "x-kubernetes-list-type": "set"},
            "kind": {"type": "object"}
        }
    }));
    for new in [
        json!({"apiVersion": ["a", "b"], "kind": {"x": 1}, "spec": 1}),
        json!({"apiVersion": [{"a": 1}], "spec": 1}),
    ] {
        let _ = same(&new, &odd);
    }
}

/// A small deterministic generator of values (xorshift), for objects no one wrote by hand.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn scalar(&mut self) -> Value {
        match self.below(6) {
            0 => Value::Null,
            1 => json!(self.below(2) == 0),
            2 => json!(self.below(3)),
            3 => json!(["a", "b", "c"][self.below(3) as usize]),
            4 => json!(1.5),
            _ => json!(""),
        }
    }

    /// A value shaped by `node`, now and then of another shape or with keys of its own.
    fn value(&mut self, node: crate::schema::SchemaNode<'_>, depth: u32) -> Value {
        use crate::schema::NodeKind;
        if depth > 5 || self.below(12) == 0 {
            return self.any(depth + 1);
        }
        match node.kind() {
            NodeKind::Scalar(_) => self.scalar(),
            NodeKind::Object { .. } => {
                let mut map = serde_json::Map::new();
                for (name, child) in node.fields() {
                    if self.below(3) != 0 {
                        map.insert(name.to_string(), self.value(child, depth + 1));
                    }
                }
                for _ in 0..self.below(3) {
                    let k = ["k1", "k2", "k3"][self.below(3) as usize];
                    let child = node.field_node(k);
                    map.insert(k.to_string(), self.value(child, depth + 1));
                }
                Value::Object(map)
            }
            NodeKind::List { items, .. } => {
                let n = self.below(4);
                Value::Array((0..n).map(|_| self.value(items, depth + 1)).collect())
            }
            NodeKind::Deduced => self.any(depth + 1),
        }
    }

    fn any(&mut self, depth: u32) -> Value {
        match self.below(if depth > 5 { 1 } else { 4 }) {
            0 => self.scalar(),
            1 => Value::Array((0..self.below(3)).map(|_| self.any(depth + 1)).collect()),
            _ => {
                let mut map = serde_json::Map::new();
                for _ in 0..self.below(3) {
                    let k = ["name", "x", "port"][self.below(3) as usize];
                    map.insert(k.to_string(), self.any(depth + 1));
                }
                Value::Object(map)
            }
        }
    }
}

#[test]
fn generated_objects_compare_the_same() {
    let s = schema();
    let mut g = Gen(0x9e37_79b9_7f4a_7c15);
    let (mut ok, mut failed) = (0, 0);
    for _ in 0..3000 {
        let mut new = g.value(s.root(), 0);
        if let Value::Object(map) = &mut new
            && g.below(4) != 0
        {
            map.insert("apiVersion".into(), json!(GV));
            map.insert("kind".into(), json!("Flunder"));
        }
        match same(&new, &s) {
            Ok(_) => ok += 1,
            Err(_) => failed += 1,
        }
    }
    // Both outcomes are exercised.
    assert!(ok > 100 && failed > 100, "ok {ok}, failed {failed}");
}
