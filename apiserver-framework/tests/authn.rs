//! The delegated authentication chain over real HTTPS on loopback: front-proxy headers from
//! a trusted proxy certificate, x509 client certificates, forged headers, untrusted and
//! expired certificates, and a configuration swapped while serving.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use apiserver_framework::authn::delegated::{AuthSnapshot, RequestHeaderConfig};
use apiserver_framework::authn::{
    Authenticated, AuthenticationOptions, Authenticator, CaBundle, DelegatedAuthConfig,
    DelegatingAuthenticator, DelegatingOptions, PeerCertificates, TokenReviewError, TokenReviewer,
    client_cert_verifier, start_delegated_config,
};
use apiserver_framework::server::GenericApiServer;
use apiserver_framework::server::serve::{self, HandlerChain, RunningServer};
use apiserver_framework::testing::wait;
use apiserver_framework::tls::{self, ServingCert};
use apiserver_framework::user::UserInfo;
use futures::StreamExt;
use http::request::Parts;
use k8s_openapi::api::authentication::v1::{TokenReviewStatus, UserInfo as ReviewUser};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

/// A certificate authority that can issue client certificates.
struct Ca {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Ca {
    fn new(name: &str) -> Ca {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let pem = params.self_signed(&key).unwrap().pem();
        Ca {
            pem,
            issuer: Issuer::new(params, key),
        }
    }

    fn bundle(&self) -> CaBundle {
        CaBundle::from_pem(&self.pem).unwrap()
    }

    /// A client certificate (cert and key PEM) with this common name and organizations.
    fn client(&self, cn: &str, orgs: &[&str]) -> String {
        self.client_with(cn, orgs, |_| {})
    }

