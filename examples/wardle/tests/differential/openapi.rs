//! An OpenAPI document (v2 or v3) read as the structure a client uses, restricted to the wardle
//! group: each path's operations (their kind, action, parameters by name, media types, response
//! codes and schemas) and each wardle schema (its type, required fields, properties and their
//! types, Kubernetes extensions). Definitions are named by their last two components
//! (`v1alpha1.Flunder`), as each server names them after its own packages
//! (`io.k8s.sample-apiserver.pkg.apis.wardle…`, `com.example.wardle…`); descriptions are
//! left out, being each server's own words.

use serde_json::{Map, Value, json};

/// The structure of `doc`'s wardle part.
pub fn structure(doc: &Value) -> Value {
    let mut paths = Map::new();
    if let Some(Value::Object(p)) = doc.get("paths") {
        for (path, item) in p.iter().filter(|(k, _)| k.contains("wardle")) {
            paths.insert(path.clone(), path_item(doc, item));
        }
    }
    let schemas = doc
        .get("definitions")
        .or_else(|| doc.pointer("/components/schemas"));
    let mut definitions = Map::new();
    if let Some(Value::Object(s)) = schemas {
        for (name, schema) in s.iter().filter(|(k, _)| k.contains("wardle")) {
            // The kinds; the types they use are inlined into them.
            if schema.get("x-kubernetes-group-version-kind").is_some() {
                definitions.insert(short(name), schema_structure(doc, schema, 0));
            }
        }
    }
    json!({
        "swagger": doc.get("swagger"),
        "openapi": doc.get("openapi"),
        "paths": paths,
        "definitions": definitions,
    })
}

/// A definition's name without its package: `v1alpha1.Flunder`.
fn short(name: &str) -> String {
    let name = name.rsplit('/').next().unwrap_or(name);
    let parts: Vec<&str> = name.rsplitn(3, '.').collect();
    match parts.as_slice() {
        [kind, version, _] => format!("{version}.{kind}"),
        _ => name.to_string(),
    }
}

/// The parameter `p` (resolving a `$ref` into the document's parameters).
fn parameter<'a>(doc: &'a Value, p: &'a Value) -> &'a Value {
    match p.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let pointer = r.trim_start_matches('#');
            doc.pointer(pointer).unwrap_or(p)
        }
        None => p,
    }
}

/// An operation's parameters (its own and its path's, as a client sees them), each as
/// `<in>:<name>` with whether it is required and its type.
fn parameters(doc: &Value, lists: &[Option<&Value>]) -> Value {
    let mut out = Map::new();
    for p in lists
        .iter()
        .flatten()
        .filter_map(|l| l.as_array())
        .flatten()
    {
        let p = parameter(doc, p);
        let key = format!(
            "{}:{}",
            p.get("in").and_then(Value::as_str).unwrap_or("?"),
            p.get("name").and_then(Value::as_str).unwrap_or("?")
        );
        let ty = p
            .get("type")
            .or_else(|| p.pointer("/schema/type"))
            .cloned()
            .unwrap_or(Value::Null);
        let required = p.get("required").and_then(Value::as_bool).unwrap_or(false);
        out.insert(key, json!({"required": required, "type": ty}));
    }
    Value::Object(out)
}

fn sorted_strings(v: Option<&Value>) -> Value {
    let mut items: Vec<String> = v
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    items.sort();
    json!(items)
}

/// A list of media types as a set (their order means nothing).
fn media_types(v: Option<&Value>) -> Value {
    let mut out = Map::new();
    for t in v.and_then(Value::as_array).into_iter().flatten() {
        if let Some(t) = t.as_str() {
            out.insert(t.to_string(), Value::Bool(true));
        }
    }
    Value::Object(out)
}

/// A schema's reference or type, short.
fn schema_ref(schema: Option<&Value>) -> Value {
    let Some(s) = schema else {
        return Value::Null;
    };
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        return json!(short(r));
    }
    if let Some(all) = s.get("allOf").and_then(Value::as_array)
        && let [one] = all.as_slice()
    {
        return schema_ref(Some(one));
    }
    match s.get("type").and_then(Value::as_str) {
        Some("array") => json!(format!(
            "[]{}",
            schema_ref(s.get("items")).as_str().unwrap_or("?")
        )),
        Some(t) => json!(t),
        None => json!("?"),
    }
}

