//! A computed resource whose provider misbehaves on purpose, answering objects of every
//! namespace whatever the request's: over HTTPS, a list in a namespace shows that namespace's
//! objects only (JSON, kube-rs and Table alike), and a get that the provider answers with an
//! object of another namespace is a 500 `InternalError` that carries nothing of the object,
//! logged as an error.

use std::io::Write;
use std::sync::{Arc, Mutex};

use apiserver_framework::prelude::*;
use apiserver_framework::testing::{TestServer, expect_status};
use kube::api::{Api, ListParams};

/// A reading of a namespaced sensor.
#[derive(ApiResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[resource(
    group = "sensors.example.com",
    version = "v1",
    kind = "Reading",
    namespaced,
    printcolumn(name = "Value", json_path = ".spec.value", type = "string")
)]
pub struct ReadingSpec {
    /// What was read.
    pub value: String,
}

/// The content of the object the provider must never show to a request in `mine`.
const SECRET: &str = "classified-value-of-theirs";

/// Answers every reading of every namespace, ignoring the request's namespace.
struct Leaky;

fn reading(namespace: Option<&str>, name: &str, value: &str) -> Reading {
    let mut r = Reading::new(
        name,
        ReadingSpec {
            value: value.to_string(),
        },
    );
    r.metadata.namespace = namespace.map(str::to_string);
    r
}

#[async_trait]
impl ResourceProvider<Reading> for Leaky {
    async fn list(&self, _ctx: &RequestContext) -> Result<Vec<Reading>, ApiError> {
        Ok(vec![
            reading(Some("mine"), "own", "42"),
            // No namespace: the framework gives it the request's.
            reading(None, "unplaced", "7"),
            reading(Some("theirs"), "secret", SECRET),
        ])
    }
}

fn app() -> App {
    App::new("sensors").computed::<Reading>(Leaky)
}

fn names(list: &[Reading]) -> Vec<(String, String)> {
    list.iter()
        .map(|r| {
            (
                r.metadata.namespace.clone().unwrap_or_default(),
                r.metadata.name.clone().unwrap_or_default(),
            )
        })
        .collect()
}

/// A GET of `path` through the kit's client, with `accept`; the body as text.
async fn get_text(server: &TestServer, path: &str, accept: &str) -> String {
    let request = http::Request::get(path)
        .header(http::header::ACCEPT, accept)
        .body(Vec::new())
        .expect("a request");
    server
        .client()
        .request_text(request)
        .await
        .unwrap_or_else(|e| panic!("GET {path}: {e}"))
}

/// What the process logged (this file's one test installs the global subscriber).
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u8>>>);

impl Write for Log {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Log {
    /// Captures every event of level ERROR from now on.
    fn capture() -> Log {
        let log = Log::default();
        let writer = log.clone();
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::ERROR)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .init();
        log
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

#[tokio::test]
async fn objects_of_another_namespace_never_reach_the_client() {
    let log = Log::capture();
    let server = TestServer::start(app()).await.expect("the server starts");
    let mine: Api<Reading> = Api::namespaced(server.client(), "mine");

    let list = mine.list(&ListParams::default()).await.expect("a list");
    assert_eq!(
        names(&list.items),
        [
            ("mine".to_string(), "own".to_string()),
            ("mine".to_string(), "unplaced".to_string())
        ]
    );
    let collection = "/apis/sensors.example.com/v1/namespaces/mine/readings";
    for accept in [
        "application/json",
        "application/json;as=Table;g=meta.k8s.io;v=v1",
        "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
    ] {
        let text = get_text(&server, collection, accept).await;
        assert!(text.contains("unplaced"), "{accept}: {text}");
        assert!(
            !text.contains("secret") && !text.contains("theirs") && !text.contains(SECRET),
            "{accept}: {text}"
        );
    }

    // The provider answers the get of `secret` in `mine` with the object of `theirs`.
    let status = expect_status(mine.get("secret").await, 500, "InternalError");
    assert_eq!(
        status.message,
        "Internal error occurred: the provider of readings.sensors.example.com answered an \
         object of another namespace"
    );
    let text = format!("{status:?}");
    assert!(!text.contains(SECRET) && !text.contains("theirs"), "{text}");
    // The operator learns what happened from the log.
    let logged = log.text();
    let line = logged
        .lines()
        .find(|l| l.contains("answered a get with an object of another namespace"))
        .unwrap_or_else(|| panic!("no error logged for the get: {logged}"));
    assert!(line.contains(" ERROR "), "{line}");
    assert!(
        line.ends_with(
            "resource=readings.sensors.example.com name=\"secret\" namespace=\"mine\" \
             object_namespace=\"theirs\""
        ),
        "{line}"
    );
    assert!(
        logged.contains("listed objects of other namespaces"),
        "the lists' leaving out is logged: {logged}"
    );

    // In its own namespace, and across all namespaces, the object is the client's to see.
    let theirs: Api<Reading> = Api::namespaced(server.client(), "theirs");
    assert_eq!(
        theirs.get("secret").await.expect("a get").spec.value,
        SECRET
    );
    assert_eq!(
        names(
            &theirs
                .list(&ListParams::default())
                .await
                .expect("a list")
                .items
        ),
        [
            ("theirs".to_string(), "secret".to_string()),
            ("theirs".to_string(), "unplaced".to_string())
        ]
    );
    let all: Api<Reading> = Api::all(server.client());
    assert_eq!(
        all.list(&ListParams::default())
            .await
            .expect("a list")
            .items
            .len(),
        3
    );
}
