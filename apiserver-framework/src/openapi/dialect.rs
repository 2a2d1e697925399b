//! The two OpenAPI dialects and the conversion of schemas from OpenAPI 3.0 to Swagger 2.0.
//!
//! Every schema is first built in the OpenAPI 3.0 dialect (refs under `#/components/schemas/`,
//! `{"allOf":[{"$ref"}]}` for a reference that carries a description). [`to_swagger2`] turns
//! such a schema into Swagger 2.0.

use serde_json::{Map, Value};

/// Where definitions live in an OpenAPI 3.0 document.
pub(crate) const V3_REF_PREFIX: &str = "#/components/schemas/";
/// Where definitions live in a Swagger 2.0 document.
pub(crate) const V2_REF_PREFIX: &str = "#/definitions/";

/// An OpenAPI dialect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// Swagger 2.0 (`/openapi/v2`).
    Swagger2,
    /// OpenAPI 3.0 (`/openapi/v3`).
    OpenApi3,
}

impl Dialect {
    /// A `$ref` object pointing at a definition.
    pub(crate) fn reference(self, name: &str) -> Value {
        if name == super::routes::STRING_SCHEMA {
            return serde_json::json!({"type": "string"});
        }
        let prefix = match self {
            Dialect::Swagger2 => V2_REF_PREFIX,
            Dialect::OpenApi3 => V3_REF_PREFIX,
        };
        let mut out = Map::new();
        out.insert("$ref".into(), Value::String(format!("{prefix}{name}")));
        Value::Object(out)
    }

    /// Converts a schema written in the OpenAPI 3.0 dialect into this dialect.
    pub(crate) fn convert(self, mut schema: Value) -> Value {
        if self == Dialect::Swagger2 {
            to_swagger2(&mut schema);
        }
        schema
    }
}

/// Converts a schema from the OpenAPI 3.0 dialect to Swagger 2.0, recursively:
///
/// * refs move from `#/components/schemas/` to `#/definitions/`;
/// * `{"allOf":[{"$ref": X}], ...}` becomes `{"$ref": X, "description": ...}` (Swagger 2
///   readers take the reference and ignore its siblings; `default` is dropped);
/// * `nullable` and `not` are removed;
/// * `anyOf`/`oneOf` are replaced by their first alternative that is not `{"type":"null"}`,
///   merged into the schema; for `x-kubernetes-int-or-string` schemas they are only removed,
///   leaving the value untyped as upstream does.
pub(crate) fn to_swagger2(schema: &mut Value) {
    let Value::Object(map) = schema else {
        return;
    };
    let int_or_string = map.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true));
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(alternatives)) = map.remove(key) else {
            continue;
        };
        if int_or_string {
            continue;
        }
        let chosen = alternatives.into_iter().find(|alt| !is_null_schema(alt));
        if let Some(Value::Object(alt)) = chosen {
            for (k, v) in alt {
                map.entry(k).or_insert(v);
            }
        }
    }

    map.remove("nullable");
    map.remove("not");

    if let Some(Value::Array(all_of)) = map.get("allOf")
        && let [Value::Object(only)] = all_of.as_slice()
        && only.len() == 1
        && !map.contains_key("$ref")
        && let Some(reference) = only.get("$ref").cloned()
    {
        map.remove("allOf");
        map.remove("default");
        map.insert("$ref".into(), reference);
    }

    if let Some(Value::String(reference)) = map.get_mut("$ref")
        && let Some(name) = reference.strip_prefix(V3_REF_PREFIX)
    {
        *reference = format!("{V2_REF_PREFIX}{name}");
    }

    for (key, value) in map.iter_mut() {
        match key.as_str() {
            "properties" | "patternProperties" | "definitions" => {
                if let Value::Object(children) = value {
                    children.values_mut().for_each(to_swagger2);
                }
            }
            "items" | "allOf" => match value {
                Value::Array(children) => children.iter_mut().for_each(to_swagger2),
                other => to_swagger2(other),
            },
            "additionalProperties" => to_swagger2(value),
            _ => {}
        }
    }
}

/// Whether a schema only admits `null`.
fn is_null_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
        || schema
            .as_object()
            .is_some_and(|m| m.len() == 1 && m.get("nullable") == Some(&Value::Bool(true)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::to_swagger2;

    #[test]
    fn optional_reference_becomes_plain_reference() {
        let mut schema = json!({
            "description": "An optional owner.",
            "anyOf": [{"type": "null"}, {"$ref": "#/components/schemas/Owner"}],
        });
        to_swagger2(&mut schema);
        assert_eq!(
            schema,
            json!({"description": "An optional owner.", "$ref": "#/definitions/Owner"})
        );
    }

    #[test]
    fn described_reference_loses_all_of_and_default() {
        let mut schema = json!({
            "type": "object",
            "properties": {
                "nullable": {"type": "string", "nullable": true},
                "meta": {
                    "allOf": [{"$ref": "#/components/schemas/Meta"}],
                    "default": {},
                    "description": "Metadata.",
                },
            },
            "additionalProperties": {"type": "integer", "nullable": true},
        });
        to_swagger2(&mut schema);
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "nullable": {"type": "string"},
                    "meta": {"$ref": "#/definitions/Meta", "description": "Metadata."},
                },
                "additionalProperties": {"type": "integer"},
            })
        );
    }
}
