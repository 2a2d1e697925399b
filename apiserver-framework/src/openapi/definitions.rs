//! The definitions of a group-version's kinds and their lists, and the full set of
//! definitions a document needs.

use serde_json::{Map, Value, json};

use crate::discovery::ServedVersion;
use crate::resource::ResourceInfo;
use crate::schema::{API_VERSION_DOC, KIND_DOC, METADATA_DOC};

use super::dialect::{Dialect, V3_REF_PREFIX};
use super::meta::meta_definitions;
use super::names::{definition_name, list_definition_name, meta, resource_definition_name};

/// Description of a list's `metadata`.
const LIST_METADATA_DOC: &str =
    "Standard list metadata: resourceVersion, continue token and remainingItemCount.";

/// All definitions for the given versions' resources plus the meta family, in `dialect`.
pub(crate) fn definitions<'a>(
    versions: impl IntoIterator<Item = &'a ServedVersion>,
    dialect: Dialect,
) -> Map<String, Value> {
    let versions: Vec<&ServedVersion> = versions.into_iter().collect();
    let mut out = meta_definitions();
    for version in &versions {
        for served in &version.resources {
            let info = &served.info;
            out.insert(resource_definition_name(info), resource_schema(info));
            out.insert(list_definition_name(info), list_schema(info));
        }
    }
    // The bodies and answers of custom subresources, unless they are served kinds (whose
    // definitions above win).
    for version in &versions {
        for served in &version.resources {
            for sub in &served.custom_subresources {
                let (group, version) = served.response_group_version(sub);
                for named in [&sub.body, &sub.response].into_iter().flatten() {
                    let mut schema = named.schema.as_ref().clone();
                    if let Value::Object(map) = &mut schema {
                        map.insert(
                            "x-kubernetes-group-version-kind".into(),
                            json!([{"group": group, "kind": named.name, "version": version}]),
                        );
                    }
                    out.entry(definition_name(group, version, &named.name))
                        .or_insert(schema);
                }
            }
        }
    }
    if dialect == Dialect::OpenApi3 {
        return out;
    }
    out.into_iter()
        .map(|(k, v)| (k, dialect.convert(v)))
        .collect()
}

/// `x-kubernetes-group-version-kind` of a schema: an array with one GVK.
fn gvk_extension(info: &ResourceInfo, kind: &str) -> Value {
    json!([{"group": info.group, "kind": kind, "version": info.version}])
}

/// A reference that carries a description, OpenAPI 3.0 style.
fn described_reference(name: &str, description: &str) -> Value {
    json!({
        "allOf": [{"$ref": format!("{V3_REF_PREFIX}{name}")}],
        "default": {},
        "description": description,
    })
}

/// The schema of a resource's kind: [`ResourceInfo::schema`] with `metadata` pointing at
/// `ObjectMeta` and the GVK extension added.
pub(crate) fn resource_schema(info: &ResourceInfo) -> Value {
    let mut schema = match info.schema.as_ref() {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    schema
        .entry("type")
        .or_insert_with(|| Value::String("object".into()));
    let properties = schema
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(properties) = properties {
        let description = properties
            .get("metadata")
            .and_then(|m| m.get("description"))
            .and_then(Value::as_str)
            .unwrap_or(METADATA_DOC)
            .to_owned();
        properties.insert(
            "metadata".into(),
            described_reference(&meta("ObjectMeta"), &description),
        );
        properties
            .entry("apiVersion")
            .or_insert_with(|| json!({"type": "string", "description": API_VERSION_DOC}));
        properties
            .entry("kind")
            .or_insert_with(|| json!({"type": "string", "description": KIND_DOC}));
    }
    schema.insert(
        "x-kubernetes-group-version-kind".into(),
        gvk_extension(info, &info.kind),
    );
    Value::Object(schema)
}

/// The schema of a resource's list kind.
pub(crate) fn list_schema(info: &ResourceInfo) -> Value {
    let list_kind = info.list_kind();
    json!({
        "description": format!("{list_kind} is a list of {}.", info.kind),
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"type": "string", "description": API_VERSION_DOC},
            "items": {
                "description": format!("List of {}.", info.plural),
                "type": "array",
                "items": {"$ref": format!("{V3_REF_PREFIX}{}", resource_definition_name(info))},
            },
            "kind": {"type": "string", "description": KIND_DOC},
            "metadata": described_reference(&meta("ListMeta"), LIST_METADATA_DOC),
        },
        "x-kubernetes-group-version-kind": gvk_extension(info, &list_kind),
    })
}
