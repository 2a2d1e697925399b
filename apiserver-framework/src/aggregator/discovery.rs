//! Discovery across backends: the remote group-versions in `/apis` (legacy and aggregated
//! v2) and `/apis/<group>` for groups that APIServices register.

use std::cmp::Reverse;

use axum::body::Body;
use http::{Response, StatusCode};
use serde_json::{Map, Value, json};

use super::State;
use super::apiservice::APIService;
use super::available::{AGGREGATOR_USER, prober};
use super::proxy::{self, BackendClient};
use crate::discovery::aggregated::AGGREGATED_CONTENT_TYPE;
use crate::host_cluster::resolver::Endpoint;
use crate::user::UserInfo;

/// The remote, available APIServices, grouped: groups by `groupPriorityMinimum` (highest
/// first) then name, versions by `versionPriority` (highest first) then Kubernetes' version
/// order (`v1` before `v1beta1` before `v1alpha1`, as upstream's aggregator).
fn remote_groups(services: &[APIService]) -> Vec<(String, Vec<&APIService>)> {
    let mut groups: Vec<(String, Vec<&APIService>)> = Vec::new();
    for s in services
        .iter()
        .filter(|s| s.is_remote() && s.is_available())
    {
        match groups.iter_mut().find(|(g, _)| *g == s.spec.group) {
            Some((_, v)) => v.push(s),
            None => groups.push((s.spec.group.clone(), vec![s])),
        }
    }
    for (_, versions) in &mut groups {
        versions.sort_by(|a, b| {
            b.spec
                .version_priority
                .cmp(&a.spec.version_priority)
                .then_with(|| crate::resource::compare_versions(&a.spec.version, &b.spec.version))
        });
    }
    groups.sort_by_key(|(name, versions)| {
        let priority = versions
            .iter()
            .map(|s| s.spec.group_priority_minimum)
            .max()
            .unwrap_or(0);
        (Reverse(priority), name.clone())
    });
    groups
}

fn group_version(group: &str, version: &str) -> Value {
    let gv = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    json!({"groupVersion": gv, "version": version})
}

fn legacy_group(name: &str, versions: &[&APIService]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|s| group_version(name, &s.spec.version))
        .collect();
    // An entry of `APIGroupList.groups`: no kind or apiVersion (kube-aggregator's apis
    // handler encodes the list for the empty group-version).
    let mut out = Map::new();
    out.insert("name".into(), name.into());
    let preferred = versions.first().cloned();
    out.insert("versions".into(), Value::Array(versions));
    if let Some(p) = preferred {
        out.insert("preferredVersion".into(), p);
    }
    Value::Object(out)
}

/// The `APIGroup` of `group` when remote APIServices register it, built from them. Served on
/// its own it names its kind and apiVersion, as a server's own `/apis/<group>` does.
pub fn api_group(services: &[APIService], group: &str) -> Option<Value> {
    let (name, versions) = remote_groups(services)
        .into_iter()
        .find(|(g, _)| g == group)?;
    let mut out = legacy_group(&name, &versions);
    if let Value::Object(map) = &mut out {
        map.insert("kind".into(), "APIGroup".into());
        map.insert("apiVersion".into(), "v1".into());
    }
    Some(out)
}

/// A JSON 200.
pub(crate) fn json(v: &Value) -> Response<Body> {
    crate::endpoints::response::raw(
        StatusCode::OK,
        "application/json",
        serde_json::to_vec(v).unwrap_or_default(),
    )
}

/// Adds the remote groups (and remote versions of local groups) to an `APIGroupList`.
pub(crate) fn merge_group_list(state: &State, list: &mut Value) {
    let Some(groups) = list.get_mut("groups").and_then(Value::as_array_mut) else {
        return;
    };
    for (name, versions) in remote_groups(&state.services) {
        match groups.iter_mut().find(|g| g["name"] == name.as_str()) {
            Some(existing) => {
                if let Some(list) = existing["versions"].as_array_mut() {
                    for s in versions {
                        let v = group_version(&name, &s.spec.version);
                        if !list.contains(&v) {
                            list.push(v);
                        }
                    }
                }
            }
            None => groups.push(legacy_group(&name, &versions)),
        }
    }
}