    fn client_with(
        &self,
        cn: &str,
        orgs: &[&str],
        edit: impl FnOnce(&mut CertificateParams),
    ) -> String {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        for o in orgs {
            params.distinguished_name.push(DnType::OrganizationName, *o);
        }
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        edit(&mut params);
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        format!("{}{}", cert.pem(), key.serialize_pem())
    }
}

/// Remembers what the authenticator concluded for the last request.
struct Recording {
    inner: DelegatingAuthenticator,
    last: Mutex<Option<Authenticated>>,
}

#[async_trait::async_trait]
impl Authenticator for Recording {
    async fn authenticate(&self, parts: &Parts) -> Authenticated {
        let outcome = self.inner.authenticate(parts).await;
        *self.last.lock().unwrap() = Some(outcome.clone());
        outcome
    }
}

struct Fixture {
    client_ca: Ca,
    proxy_ca: Ca,
    config: Arc<DelegatedAuthConfig>,
    recording: Arc<Recording>,
    server: RunningServer,
    url: String,
    serving_ca: String,
    _dir: tempfile::TempDir,
}

fn snapshot(client_ca: &Ca, proxy_ca: &Ca) -> AuthSnapshot {
    AuthSnapshot::new(
        client_ca.bundle(),
        RequestHeaderConfig {
            ca: proxy_ca.bundle(),
            allowed_names: vec!["front-proxy-client".into()],
            ..RequestHeaderConfig::default()
        },
    )
}

async fn serve() -> Fixture {
    tls::install_crypto_provider();
    let (client_ca, proxy_ca) = (Ca::new("client-ca"), Ca::new("front-proxy-ca"));
    let config = Arc::new(DelegatedAuthConfig::new(snapshot(&client_ca, &proxy_ca)));
    let recording = Arc::new(Recording {
        inner: DelegatingAuthenticator::new(config.clone(), None, DelegatingOptions::default()),
        last: Mutex::new(None),
    });
    let dir = tempfile::tempdir().unwrap();
    let serving = ServingCert::self_signed(dir.path(), &["127.0.0.1".into()]).unwrap();
    let resolver = Arc::new(rustls::sign::SingleCertAndKey::from(
        serving.certified_key().unwrap(),
    ));
    let tls_config =
        tls::server_config_with(resolver, client_cert_verifier(config.clone()), None).unwrap();
    let chain = Arc::new(HandlerChain::new(
        Arc::new(GenericApiServer::builder("authn").build()),
        recording.clone(),
        Arc::new(apiserver_framework::authz::AllowAll),
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = serve::RunningServer::start(listener, tls_config, chain).unwrap();
    Fixture {
        url: format!("https://{}", server.addr),
        client_ca,
        proxy_ca,
        config,
        recording,
        server,
        serving_ca: serving.ca_pem.clone(),
        _dir: dir,
    }
}

impl Fixture {
    /// GETs `/version` with an optional client certificate and headers; the status and what
    /// the authenticator concluded.
    async fn get(&self, identity: Option<&str>, headers: &[(&str, &str)]) -> (u16, Authenticated) {
        let tls = match identity {
            Some(pem) => apiserver_framework::testing::tls::client_config_with_identity(
                &self.serving_ca,
                pem,
                apiserver_framework::testing::tls::HTTP1,
            ),
            None => apiserver_framework::testing::tls::http1_config(&self.serving_ca),
        };
        let client = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .build()
            .unwrap();
        let mut req = client.get(format!("{}/version", self.url));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        *self.recording.last.lock().unwrap() = None;
        let status = req.send().await.unwrap().status().as_u16();
        let outcome = self.recording.last.lock().unwrap().take().unwrap();
        (status, outcome)
    }
}

fn user(name: &str, groups: &[&str]) -> Authenticated {
    Authenticated::User(UserInfo::new(name, groups))
}

fn anonymous() -> Authenticated {
    user("system:anonymous", &["system:unauthenticated"])
}

const ALICE_HEADERS: &[(&str, &str)] = &[
    ("X-Remote-User", "alice"),
    ("X-Remote-Group", "dev"),
    ("X-Remote-Group", "ops"),
    ("X-Remote-Extra-Example.com%2Fscopes", "read"),
];

#[tokio::test]
async fn a_trusted_front_proxy_asserts_the_user_with_headers() {
    let f = serve().await;
    let proxy = f.proxy_ca.client("front-proxy-client", &[]);
    let (status, outcome) = f.get(Some(&proxy), ALICE_HEADERS).await;
    assert_eq!(status, 200);
    let mut alice = UserInfo::new("alice", &["dev", "ops", "system:authenticated"]);
    alice.extra = BTreeMap::from([("example.com/scopes".into(), vec!["read".into()])]);
    assert_eq!(outcome, Authenticated::User(alice));

    // A trusted proxy that names no user is not a user either: its certificate is not from
    // the client CA, so the x509 authenticator refuses it (as upstream: 401, not anonymous).
    let (status, outcome) = f.get(Some(&proxy), &[("X-Remote-Group", "dev")]).await;
    assert_eq!((status, outcome), (401, Authenticated::Invalid));
    f.server.shutdown().await;
}

#[tokio::test]
async fn forged_headers_without_a_certificate_are_ignored() {
    let f = serve().await;
    let (status, outcome) = f
        .get(
            None,
            &[
                ("X-Remote-User", "admin"),
                ("X-Remote-Group", "system:masters"),
            ],
        )
        .await;
    assert_eq!((status, outcome), (200, anonymous()));
    f.server.shutdown().await;
}

#[tokio::test]
async fn a_front_proxy_certificate_with_a_name_not_allowed_is_refused() {
    let f = serve().await;
    let intruder = f.proxy_ca.client("intruder", &[]);
    let (status, outcome) = f.get(Some(&intruder), ALICE_HEADERS).await;
    assert_eq!((status, outcome), (401, Authenticated::Invalid));
    // Without headers too: the certificate is neither a trusted proxy nor a client-CA user.
    let (status, _) = f.get(Some(&intruder), &[]).await;
    assert_eq!(status, 401);
    f.server.shutdown().await;
}

#[tokio::test]
async fn certificates_from_unknown_authorities_or_expired_are_refused() {
    let f = serve().await;
    let stranger = Ca::new("unrelated-ca").client("front-proxy-client", &["system:masters"]);
    let (status, outcome) = f.get(Some(&stranger), ALICE_HEADERS).await;
    assert_eq!((status, outcome), (401, Authenticated::Invalid));
    let (status, _) = f.get(Some(&stranger), &[]).await;
    assert_eq!(status, 401);

    let expired = f.client_ca.client_with("bob", &["dev"], |p| {
        p.not_before = rcgen::date_time_ymd(2000, 1, 1);
        p.not_after = rcgen::date_time_ymd(2001, 1, 1);
    });
    let (status, outcome) = f.get(Some(&expired), &[]).await;
    assert_eq!((status, outcome), (401, Authenticated::Invalid));
    f.server.shutdown().await;
}

#[tokio::test]
async fn a_client_ca_certificate_names_the_user_and_groups() {
    let f = serve().await;
    let bob = f.client_ca.client("bob", &["dev"]);
    let (status, outcome) = f.get(Some(&bob), &[]).await;
    assert_eq!(
        (status, outcome),
        (200, user("bob", &["dev", "system:authenticated"]))
    );
    // A client-CA user cannot assert another user with headers.
    let (status, outcome) = f.get(Some(&bob), &[("X-Remote-User", "admin")]).await;
    assert_eq!(
        (status, outcome),
        (200, user("bob", &["dev", "system:authenticated"]))
    );
    f.server.shutdown().await;
}

#[tokio::test]
async fn a_swapped_configuration_applies_to_the_next_request() {
    let f = serve().await;
    let rotated = Ca::new("front-proxy-ca-2");
    let new_proxy = rotated.client("front-proxy-client", &[]);
    let old_proxy = f.proxy_ca.client("front-proxy-client", &[]);
    let (status, _) = f.get(Some(&new_proxy), ALICE_HEADERS).await;
    assert_eq!(status, 401);

    f.config.replace(snapshot(&f.client_ca, &rotated));
    let (status, outcome) = f.get(Some(&new_proxy), &[("X-Remote-User", "alice")]).await;
    assert_eq!(
        (status, outcome),
        (200, user("alice", &["system:authenticated"]))
    );
    let (status, _) = f.get(Some(&old_proxy), ALICE_HEADERS).await;
    assert_eq!(status, 401);

    // New header names take effect the same way.
    let mut renamed = snapshot(&f.client_ca, &rotated);
    renamed.request_header.username_headers = vec![http::HeaderName::from_static("x-proxy-user")];
    f.config
        .replace(AuthSnapshot::new(renamed.client_ca, renamed.request_header));
    let (status, outcome) = f.get(Some(&new_proxy), &[("X-Proxy-User", "carol")]).await;
    assert_eq!(
        (status, outcome),
        (200, user("carol", &["system:authenticated"]))
    );
    f.server.shutdown().await;
}

/// Records the CA hints the server sends and presents no certificate.
#[derive(Debug, Default)]
struct HintRecorder(Mutex<Vec<Vec<u8>>>);

impl rustls::client::ResolvesClientCert for HintRecorder {
    fn resolve(
        &self,
        root_hint_subjects: &[&[u8]],
        _sigschemes: &[rustls::SignatureScheme],
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        *self.0.lock().unwrap() = root_hint_subjects.iter().map(|s| s.to_vec()).collect();
        None
    }

    fn has_certs(&self) -> bool {
        true
    }
}

/// Connects without a certificate (the handshake must still succeed) and returns the CA
/// hints the server sent.
async fn hints(f: &Fixture, serving_ca: &str) -> Vec<Vec<u8>> {
    let roots = apiserver_framework::testing::tls::roots(serving_ca);
    let recorder = Arc::new(HintRecorder::default());
    let config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_client_cert_resolver(recorder.clone());
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(f.server.addr).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    connector.connect(name, tcp).await.unwrap();
    recorder.0.lock().unwrap().clone()
}

#[tokio::test]
async fn the_handshake_hints_the_currently_trusted_authorities() {
    let f = serve().await;
    let serving_ca = std::fs::read_to_string(f._dir.path().join("apiserver.crt")).unwrap();
    let expected = |s: &AuthSnapshot| -> Vec<Vec<u8>> {
        s.hint_subjects()
            .iter()
            .map(|d| d.as_ref().to_vec())
            .collect()
    };
    let before = hints(&f, &serving_ca).await;
    assert_eq!(before.len(), 2);
    assert_eq!(before, expected(&f.config.current()));

    f.config
        .replace(snapshot(&f.client_ca, &Ca::new("front-proxy-ca-2")));
    let after = hints(&f, &serving_ca).await;
    assert_eq!(after, expected(&f.config.current()));
    assert_eq!(after[0], before[0]);
    assert_ne!(after[1], before[1]);
    f.server.shutdown().await;
}

/// A token reviewer that counts its calls: `good-token` is `tina` in group `qa`, anything
/// else is rejected.
#[derive(Default)]
struct CountingTokenReviewer(std::sync::atomic::AtomicUsize);

#[async_trait::async_trait]
impl TokenReviewer for CountingTokenReviewer {
    async fn review(
        &self,
        token: &str,
        _audiences: &[String],
    ) -> Result<TokenReviewStatus, TokenReviewError> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(TokenReviewStatus {
            authenticated: Some(token == "good-token"),
            user: (token == "good-token").then(|| ReviewUser {
                username: Some("tina".into()),
                groups: Some(vec!["qa".into()]),
                ..Default::default()
            }),
            ..Default::default()
        })
    }
}

/// A request head carrying the DER chain of a PEM identity (as the listener hands it over)
/// and a bearer token.
fn parts(identity: Option<&str>, token: Option<&str>) -> Parts {
    let mut req = http::Request::builder().uri("/apis");
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let mut parts = req.body(()).unwrap().into_parts().0;
    if let Some(pem) = identity {
        let chain = tls::parse_certs(pem).unwrap();
        parts.extensions.insert(PeerCertificates(Arc::new(chain)));
    }
    parts
}

#[tokio::test]
async fn bearer_tokens_are_reviewed_after_certificates() {
    let (client_ca, proxy_ca) = (Ca::new("client-ca"), Ca::new("front-proxy-ca"));
    let config = Arc::new(DelegatedAuthConfig::new(snapshot(&client_ca, &proxy_ca)));
    let reviewer = Arc::new(CountingTokenReviewer::default());
    let authn = DelegatingAuthenticator::new(
        config,
        Some(reviewer.clone()),
        DelegatingOptions {
            anonymous: false,
            ..DelegatingOptions::default()
        },
    );
    let tina = user("tina", &["qa", "system:authenticated"]);
    assert_eq!(
        authn.authenticate(&parts(None, Some("good-token"))).await,
        tina
    );
    assert_eq!(
        authn.authenticate(&parts(None, Some("good-token"))).await,
        tina
    );
    assert_eq!(
        authn.authenticate(&parts(None, Some("bad"))).await,
        Authenticated::Invalid
    );
    assert_eq!(
        reviewer.0.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "answers are cached"
    );

    // Without anonymous, no credentials stay unauthenticated.
    assert_eq!(
        authn.authenticate(&parts(None, None)).await,
        Authenticated::NoCredentials
    );
    // The first authenticator finding a user wins over a bad token after it...
    let bob = client_ca.client("bob", &["dev"]);
    assert_eq!(
        authn.authenticate(&parts(Some(&bob), Some("bad"))).await,
        user("bob", &["dev", "system:authenticated"])
    );
    // ...and a good token wins over a certificate nobody trusts.
    let stranger = Ca::new("unrelated").client("eve", &[]);
    assert_eq!(
        authn
            .authenticate(&parts(Some(&stranger), Some("good-token")))
            .await,
        tina
    );
    assert_eq!(
        authn.authenticate(&parts(Some(&stranger), None)).await,
        Authenticated::Invalid
    );
}

/// The authentication ConfigMap as kube-apiserver publishes it.
fn auth_configmap(client_ca: &Ca, proxy_ca: &Ca, rv: u32) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "extension-apiserver-authentication",
            "namespace": "kube-system",
            "resourceVersion": rv.to_string(),
        },
        "data": {
            "client-ca-file": client_ca.pem,
            "requestheader-allowed-names": "[\"front-proxy-client\"]",
            "requestheader-client-ca-file": proxy_ca.pem,
            "requestheader-extra-headers-prefix": "[\"X-Remote-Extra-\"]",
            "requestheader-group-headers": "[\"X-Remote-Group\"]",
            "requestheader-username-headers": "[\"X-Remote-User\"]",
        }
    })
}

