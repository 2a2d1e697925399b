//! Structural OpenAPI v3 schemas for resources, built with schemars and kube-core's transforms,
//! and the structural schema model ([`StructuralSchema`]) that patches, server-side apply and
//! field validation walk.

mod build;
pub(crate) mod object_meta;
pub(crate) mod structural;
#[cfg(test)]
mod tests;
pub mod validate;

pub use structural::{
    Field, ListType, NodeId, NodeKind, PatchStrategy, Rest, ScalarType, SchemaNode,
    StructuralSchema,
};

pub use kube_core::{Message, Reason, Rule};
pub use validate::{RuleError, SchemaValidator};

use schemars::{JsonSchema, generate::SchemaSettings};
use serde_json::{Map, Value, json};

/// The schema of `T` as Kubernetes wants it: OpenAPI 3 dialect, every subschema inlined,
/// no `$schema`, and kube-core's structural rewrites (enums, untagged enums, int-or-string,
/// nullable options) applied.
pub fn structural_schema_of<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::openapi3()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .with_transform(schemars::transform::AddNullable::default())
        .with_transform(kube_core::schema::StructuralSchemaRewriter)
        .with_transform(KeepFieldDescription)
        .with_transform(kube_core::schema::OptionalEnum)
        .with_transform(kube_core::schema::OptionalIntOrString)
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Value::Object(map) = &mut schema {
        // A root schema carries a title (the Rust type name); nested Kubernetes schemas do not.
        map.remove("title");
        map.remove("$schema");
    }
    schema
}

/// Keeps a field's own description when kube-core's `OptionalEnum` later hoists the enum's
/// schema out of `anyOf`: that hoisting copies the enum type's description over the field's,
/// and `kubectl explain` would then show the type's doc instead of the field's.
#[derive(Clone)]
struct KeepFieldDescription;

impl schemars::transform::Transform for KeepFieldDescription {
    fn transform(&mut self, schema: &mut schemars::Schema) {
        schemars::transform::transform_subschemas(self, schema);
        let Some(obj) = schema.as_object_mut() else {
            return;
        };
        if !obj.contains_key("description") {
            return;
        }
        if let Some(Value::Array(any_of)) = obj.get_mut("anyOf")
            && any_of.len() == 2
            && let Some(Value::Object(first)) = any_of.first_mut()
        {
            first.remove("description");
        }
    }
}

/// Builds the schema of a whole object from the schemas of its spec and status.
///
/// With `flat`, the spec's properties are placed at the top level of the object (as in
/// sample-apiserver's `Fischer`, whose `disallowedFlunders` list is a top-level field);
/// otherwise they live under `spec`.
pub fn object_schema(description: &str, spec: Value, status: Option<Value>, flat: bool) -> Value {
    let mut properties = Map::new();
    properties.insert(
        "apiVersion".into(),
        json!({"type": "string", "description": API_VERSION_DOC}),
    );
    properties.insert(
        "kind".into(),
        json!({"type": "string", "description": KIND_DOC}),
    );
    properties.insert(
        "metadata".into(),
        json!({"type": "object", "description": METADATA_DOC}),
    );
    let mut required: Vec<Value> = Vec::new();
    if flat {
        if let Value::Object(spec) = spec {
            if let Some(Value::Object(props)) = spec.get("properties") {
                for (k, v) in props {
                    properties.insert(k.clone(), v.clone());
                }
            }
            if let Some(Value::Array(req)) = spec.get("required") {
                required.extend(req.iter().cloned());
            }
        }
    } else {
        // `spec` may be left out when none of its fields is required: it decodes as an empty
        // spec then (as Kubernetes decodes a missing struct), so the schema requires it only
        // when it has required fields, as upstream's optional `spec` of sample-apiserver.
        let spec_has_required = spec
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|r| !r.is_empty());
        properties.insert("spec".into(), spec);
        if spec_has_required {
            required.push(Value::String("spec".into()));
        }
    }
    if let Some(status) = status {
        properties.insert("status".into(), status);
    }
    let mut out = Map::new();
    if !description.is_empty() {
        out.insert("description".into(), Value::String(description.into()));
    }
    out.insert("type".into(), Value::String("object".into()));
    out.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        out.insert("required".into(), Value::Array(required));
    }
    Value::Object(out)
}

/// Adds schema extensions (such as `x-kubernetes-list-type`) to the property at `path` (a list
/// of property names from the object's root); a path that does not exist is left alone.
///
/// `#[derive(ApiResource)]` calls it for the spec fields that carry `#[resource(list_type = …)]`
/// and similar attributes. Each extension value is JSON text.
pub fn extend_property(mut schema: Value, path: &[&str], extensions: &[(&str, &str)]) -> Value {
    let mut node = &mut schema;
    for name in path {
        match node.get_mut("properties").and_then(|p| p.get_mut(*name)) {
            Some(next) => node = next,
            None => return schema,
        }
    }
    if let Value::Object(map) = node {
        for (key, value) in extensions {
            let value = serde_json::from_str(value).unwrap_or(Value::String((*value).into()));
            map.insert((*key).to_string(), value);
        }
    }
    schema
}

/// Adds the CEL rule `rule` (a string, or a [`Rule`] with its message, `fieldPath` and reason) to
/// the `x-kubernetes-validations` of the property at `path` (a list of property names from the
/// object's root; empty: the root); a path that does not exist is left alone.
///
/// `#[derive(ApiResource)]` calls it for `#[resource(validation = ...)]` on the spec and on its
/// fields.
pub fn add_rule(mut schema: Value, path: &[&str], rule: impl Into<Rule>) -> Value {
    let mut node = &mut schema;
    for name in path {
        match node.get_mut("properties").and_then(|p| p.get_mut(*name)) {
            Some(next) => node = next,
            None => return schema,
        }
    }
    let rule = serde_json::to_value(rule.into()).unwrap_or_default();
    if let Value::Object(map) = node {
        match map
            .entry("x-kubernetes-validations")
            .or_insert_with(|| Value::Array(Vec::new()))
        {
            Value::Array(rules) => rules.push(rule),
            other => *other = Value::Array(vec![rule]),
        }
    }
    schema
}

/// Description of `apiVersion` in every object schema.
pub(crate) const API_VERSION_DOC: &str = "The versioned schema of this representation of an object, as <group>/<version>. Servers reject versions they do not serve.";
/// Description of `kind` in every object schema.
pub(crate) const KIND_DOC: &str = "The REST resource this object represents, in CamelCase. Servers may infer it from the endpoint the request is sent to. Cannot be updated.";
/// Description of `metadata` in every object schema.
pub(crate) const METADATA_DOC: &str = "Standard object metadata: name, namespace, labels, annotations, resourceVersion and the other fields every Kubernetes object has.";
