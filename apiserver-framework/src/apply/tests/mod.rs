//! Upstream structured-merge-diff and field manager behaviours, written as facts.

//! The facts are grouped by what they are about: who owns which field (`ownership`), how
//! lists, maps and structs merge (`shapes`), and the `managedFields` entries themselves
//! (`managed_fields`); the schema and helpers they share are here.

mod managed_fields;
mod ownership;
mod shapes;

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