/// A stand-in for the host's API serving the authentication ConfigMap: get, list, and a
/// watch fed from a channel (one JSON event a line).
async fn fake_host(
    initial: serde_json::Value,
) -> (String, tokio::sync::mpsc::Sender<serde_json::Value>) {
    use axum::extract::{Query, State};
    use axum::routing::get;
    type Watchers = Arc<Mutex<Option<tokio::sync::mpsc::Receiver<serde_json::Value>>>>;
    let (events, receiver) = tokio::sync::mpsc::channel(8);
    let watchers: Watchers = Arc::new(Mutex::new(Some(receiver)));
    let one = initial.clone();
    let app = axum::Router::new()
        .route(
            "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication",
            get(move || async move { axum::Json(one) }),
        )
        .route(
            "/api/v1/namespaces/kube-system/configmaps",
            get(
                move |State(watchers): State<Watchers>,
                      Query(q): Query<BTreeMap<String, String>>| async move {
                    use axum::response::IntoResponse;
                    if q.get("watch").map(String::as_str) != Some("true") {
                        return axum::Json(serde_json::json!({
                            "apiVersion": "v1",
                            "kind": "ConfigMapList",
                            "metadata": {"resourceVersion": "1"},
                            "items": [initial],
                        }))
                        .into_response();
                    }
                    // One live watch; later watches stay open and silent.
                    let receiver = watchers.lock().unwrap().take();
                    let stream = futures::stream::unfold(receiver, |rx| async move {
                        let mut rx = rx?;
                        let event = rx.recv().await?;
                        let line = format!("{event}\n");
                        Some((Ok::<_, std::convert::Infallible>(line), Some(rx)))
                    })
                    .chain(futures::stream::pending());
                    axum::body::Body::from_stream(stream).into_response()
                },
            ),
        )
        .with_state(watchers);
    let url = apiserver_framework::testing::serve_http(app).await.unwrap();
    (url, events)
}

