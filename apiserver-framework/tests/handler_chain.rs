//! The handler chain over real HTTPS: users' layers run at their named positions for every
//! request (refused ones included where the position comes before the refusal), each request
//! is read once (one request-info reading and one query decoding), and panics in an admission
//! plugin or a handler answer a 500 Status while the connection and the server go on.
//!
//! One server serves every check, in one test: the readings are counted from the framework's
//! `trace` events (target `apiserver_framework::reading`) by a subscriber global to the
//! process, so nothing else may send requests while they are compared.

mod support_chain;
mod support_kinds;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use apiserver_framework::authn::{PeerAddr, StaticTokens};
use apiserver_framework::authz::{
    Attributes, AuthorizationError, Authorizer, Decision, Request as AuthzRequest,
};
use apiserver_framework::prelude::*;
use apiserver_framework::registry::rest::options::{ListOptions, WriteOptions};
use apiserver_framework::registry::rest::{EventStream, ObjectList, RequestContext, RestStorage};
use apiserver_framework::registry::store::Store;
use apiserver_framework::registry::store::strategy::DefaultStrategy;
use apiserver_framework::server::GenericApiServer;
use apiserver_framework::server::filters::ChainInner;
use apiserver_framework::server::filters::{ChainPosition, ChainService};
use apiserver_framework::server::serve::HandlerChain;
use apiserver_framework::storage::memory::MemoryStorage;
use apiserver_framework::user::UserInfo;
use axum::middleware::{self, Next};
use bytes::Bytes;
use serde_json::{Value, json};
use support_chain::{ServedChain, https, serve_chain};
use support_kinds::sized_kind;

sized_kind!(GizmoSpec, "chain.example.com", "v1", "Gizmo");

const GIZMOS: &str = "/apis/chain.example.com/v1/namespaces/default/gizmos";

/// Allows everything but deletes.
struct NoDeletes;

#[async_trait::async_trait]
impl Authorizer for NoDeletes {
    async fn authorize(&self, attrs: &Attributes) -> Result<Decision, AuthorizationError> {
        Ok(match &attrs.request {
            AuthzRequest::Resource(r) if r.verb == "delete" => {
                Decision::Deny("deletes are not allowed".into())
            }
            _ => Decision::Allow,
        })
    }
}

/// An admission plugin that panics on gizmos named `boom`.
struct PanicOnBoom;

#[async_trait::async_trait]
impl AdmissionPlugin for PanicOnBoom {
    fn name(&self) -> &str {
        "PanicOnBoom"
    }

    fn phases(&self) -> Phases {
        Phases::Validate
    }

    async fn validate(&self, attrs: &AdmissionAttributes<'_>) -> Result<(), ApiError> {
        if attrs.name == "boom" {
            panic!("the admission plugin exploded");
        }
        Ok(())
    }
}

/// The generic store of gizmos, whose `get` of `kaboom` panics.
struct Fragile(Store<Gizmo>);

#[async_trait::async_trait]
impl RestStorage for Fragile {
    fn info(&self) -> &ResourceInfo {
        self.0.info()
    }
    fn verbs(&self) -> Vec<&'static str> {
        self.0.verbs()
    }
    async fn get(&self, ctx: &RequestContext, name: &str) -> Result<Bytes, ApiError> {
        if name == "kaboom" {
            panic!("the handler exploded");
        }
        self.0.get(ctx, name).await
    }
    async fn list(&self, ctx: &RequestContext, opts: &ListOptions) -> Result<ObjectList, ApiError> {
        self.0.list(ctx, opts).await
    }
    async fn watch(
        &self,
        ctx: &RequestContext,
        opts: &ListOptions,
    ) -> Result<EventStream, ApiError> {
        self.0.watch(ctx, opts).await
    }
    async fn create(
        &self,
        ctx: &RequestContext,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        self.0.create(ctx, body, opts).await
    }
    async fn patch(
        &self,
        ctx: &RequestContext,
        name: &str,
        subresource: Option<&str>,
        patch: &(dyn Fn(Value) -> Result<Value, ApiError> + Send + Sync),
        opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        self.0.patch(ctx, name, subresource, patch, opts).await
    }
}

