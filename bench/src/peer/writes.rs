//! The writes of the peer rows, of a Flunder both servers know every field of (sample-apiserver's
//! has no `replicas` or `toppings`, which it would drop with a warning): fills and CREATE, an
//! UPDATE (PUT) of each client's own Flunder with its last resourceVersion as precondition, and
//! a server-side apply (PATCH `application/apply-patch+yaml`) of each client's own Flunder;
//! updates and applies change its label `revision`, so that every one is a write to etcd
//! rather than a no-op.

use bytes::Bytes;
use http::{Method, StatusCode, header};
use serde::Deserialize;

use crate::client::{self, Error, Target};
use crate::load::{self, Http, Stop, Work};
use crate::requests::collection;

/// The Flunder of the peer rows: labels and a reference, with a label `revision` if any and
/// `resource_version` in its metadata if any (an update's precondition).
pub fn body(name: &str, revision: Option<u64>, resource_version: Option<&str>) -> Bytes {
    let mut object = serde_json::json!({
        "apiVersion": "wardle.example.com/v1alpha1",
        "kind": "Flunder",
        "metadata": {
            "name": name,
            "labels": {"app": "bench", "tier": "backend"},
        },
        "spec": {"reference": "fischer-1", "referenceType": "Fischer"},
    });
    if let Some(revision) = revision {
        object["metadata"]["labels"]["revision"] = revision.to_string().into();
    }
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
    target.request(Method::POST, &collection(namespace), body(name, None, None))
}

/// A closed-loop load of creates of distinct Flunders in `namespace` by `clients` clients
/// (until `stop`), with the fields both servers' types have; each load's names are its own.
pub async fn creates(
    target: &Target,
    namespace: &str,
    clients: usize,
    pids: &[u32],
    stop: Stop,
) -> load::LoadResult {
    crate::compare::creates_of(create, clients, target, namespace, pids, stop).await
}

/// Creates the Flunders `<prefix><i>` for `i` below `count` in `namespace` with `clients`
/// clients; an error if any create failed.
pub async fn fill(
    target: &Target,
    namespace: &str,
    prefix: &str,
    count: u64,
    clients: usize,
    pids: &[u32],
) -> Result<(), Error> {
    let (ns, prefix) = (namespace.to_string(), prefix.to_string());
    let work = Http {
        target: target.clone(),
        make: move |t: &Target, _c: usize, i: u64| create(t, &ns, &format!("{prefix}{i}")),
        expect: StatusCode::CREATED,
    };
    let result = load::run(work, clients, Stop::Count(count), pids).await;
    match result.errors {
        0 => Ok(()),
        _ => Err(format!(
            "filling {namespace}: {}",
            result.first_error.unwrap_or_default()
        )
        .into()),
    }
}

/// The field manager of the applies.
pub const MANAGER: &str = "bench-apply";

/// The name of client `c`'s Flunder among those `prefix` names.
pub fn object(prefix: &str, c: usize) -> String {
    format!("{prefix}{c}")
}

/// The path of an apply of the Flunder `name` in `namespace` (forced: the objects were created
/// by another manager).
pub fn apply_path(namespace: &str, name: &str) -> String {
    format!(
        "{}/{name}?fieldManager={MANAGER}&force=true",
        collection(namespace)
    )
}

/// A server-side apply of the Flunder `name` in `namespace` labelled `revision`.
pub fn apply(
    target: &Target,
    namespace: &str,
    name: &str,
    revision: u64,
) -> http::Request<http_body_util::Full<Bytes>> {
    let mut request = target.request(
        Method::PATCH,
        &apply_path(namespace, name),
        body(name, Some(revision), None),
    );
    request.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/apply-patch+yaml"),
    );
    request
}

/// An update (PUT) of the Flunder `name` in `namespace` labelled `revision`, conditional on
/// `resource_version`.
pub fn update(
    target: &Target,
    namespace: &str,
    name: &str,
    revision: u64,
    resource_version: &str,
) -> http::Request<http_body_util::Full<Bytes>> {
    target.request(
        Method::PUT,
        &format!("{}/{name}", collection(namespace)),
        body(name, Some(revision), Some(resource_version)),
    )
}

/// The revision of request `i`: a value that changes from one request to the next.
fn revision(i: u64) -> u64 {
    1 + i % 1000
}

/// A closed-loop load of applies by `clients` clients, client `c` applying the Flunder
/// `<prefix><c>` in `namespace`.
pub async fn applies(
    target: &Target,
    namespace: &str,
    prefix: &str,
    clients: usize,
    pids: &[u32],
    stop: Stop,
) -> load::LoadResult {
    let (ns, prefix) = (namespace.to_string(), prefix.to_string());
    let work = Http {
        target: target.clone(),
        make: move |t: &Target, c: usize, i: u64| apply(t, &ns, &object(&prefix, c), revision(i)),
        expect: StatusCode::OK,
    };
    load::run(work, clients, stop, pids).await
}

/// A closed-loop load of updates by `clients` clients, client `c` updating the Flunder
/// `<prefix><c>` in `namespace`.
pub async fn updates(
    target: &Target,
    namespace: &str,
    prefix: &str,
    clients: usize,
    pids: &[u32],
    stop: Stop,
) -> load::LoadResult {
    let work = Updates {
        target: target.clone(),
        namespace: namespace.to_string(),
        prefix: prefix.to_string(),
    };
    load::run(work, clients, stop, pids).await
}

/// Updates of each client's own Flunder, each conditional on the resourceVersion the
/// client's previous answer carried (read with a GET first, and again after a conflict).
struct Updates {
    target: Target,
    namespace: String,
    prefix: String,
}

/// The part of an answer an update needs.
#[derive(Deserialize)]
struct Answer {
    metadata: Metadata,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Metadata {
    resource_version: String,
}

fn resource_version(body: &[u8]) -> Result<String, Error> {
    let answer: Answer = serde_json::from_slice(body)?;
    Ok(answer.metadata.resource_version)
}

impl Work for Updates {
    /// The connection and the resourceVersion of the client's Flunder, once known.
    type Conn = (client::Sender, Option<String>);

    async fn connect(&self) -> Result<Self::Conn, Error> {
        Ok((self.target.connect().await?, None))
    }

    async fn call(&self, conn: &mut Self::Conn, c: usize, i: u64) -> Result<(), Error> {
        let (sender, known) = conn;
        let name = object(&self.prefix, c);
        let rv = match known.take() {
            Some(rv) => rv,
            None => {
                let path = format!("{}/{name}", collection(&self.namespace));
                let get = self.target.request(Method::GET, &path, Bytes::new());
                let (status, body) = client::send(sender, get).await?;
                if status != StatusCode::OK {
                    return Err(format!("GET {path}: {status}").into());
                }
                resource_version(&body)?
            }
        };
        let request = update(&self.target, &self.namespace, &name, revision(i), &rv);
        let (status, body) = client::send(sender, request).await?;
        if status == StatusCode::OK {
            *known = Some(resource_version(&body)?);
            Ok(())
        } else {
            let body = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
            Err(format!("{status}: {body}").into())
        }
    }
}
