//! The aggregator in front of a real backend server, both over HTTPS on loopback: APIService
//! availability, proxying with front-proxy identity headers, watches through the proxy,
//! merged discovery and OpenAPI, and recovery after the backend restarts; and ([`retry`])
//! requests that failed on one backend of several going to another when that is safe; and
//! ([`probes`]) the availability check's probes running to their end.

#[path = "aggregator/probes.rs"]
mod probes;
#[path = "aggregator/retry.rs"]
mod retry;
mod support_chain;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use apiserver_framework::aggregator::{Aggregator, AggregatorOptions, apiservice};
use apiserver_framework::authn::{
    Authenticated, Authenticator, PeerCertificates, StaticTokenAuthenticator,
};
use apiserver_framework::host_cluster::resolver::StaticServiceResolver;
use apiserver_framework::prelude::*;
use apiserver_framework::server::generic::GenericApiServer;
use apiserver_framework::server::serve::{self, HandlerChain, RunningServer};
use apiserver_framework::testing::wait;
use apiserver_framework::tls::{self, ServingCert};
use apiserver_framework::user::UserInfo;
use base64::Engine as _;
use futures::StreamExt as _;
use parking_lot::Mutex;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
};
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// The backend's test resource.
#[derive(ApiResource, Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[resource(
    group = "widgets.example.com",
    version = "v1",
    kind = "Widget",
    namespaced
)]
pub struct WidgetSpec {
    /// How big.
    #[serde(default)]
    pub size: i32,
}

/// The path and `If-None-Match` of requests for OpenAPI documents.
type OpenApiAsks = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// Test double of a request-header authenticator: trusts `X-Remote-*` headers only when the
/// peer presented a client certificate (the TLS layer verified it against the front-proxy
/// CA), and records every identity it accepted.
struct HeaderTrustingTestDouble {
    seen: Arc<Mutex<Vec<UserInfo>>>,
    /// The path and `If-None-Match` of every request for an OpenAPI document, in order.
    openapi_asks: OpenApiAsks,
}

#[async_trait::async_trait]
impl Authenticator for HeaderTrustingTestDouble {
    async fn authenticate(&self, parts: &http::request::Parts) -> Authenticated {
        if parts.extensions.get::<PeerCertificates>().is_none() {
            return Authenticated::NoCredentials;
        }
        if parts.uri.path().starts_with("/openapi/") {
            let etag = parts.headers.get("if-none-match");
            let etag = etag.map(|v| v.to_str().unwrap().to_string());
            let path = parts.uri.path().to_string();
            self.openapi_asks.lock().push((path, etag));
        }
        let Some(user) = parts
            .headers
            .get("x-remote-user")
            .and_then(|v| v.to_str().ok())
        else {
            return Authenticated::NoCredentials;
        };
        let groups: Vec<String> = parts
            .headers
            .get_all("x-remote-group")
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_owned))
            .collect();
        let info = UserInfo {
            username: user.to_owned(),
            groups,
            ..Default::default()
        };
        self.seen.lock().push(info.clone());
        Authenticated::User(info)
    }
}

#[derive(Debug)]
struct FixedCert(Arc<rustls::sign::CertifiedKey>);

impl rustls::server::ResolvesServerCert for FixedCert {
    fn resolve(
        &self,
        _hello: rustls::server::ClientHello<'_>,
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        Some(self.0.clone())
    }
}

/// A front-proxy CA and a client certificate it signed: (CA PEM, cert PEM, key PEM).
fn front_proxy_pki() -> (String, String, String) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.distinguished_name
        .push(DnType::CommonName, "front-proxy-ca");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().unwrap();
    let mut leaf = CertificateParams::new(Vec::<String>::new()).unwrap();
    leaf.distinguished_name
        .push(DnType::CommonName, "front-proxy-client");
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let cert = leaf.signed_by(&key, &issuer).unwrap();
    (ca_cert.pem(), cert.pem(), key.serialize_pem())
}

struct Backend {
    dir: std::path::PathBuf,
    front_proxy_ca: String,
    seen: Arc<Mutex<Vec<UserInfo>>>,
    openapi_asks: OpenApiAsks,
}

