//! The schema the patch, apply and field-validation targets follow: a Flunder-like object with
//! every list and map semantics the merges know (map lists with one and two keys, sets, atomic
//! lists and maps, patch strategies, preserved unknown fields, int-or-string, an embedded
//! resource).

use apiserver_framework::schema::StructuralSchema;
use std::sync::OnceLock;

use serde_json::{Value, json};

/// The API version of the objects the targets write.
pub const API_VERSION: &str = "wardle.example.com/v1alpha1";

/// The schema, as OpenAPI.
pub fn openapi() -> Value {
    json!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object", "properties": {
                "name": {"type": "string"},
                "namespace": {"type": "string"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
                "finalizers": {"type": "array", "items": {"type": "string"},
                    "x-kubernetes-patch-strategy": "merge"}
            }},
            "spec": {"type": "object", "properties": {
                "size": {"type": "integer"},
                "color": {"type": "string"},
                "port": {"x-kubernetes-int-or-string": true},
                "toppings": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "x-kubernetes-patch-strategy": "merge",
                    "x-kubernetes-patch-merge-key": "name",
                    "items": {"type": "object", "properties": {
                        "name": {"type": "string"}, "amount": {"type": "integer"}}}},
                "ports": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["port", "protocol"],
                    "items": {"type": "object", "properties": {
                        "port": {"type": "integer"}, "protocol": {"type": "string"},
                        "name": {"type": "string"}}}},
                "tags": {"type": "array", "x-kubernetes-list-type": "set",
                    "items": {"type": "string"}},
                "args": {"type": "array", "items": {"type": "string"}},
                "merged": {"type": "array", "items": {"type": "string"},
                    "x-kubernetes-patch-strategy": "merge"},
                "selector": {"type": "object", "x-kubernetes-map-type": "atomic",
                    "additionalProperties": {"type": "string"}},
                "params": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                    "x-kubernetes-preserve-unknown-fields": true},
                "nested": {"type": "object", "properties": {
                    "replicas": {"type": "integer"},
                    "items": {"type": "array", "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["id"],
                        "items": {"type": "object", "properties": {
                            "id": {"type": "string"},
                            "values": {"type": "array", "x-kubernetes-list-type": "set",
                                "items": {"type": "integer"}}}}}}}
            }},
            "status": {"type": "object", "properties": {"phase": {"type": "string"}}}
        }
    })
}

/// The schema's structural model (built once).
pub fn structural() -> StructuralSchema {
    static MODEL: OnceLock<StructuralSchema> = OnceLock::new();
    MODEL
        .get_or_init(|| StructuralSchema::from_openapi(&openapi()))
        .clone()
}

/// A stored object of that schema, which patches and applies change.
pub fn live_object() -> Value {
    json!({
        "apiVersion": API_VERSION,
        "kind": "Flunder",
        "metadata": {"name": "f", "namespace": "default", "labels": {"app": "web"},
            "finalizers": ["a", "b"]},
        "spec": {
            "size": 3, "color": "red", "port": "http",
            "toppings": [{"name": "cheese", "amount": 1}, {"name": "ham", "amount": 2}],
            "ports": [{"port": 80, "protocol": "TCP", "name": "http"},
                      {"port": 80, "protocol": "UDP"}],
            "tags": ["x", "y"], "args": ["--a", "--b"], "merged": ["m"],
            "selector": {"k": "v"}, "params": {"p": "q"},
            "free": {"any": [1, {"deep": true}]},
            "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "t"}},
            "nested": {"replicas": 1, "items": [{"id": "a", "values": [1, 2]}]}
        },
        "status": {"phase": "Ready"}
    })
}