#[tokio::test]
async fn the_configmap_is_read_at_start_and_watched() {
    tls::install_crypto_provider();
    let (client_ca, proxy_ca, rotated) = (
        Ca::new("client-ca"),
        Ca::new("front-proxy-ca"),
        Ca::new("front-proxy-ca-2"),
    );
    let (url, events) = fake_host(auth_configmap(&client_ca, &proxy_ca, 1)).await;
    let client = kube::Client::try_from(kube::Config::new(url.parse().unwrap())).unwrap();
    let setup = start_delegated_config(&AuthenticationOptions::default(), Some(client))
        .await
        .unwrap();
    let authn =
        DelegatingAuthenticator::new(setup.config.clone(), None, DelegatingOptions::default());
    let old_proxy = proxy_ca.client("front-proxy-client", &[]);
    let new_proxy = rotated.client("front-proxy-client", &[]);
    let as_alice = |pem: &str| {
        let mut p = parts(Some(pem), None);
        p.headers.insert("x-remote-user", "alice".parse().unwrap());
        p
    };
    let alice = user("alice", &["system:authenticated"]);
    assert_eq!(authn.authenticate(&as_alice(&old_proxy)).await, alice);
    assert_eq!(
        authn.authenticate(&as_alice(&new_proxy)).await,
        Authenticated::Invalid
    );

    // The host rotates the front-proxy CA: the next request sees it, no restart.
    events
        .send(serde_json::json!({
            "type": "MODIFIED",
            "object": auth_configmap(&client_ca, &rotated, 2),
        }))
        .await
        .unwrap();
    wait::eventually(
        "the rotation to be applied",
        std::time::Duration::from_secs(10),
        || async { setup.config.current().request_header.ca.pem() == rotated.pem },
    )
    .await;
    assert_eq!(authn.authenticate(&as_alice(&new_proxy)).await, alice);
    assert_eq!(
        authn.authenticate(&as_alice(&old_proxy)).await,
        Authenticated::Invalid
    );
    setup.watch.unwrap().abort();
}

