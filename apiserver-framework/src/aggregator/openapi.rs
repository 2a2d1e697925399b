//! OpenAPI across backends: the backends' paths and definitions merged into `/openapi/v2`,
//! and their per-group-version OpenAPI v3 documents served under `/openapi/v3`.

use serde_json::Value;

use super::State;
use super::proxy::{self, BackendClient};
use crate::host::resolver::Endpoint;
use crate::user::UserInfo;

/// The user the aggregator downloads OpenAPI documents as (no groups), as upstream.
pub(crate) const OPENAPI_USER: &str = "system:aggregator";

/// Fetches a backend's `/openapi/v2` (JSON); `None` when it has none or the fetch failed.
pub(crate) async fn fetch_v2(client: &BackendClient, endpoint: &Endpoint) -> Option<Value> {
    let user = UserInfo::new(OPENAPI_USER, &[]);
    let res = proxy::get(
        client,
        endpoint,
        "/openapi/v2",
        &user,
        "application/json",
        None,
    )
    .await
    .ok()?;
    if !res.status.is_success() {
        return None;
    }
    serde_json::from_slice(&res.body).ok()
}

/// Fetches a backend's OpenAPI v3 document of `key` (`apis/<g>/<v>`) through its
/// `/openapi/v3` index; `None` when it has none or a fetch failed.
pub(crate) async fn fetch_v3(
    client: &BackendClient,
    endpoint: &Endpoint,
    key: &str,
) -> Option<Vec<u8>> {
    let user = UserInfo::new(OPENAPI_USER, &[]);
    let root = proxy::get(
        client,
        endpoint,
        "/openapi/v3",
        &user,
        "application/json",
        None,
    )
    .await
    .ok()?;
    if !root.status.is_success() {
        return None;
    }
    let index: Value = serde_json::from_slice(&root.body).ok()?;
    let url = index["paths"][key]["serverRelativeURL"].as_str()?;
    if !url.starts_with('/') {
        return None;
    }
    let doc = proxy::get(client, endpoint, url, &user, "application/json", None)
        .await
        .ok()?;
    if !doc.status.is_success() {
        return None;
    }
    serde_json::from_slice::<Value>(&doc.body).ok()?;
    Some(doc.body.to_vec())
}

/// Adds every backend's paths and definitions to a Swagger 2.0 document; what the document
/// already has wins.
pub(crate) fn merge_v2(state: &State, doc: &mut Value) {
    let mut names: Vec<&String> = state.openapi_v2.keys().collect();
    names.sort();
    for name in names {
        let backend = &state.openapi_v2[name];
        for section in ["paths", "definitions"] {
            let Some(from) = backend[section].as_object() else {
                continue;
            };
            if !doc[section].is_object() {
                doc[section] = Value::Object(Default::default());
            }
            if let Some(into) = doc[section].as_object_mut() {
                for (k, v) in from {
                    into.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
        }
    }
}

/// The backends' OpenAPI v3 documents of available group-versions, sorted by key.
pub(crate) fn v3_documents(state: &State) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = state
        .openapi_v3
        .iter()
        .filter(|(key, _)| {
            state.services.iter().any(|s| {
                s.is_remote()
                    && s.is_available()
                    && **key == format!("apis/{}/{}", s.spec.group, s.spec.version)
            })
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}
