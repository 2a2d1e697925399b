//! The discovery and OpenAPI checks: what the server says about a resource matches the
//! resource.

use std::collections::BTreeSet;

use serde_json::Value;

use super::api::{ensure, get, group_version_path};
use super::schema_path;
use crate::resource::ResourceInfo;

fn strings(value: &Value) -> BTreeSet<String> {
    value
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// `/apis` (or `/api`) lists the group-version; `/apis/<group>/<version>` lists the resource
/// as registered: kind, scope, singular name, short names, verbs, and its status subresource.
pub async fn discovery(
    client: &kube::Client,
    info: &ResourceInfo,
    verbs: &[&str],
) -> Result<(), String> {
    if info.group.is_empty() {
        let core = get(client, "/api").await?;
        ensure(strings(&core["versions"]).contains(&info.version), || {
            format!("/api does not list {}: {core}", info.version)
        })?;
    } else {
        let groups = get(client, "/apis").await?;
        let group = groups["groups"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|g| g["name"] == info.group.as_str())
            .ok_or_else(|| format!("/apis does not list the group {}", info.group))?;
        let versions: BTreeSet<String> = group["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v["version"].as_str().map(String::from))
            .collect();
        ensure(versions.contains(&info.version), || {
            format!(
                "/apis lists {} without the version {}",
                info.group, info.version
            )
        })?;
    }
    let path = group_version_path(info);
    let list = get(client, &path).await?;
    let resources = list["resources"].as_array().cloned().unwrap_or_default();
    let entry = resources
        .iter()
        .find(|r| r["name"] == info.plural.as_str())
        .ok_or_else(|| format!("{path} does not list the resource {}", info.plural))?;
    let mismatch = |field: &str, want: &dyn std::fmt::Debug, got: &Value| {
        format!(
            "{path}: {} has {field} {got}, the resource says {want:?}",
            info.plural
        )
    };
    ensure(entry["kind"] == info.kind.as_str(), || {
        mismatch("kind", &info.kind, &entry["kind"])
    })?;
    ensure(entry["namespaced"] == info.namespaced(), || {
        mismatch("namespaced", &info.namespaced(), &entry["namespaced"])
    })?;
    ensure(entry["singularName"] == info.singular.as_str(), || {
        mismatch("singularName", &info.singular, &entry["singularName"])
    })?;
    let short: BTreeSet<String> = info.short_names.iter().cloned().collect();
    ensure(strings(&entry["shortNames"]) == short, || {
        mismatch("shortNames", &short, &entry["shortNames"])
    })?;
    let want_verbs: BTreeSet<String> = verbs.iter().map(|v| v.to_string()).collect();
    ensure(strings(&entry["verbs"]) == want_verbs, || {
        mismatch("verbs", &want_verbs, &entry["verbs"])
    })?;
    let status = format!("{}/status", info.plural);
    let lists_status = resources.iter().any(|r| r["name"] == status.as_str());
    ensure(lists_status == info.status_subresource, || {
        format!(
            "{path}: {status} is {}listed, but the resource has {}a status subresource",
            if lists_status { "" } else { "not " },
            if info.status_subresource { "" } else { "no " },
        )
    })?;
    Ok(())
}

/// Whether `schema` carries `info`'s group, version and kind in
/// `x-kubernetes-group-version-kind`.
fn describes(schema: &Value, info: &ResourceInfo) -> bool {
    schema["x-kubernetes-group-version-kind"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|gvk| {
            gvk["group"] == info.group.as_str()
                && gvk["version"] == info.version.as_str()
                && gvk["kind"] == info.kind.as_str()
        })
}

/// `/openapi/v3` lists the group-version, whose document has the kind's schema and its
/// collection's path; every printer column and selectable field names a field of that schema;
/// `/openapi/v2` has the kind's definition.
pub async fn openapi(client: &kube::Client, info: &ResourceInfo) -> Result<(), String> {
    let gv_path = group_version_path(info);
    let key = gv_path.trim_start_matches('/');
    let root = get(client, "/openapi/v3").await?;
    let listed = root["paths"][key]["serverRelativeURL"]
        .as_str()
        .ok_or_else(|| format!("/openapi/v3 does not list {key}"))?
        .to_string();
    let doc = get(client, &listed).await?;
    let schema = doc["components"]["schemas"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(_, s)| s)
        .find(|s| describes(s, info))
        .ok_or_else(|| {
            format!(
                "{listed}: no schema has x-kubernetes-group-version-kind {}/{} {}",
                info.group, info.version, info.kind
            )
        })?;
    let collection = if info.namespaced() {
        format!("{gv_path}/namespaces/{{namespace}}/{}", info.plural)
    } else {
        format!("{gv_path}/{}", info.plural)
    };
    ensure(doc["paths"].get(&collection).is_some(), || {
        format!("{listed}: no path {collection}")
    })?;
    for column in &info.printer_columns {
        schema_path::check(&doc, schema, &column.json_path).map_err(|why| {
            format!(
                "printer column {:?} reads {}, but the schema of {} has {why}",
                column.name, column.json_path, info.kind
            )
        })?;
    }
    for field in &info.selectable_fields {
        schema_path::check(&doc, schema, field).map_err(|why| {
            format!(
                "selectable field {field}: the schema of {} has {why}",
                info.kind
            )
        })?;
    }
    let v2 = get(client, "/openapi/v2").await?;
    let defined = v2["definitions"]
        .as_object()
        .into_iter()
        .flatten()
        .any(|(_, s)| describes(s, info));
    ensure(defined, || {
        format!(
            "/openapi/v2: no definition has x-kubernetes-group-version-kind {}/{} {}",
            info.group, info.version, info.kind
        )
    })
}
