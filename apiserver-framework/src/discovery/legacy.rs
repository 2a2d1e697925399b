//! Legacy (unaggregated) discovery: `/apis`, `/apis/<group>` and `/apis/<group>/<version>`,
//! and for the core group `/api` and `/api/<version>`.
//!
//! These are the `meta/v1` `APIGroupList`, `APIGroup`, `APIVersions` and `APIResourceList`
//! documents that every client understands, including clients that predate aggregated
//! discovery.

use base64::Engine as _;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::{ServedGroup, ServedResource, ServedVersion};

/// The `APIGroupList` served at `/apis`: one `APIGroup` per named group that serves at least
/// one version, in the order given (the core group is listed by `api_versions` at `/api`).
///
/// As upstream writes it (`discovery/root.go`, encoded for the empty group-version): the list
/// has a `kind` and no `apiVersion`, its groups neither.
pub fn api_group_list(groups: &[ServedGroup]) -> Value {
    let groups: Vec<Value> = groups
        .iter()
        .filter(|g| !g.name.is_empty() && !g.versions.is_empty())
        .map(|g| {
            let mut group = api_group(g);
            if let Value::Object(map) = &mut group {
                map.remove("kind");
                map.remove("apiVersion");
            }
            group
        })
        .collect();
    json!({"kind": "APIGroupList", "groups": groups})
}

/// Sets every group's `serverAddressByClientCIDRs` in an `APIGroupList` to one entry telling
/// every client (`0.0.0.0/0`) to keep using `server_address`, as upstream's root handler does
/// for the groups a server serves itself.
pub fn with_server_address(list: &mut Value, server_address: &str) {
    if let Some(groups) = list.get_mut("groups").and_then(Value::as_array_mut) {
        for g in groups.iter_mut().filter_map(Value::as_object_mut) {
            g.insert(
                "serverAddressByClientCIDRs".into(),
                json!([{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]),
            );
        }
    }
}

/// The `APIVersions` served at `/api` for the core group: its versions in order of preference,
/// and one `serverAddressByClientCIDRs` entry telling every client (`0.0.0.0/0`) to keep using
/// `server_address` (`host:port`), as upstream answers with its external address.
pub(crate) fn api_versions(core: &ServedGroup, server_address: &str) -> Value {
    let versions: Vec<&str> = core.versions.iter().map(|v| v.version.as_str()).collect();
    json!({
        "kind": "APIVersions",
        "versions": versions,
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address},
        ],
    })
}

/// The `APIGroup` served at `/apis/<group>`: its versions in order of preference and the
/// preferred (first) version.
pub fn api_group(group: &ServedGroup) -> Value {
    let versions: Vec<Value> = group
        .versions
        .iter()
        .map(|v| group_version_for_discovery(&group.name, &v.version))
        .collect();
    let mut out = Map::new();
    out.insert("kind".into(), "APIGroup".into());
    out.insert("apiVersion".into(), "v1".into());
    out.insert("name".into(), group.name.clone().into());
    let preferred = versions.first().cloned();
    out.insert("versions".into(), Value::Array(versions));
    if let Some(preferred) = preferred {
        out.insert("preferredVersion".into(), preferred);
    }
    Value::Object(out)
}

/// The `APIResourceList` served at `/apis/<group>/<version>` (`/api/<version>` for the core
/// group, whose `groupVersion` is the bare version).
///
/// Every resource appears once under its plural, and once more as `<plural>/status` when its
/// status subresource serves any verb. Resources are sorted by name (as upstream registers
/// them) and verbs are sorted and de-duplicated.
pub fn api_resource_list(group: &str, version: &ServedVersion) -> Value {
    let mut resources: Vec<(String, Value)> = Vec::new();
    for served in &version.resources {
        resources.push((served.info.plural.clone(), main_resource(served)));
        if !served.status_verbs.is_empty() {
            let name = format!("{}/status", served.info.plural);
            resources.push((name.clone(), status_resource(&name, served)));
        }
        if !served.scale_verbs.is_empty() {
            let name = format!("{}/scale", served.info.plural);
            resources.push((name.clone(), scale_resource(&name, served)));
        }
        for sub in &served.custom_subresources {
            let name = format!("{}/{}", served.info.plural, sub.name);
            resources.push((name.clone(), custom_resource(&name, served, sub)));
        }
    }
    resources.sort_by(|a, b| a.0.cmp(&b.0));
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version(group, &version.version),
        "resources": resources.into_iter().map(|(_, r)| r).collect::<Vec<_>>(),
    })
}

