//! The `scale` subresource: an object seen and written as an `autoscaling/v1 Scale`, through the
//! replicas and selector paths the resource declares (as a CustomResourceDefinition's
//! `subresources.scale`).

use serde_json::{Map, Value, json};

use crate::error::{ApiError, FieldError};
use crate::resource::{ResourceInfo, ScaleSubresource, Scope};

/// The `ResourceInfo` of `autoscaling/v1 Scale`, for Table output of the subresource.
pub fn scale_info(parent: &ResourceInfo) -> ResourceInfo {
    ResourceInfo {
        group: "autoscaling".into(),
        version: "v1".into(),
        kind: "Scale".into(),
        plural: "scales".into(),
        singular: "scale".into(),
        scope: if parent.namespaced() {
            Scope::Namespaced
        } else {
            Scope::Cluster
        },
        short_names: Vec::new(),
        categories: Vec::new(),
        status_subresource: false,
        printer_columns: Vec::new(),
        selectable_fields: Vec::new(),
        scale: None,
        schema: std::sync::Arc::new(json!({"type": "object"})),
    }
}

/// A JSON pointer for a simple JSONPath such as `.spec.replicas`.
fn pointer(path: &str) -> String {
    path.replace('.', "/")
}

/// The integer at `path`, 0 when absent (as upstream reads a custom resource's scale).
fn replicas_at(object: &Value, path: &str) -> Result<i64, ApiError> {
    match object.pointer(&pointer(path)) {
        None | Some(Value::Null) => Ok(0),
        Some(v) => v.as_i64().ok_or_else(|| {
            ApiError::internal(format!(
                "{path} accessor error: {v} is of the type {}, expected int64",
                json_type(v)
            ))
        }),
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// The `Scale` of an object.
pub fn from_object(scale: &ScaleSubresource, object: &Value) -> Result<Value, ApiError> {
    let spec = replicas_at(object, &scale.spec_replicas_path)?;
    let status = replicas_at(object, &scale.status_replicas_path)?;
    let mut metadata = Map::new();
    for key in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = object.get("metadata").and_then(|m| m.get(key)) {
            metadata.insert(key.into(), v.clone());
        }
    }
    let mut scale_spec = Map::new();
    if spec != 0 {
        scale_spec.insert("replicas".into(), spec.into());
    }
    let mut scale_status = Map::new();
    scale_status.insert("replicas".into(), status.into());
    if let Some(path) = &scale.label_selector_path
        && let Some(Value::String(selector)) = object.pointer(&pointer(path))
        && !selector.is_empty()
    {
        scale_status.insert("selector".into(), selector.clone().into());
    }
    Ok(json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": scale_spec,
        "status": scale_status,
    }))
}

/// Writes a `Scale`'s desired replicas into `object` (and its resourceVersion, if any, as a
/// precondition); a Scale of another kind answers 400, negative replicas 422.
pub fn apply_to_object(
    scale: &ScaleSubresource,
    name: &str,
    desired: &Value,
    mut object: Value,
) -> Result<Value, ApiError> {
    let kind = desired.get("kind").and_then(Value::as_str).unwrap_or("");
    let api_version = desired
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !(kind.is_empty() || kind == "Scale") || !matches!(api_version, "" | "autoscaling/v1") {
        return Err(ApiError::bad_request(format!(
            "the body of the request is {api_version}, Kind={kind}, not autoscaling/v1, Kind=Scale"
        )));
    }
    let replicas = match desired.pointer("/spec/replicas") {
        None | Some(Value::Null) => 0,
        Some(v) => v.as_i64().filter(|r| i32::try_from(*r).is_ok()).ok_or_else(|| {
            ApiError::bad_request(format!(
                "Scale in version \"v1\" cannot be handled as a Scale: spec.replicas: {v} is not an int32"
            ))
        })?,
    };
    if replicas < 0 {
        return Err(ApiError::invalid_with(
            "Scale.autoscaling",
            "autoscaling",
            "Scale",
            name,
            &[FieldError::invalid(
                "spec.replicas",
                replicas,
                "must be greater than or equal to 0",
            )],
        ));
    }
    set(&mut object, &scale.spec_replicas_path, replicas.into());
    if let Some(rv) = desired
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|rv| !rv.is_empty())
        && let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut)
    {
        meta.insert("resourceVersion".into(), rv.into());
    }
    Ok(object)
}

/// Sets the value at a simple JSONPath, creating objects on the way.
fn set(object: &mut Value, path: &str, value: Value) {
    let mut node = object;
    let parts: Vec<&str> = path.trim_start_matches('.').split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        if !node.is_object() {
            *node = Value::Object(Map::new());
        }
        let map = node.as_object_mut().expect("made an object above");
        if i + 1 == parts.len() {
            map.insert((*part).to_string(), value);
            return;
        }
        node = map
            .entry((*part).to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths() -> ScaleSubresource {
        ScaleSubresource {
            spec_replicas_path: ".spec.replicas".into(),
            status_replicas_path: ".status.replicas".into(),
            label_selector_path: Some(".status.selector".into()),
        }
    }

    #[test]
    fn reads_and_writes_replicas() {
        let obj = json!({
            "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "7", "labels": {"x": "y"}},
            "spec": {"replicas": 3},
            "status": {"replicas": 2, "selector": "app=a"}
        });
        let s = from_object(&paths(), &obj).unwrap();
        assert_eq!(s["spec"]["replicas"], 3);
        assert_eq!(s["status"], json!({"replicas": 2, "selector": "app=a"}));
        assert_eq!(s["metadata"]["resourceVersion"], "7");
        assert!(s["metadata"].get("labels").is_none());

        let out = apply_to_object(
            &paths(),
            "a",
            &json!({"spec": {"replicas": 5}}),
            json!({"metadata": {"name": "a"}}),
        )
        .unwrap();
        assert_eq!(out["spec"]["replicas"], 5);
        let err =
            apply_to_object(&paths(), "a", &json!({"spec": {"replicas": -1}}), obj).unwrap_err();
        assert_eq!(err.code, 422);
        assert_eq!(
            err.message,
            "Scale.autoscaling \"a\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"
        );
    }

    #[test]
    fn missing_replicas_read_as_zero() {
        let s = from_object(&paths(), &json!({"metadata": {"name": "a"}})).unwrap();
        assert_eq!(s["spec"], json!({}));
        assert_eq!(s["status"], json!({"replicas": 0}));
    }
}
