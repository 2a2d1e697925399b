//! Requests of the conformance check: paths of a resource, and JSON over kube-rs' client with
//! failures turned into messages.

use serde_json::Value;

use crate::resource::ResourceInfo;

/// `/apis/<group>/<version>`, or `/api/<version>` for the core group.
pub fn group_version_path(info: &ResourceInfo) -> String {
    if info.group.is_empty() {
        format!("/api/{}", info.version)
    } else {
        format!("/apis/{}/{}", info.group, info.version)
    }
}

/// The collection of `info` (in [`super::NAMESPACE`] when namespaced).
pub fn collection_path(info: &ResourceInfo) -> String {
    let base = group_version_path(info);
    if info.namespaced() {
        format!("{base}/namespaces/{}/{}", super::NAMESPACE, info.plural)
    } else {
        format!("{base}/{}", info.plural)
    }
}

/// A request's failure, as the check reports it: `<METHOD> <path>: <code> <reason>: <message>`.
pub fn describe(method: &str, path: &str, error: &kube::Error) -> String {
    match error {
        kube::Error::Api(s) => format!("{method} {path}: {} {}: {}", s.code, s.reason, s.message),
        other => format!("{method} {path}: {other}"),
    }
}

/// Sends `method path` with `body` (of `content_type`) accepting `accept`, and parses the
/// answer as JSON.
pub async fn request(
    client: &kube::Client,
    method: http::Method,
    path: &str,
    accept: &str,
    body: Option<(&str, Vec<u8>)>,
) -> Result<Value, kube::Error> {
    let mut builder = http::Request::builder()
        .method(method)
        .uri(path)
        .header(http::header::ACCEPT, accept);
    let bytes = match body {
        Some((content_type, bytes)) => {
            builder = builder.header(http::header::CONTENT_TYPE, content_type);
            bytes
        }
        None => Vec::new(),
    };
    let request = builder.body(bytes).map_err(kube::Error::HttpError)?;
    let text = client.request_text(request).await?;
    serde_json::from_str(&text).map_err(kube::Error::SerdeError)
}

/// GETs `path` as JSON; a failure is a message.
pub async fn get(client: &kube::Client, path: &str) -> Result<Value, String> {
    request(client, http::Method::GET, path, "application/json", None)
        .await
        .map_err(|e| describe("GET", path, &e))
}

/// Fails with `message` unless `condition` holds.
pub fn ensure(condition: bool, message: impl FnOnce() -> String) -> Result<(), String> {
    if condition { Ok(()) } else { Err(message()) }
}
