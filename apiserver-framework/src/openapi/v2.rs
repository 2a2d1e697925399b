//! The Swagger 2.0 document served at `/openapi/v2`.

use serde_json::{Map, Value, json};

use crate::discovery::ServedGroup;

use super::definitions::definitions;
use super::dialect::Dialect;
use super::routes::{Operation, PathItem, consumes, group_path, group_version_paths, produces};

const DIALECT: Dialect = Dialect::Swagger2;

/// The Swagger 2.0 document of everything `groups` serve.
///
/// `paths` holds, per group, the `/apis/<g>/` `APIGroup` document and, per version, the
/// `/apis/<g>/<v>/` `APIResourceList` document and every resource's paths (collection, item,
/// `status`, all-namespaces list and the deprecated `watch/` paths) with one operation per
/// supported verb. `definitions` holds each kind and its list (named as described in
/// [`names`](super::names)) and the `meta/v1` types they reference.
pub fn v2_document(groups: &[ServedGroup], title: &str, version: &str) -> Value {
    let mut paths = Map::new();
    for group in groups {
        let items = group_path(&group.name).into_iter().chain(
            group
                .versions
                .iter()
                .flat_map(|v| group_version_paths(&group.name, v)),
        );
        for item in items {
            paths.insert(item.path.clone(), path_item(&item));
        }
    }
    let definitions = definitions(groups.iter().flat_map(|g| &g.versions), DIALECT);
    json!({
        "swagger": "2.0",
        "info": {"title": title, "version": version},
        "paths": paths,
        "definitions": definitions,
        "securityDefinitions": {
            "BearerToken": {
                "type": "apiKey",
                "name": "authorization",
                "in": "header",
                "description": "Bearer Token authentication",
            },
        },
        "security": [{"BearerToken": []}],
    })
}

/// A path item: one operation per method.
fn path_item(item: &PathItem) -> Value {
    let mut out = Map::new();
    for op in &item.operations {
        out.insert(op.action.method().into(), operation(op));
    }
    Value::Object(out)
}

/// One Swagger 2.0 operation.
fn operation(op: &Operation) -> Value {
    let mut parameters = Vec::new();
    if let Some(body) = &op.body {
        parameters.push(json!({
            "name": "body",
            "in": "body",
            "required": body.required,
            "schema": DIALECT.reference(&body.schema),
        }));
    }
    for p in &op.query {
        parameters.push(json!({
            "uniqueItems": true,
            "type": p.ty.name(),
            "description": p.description,
            "name": p.name,
            "in": "query",
        }));
    }
    for p in &op.path_params {
        parameters.push(json!({
            "uniqueItems": true,
            "type": "string",
            "description": p.description,
            "name": p.name,
            "in": "path",
            "required": true,
        }));
    }

    let mut responses = Map::new();
    for r in &op.responses {
        let mut response = Map::new();
        response.insert("description".into(), r.description.into());
        if let Some(schema) = &r.schema {
            response.insert("schema".into(), DIALECT.reference(schema));
        }
        responses.insert(r.code.into(), Value::Object(response));
    }

    let mut out = Map::new();
    out.insert("description".into(), op.description.clone().into());
    out.insert("consumes".into(), consumes(op.action).into());
    out.insert("produces".into(), produces(op.action).into());
    out.insert("schemes".into(), json!(["https"]));
    out.insert("tags".into(), json!([op.tag]));
    out.insert("operationId".into(), op.operation_id.clone().into());
    out.insert("parameters".into(), Value::Array(parameters));
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
