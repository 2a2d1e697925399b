//! ObjectMeta's shape, defined once: the structural schema of `metadata` in every resource (the
//! root of an object and every `x-kubernetes-embedded-resource`), which strategic merge patch,
//! server-side apply and field validation all follow through the model.
//!
//! The fields and types are k8s-openapi's `ObjectMeta` schema; the list and map semantics are
//! upstream's markers on `ObjectMeta` (k8s.io/apimachinery `pkg/apis/meta/v1/types.go`), which
//! that schema does not carry:
//!
//! - `finalizers`: `+patchStrategy=merge`, `+listType=set`;
//! - `ownerReferences`: `+patchMergeKey=uid`, `+patchStrategy=merge`, `+listType=map`,
//!   `+listMapKey=uid`, and each `OwnerReference` is `+structType=atomic`;
//! - `managedFields`: `+listType=atomic`;
//! - `labels` and `annotations`: maps of strings (granular, the default).

use std::sync::LazyLock;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};

/// ObjectMeta's structural OpenAPI v3 schema, with upstream's list and map markers.
pub static OBJECT_META: LazyLock<Value> = LazyLock::new(object_meta_schema);

fn object_meta_schema() -> Value {
    let mut schema = super::structural_schema_of::<ObjectMeta>();
    let markers = [
        (
            "/properties/finalizers",
            json!({"x-kubernetes-patch-strategy": "merge", "x-kubernetes-list-type": "set"}),
        ),
        (
            "/properties/ownerReferences",
            json!({
                "x-kubernetes-patch-strategy": "merge",
                "x-kubernetes-patch-merge-key": "uid",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["uid"]
            }),
        ),
        (
            "/properties/ownerReferences/items",
            json!({"x-kubernetes-map-type": "atomic"}),
        ),
        (
            "/properties/managedFields",
            json!({"x-kubernetes-list-type": "atomic"}),
        ),
    ];
    for (pointer, extensions) in markers {
        if let (Some(Value::Object(target)), Value::Object(extensions)) =
            (schema.pointer_mut(pointer), extensions)
        {
            target.extend(extensions);
        }
    }
    schema
}