/// Adds the remote group-versions to an `APIGroupDiscoveryList`, with the resources last
/// fetched from their backends (`freshness: Stale` when the last fetch failed).
pub(crate) fn merge_aggregated(state: &State, list: &mut Value) {
    let Some(items) = list.get_mut("items").and_then(Value::as_array_mut) else {
        return;
    };
    for (name, versions) in remote_groups(&state.services) {
        let docs: Vec<Value> = versions
            .iter()
            .map(|s| {
                let gv = format!("{}/{}", name, s.spec.version);
                state.discovery.get(&gv).cloned().unwrap_or_else(
                    || json!({"version": s.spec.version, "resources": [], "freshness": "Stale"}),
                )
            })
            .collect();
        match items
            .iter_mut()
            .find(|g| g["metadata"]["name"] == name.as_str())
        {
            Some(existing) => {
                if let Some(list) = existing["versions"].as_array_mut() {
                    for d in docs {
                        if !list.iter().any(|v| v["version"] == d["version"]) {
                            list.push(d);
                        }
                    }
                }
            }
            None => items.push(json!({"metadata": {"name": name}, "versions": docs})),
        }
    }
}

/// Fetches the `APIVersionDiscovery` of `<group>/<version>` from a backend: its aggregated
/// `/apis` document, or else its legacy `/apis/<group>/<version>` list converted. On failure
/// the `cached` document is kept, marked `Stale`.
pub(crate) async fn fetch(
    client: &BackendClient,
    endpoint: &Endpoint,
    group: &str,
    version: &str,
    cached: Option<&Value>,
) -> Value {
    let root = if group.is_empty() { "/api" } else { "/apis" };
    if let Ok(res) = proxy::get(
        client,
        endpoint,
        root,
        &prober(),
        AGGREGATED_CONTENT_TYPE,
        None,
    )
    .await
        && res.status.is_success()
        && is_aggregated(&res.headers)
        && let Ok(doc) = serde_json::from_slice::<Value>(&res.body)
        && let Some(found) = find_version(&doc, group, version)
    {
        return found;
    }
    let path = if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    };
    let legacy_user = UserInfo::new(AGGREGATOR_USER, &[]);
    if let Ok(res) = proxy::get(
        client,
        endpoint,
        &path,
        &legacy_user,
        "application/json",
        None,
    )
    .await
        && res.status.is_success()
        && let Ok(doc) = serde_json::from_slice::<Value>(&res.body)
    {
        return from_resource_list(&doc, version);
    }
    let mut stale = cached
        .cloned()
        .unwrap_or_else(|| json!({"version": version, "resources": []}));
    stale["freshness"] = "Stale".into();
    stale
}

fn is_aggregated(headers: &http::HeaderMap) -> bool {
    let Some(ct) = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let mut params: Vec<&str> = ct.split(';').map(str::trim).collect();
    params.sort_unstable();
    let mut want: Vec<&str> = AGGREGATED_CONTENT_TYPE.split(';').collect();
    want.sort_unstable();
    params == want
}

fn find_version(doc: &Value, group: &str, version: &str) -> Option<Value> {
    let group = doc["items"]
        .as_array()?
        .iter()
        .find(|g| g["metadata"]["name"].as_str().unwrap_or("") == group)?;
    let mut found = group["versions"]
        .as_array()?
        .iter()
        .find(|v| v["version"] == version)?
        .clone();
    found["freshness"] = "Current".into();
    Some(found)
}