/// The `storageVersionHash` of a kind: the standard base64 encoding of the first 8 bytes of
/// the SHA-256 of `<group>/<version>/<kind>`.
///
/// Clients (the storage version migrator, garbage collector caches) only compare it for
/// equality, so it must stay stable for a given storage version.
pub fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    let digest = Sha256::digest(format!("{group}/{version}/{kind}").as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

/// `<group>/<version>`, or `<version>` for the core group.
fn group_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    }
}

/// A `GroupVersionForDiscovery`.
fn group_version_for_discovery(group: &str, version: &str) -> Value {
    json!({"groupVersion": group_version(group, version), "version": version})
}

/// Sorted, de-duplicated verbs.
pub(crate) fn sorted_verbs(verbs: &[String]) -> Vec<String> {
    let mut verbs = verbs.to_vec();
    verbs.sort();
    verbs.dedup();
    verbs
}

/// The `APIResource` of the main resource.
fn main_resource(served: &ServedResource) -> Value {
    let info = &served.info;
    let mut out = Map::new();
    out.insert("name".into(), info.plural.clone().into());
    out.insert("singularName".into(), info.singular.clone().into());
    out.insert("namespaced".into(), info.namespaced().into());
    out.insert("kind".into(), info.kind.clone().into());
    out.insert("verbs".into(), sorted_verbs(&served.verbs).into());
    if !info.short_names.is_empty() {
        out.insert("shortNames".into(), info.short_names.clone().into());
    }
    if !info.categories.is_empty() {
        out.insert("categories".into(), info.categories.clone().into());
    }
    out.insert(
        "storageVersionHash".into(),
        storage_version_hash(&info.group, &served.storage_version, &info.kind).into(),
    );
    Value::Object(out)
}

/// The `APIResource` of the scale subresource: its kind is `autoscaling/v1 Scale`, named by
/// `group` and `version` as upstream does for subresources of another group's kind.
fn scale_resource(name: &str, served: &ServedResource) -> Value {
    json!({
        "name": name,
        "singularName": "",
        "namespaced": served.info.namespaced(),
        "group": "autoscaling",
        "version": "v1",
        "kind": "Scale",
        "verbs": sorted_verbs(&served.scale_verbs),
    })
}

/// The `APIResource` of a custom subresource: its answer's kind, named with `group` and
/// `version` only when they differ from the resource's (as upstream lists `pods/eviction`).
fn custom_resource(
    name: &str,
    served: &ServedResource,
    sub: &crate::registry::rest::subresource::SubresourceInfo,
) -> Value {
    let mut out = Map::new();
    out.insert("name".into(), name.into());
    out.insert("singularName".into(), "".into());
    out.insert("namespaced".into(), served.info.namespaced().into());
    let (group, version) = served.response_group_version(sub);
    if group != served.info.group || version != served.info.version {
        out.insert("group".into(), group.into());
        out.insert("version".into(), version.into());
    }
    out.insert("kind".into(), sub.response_kind.clone().into());
    let verbs: Vec<String> = sub.kind.verbs().iter().map(|v| v.to_string()).collect();
    out.insert("verbs".into(), sorted_verbs(&verbs).into());
    Value::Object(out)
}

/// The `APIResource` of the status subresource: no singular name, short names, categories or
/// storage version hash (upstream's status storage provides none of them).
fn status_resource(name: &str, served: &ServedResource) -> Value {
    json!({
        "name": name,
        "singularName": "",
        "namespaced": served.info.namespaced(),
        "kind": served.info.kind,
        "verbs": sorted_verbs(&served.status_verbs),
    })
}