impl Backend {
    async fn start(&self, addr: SocketAddr) -> RunningServer {
        let cert = ServingCert::self_signed(&self.dir, &["backend.test.svc".into()]).unwrap();
        let roots = apiserver_framework::testing::tls::roots(&self.front_proxy_ca);
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            Arc::new(rustls::crypto::ring::default_provider()),
        )
        .allow_unauthenticated()
        .build()
        .unwrap();
        let config = tls::server_config_with(
            Arc::new(FixedCert(cert.certified_key().unwrap())),
            verifier,
            None,
        )
        .unwrap();
        let server = Arc::new(
            GenericApiServer::builder("backend")
                .group(Group::new("widgets.example.com").resource::<Widget>())
                .build(),
        );
        let chain = Arc::new(HandlerChain::new(
            server,
            Arc::new(HeaderTrustingTestDouble {
                seen: self.seen.clone(),
                openapi_asks: self.openapi_asks.clone(),
            }),
            Arc::new(apiserver_framework::authz::AllowAll),
        ));
        let what = format!("rebinding {addr}");
        let listener = wait::poll(&what, Duration::from_secs(5), || TcpListener::bind(addr))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        serve::RunningServer::start(listener, config, chain).unwrap()
    }
}

fn apiservice_body(version: &str, ca: &str) -> Value {
    json!({
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": format!("{version}.widgets.example.com")},
        "spec": {
            "service": {"namespace": "test", "name": "backend"},
            "group": "widgets.example.com",
            "version": version,
            "caBundle": base64::engine::general_purpose::STANDARD.encode(ca),
            "groupPriorityMinimum": 1000,
            "versionPriority": 15,
        },
    })
}

struct Client {
    http: reqwest::Client,
    base: String,
}

impl Client {
    fn req(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth("admin-token")
    }

    /// Sends `method path` as admin with no body; the answer.
    async fn send(&self, method: reqwest::Method, path: &str) -> reqwest::Response {
        self.req(method, path).send().await.expect("an answer")
    }

    async fn get_json(&self, path: &str, accept: &str) -> Value {
        self.req(reqwest::Method::GET, path)
            .header("accept", accept)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// Registers the APIService of `widgets.example.com` at `version`, served by service
    /// `test/backend` whose serving certificate is `ca` (PEM).
    async fn register_widgets(&self, version: &str, ca: &str) {
        let res = self
            .req(
                reqwest::Method::POST,
                "/apis/apiregistration.k8s.io/v1/apiservices",
            )
            .json(&apiservice_body(version, ca))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 201, "{}", res.text().await.unwrap());
    }