/// Converts a legacy `APIResourceList` into an `APIVersionDiscovery`.
fn from_resource_list(doc: &Value, version: &str) -> Value {
    let list = doc["resources"].as_array().cloned().unwrap_or_default();
    let mut resources: Vec<Value> = Vec::new();
    for r in list
        .iter()
        .filter(|r| !r["name"].as_str().unwrap_or("").contains('/'))
    {
        let name = r["name"].as_str().unwrap_or("");
        let kind = r["kind"].clone();
        let mut out = Map::new();
        out.insert("resource".into(), name.into());
        // As upstream converts an `APIResource`: its own group and version, empty when they
        // are the resource's.
        let own = |key: &str| r[key].as_str().unwrap_or("").to_string();
        out.insert(
            "responseKind".into(),
            json!({"group": own("group"), "version": own("version"), "kind": kind}),
        );
        let scope = if r["namespaced"].as_bool().unwrap_or(false) {
            "Namespaced"
        } else {
            "Cluster"
        };
        out.insert("scope".into(), scope.into());
        out.insert("singularResource".into(), r["singularName"].clone());
        out.insert("verbs".into(), r["verbs"].clone());
        for key in ["shortNames", "categories"] {
            if r[key].is_array() {
                out.insert(key.into(), r[key].clone());
            }
        }
        let prefix = format!("{name}/");
        let subresources: Vec<Value> = list
            .iter()
            .filter_map(|s| {
                let sub = s["name"].as_str()?.strip_prefix(&prefix)?;
                let g = s["group"].as_str().unwrap_or("");
                let v = s["version"].as_str().unwrap_or("");
                Some(json!({
                    "subresource": sub,
                    "responseKind": {"group": g, "version": v, "kind": s["kind"]},
                    "verbs": s["verbs"],
                }))
            })
            .collect();
        if !subresources.is_empty() {
            out.insert("subresources".into(), subresources.into());
        }
        resources.push(Value::Object(out));
    }
    json!({"version": version, "resources": resources, "freshness": "Current"})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregator::apiservice::{
        APIServiceCondition, APIServiceSpec, APIServiceStatus, ServiceReference,
    };

    fn service(
        group: &str,
        version: &str,
        group_priority: i32,
        version_priority: i32,
    ) -> APIService {
        let mut s = APIService::new(
            &format!("{version}.{group}"),
            APIServiceSpec {
                service: Some(ServiceReference {
                    namespace: "ns".into(),
                    name: "svc".into(),
                    port: None,
                }),
                group: group.into(),
                version: version.into(),
                group_priority_minimum: group_priority,
                version_priority,
                ..Default::default()
            },
        );
        s.status = Some(APIServiceStatus {
            conditions: vec![APIServiceCondition {
                type_: "Available".into(),
                status: "True".into(),
                reason: "Passed".into(),
                ..Default::default()
            }],
        });
        s
    }

    #[test]
    fn groups_order_by_priority_and_versions_by_version_priority() {
        let mut unavailable = service("c.example.com", "v1", 5000, 10);
        unavailable.status = None;
        let state = State {
            services: vec![
                service("a.example.com", "v1", 100, 10),
                service("b.example.com", "v1beta1", 2000, 5),
                service("b.example.com", "v1", 2000, 20),
                unavailable,
            ],
            ..Default::default()
        };
        let mut list =
            json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [{"name": "local"}]});
        merge_group_list(&state, &mut list);
        let names: Vec<&str> = list["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["local", "b.example.com", "a.example.com"]);
        assert_eq!(
            list["groups"][1]["preferredVersion"],
            json!({"groupVersion": "b.example.com/v1", "version": "v1"})
        );
        assert_eq!(list["groups"][1]["versions"][1]["version"], "v1beta1");
    }

    #[test]
    fn aggregated_marks_never_fetched_versions_stale() {
        let mut state = State {
            services: vec![service("a.example.com", "v1", 100, 10)],
            ..Default::default()
        };
        let mut list = json!({"items": []});
        merge_aggregated(&state, &mut list);
        assert_eq!(list["items"][0]["versions"][0]["freshness"], "Stale");
        state.discovery.insert(
            "a.example.com/v1".into(),
            json!({"version": "v1", "resources": [], "freshness": "Current"}),
        );
        let mut list = json!({"items": []});
        merge_aggregated(&state, &mut list);
        assert_eq!(list["items"][0]["metadata"]["name"], "a.example.com");
        assert_eq!(list["items"][0]["versions"][0]["freshness"], "Current");
    }

    #[test]
    fn legacy_resource_lists_convert_with_subresources() {
        let doc = json!({"resources": [
            {"name": "widgets", "singularName": "widget", "namespaced": true, "kind": "Widget",
             "verbs": ["get", "list"], "shortNames": ["wd"]},
            {"name": "widgets/status", "singularName": "", "namespaced": true, "kind": "Widget",
             "verbs": ["get"]},
        ]});
        let v = from_resource_list(&doc, "v1");
        assert_eq!(v["freshness"], "Current");
        let r = &v["resources"][0];
        assert_eq!(r["resource"], "widgets");
        assert_eq!(r["scope"], "Namespaced");
        assert_eq!(r["shortNames"], json!(["wd"]));
        assert_eq!(r["subresources"][0]["subresource"], "status");
        assert_eq!(r["subresources"][0]["responseKind"]["kind"], "Widget");
    }
}