/// What the users' layers saw: `(position, user, method, path)` in the order they ran.
type Seen = Arc<Mutex<Vec<(&'static str, Option<String>, String, String)>>>;

/// A layer that records each request it sees as `position` and marks its response with the
/// header `x-layer-<position>`.
fn recorder(
    seen: Seen,
    position: &'static str,
) -> impl tower::Layer<ChainService, Service: ChainInner> + Send + Sync + 'static {
    middleware::from_fn(move |req: axum::extract::Request, next: Next| {
        let seen = seen.clone();
        async move {
            let user = req
                .extensions()
                .get::<UserInfo>()
                .map(|u| u.username.clone());
            seen.lock().unwrap().push((
                position,
                user,
                req.method().to_string(),
                req.uri().path().to_string(),
            ));
            let mut res = next.run(req).await;
            res.headers_mut().insert(
                http::HeaderName::from_bytes(format!("x-layer-{position}").as_bytes()).unwrap(),
                http::HeaderValue::from_static("ran"),
            );
            res
        }
    })
}

struct Served {
    served: ServedChain,
    url: String,
    http: reqwest::Client,
    seen: Seen,
    peers: Arc<Mutex<Vec<SocketAddr>>>,
}

async fn serve() -> Served {
    let store = Store::<Gizmo>::new(Arc::new(MemoryStorage::new()), Arc::new(DefaultStrategy));
    let seen: Seen = Arc::default();
    let peers: Arc<Mutex<Vec<SocketAddr>>> = Arc::default();
    let peers_seen = peers.clone();
    // Two layers through the server builder (the public hook `App` forwards to), one through
    // the chain.
    let server = GenericApiServer::builder("chain")
        .group(Group::new("chain.example.com").storage(Arc::new(Fragile(store))))
        .admission(PanicOnBoom)
        .layer(
            ChainPosition::BeforeAuthentication,
            recorder(seen.clone(), "before-authentication"),
        )
        .layer(
            ChainPosition::AfterAuthentication,
            recorder(seen.clone(), "after-authentication"),
        )
        .layer(
            ChainPosition::AfterRequestInfo,
            middleware::from_fn(move |req: axum::extract::Request, next: Next| {
                if let Some(peer) = req.extensions().get::<PeerAddr>() {
                    peers_seen.lock().unwrap().push(peer.0);
                }
                next.run(req)
            }),
        )
        .build();
    let users = StaticTokens::from([(
        "alice-token",
        UserInfo::new("alice", &["system:authenticated"]),
    )]);
    let chain = HandlerChain::new(Arc::new(server), Arc::new(users), Arc::new(NoDeletes))
        .with_layer(
            ChainPosition::AfterAuthorization,
            recorder(seen.clone(), "after-authorization"),
        );
    let served = serve_chain(chain).await.unwrap();
    let http = https(&served)
        .http1_only()
        .pool_max_idle_per_host(1)
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let url = served.url.clone();
    Served {
        served,
        url,
        http,
        seen,
        peers,
    }
}

impl Served {
    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        token: Option<&str>,
        body: Option<(&str, Value)>,
    ) -> (u16, reqwest::header::HeaderMap, Value) {
        let mut req = self.http.request(method, format!("{}{path}", self.url));
        if let Some(token) = token {
            req = req.bearer_auth(token);
        }
        if let Some((content_type, body)) = body {
            req = req
                .header("Content-Type", content_type)
                .body(body.to_string());
        }
        let res = req.send().await.unwrap();
        let status = res.status().as_u16();
        let headers = res.headers().clone();
        let text = res.text().await.unwrap();
        let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, headers, value)
    }

    async fn alice(&self, method: reqwest::Method, path: &str) -> (u16, Value) {
        let (status, _, body) = self.send(method, path, Some("alice-token"), None).await;
        (status, body)
    }

    async fn create(&self, name: &str) -> (u16, Value) {
        let body = json!({
            "apiVersion": "chain.example.com/v1",
            "kind": "Gizmo",
            "metadata": {"name": name},
            "spec": {"size": 1}
        });
        let (status, _, body) = self
            .send(
                reqwest::Method::POST,
                GIZMOS,
                Some("alice-token"),
                Some(("application/json", body)),
            )
            .await;
        (status, body)
    }

    fn take_seen(&self) -> Vec<(&'static str, Option<String>, String, String)> {
        std::mem::take(&mut *self.seen.lock().unwrap())
    }
}

#[tokio::test]
async fn handler_chain() {
    let s = serve().await;
    user_layers_run_at_their_positions(&s).await;
    each_request_is_read_once(&s).await;
    panics_answer_500_and_the_server_goes_on(&s).await;
    s.served.running.shutdown().await;
}

