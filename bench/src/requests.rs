//! The requests the scenarios send: the Flunder every create sends and its collection, single
//! calls that insist on their answer, fills of a collection, and the answers recorded for the
//! baseline.

use std::path::Path;

use bytes::Bytes;
use http::{Method, StatusCode, header};

use crate::baseline::{Recorded, Recordings};
use crate::client::{self, Error, Target};
use crate::load::{self, Http, Stop};
use crate::plan::Plan;

const GROUP_PATH: &str = "/apis/wardle.example.com/v1alpha1";

/// The collection of Flunders in `namespace`.
pub fn collection(namespace: &str) -> String {
    format!("{GROUP_PATH}/namespaces/{namespace}/flunders")
}

/// The Flunder every create sends: labels, a reference, replicas and two toppings.
pub fn flunder(name: &str) -> Bytes {
    flunder_with(name, 3, None)
}

/// The Flunder of [`flunder`] with `replicas`, and with `resource_version` in its metadata
/// if any (an update's precondition).
pub fn flunder_with(name: &str, replicas: u64, resource_version: Option<&str>) -> Bytes {
    let mut object = serde_json::json!({
        "apiVersion": "wardle.example.com/v1alpha1",
        "kind": "Flunder",
        "metadata": {
            "name": name,
            "labels": {"app": "bench", "tier": "backend"},
        },
        "spec": {
            "reference": "fischer-1",
            "referenceType": "Fischer",
            "replicas": replicas,
            "toppings": [{"name": "cheese", "amount": 2}, {"name": "olives", "amount": 1}],
        },
    });
    if let Some(rv) = resource_version {
        object["metadata"]["resourceVersion"] = rv.into();
    }
    Bytes::from(serde_json::to_vec(&object).expect("JSON"))
}

/// A create of the Flunder `name` in `namespace`.
pub fn create(
    target: &Target,
    namespace: &str,
    name: &str,
) -> http::Request<http_body_util::Full<Bytes>> {
    target.request(Method::POST, &collection(namespace), flunder(name))
}

/// Sends one request on a new connection and insists on `expect`.
pub async fn call(
    target: &Target,
    method: Method,
    path: &str,
    body: Bytes,
    expect: StatusCode,
) -> Result<Bytes, Error> {
    Ok(fetch(target, method, path, body, expect).await?.1)
}

/// Like [`call`], with the answer's headers.
pub async fn fetch(
    target: &Target,
    method: Method,
    path: &str,
    body: Bytes,
    expect: StatusCode,
) -> Result<(http::HeaderMap, Bytes), Error> {
    let mut sender = target.connect().await?;
    let (status, headers, body) =
        client::send_full(&mut sender, target.request(method.clone(), path, body)).await?;
    if status != expect {
        return Err(format!(
            "{method} {path}: {status}: {}",
            String::from_utf8_lossy(&body[..body.len().min(500)])
        )
        .into());
    }
    Ok((headers, body))
}

/// What the baseline answers for a recorded answer with `headers` and `body`.
pub fn recorded(status: StatusCode, headers: &http::HeaderMap, body: Bytes) -> Recorded {
    let text = |name| {
        headers
            .get(name)
            .and_then(|v: &http::HeaderValue| v.to_str().ok())
            .map(str::to_string)
    };
    Recorded {
        status: status.as_u16(),
        content_type: text(header::CONTENT_TYPE).unwrap_or_else(|| "application/json".into()),
        content_encoding: text(header::CONTENT_ENCODING),
        body: body.to_vec(),
    }
}

/// Writes `recordings` to `work/<name>` for a baseline.
pub fn write_recordings(
    work: &Path,
    name: &str,
    recordings: &Recordings,
) -> Result<std::path::PathBuf, Error> {
    let file = work.join(name);
    std::fs::write(&file, serde_json::to_vec(recordings)?)?;
    Ok(file)
}

/// Creates `count` Flunders `<prefix><i>` in `namespace` at the plan's concurrency.
pub async fn fill(
    plan: &Plan,
    target: &Target,
    namespace: &str,
    prefix: &str,
    count: u64,
    pids: &[u32],
) -> Result<load::LoadResult, Error> {
    fill_from(plan, target, namespace, prefix, 0..count, pids).await
}

/// Creates the Flunders `<prefix><i>` for `i` in `range` in `namespace`.
pub async fn fill_from(
    plan: &Plan,
    target: &Target,
    namespace: &str,
    prefix: &str,
    range: std::ops::Range<u64>,
    pids: &[u32],
) -> Result<load::LoadResult, Error> {
    let (ns, prefix, first) = (namespace.to_string(), prefix.to_string(), range.start);
    let work = Http {
        target: target.clone(),
        make: move |t: &Target, _c: usize, i: u64| {
            create(t, &ns, &format!("{prefix}{}", first + i))
        },
        expect: StatusCode::CREATED,
    };
    let count = range.end.saturating_sub(range.start);
    let result = load::run(work, plan.concurrency, Stop::Count(count), pids).await;
    if result.errors > 0 {
        return Err(format!(
            "filling {namespace}: {}",
            result.first_error.unwrap_or_default()
        )
        .into());
    }
    Ok(result)
}
