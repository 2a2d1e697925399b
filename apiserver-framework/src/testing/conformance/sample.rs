//! A sample object of a resource, generated from its schema.

use serde_json::{Map, Value, json};

use crate::resource::ResourceInfo;

/// An object of `info` with every required field of its schema filled in (see [`value`]);
/// `spec` is always present when the schema has one.
pub fn generate(info: &ResourceInfo) -> Value {
    let schema = info.schema.as_ref();
    let mut object = Map::new();
    object.insert("apiVersion".into(), json!(info.api_version()));
    object.insert("kind".into(), json!(info.kind));
    object.insert("metadata".into(), json!({}));
    let properties = schema["properties"].as_object();
    let required = required(schema);
    for (name, property) in properties.into_iter().flatten() {
        let skip = ["apiVersion", "kind", "metadata", "status"].contains(&name.as_str());
        if !skip && (name == "spec" || required.contains(&name.as_str())) {
            object.insert(name.clone(), value(property));
        }
    }
    Value::Object(object)
}

fn required(schema: &Value) -> Vec<&str> {
    schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The simplest valid-looking value of `schema`: its default, else the first value of its
/// enum, else by type — an object of its required properties, an empty array, a number at
/// least 1 (and at least its minimum), `true`, or a string (`conformance`, or a timestamp for
/// `date-time`).
pub fn value(schema: &Value) -> Value {
    if let Some(default) = schema.get("default") {
        return default.clone();
    }
    if let Some(first) = schema["enum"].as_array().and_then(|e| e.first()) {
        return first.clone();
    }
    if let Some(first) = schema["anyOf"]
        .as_array()
        .or(schema["oneOf"].as_array())
        .and_then(|e| e.first())
    {
        return value(first);
    }
    let number = |integer: bool| {
        let minimum = schema["minimum"].as_f64().unwrap_or(1.0).max(1.0);
        if integer {
            json!(minimum.ceil() as i64)
        } else {
            json!(minimum)
        }
    };
    match schema["type"].as_str() {
        Some("object") | None if schema.get("properties").is_some() => {
            let mut object = Map::new();
            for name in required(schema) {
                object.insert(name.to_string(), value(&schema["properties"][name]));
            }
            Value::Object(object)
        }
        Some("object") => json!({}),
        Some("array") => json!([]),
        Some("integer") => number(true),
        Some("number") => number(false),
        Some("boolean") => json!(true),
        Some("string") if schema["format"] == "date-time" => json!("2025-01-01T00:00:00Z"),
        Some("string") => json!("conformance"),
        _ => json!({}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn required_fields_get_plausible_values() {
        let schema = json!({
            "type": "object",
            "required": ["size", "mode", "nested", "when"],
            "properties": {
                "size": {"type": "integer", "minimum": 0},
                "ratio": {"type": "number"},
                "mode": {"type": "string", "enum": ["Fast", "Slow"]},
                "nested": {"type": "object", "required": ["n"],
                           "properties": {"n": {"type": "integer", "minimum": 3}}},
                "when": {"type": "string", "format": "date-time"},
                "named": {"type": "string", "default": "x"}
            }
        });
        assert_eq!(
            value(&schema),
            json!({"size": 1, "mode": "Fast", "nested": {"n": 3},
                   "when": "2025-01-01T00:00:00Z"})
        );
    }
}