async fn user_layers_run_at_their_positions(s: &Served) {
    use reqwest::Method;
    let alice = Some("alice".to_string());
    s.take_seen();

    // Allowed: every position, in order; the user is known from authentication on.
    let (status, headers, _) = s.send(Method::GET, GIZMOS, Some("alice-token"), None).await;
    assert_eq!(status, 200);
    let seen = s.take_seen();
    assert_eq!(
        seen,
        [
            ("before-authentication", None, "GET".into(), GIZMOS.into()),
            (
                "after-authentication",
                alice.clone(),
                "GET".into(),
                GIZMOS.into()
            ),
            (
                "after-authorization",
                alice.clone(),
                "GET".into(),
                GIZMOS.into()
            ),
        ]
    );
    for position in [
        "before-authentication",
        "after-authentication",
        "after-authorization",
    ] {
        assert_eq!(
            headers.get(format!("x-layer-{position}")).unwrap(),
            "ran",
            "{position}"
        );
    }
    assert!(headers.contains_key("audit-id"));

    // Refused by the authorizer: the layers before authorization ran, the one after did not.
    let (status, headers, body) = s
        .send(
            Method::DELETE,
            &format!("{GIZMOS}/a"),
            Some("alice-token"),
            None,
        )
        .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["reason"], "Forbidden");
    let seen = s.take_seen();
    let positions: Vec<_> = seen.iter().map(|(p, u, _, _)| (*p, u.clone())).collect();
    assert_eq!(
        positions,
        [
            ("before-authentication", None),
            ("after-authentication", alice.clone()),
        ]
    );
    assert!(headers.contains_key("x-layer-after-authentication"));
    assert!(!headers.contains_key("x-layer-after-authorization"));

    // Refused by authentication: only the layer before it ran, and it wraps the 401.
    let (status, headers, body) = s.send(Method::GET, GIZMOS, Some("wrong-token"), None).await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["reason"], "Unauthorized");
    let seen = s.take_seen();
    assert_eq!(
        seen,
        [("before-authentication", None, "GET".into(), GIZMOS.into())]
    );
    assert!(headers.contains_key("x-layer-before-authentication"));
    assert!(!headers.contains_key("x-layer-after-authentication"));

    // An anonymous path: the layer after authentication sees `system:anonymous`.
    let (status, _, _) = s.send(Method::GET, "/healthz", None, None).await;
    assert_eq!(status, 200);
    let seen = s.take_seen();
    let users: Vec<_> = seen.iter().map(|(p, u, _, _)| (*p, u.clone())).collect();
    assert_eq!(
        users,
        [
            ("before-authentication", None),
            ("after-authentication", Some("system:anonymous".into())),
            ("after-authorization", Some("system:anonymous".into())),
        ]
    );
}

/// A request: method, path, token, content type and body.
type Case<'a> = (
    reqwest::Method,
    String,
    Option<&'a str>,
    Option<(&'a str, Value)>,
);

async fn each_request_is_read_once(s: &Served) {
    use reqwest::Method;
    assert_eq!(s.create("counted").await.0, 201);
    let merge = ("application/merge-patch+json", json!({"spec": {"size": 2}}));
    let requests: Vec<Case> = vec![
        (Method::GET, GIZMOS.into(), Some("alice-token"), None),
        (
            Method::GET,
            format!("{GIZMOS}?labelSelector=a%3Db&fieldSelector=metadata.name%3Dcounted&limit=5"),
            Some("alice-token"),
            None,
        ),
        (
            Method::GET,
            format!("{GIZMOS}/counted?timeout=30s"),
            Some("alice-token"),
            None,
        ),
        (
            Method::GET,
            format!("{GIZMOS}?watch=true&timeoutSeconds=1"),
            Some("alice-token"),
            None,
        ),
        (
            Method::PATCH,
            format!("{GIZMOS}/counted?fieldManager=test&dryRun=All"),
            Some("alice-token"),
            Some(merge),
        ),
        (
            Method::POST,
            format!("{GIZMOS}?fieldValidation=Strict"),
            Some("alice-token"),
            Some((
                "application/json",
                json!({"apiVersion": "chain.example.com/v1", "kind": "Gizmo",
                       "metadata": {"name": "second"}, "spec": {"size": 3}}),
            )),
        ),
        (
            Method::DELETE,
            format!("{GIZMOS}/counted"),
            Some("alice-token"),
            None,
        ),
        (Method::GET, GIZMOS.into(), Some("wrong-token"), None),
        (
            Method::GET,
            "/apis/chain.example.com/v1/namespaces/default/nothings".into(),
            Some("alice-token"),
            None,
        ),
        (Method::GET, "/apis".into(), Some("alice-token"), None),
        (
            Method::GET,
            "/openapi/v3/apis/chain.example.com/v1?hash=x".into(),
            Some("alice-token"),
            None,
        ),
        (
            Method::GET,
            "/healthz?verbose".into(),
            Some("alice-token"),
            None,
        ),
    ];
    let readings = readings();
    for (method, path, token, body) in requests {
        let before = readings.counts();
        let (status, _, answer) = s.send(method.clone(), &path, token, body).await;
        let after = readings.counts();
        assert!(status < 500, "{method} {path}: {status} {answer}");
        assert_eq!(
            (after.0 - before.0, after.1 - before.1),
            (1, 1),
            "{method} {path} ({status}): request-info readings and query decodings"
        );
    }
}