#[tokio::test]
async fn a_kube_client_posts_token_reviews() {
    use axum::routing::post;
    tls::install_crypto_provider();
    let seen = Arc::new(Mutex::new(None::<serde_json::Value>));
    let record = seen.clone();
    let app = axum::Router::new().route(
        "/apis/authentication.k8s.io/v1/tokenreviews",
        post(move |axum::Json(body): axum::Json<serde_json::Value>| async move {
            *record.lock().unwrap() = Some(body.clone());
            let mut answer = body;
            answer["status"] = serde_json::json!({
                "authenticated": true,
                "user": {"username": "tina", "uid": "42", "groups": ["qa"], "extra": {"k": ["v"]}},
                "audiences": ["api"],
            });
            (http::StatusCode::CREATED, axum::Json(answer))
        }),
    );
    let url = apiserver_framework::testing::serve_http(app).await.unwrap();
    let client = kube::Client::try_from(kube::Config::new(url.parse().unwrap())).unwrap();

    let authn = DelegatingAuthenticator::new(
        Arc::new(DelegatedAuthConfig::new(AuthSnapshot::default())),
        Some(Arc::new(client)),
        DelegatingOptions {
            audiences: vec!["api".into()],
            ..DelegatingOptions::default()
        },
    );
    let mut tina = UserInfo::new("tina", &["qa", "system:authenticated"]);
    tina.uid = "42".into();
    tina.extra = BTreeMap::from([("k".into(), vec!["v".into()])]);
    assert_eq!(
        authn.authenticate(&parts(None, Some("t0ken"))).await,
        Authenticated::User(tina)
    );
    let body = seen.lock().unwrap().take().unwrap();
    assert_eq!(body["apiVersion"], "authentication.k8s.io/v1");
    assert_eq!(body["kind"], "TokenReview");
    assert_eq!(
        body["spec"],
        serde_json::json!({"token": "t0ken", "audiences": ["api"]})
    );
}

#[tokio::test]
async fn an_unreachable_reviewer_gives_401_not_anonymous() {
    tls::install_crypto_provider();
    let client =
        kube::Client::try_from(kube::Config::new("http://127.0.0.1:1".parse().unwrap())).unwrap();
    let authn = DelegatingAuthenticator::new(
        Arc::new(DelegatedAuthConfig::new(AuthSnapshot::default())),
        Some(Arc::new(client)),
        DelegatingOptions::default(),
    );
    for _ in 0..2 {
        assert_eq!(
            authn.authenticate(&parts(None, Some("t0ken"))).await,
            Authenticated::Invalid
        );
    }
    // Without a token the caller is anonymous.
    assert_eq!(authn.authenticate(&parts(None, None)).await, anonymous());
}
