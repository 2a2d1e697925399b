//! The OpenAPI 3.0 documents served under `/openapi/v3`: the root index and one document per
//! group-version.

use serde_json::{Map, Value, json};

use crate::discovery::{ServedGroup, ServedVersion};

use super::definitions::definitions;
use super::dialect::Dialect;
use super::routes::{Operation, PathItem, consumes, group_version_paths, produces};

const DIALECT: Dialect = Dialect::OpenApi3;

/// The OpenAPI 3.0 document of one group-version, served at `/openapi/v3/apis/<g>/<v>` (or
/// `/openapi/v3/api/<v>` for the core group, as `v3_key` names it).
///
/// `paths` holds the `/apis/<g>/<v>/` `APIResourceList` document and every resource's paths,
/// exactly as in [`v2_document`](super::v2_document); parameters are inline with `schema`
/// objects, bodies are `requestBody` objects (patch: one entry per patch media type) and
/// responses carry `content` per produced media type. `components.schemas` holds each kind
/// and its list with their `x-kubernetes-group-version-kind` arrays, and the `meta/v1` types.
pub fn v3_group_version(group: &ServedGroup, version: &ServedVersion) -> Value {
    let mut paths = Map::new();
    for item in group_version_paths(&group.name, version) {
        paths.insert(item.path.clone(), path_item(&item));
    }
    let schemas = definitions(std::iter::once(version), DIALECT);
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "unversioned"},
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "BearerToken": {
                    "type": "apiKey",
                    "description": "Bearer Token authentication",
                    "name": "authorization",
                    "in": "header",
                },
            },
        },
        "security": [{"BearerToken": []}],
    })
}

/// The key of a group-version in the `/openapi/v3` index (and its document's path under
/// `/openapi/v3/`): `apis/<g>/<v>`, or `api/<v>` for the core group.
pub fn v3_key(group: &str, version: &str) -> String {
    super::routes::group_version_prefix(group, version)
        .trim_start_matches('/')
        .to_owned()
}

/// The `/openapi/v3` index: for each `("apis/<g>/<v>", hash)` entry, the server-relative URL
/// of that group-version's document, pinned to its hash (see [`spec_hash`](super::spec_hash)).
pub fn v3_root(entries: &[(String, String)]) -> Value {
    let mut paths = Map::new();
    for (key, hash) in entries {
        let key = key.trim_start_matches('/');
        paths.insert(
            key.to_owned(),
            json!({"serverRelativeURL": format!("/openapi/v3/{key}?hash={hash}")}),
        );
    }
    json!({"paths": paths})
}

/// A path item: one operation per method.
fn path_item(item: &PathItem) -> Value {
    let mut out = Map::new();
    for op in &item.operations {
        out.insert(op.action.method().into(), operation(op));
    }
    Value::Object(out)
}

/// `{"<media type>": {"schema": {"$ref": ...}}, ...}`.
fn content(media_types: &[&str], schema: &str) -> Value {
    let mut out = Map::new();
    for media_type in media_types {
        out.insert(
            (*media_type).into(),
            json!({"schema": DIALECT.reference(schema)}),
        );
    }
    Value::Object(out)
}

/// One OpenAPI 3.0 operation.
fn operation(op: &Operation) -> Value {
    let mut parameters = Vec::new();
    for p in &op.path_params {
        parameters.push(json!({
            "name": p.name,
            "in": "path",
            "description": p.description,
            "required": true,
            "schema": {"type": "string", "uniqueItems": true},
        }));
    }
    for p in &op.query {
        parameters.push(json!({
            "name": p.name,
            "in": "query",
            "description": p.description,
            "schema": {"type": p.ty.name(), "uniqueItems": true},
        }));
    }

    let mut responses = Map::new();
    // Only the answers with a body: upstream's v3 documents leave out `401 Unauthorized`.
    for r in op.responses.iter().filter(|r| r.schema.is_some()) {
        let mut response = Map::new();
        response.insert("description".into(), r.description.into());
        if let Some(schema) = &r.schema {
            response.insert("content".into(), content(&produces(op.action), schema));
        }
        responses.insert(r.code.into(), Value::Object(response));
    }

    let mut out = Map::new();
    out.insert("tags".into(), json!([op.tag]));
    out.insert("description".into(), op.description.clone().into());
    out.insert("operationId".into(), op.operation_id.clone().into());
    out.insert("parameters".into(), Value::Array(parameters));
    if let Some(body) = &op.body {
        out.insert(
            "requestBody".into(),
            json!({
                "content": content(&consumes(op.action), &body.schema),
                "required": body.required,
            }),
        );
    }
    out.insert("responses".into(), Value::Object(responses));
    if let Some(action) = op.action.x_action() {
        out.insert("x-kubernetes-action".into(), action.into());
    }
    if let Some(gvk) = &op.gvk {
        out.insert(
            "x-kubernetes-group-version-kind".into(),
            json!({"group": gvk.group, "kind": gvk.kind, "version": gvk.version}),
        );
    }
    Value::Object(out)
}