async fn panics_answer_500_and_the_server_goes_on(s: &Served) {
    use reqwest::Method;
    s.peers.lock().unwrap().clear();

    // A panicking admission plugin: a 500 Status, with the audit id.
    let (status, body) = s.create("boom").await;
    assert_eq!(status, 500, "{body}");
    assert_eq!(body["kind"], "Status");
    assert_eq!(body["status"], "Failure");
    assert_eq!(body["reason"], "InternalError");
    assert_eq!(body["code"], 500);
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains("This request caused apiserver to panic"),
        "{message}"
    );

    // Nothing was stored, and the next requests succeed on the same connection.
    let (status, body) = s.alice(Method::GET, &format!("{GIZMOS}/boom")).await;
    assert_eq!(status, 404, "{body}");
    let (status, body) = s.create("after-boom").await;
    assert_eq!(status, 201, "{body}");
    let (status, list) = s.alice(Method::GET, GIZMOS).await;
    assert_eq!(status, 200);
    let names: Vec<&str> = apiserver_framework::testing::item_names(&list);
    assert!(names.contains(&"after-boom"), "{names:?}");
    assert!(!names.contains(&"boom"), "{names:?}");

    // A panicking handler: the same answer, and the server goes on.
    let (status, headers, body) = s
        .send(
            Method::GET,
            &format!("{GIZMOS}/kaboom"),
            Some("alice-token"),
            None,
        )
        .await;
    assert_eq!(status, 500, "{body}");
    assert_eq!(body["reason"], "InternalError");
    assert!(headers.contains_key("audit-id"));
    let (status, body) = s.alice(Method::GET, &format!("{GIZMOS}/after-boom")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["metadata"]["name"], "after-boom");

    // All on one connection: a panic did not close it.
    let peers = s.peers.lock().unwrap().clone();
    assert_eq!(peers.len(), 6, "{peers:?}");
    assert!(peers.iter().all(|p| *p == peers[0]), "{peers:?}");
}

/// Counts the framework's readings of requests: its `trace` events of target
/// `apiserver_framework::reading`, by their `reading` field.
#[derive(Default)]
struct Readings {
    request_info: std::sync::atomic::AtomicU64,
    query: std::sync::atomic::AtomicU64,
}

impl Readings {
    /// `(request info, query)` readings so far.
    fn counts(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.request_info.load(Relaxed), self.query.load(Relaxed))
    }
}

/// The `reading` field of an event.
struct ReadingField(Option<String>);

impl tracing::field::Visit for ReadingField {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "reading" {
            self.0 = Some(value.to_string());
        }
    }

    fn record_debug(&mut self, _: &tracing::field::Field, _: &dyn std::fmt::Debug) {}
}

/// The layer counting readings into its [`Readings`].
struct CountReadings(Arc<Readings>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for CountReadings {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        if event.metadata().target() != "apiserver_framework::reading" {
            return;
        }
        let mut field = ReadingField(None);
        event.record(&mut field);
        let counter = match field.0.as_deref() {
            Some("request_info") => &self.0.request_info,
            Some("query") => &self.0.query,
            _ => return,
        };
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The process's readings, counted by a global subscriber installed on first use (the server
/// runs on other threads than the test).
fn readings() -> Arc<Readings> {
    static READINGS: std::sync::OnceLock<Arc<Readings>> = std::sync::OnceLock::new();
    READINGS
        .get_or_init(|| {
            use tracing_subscriber::layer::SubscriberExt;
            let readings = Arc::new(Readings::default());
            let subscriber =
                tracing_subscriber::registry().with(CountReadings(Arc::clone(&readings)));
            tracing::subscriber::set_global_default(subscriber)
                .expect("no other global subscriber in this test");
            readings
        })
        .clone()
}
