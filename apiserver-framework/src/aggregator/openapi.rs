//! OpenAPI across backends: the backends' paths and definitions merged into `/openapi/v2`,
//! and their per-group-version OpenAPI v3 documents served under `/openapi/v3`.

use std::sync::Arc;

use http::{StatusCode, header};
use serde_json::Value;

use super::State;
use super::proxy::{self, BackendClient};
use crate::host_cluster::resolver::Endpoint;
use crate::user::UserInfo;

/// The user the aggregator downloads OpenAPI documents as (no groups), as upstream.
pub(crate) const OPENAPI_USER: &str = "system:aggregator";

/// A backend's OpenAPI document as last downloaded, with what tells whether it changed since:
/// for `/openapi/v2` the `ETag` it came with, for a v3 document the `serverRelativeURL` it
/// was read from (which carries the document's hash).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Downloaded<T> {
    /// The document, shared between passes while it does not change.
    pub(crate) doc: Arc<T>,
    /// Its `ETag` or URL.
    pub(crate) version: Option<String>,
}

/// Downloads a backend's `/openapi/v2` (JSON), sending the `ETag` of `previous` as
/// `If-None-Match` as upstream's downloader does: a backend whose document did not change
/// answers `304` and `previous` is kept, without a transfer or a parse of the document.
/// `None` when it has none or the download failed.
pub(crate) async fn fetch_v2(
    client: &BackendClient,
    endpoint: &Endpoint,
    previous: Option<&Downloaded<Value>>,
) -> Option<Downloaded<Value>> {
    let user = UserInfo::new(OPENAPI_USER, &[]);
    let etag = previous.and_then(|p| p.version.as_deref());
    let res = proxy::get(
        client,
        endpoint,
        "/openapi/v2",
        &user,
        "application/json",
        etag,
    )
    .await
    .ok()?;
    if res.status == StatusCode::NOT_MODIFIED && etag.is_some() {
        return previous.cloned();
    }
    if !res.status.is_success() {
        return None;
    }
    let doc = serde_json::from_slice(&res.body).ok()?;
    let version = res
        .headers
        .get(header::ETAG)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    Some(Downloaded {
        doc: Arc::new(doc),
        version,
    })
}

/// Downloads a backend's OpenAPI v3 document of `key` (`apis/<g>/<v>`) through its
/// `/openapi/v3` index; `previous` is kept when the index still names it by the same URL
/// (the same hash), as upstream's downloader does. `None` when it has none or a download
/// failed.
pub(crate) async fn fetch_v3(
    client: &BackendClient,
    endpoint: &Endpoint,
    key: &str,
    previous: Option<&Downloaded<Vec<u8>>>,
) -> Option<Downloaded<Vec<u8>>> {
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
    if let Some(previous) = previous
        && previous.version.as_deref() == Some(url)
    {
        return Some(previous.clone());
    }
    let doc = proxy::get(client, endpoint, url, &user, "application/json", None)
        .await
        .ok()?;
    if !doc.status.is_success() {
        return None;
    }
    serde_json::from_slice::<Value>(&doc.body).ok()?;
    Some(Downloaded {
        doc: Arc::new(doc.body.to_vec()),
        version: Some(url.to_string()),
    })
}

/// Adds every backend's paths and definitions to a Swagger 2.0 document; what the document
/// already has wins.
pub(crate) fn merge_v2(state: &State, doc: &mut Value) {
    let mut names: Vec<&String> = state.openapi_v2.keys().collect();
    names.sort();
    for name in names {
        let backend = &state.openapi_v2[name].doc;
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
        .map(|(k, v)| (k.clone(), v.doc.to_vec()))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}