    /// Waits until APIService `name` reports Available `status` with `reason`.
    async fn wait_condition(&self, name: &str, status: &str, reason: &str) -> Value {
        let path = format!("/apis/apiregistration.k8s.io/v1/apiservices/{name}");
        let what = format!("{name} to become {status}/{reason}");
        wait::poll(&what, Duration::from_secs(15), || async {
            let last = self.get_json(&path, "application/json").await;
            let c = &last["status"]["conditions"][0];
            if c["status"] == status && c["reason"] == reason {
                Ok(c.clone())
            } else {
                Err(last)
            }
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Waits until `check` holds for the document at `path`.
    async fn wait_doc(&self, path: &str, accept: &str, check: impl Fn(&Value) -> bool) -> Value {
        let what = format!("{path} to match");
        wait::poll(&what, Duration::from_secs(10), || async {
            let last = self.get_json(path, accept).await;
            if check(&last) { Ok(last) } else { Err(last) }
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"))
    }
}

/// An aggregator served over HTTPS on loopback, and a client for it.
struct Fronted {
    /// The aggregator's availability controller.
    controller: tokio::task::JoinHandle<()>,
    /// The aggregator's listener.
    agg: RunningServer,
    /// The CA of the aggregator's serving certificate (PEM).
    agg_ca: String,
    /// User alice, with the aggregator's `admin-token`.
    client: Client,
}

/// A TLS listener on a free loopback port serving `cert` and offering only HTTP/2 (ALPN
/// `h2`), for a backend written by the test: its acceptor, listener and address.
async fn h2_listener(
    cert: &rcgen::CertifiedKey<rcgen::KeyPair>,
) -> (
    tokio_rustls::TlsAcceptor,
    tokio::net::TcpListener,
    std::net::SocketAddr,
) {
    let acceptor =
        tokio_rustls::TlsAcceptor::from(support_chain::rcgen_server_config(cert, &[b"h2"]));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    (acceptor, listener, addr)
}

/// Answers an HTTP/2 stream of a test's backend with `status` and the JSON `text`.
fn h2_answer(respond: &mut h2::server::SendResponse<bytes::Bytes>, status: u16, text: String) {
    let res = http::Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(())
        .unwrap();
    if let Ok(mut stream) = respond.send_response(res, false) {
        let _ = stream.send_data(bytes::Bytes::from(text), true);
    }
}

/// [`front`] with the tests' usual settings (probes every 300 ms, alice authenticated only,
/// requests timing out after 20 s), with `v1.widgets.example.com` registered for the backends
/// `resolver` finds, whose serving certificate is `backend_ca` (PEM), and available.
async fn front_widgets(
    dir: &std::path::Path,
    resolver: StaticServiceResolver,
    backend_ca: &str,
) -> Fronted {
    let (_, fp_cert, fp_key) = front_proxy_pki();
    let fronted = front(
        dir,
        (fp_cert, fp_key),
        resolver,
        Duration::from_millis(300),
        &["system:authenticated"],
        Some(Duration::from_secs(20)),
    )
    .await;
    fronted.client.register_widgets("v1", backend_ca).await;
    fronted
        .client
        .wait_condition("v1.widgets.example.com", "True", "Passed")
        .await;
    fronted
}

/// Serves an aggregator (it also serves APIServices; everything allowed) that finds backends
/// through `resolver`, checks them every `check_interval`, and proxies with `front_proxy`
/// (client certificate PEM, key PEM); its token `admin-token` is user alice in `groups`. Its
/// certificates go under `dir`; the client's requests time out after `timeout`, if any.
async fn front(
    dir: &std::path::Path,
    front_proxy: (String, String),
    resolver: StaticServiceResolver,
    check_interval: Duration,
    groups: &[&str],
    timeout: Option<Duration>,
) -> Fronted {
    let (proxy_client_cert_pem, proxy_client_key_pem) = front_proxy;
    let aggregator = Arc::new(
        Aggregator::new(AggregatorOptions {
            proxy_client_cert_pem,
            proxy_client_key_pem,
            resolver: Arc::new(resolver),
            check_interval,
            replay_budget_bytes: apiserver_framework::aggregator::DEFAULT_REPLAY_BUDGET,
        })
        .unwrap(),
    );
    let server = Arc::new(
        GenericApiServer::builder("aggregator")
            .group(apiservice::group())
            .aggregator(aggregator.clone())
            .build(),
    );
    let controller = aggregator.start(&server);
    let agg_cert = ServingCert::self_signed(&dir.join("agg"), &["localhost".into()]).unwrap();
    let chain = Arc::new(HandlerChain::new(
        server,
        Arc::new(StaticTokenAuthenticator::new(
            "admin-token",
            UserInfo::new("alice", groups),
        )),
        Arc::new(apiserver_framework::authz::AllowAll),
    ));
    let agg = serve::RunningServer::start(
        TcpListener::bind("127.0.0.1:0").await.unwrap(),
        agg_cert.server_config().unwrap(),
        chain,
    )
    .unwrap();
    let mut http = reqwest::Client::builder().use_preconfigured_tls(
        apiserver_framework::testing::tls::http1_config(&agg_cert.ca_pem),
    );
    if let Some(timeout) = timeout {
        http = http.timeout(timeout);
    }
    let client = Client {
        http: http.build().unwrap(),
        base: format!("https://localhost:{}", agg.addr.port()),
    };
    Fronted {
        controller,
        agg,
        agg_ca: agg_cert.ca_pem,
        client,
    }
}

const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
const WIDGETS: &str = "/apis/widgets.example.com/v1/namespaces/default/widgets";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregator_fronts_a_backend() {
    tls::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let (fp_ca, fp_cert, fp_key) = front_proxy_pki();

    let backend = Backend {
        dir: dir.path().join("backend"),
        front_proxy_ca: fp_ca,
        seen: Arc::default(),
        openapi_asks: Arc::default(),
    };
    let running = backend.start("127.0.0.1:0".parse().unwrap()).await;
    let backend_addr = running.addr;
    let backend_ca = ServingCert::self_signed(&backend.dir, &[]).unwrap().ca_pem;

    let resolver = StaticServiceResolver::new().with("test", "backend", backend_addr.to_string());
    let Fronted {
        controller,
        agg,
        agg_ca,
        client,
    } = front(
        dir.path(),
        (fp_cert.clone(), fp_key.clone()),
        resolver,
        Duration::from_millis(500),
        &["dev", "system:authenticated"],
        None,
    )
    .await;

    // Register the backend and wait for it to become available.
    let res = client
        .req(
            reqwest::Method::POST,
            "/apis/apiregistration.k8s.io/v1/apiservices",
        )
        .json(&apiservice_body("v1", &backend_ca))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201, "{}", res.text().await.unwrap());
    let c = client
        .wait_condition("v1.widgets.example.com", "True", "Passed")
        .await;
    assert_eq!(c["message"], "all checks passed");
    assert!(c["lastTransitionTime"].is_string());

    // A local APIService is always available; a name other than <version>.<group> is invalid.
    let res = client
        .req(
            reqwest::Method::POST,
            "/apis/apiregistration.k8s.io/v1/apiservices",
        )
        .json(
            &json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": "v1.apiregistration.k8s.io"},
            "spec": {"group": "apiregistration.k8s.io", "version": "v1",
                "groupPriorityMinimum": 18000, "versionPriority": 15}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let c = client
        .wait_condition("v1.apiregistration.k8s.io", "True", "Local")
        .await;
    assert_eq!(c["message"], "Local APIServices are always available");
    let mut bad = apiservice_body("v1", &backend_ca);
    bad["metadata"]["name"] = "widgets".into();
    let res = client
        .req(
            reqwest::Method::POST,
            "/apis/apiregistration.k8s.io/v1/apiservices",
        )
        .json(&bad)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 422);

    // A wrong CA bundle (the aggregator's own CA) fails the discovery check.
    let res = client
        .req(
            reqwest::Method::POST,
            "/apis/apiregistration.k8s.io/v1/apiservices",
        )
        .json(&apiservice_body("v2", &agg_ca))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let c = client
        .wait_condition("v2.widgets.example.com", "False", "FailedDiscoveryCheck")
        .await;
    let message = c["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!(
            "failing or missing response from https://{backend_addr}/apis/widgets.example.com/v2"
        )),
        "{message}"
    );

    // Create, get and list through the aggregator; forged identity headers are replaced.
    backend.seen.lock().clear();
    let res = client
        .req(reqwest::Method::POST, WIDGETS)
        .header("x-remote-user", "mallory")
        .header("x-remote-group", "system:masters")
        .json(
            &json!({"apiVersion": "widgets.example.com/v1", "kind": "Widget",
            "metadata": {"name": "w1"}, "spec": {"size": 3}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201, "{}", res.text().await.unwrap());
    let seen = backend.seen.lock().clone();
    let alice = UserInfo::new("alice", &["dev", "system:authenticated"]);
    assert!(seen.contains(&alice), "{seen:?}");
    assert!(!seen.iter().any(|u| u.username == "mallory"), "{seen:?}");
    assert!(
        !seen
            .iter()
            .any(|u| u.username == "alice" && u.groups.iter().any(|g| g == "system:masters")),
        "{seen:?}"
    );
    let got = client
        .get_json(&format!("{WIDGETS}/w1"), "application/json")
        .await;
    assert_eq!(got["spec"]["size"], 3);
    let list = client.get_json(WIDGETS, "application/json").await;
    assert_eq!(list["kind"], "WidgetList");
    assert_eq!(list["items"][0]["metadata"]["name"], "w1");

    // A watch streams events through the proxy while it is open.
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let watch = client
        .req(
            reqwest::Method::GET,
            &format!("{WIDGETS}?watch=true&resourceVersion={rv}"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(watch.status(), 200);
    let mut stream = watch.bytes_stream();
    let res = client
        .req(reqwest::Method::POST, WIDGETS)
        .json(
            &json!({"apiVersion": "widgets.example.com/v1", "kind": "Widget",
            "metadata": {"name": "w2"}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let mut received = String::new();
    tokio::time::timeout(Duration::from_secs(10), async {
        while !received.contains("\"w2\"") {
            let chunk = stream.next().await.unwrap().unwrap();
            received.push_str(&String::from_utf8_lossy(&chunk));
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no event through the proxy: {received}"));
    assert!(received.contains("\"ADDED\""), "{received}");
    drop(stream);

    // Discovery and OpenAPI include the backend's group.
    let list = client
        .wait_doc("/apis", "application/json", |d| {
            d["groups"]
                .as_array()
                .is_some_and(|g| g.iter().any(|g| g["name"] == "widgets.example.com"))
        })
        .await;
    let group = list["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "widgets.example.com")
        .unwrap();
    assert_eq!(
        group["preferredVersion"]["groupVersion"],
        "widgets.example.com/v1"
    );
    assert_eq!(group["versions"].as_array().unwrap().len(), 1, "{group}");
    client
        .wait_doc("/apis", AGGREGATED, |d| {
            d["items"].as_array().is_some_and(|items| {
                items.iter().any(|g| {
                    g["metadata"]["name"] == "widgets.example.com"
                        && g["versions"][0]["freshness"] == "Current"
                        && g["versions"][0]["resources"][0]["resource"] == "widgets"
                })
            })
        })
        .await;
    let g = client
        .get_json("/apis/widgets.example.com", "application/json")
        .await;
    assert_eq!(g["kind"], "APIGroup");
    client
        .wait_doc("/openapi/v2", "application/json", |d| {
            d["paths"]
                .get("/apis/widgets.example.com/v1/namespaces/{namespace}/widgets")
                .is_some()
                && d["paths"]
                    .get("/apis/apiregistration.k8s.io/v1/apiservices")
                    .is_some()
        })
        .await;
    // Every pass after the first asks for the backend's OpenAPI v2 with the ETag it got, and
    // that ETag is the backend's current one: the backend answers 304 without the document.
    // The v3 document of the group-version is read once: the index names it by the same URL.
    let asks_for = |path: &str| -> Vec<Option<String>> {
        let asks = backend.openapi_asks.lock();
        asks.iter()
            .filter(|(p, _)| p == path)
            .map(|(_, e)| e.clone())
            .collect()
    };
    let three = wait::poll(
        "three asks for /openapi/v2",
        Duration::from_secs(10),
        || async {
            let asks = asks_for("/openapi/v2");
            if asks.len() >= 3 {
                Ok(asks)
            } else {
                Err(format!("{asks:?}"))
            }
        },
    )
    .await;
    // Fewer: the assertion below shows them.
    let asks = three.unwrap_or_else(|_| asks_for("/openapi/v2"));
    assert!(asks.len() >= 3, "{asks:?}");
    assert_eq!(asks[0], None, "{asks:?}");
    let etag = asks[1]
        .clone()
        .expect("the second pass sends If-None-Match");
    assert!(
        asks[1..].iter().all(|a| a.as_deref() == Some(&etag)),
        "{asks:?}"
    );
    assert!(asks_for("/openapi/v3").len() >= 3);
    assert_eq!(asks_for("/openapi/v3/apis/widgets.example.com/v1").len(), 1);
    let direct = reqwest::Client::builder()
        .use_preconfigured_tls(
            apiserver_framework::testing::tls::client_config_with_identity(
                &backend_ca,
                &format!("{fp_cert}{fp_key}"),
                apiserver_framework::testing::tls::HTTP1,
            ),
        )
        .resolve("backend.test.svc", backend_addr)
        .build()
        .unwrap();
    let ask = |etag: &str| {
        direct
            .get(format!(
                "https://backend.test.svc:{}/openapi/v2",
                backend_addr.port()
            ))
            .header("x-remote-user", "system:aggregator")
            .header("if-none-match", etag)
            .send()
    };
    assert_eq!(ask(&etag).await.unwrap().status(), 304);
    assert_eq!(ask("\"other\"").await.unwrap().status(), 200);
    let root = client
        .wait_doc("/openapi/v3", "application/json", |d| {
            d["paths"].get("apis/widgets.example.com/v1").is_some()
        })
        .await;
    let url = root["paths"]["apis/widgets.example.com/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap();
    let v3 = client.get_json(url, "application/json").await;
    assert!(
        v3["components"]["schemas"]
            .as_object()
            .unwrap()
            .keys()
            .any(|k| k.ends_with("Widget"))
    );

    // Backend down: not available, requests get 503.
    running.shutdown().await;
    let c = client
        .wait_condition("v1.widgets.example.com", "False", "FailedDiscoveryCheck")
        .await;
    assert!(
        apiserver_framework::testing::status_message(&c)
            .starts_with("failing or missing response from https://"),
        "{c}"
    );
    let res = client.send(reqwest::Method::GET, WIDGETS).await;
    assert_eq!(res.status(), 503);
    assert_eq!(res.text().await.unwrap(), "service unavailable\n");

    // Back on the same port: available again by itself.
    let running = backend.start(backend_addr).await;
    client
        .wait_condition("v1.widgets.example.com", "True", "Passed")
        .await;
    let got = client.get_json(WIDGETS, "application/json").await;
    assert_eq!(got["kind"], "WidgetList");

    controller.abort();
    running.shutdown().await;
    agg.shutdown().await;
}
