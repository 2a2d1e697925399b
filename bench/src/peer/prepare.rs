//! Readying both servers for the peer rows: the objects each row reads or writes, stored in
//! each, and one answer of each kind, whose size each row reports; wardle's answers are kept
//! for the bare baseline to answer with.

use std::time::Duration;

use apiserver_framework::testing::wait;
use bytes::Bytes;
use http::{Method, StatusCode};

use crate::baseline::{self, Recordings};
use crate::client::{self, Error, Target};
use crate::peer::{fan_out, writes};
use crate::plan::Plan;
use crate::requests::{collection, recorded};
use crate::servers::Server;

/// How long a server may take to see the host's namespaces.
const NAMESPACES_WITHIN: Duration = Duration::from_secs(60);

/// Sends `request` on a new connection to `target` and insists on `expect`; the answer's
/// headers and body.
pub async fn send_once(
    target: &Target,
    request: http::Request<http_body_util::Full<Bytes>>,
    expect: StatusCode,
) -> Result<(http::HeaderMap, Bytes), Error> {
    let what = format!("{} {}", request.method(), request.uri());
    let mut sender = target.connect().await?;
    let (status, headers, body) = client::send_full(&mut sender, request).await?;
    if status != expect {
        let text = String::from_utf8_lossy(&body[..body.len().min(500)]).into_owned();
        return Err(format!("{what}: {status}: {text}").into());
    }
    Ok((headers, body))
}

/// An answer's headers and body.
type Answer = (http::HeaderMap, Bytes);

/// One update of the Flunder `name` in `namespace`, read first for its resourceVersion: the
/// answers to the GET and to the PUT.
async fn update_once(target: &Target, namespace: &str, name: &str) -> Result<[Answer; 2], Error> {
    let path = format!("{}/{name}", collection(namespace));
    let get = target.request(Method::GET, &path, Bytes::new());
    let read = send_once(target, get, StatusCode::OK).await?;
    let object: serde_json::Value = serde_json::from_slice(&read.1)?;
    let rv = object["metadata"]["resourceVersion"]
        .as_str()
        .ok_or("an object without a resourceVersion")?;
    let put = target.request(Method::PUT, &path, writes::body(name, Some(0), Some(rv)));
    Ok([read, send_once(target, put, StatusCode::OK).await?])
}

/// The sizes of one answer of each kind from one server, in bytes.
#[derive(Default)]
pub struct Sizes {
    /// A GET of one object.
    pub get: usize,
    /// The LIST of `plan.list_size` objects.
    pub list: usize,
    /// The LIST of `plan.big_list_size` objects.
    pub big_list: usize,
    /// A create.
    pub create: usize,
    /// An update.
    pub update: usize,
    /// An apply.
    pub apply: usize,
}

/// The paths the rows read.
pub struct Paths {
    /// The one object the GETs read.
    pub one: String,
    /// The collection of `plan.list_size` objects.
    pub list: String,
    /// The collection of `plan.big_list_size` objects.
    pub big_list: String,
}

/// Fills `server` (called `name`) with the objects of the rows and answers one request of
/// each kind, adding its answers to `recordings` when given (wardle's, which the bare baseline
/// answers with). When the plan takes profiles, the GET and LIST answers are also written
/// beside them (`answers/<name>-get.json`, …) for comparing the servers' bytes.
pub async fn prepare(
    plan: &Plan,
    name: &str,
    server: &Server,
    pids: &[u32],
    paths: &Paths,
    mut recordings: Option<&mut Recordings>,
) -> Result<Sizes, Error> {
    let t = &server.target;
    // The first create waits until the server sees the host's namespaces.
    wait::poll(
        "the server to accept creates in the host's namespaces",
        NAMESPACES_WITHIN,
        || {
            send_once(
                t,
                writes::create(t, "peer-get", "get-me"),
                StatusCode::CREATED,
            )
        },
    )
    .await?;
    let (conc, clients) = (plan.concurrency, plan.concurrency as u64);
    writes::fill(t, "peer-list", "item-", plan.list_size, conc, pids).await?;
    writes::fill(t, "peer-big", "big-", plan.big_list_size, conc, pids).await?;
    writes::fill(t, "peer-update", "u-", clients, conc, pids).await?;
    writes::fill(t, "peer-apply", "a-", clients, conc, pids).await?;
    let mut sizes = Sizes::default();
    let answers = plan.profile.as_ref().map(|dir| dir.join("answers"));
    for (path, size, what) in [
        (&paths.one, &mut sizes.get, "get"),
        (&paths.list, &mut sizes.list, "list"),
        (&paths.big_list, &mut sizes.big_list, "big-list"),
    ] {
        let get = t.request(Method::GET, path, Bytes::new());
        let (headers, body) = send_once(t, get, StatusCode::OK).await?;
        *size = body.len();
        if let Some(dir) = &answers {
            std::fs::create_dir_all(dir)?;
            std::fs::write(dir.join(format!("{name}-{what}.json")), &body)?;
        }
        if let Some(r) = recordings.as_deref_mut() {
            r.insert(
                baseline::key(&Method::GET, path),
                recorded(StatusCode::OK, &headers, body),
            );
        }
    }
    let created = collection("peer-create");
    let post = writes::create(t, "peer-create", "recorded");
    let (headers, body) = send_once(t, post, StatusCode::CREATED).await?;
    sizes.create = body.len();
    if let Some(r) = recordings.as_deref_mut() {
        // The fan-out's creates are answered with the same bytes.
        let watched = [fan_out::NAMESPACE]
            .iter()
            .chain(&fan_out::MANY_NAMESPACES)
            .map(|ns| collection(ns));
        for collection in std::iter::once(created.clone()).chain(watched) {
            r.insert(
                baseline::key(&Method::POST, &collection),
                recorded(StatusCode::CREATED, &headers, body.clone()),
            );
        }
    }
    // The bare baseline answers each client's update and apply with wardle's answer to it;
    // from sample-apiserver one of each gives its size.
    let recorded_clients = if recordings.is_some() { clients } else { 1 };
    for c in 0..recorded_clients as usize {
        let name = writes::object("u-", c);
        let [(got_headers, got), (headers, body)] = update_once(t, "peer-update", &name).await?;
        sizes.update = body.len();
        if let Some(r) = recordings.as_deref_mut() {
            // The first update of each client reads the object for its resourceVersion.
            let path = format!("{}/{name}", collection("peer-update"));
            r.insert(
                baseline::key(&Method::GET, &path),
                recorded(StatusCode::OK, &got_headers, got),
            );
            r.insert(
                baseline::key(&Method::PUT, &path),
                recorded(StatusCode::OK, &headers, body),
            );
        }
        let name = writes::object("a-", c);
        let apply = writes::apply(t, "peer-apply", &name, 0);
        let (headers, body) = send_once(t, apply, StatusCode::OK).await?;
        sizes.apply = body.len();
        if let Some(r) = recordings.as_deref_mut() {
            r.insert(
                baseline::key(&Method::PATCH, &writes::apply_path("peer-apply", &name)),
                recorded(StatusCode::OK, &headers, body),
            );
        }
    }
    Ok(sizes)
}