/// The media types of a v3 `content` and their schemas.
fn content(c: Option<&Value>) -> Value {
    let mut out = Map::new();
    if let Some(Value::Object(types)) = c {
        for (media, v) in types {
            out.insert(media.clone(), schema_ref(v.get("schema")));
        }
    }
    Value::Object(out)
}

fn path_item(doc: &Value, item: &Value) -> Value {
    let mut out = Map::new();
    let Some(ops) = item.as_object() else {
        return Value::Null;
    };
    for (method, op) in ops {
        if method == "parameters" {
            continue;
        }
        let mut responses = Map::new();
        if let Some(Value::Object(rs)) = op.get("responses") {
            for (code, r) in rs {
                let r = parameter(doc, r);
                let shape = match r.get("content") {
                    Some(c) => content(Some(c)),
                    None => schema_ref(r.get("schema")),
                };
                responses.insert(code.clone(), shape);
            }
        }
        out.insert(
            method.clone(),
            json!({
                "gvk": op.get("x-kubernetes-group-version-kind"),
                "action": op.get("x-kubernetes-action"),
                "operationId": op.get("operationId"),
                "tags": op.get("tags"),
                "consumes": media_types(op.get("consumes")),
                "produces": media_types(op.get("produces")),
                "schemes": op.get("schemes"),
                "parameters": parameters(doc, &[item.get("parameters"), op.get("parameters")]),
                "requestBody": op.pointer("/requestBody/content").map(|c| content(Some(c))),
                "responses": responses,
            }),
        );
    }
    Value::Object(out)
}

/// How deep nested schemas are inlined (wardle's kinds nest three levels).
const MAX_DEPTH: usize = 6;

/// The schema `r` refers to, when it is one of the document's wardle schemas.
fn wardle_schema<'a>(doc: &'a Value, r: &str) -> Option<&'a Value> {
    if !r.contains("wardle") {
        return None;
    }
    doc.pointer(r.trim_start_matches('#'))
}

/// A property's schema with one `allOf` wrapper (v3's way to describe a `$ref`) removed.
fn unwrapped(p: &Value) -> &Value {
    match p.get("allOf").and_then(Value::as_array).map(Vec::as_slice) {
        Some([one]) => one,
        _ => p,
    }
}

/// A schema's structure: its type, required fields and properties, each property's type with
/// the wardle schemas it refers to inlined, and the Kubernetes extensions.
fn schema_structure(doc: &Value, schema: &Value, depth: usize) -> Value {
    let mut properties = Map::new();
    if let Some(Value::Object(ps)) = schema.get("properties") {
        for (name, p) in ps {
            properties.insert(name.clone(), property(doc, p, depth + 1));
        }
    }
    let mut out = Map::new();
    out.insert("type".to_string(), json!(schema.get("type")));
    out.insert(
        "required".to_string(),
        sorted_strings(schema.get("required")),
    );
    out.insert("properties".to_string(), Value::Object(properties));
    if let Some(Value::Object(s)) = Some(schema) {
        for (k, v) in s.iter().filter(|(k, _)| k.starts_with("x-kubernetes")) {
            out.insert(k.clone(), v.clone());
        }
    }
    Value::Object(out)
}

/// One property: a nested wardle schema or object inlined, anything else by its type.
fn property(doc: &Value, p: &Value, depth: usize) -> Value {
    let inner = unwrapped(p);
    let mut shape = Map::new();
    let nested = inner
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| wardle_schema(doc, r));
    if let Some(target) = nested.filter(|_| depth < MAX_DEPTH) {
        shape.insert("type".to_string(), schema_structure(doc, target, depth));
    } else if inner.get("properties").is_some() && depth < MAX_DEPTH {
        shape.insert("type".to_string(), schema_structure(doc, inner, depth));
    } else if inner.get("type").and_then(Value::as_str) == Some("array") {
        let items = inner.get("items").unwrap_or(&Value::Null);
        shape.insert("type".to_string(), json!("array"));
        shape.insert("items".to_string(), property(doc, items, depth + 1));
    } else {
        shape.insert("type".to_string(), schema_ref(Some(inner)));
    }
    for source in [p, inner] {
        if let Value::Object(extra) = source {
            for (k, v) in extra.iter().filter(|(k, _)| {
                k.starts_with("x-kubernetes") || *k == "default" || *k == "enum" || *k == "format"
            }) {
                shape.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(shape)
}
