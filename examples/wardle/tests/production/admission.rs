//! Admission in production mode: the host's webhook configurations (a webhook server over TLS
//! with its own CA that labels and rejects Flunders), `matchPolicy` across Flunder's two
//! versions, `failurePolicy` with the webhook down, and `NamespaceLifecycle` against the host's
//! namespaces.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use reqwest::Method;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{Value, json};

use apiserver_framework::testing::wait;

use crate::stack::{Stack, TIMEOUT};
use crate::support::fixtures::{flunder, with_metadata};
use crate::support::prometheus::{parse, value};
use crate::watch_prefix::{audit_events, audited_stack};

/// The reviews a webhook server received: `(path, review)`.
type Seen = Arc<Mutex<Vec<(String, Value)>>>;

/// A webhook server on loopback: `/mutate` labels every object `admitted-by: webhook`
/// (JSONPatch), `/validate` denies objects named `rejected`, `/deny-marked` objects labelled
/// `mark: deny`, `/deny-all` every object; `/mutate-v1beta1` replaces the v1beta1-only field
/// `spec.fischerReference` and labels the object with the version it was sent in; `/warn`
/// denies objects named `rejected` and warns of every object, with an audit annotation
/// `decision`; `/saw-b` labels the object `a-saw-b` with whether it carries the label `b`
/// `/add-b` adds.
struct WebhookServer {
    addr: SocketAddr,
    ca_pem: String,
    seen: Seen,
    /// The `traceparent` header of each call that had one, with the call's path.
    traceparents: Arc<Mutex<Vec<(String, String)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for WebhookServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn answer(path: &str, review: &Value) -> Value {
    let request = &review["request"];
    let uid = request["uid"].clone();
    let response = match path {
        "/mutate" => {
            let has_labels = request["object"]["metadata"]["labels"].is_object();
            let patch = if has_labels {
                json!([{"op": "add", "path": "/metadata/labels/admitted-by", "value": "webhook"}])
            } else {
                json!([{"op": "add", "path": "/metadata/labels", "value": {"admitted-by": "webhook"}}])
            };
            let patch = base64::engine::general_purpose::STANDARD.encode(patch.to_string());
            json!({"uid": uid, "allowed": true, "patchType": "JSONPatch", "patch": patch})
        }
        "/mutate-v1beta1" => {
            // Only applies to a v1beta1 Flunder: v1alpha1 has no `spec.fischerReference`.
            let patch = json!([
                {"op": "replace", "path": "/spec/fischerReference", "value": "patched-in-v1beta1"},
                {"op": "add", "path": "/metadata/labels/mutated-in", "value": request["kind"]["version"]},
            ]);
            let patch = base64::engine::general_purpose::STANDARD.encode(patch.to_string());
            json!({"uid": uid, "allowed": true, "patchType": "JSONPatch", "patch": patch})
        }
        "/deny-marked" if request["object"]["metadata"]["labels"]["mark"] == "deny" => json!({
            "uid": uid, "allowed": false,
            "status": {"message": "marked flunder denied", "code": 403}
        }),
        "/saw-b" | "/add-b" => {
            let labels = &request["object"]["metadata"]["labels"];
            let (key, value) = match path {
                "/add-b" => ("b", "added".to_string()),
                _ => ("a-saw-b", (labels["b"] == "added").to_string()),
            };
            let patch = match labels.is_object() {
                true => {
                    json!([{"op": "add", "path": format!("/metadata/labels/{key}"), "value": value}])
                }
                false => json!([{"op": "add", "path": "/metadata/labels", "value": {key: value}}]),
            };
            let patch = base64::engine::general_purpose::STANDARD.encode(patch.to_string());
            json!({"uid": uid, "allowed": true, "patchType": "JSONPatch", "patch": patch})
        }
        "/warn" => {
            let name = request["name"].as_str().unwrap_or_default();
            let allowed = name != "rejected";
            json!({
                "uid": uid, "allowed": allowed,
                "status": {"message": "flunder name rejected", "code": 403},
                "warnings": [format!("flunder {name} looked at by the webhook")],
                "auditAnnotations": {"decision": if allowed { "allowed" } else { "denied" }},
            })
        }
        "/deny-all" => json!({
            "uid": uid, "allowed": false,
            "status": {"message": "every flunder denied", "code": 403}
        }),
        _ if request["name"] == "rejected" => json!({
            "uid": uid, "allowed": false,
            "status": {"message": "flunder name rejected", "code": 403}
        }),
        _ => json!({"uid": uid, "allowed": true}),
    };
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
}

async fn start_webhook_server() -> WebhookServer {
    apiserver_framework::tls::install_crypto_provider();
    let ca_key = KeyPair::generate().expect("key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "webhook-test-ca");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).expect("CA");
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().expect("key");
    let params = CertificateParams::new(vec!["127.0.0.1".to_string()]).expect("params");
    let cert = params.signed_by(&key, &issuer).expect("sign");
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(cert.der().to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .expect("a TLS configuration");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    let seen: Seen = Arc::default();
    let recorded = seen.clone();
    let traceparents: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let parents = traceparents.clone();
    let task = tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            let seen = recorded.clone();
            let parents = parents.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let seen = seen.clone();
                    let parents = parents.clone();
                    async move {
                        let path = req.uri().path().to_string();
                        if let Some(parent) = req.headers().get("traceparent") {
                            let parent = parent.to_str().unwrap_or_default().to_string();
                            parents.lock().unwrap().push((path.clone(), parent));
                        }
                        let body = req.into_body().collect().await.map(|b| b.to_bytes());
                        let review: Value = body
                            .ok()
                            .and_then(|b| serde_json::from_slice(&b).ok())
                            .unwrap_or(Value::Null);
                        let reply = answer(&path, &review);
                        seen.lock().unwrap().push((path, review));
                        Ok::<_, Infallible>(
                            hyper::Response::builder()
                                .header("content-type", "application/json")
                                .body(Full::new(bytes::Bytes::from(reply.to_string())))
                                .unwrap(),
                        )
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    WebhookServer {
        addr,
        ca_pem: ca_cert.pem(),
        seen,
        traceparents,
        task,
    }
}

fn webhook(name: &str, url: &str, ca_pem: &str, extra: Value) -> Value {
    let mut hook = json!({
        "name": name,
        "clientConfig": {
            "url": url,
            "caBundle": base64::engine::general_purpose::STANDARD.encode(ca_pem),
        },
        "rules": [{
            "operations": ["CREATE"],
            "apiGroups": ["wardle.example.com"],
            "apiVersions": ["v1alpha1"],
            "resources": ["flunders"],
        }],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    if let (Some(h), Some(e)) = (hook.as_object_mut(), extra.as_object()) {
        h.extend(e.clone());
    }
    hook
}

/// Creates a webhook configuration on the host as its admin.
async fn configure(stack: &Stack, plural: &str, name: &str, webhooks: Vec<Value>) {
    let kind = if plural.starts_with("mutating") {
        "MutatingWebhookConfiguration"
    } else {
        "ValidatingWebhookConfiguration"
    };
    let body = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": webhooks,
    });
    let url = format!(
        "{}/apis/admissionregistration.k8s.io/v1/{plural}",
        stack.host_url()
    );
    let (code, text) = stack.send_as("admin", Method::POST, &url, Some(body)).await;
    assert_eq!(code, 201, "{text}");
}

/// Creates a MutatingWebhookConfiguration on the host as its admin.
async fn mutating(stack: &Stack, name: &str, webhooks: Vec<Value>) {
    configure(stack, "mutatingwebhookconfigurations", name, webhooks).await
}

/// Creates a ValidatingWebhookConfiguration on the host as its admin.
async fn validating(stack: &Stack, name: &str, webhooks: Vec<Value>) {
    configure(stack, "validatingwebhookconfigurations", name, webhooks).await
}

/// The webhook server, a stack with no flags, and the webhook server's base URL.
async fn webhook_stack() -> (WebhookServer, Stack, String) {
    let server = start_webhook_server().await;
    let stack = Stack::start(&[]).await;
    let base = format!("https://{}", server.addr);
    (server, stack, base)
}

/// Creates a Flunder in `namespace` through the host as alice.
async fn create(stack: &Stack, namespace: &str, body: Value) -> (u16, Value) {
    create_in(stack, "v1alpha1", namespace, body).await
}

/// Creates a Flunder in `namespace` through the host as alice, sent to `version`.
async fn create_in(stack: &Stack, version: &str, namespace: &str, body: Value) -> (u16, Value) {
    let url = format!(
        "{}/apis/wardle.example.com/{version}/namespaces/{namespace}/flunders",
        stack.host_url()
    );
    let (code, text) = stack.send_as("alice", Method::POST, &url, Some(body)).await;
    let value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    (code, value)
}

/// Creates `probe-<n>` Flunders until `done` accepts the answer (wardle has seen the host's
/// change); returns that answer.
async fn until(stack: &Stack, labels: Value, done: impl Fn(u16, &Value) -> bool) -> (u16, Value) {
    let mut n = 0;
    wait::poll("wardle to see the host's change", TIMEOUT, || {
        let probe = with_metadata(flunder(&format!("probe-{n}")), "labels", labels.clone());
        n += 1;
        let done = &done;
        async move {
            let (code, body) = create(stack, "default", probe).await;
            if done(code, &body) {
                Ok((code, body))
            } else {
                Err(format!("{code} {body}"))
            }
        }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"))
}

/// A mutating webhook labels Flunders through a JSON patch; a validating one rejects a Flunder
/// by name with upstream's message; both see the caller and the request as upstream sends it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_of_the_host_mutate_and_reject_flunders() {
    let (server, stack, base) = webhook_stack().await;
    mutating(
        &stack,
        "label-flunders",
        vec![webhook(
            "label.wardle.test",
            &format!("{base}/mutate"),
            &server.ca_pem,
            json!({}),
        )],
    )
    .await;
    validating(
        &stack,
        "deny-flunders",
        vec![webhook(
            "deny.wardle.test",
            &format!("{base}/validate"),
            &server.ca_pem,
            json!({}),
        )],
    )
    .await;
    until(&stack, json!({}), |code, b| {
        code == 201 && b["metadata"]["labels"]["admitted-by"] == "webhook"
    })
    .await;

    let (code, body) = create(
        &stack,
        "default",
        with_metadata(flunder("one"), "labels", json!({"keep": "me"})),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        body["metadata"]["labels"],
        json!({"keep": "me", "admitted-by": "webhook"})
    );

    let (code, body) = create(
        &stack,
        "default",
        with_metadata(flunder("rejected"), "labels", json!({})),
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "admission webhook \"deny.wardle.test\" denied the request: flunder name rejected"
    );
    let (code, _) = create(
        &stack,
        "default",
        with_metadata(flunder("rejected"), "labels", json!({})),
    )
    .await;
    assert_eq!(code, 403, "a rejected Flunder is not stored");

    // A webhook with side effects refuses dry runs it would be called for.
    validating(
        &stack,
        "side-effects",
        vec![webhook(
            "effects.wardle.test",
            &format!("{base}/validate"),
            &server.ca_pem,
            json!({"sideEffects": "Some", "objectSelector": {"matchLabels": {"effects": "yes"}}}),
        )],
    )
    .await;
    let url = format!(
        "{}/apis/wardle.example.com/v1alpha1/namespaces/default/flunders?dryRun=All",
        stack.host_url()
    );
    let (code, text) = wait::poll("the dry run to be refused", TIMEOUT, || async {
        let (code, text) = stack
            .send_as(
                "alice",
                Method::POST,
                &url,
                Some(with_metadata(
                    flunder("dry"),
                    "labels",
                    json!({"effects": "yes"}),
                )),
            )
            .await;
        if code != 201 {
            Ok((code, text))
        } else {
            Err(format!("{code} {text}"))
        }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(code, 400, "{text}");
    let body: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(
        body["message"],
        "admission webhook \"effects.wardle.test\" does not support dry run"
    );
    let (code, body) = create(
        &stack,
        "default",
        with_metadata(flunder("wet"), "labels", json!({"effects": "yes"})),
    )
    .await;
    assert_eq!(code, 201, "without dry run it is called: {body}");

    let seen = server.seen.lock().unwrap().clone();
    let (_, review) = seen
        .iter()
        .find(|(path, r)| path == "/validate" && r["request"]["name"] == "one")
        .expect("the validating webhook saw Flunder one");
    let request = &review["request"];
    assert_eq!(review["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(review["kind"], "AdmissionReview");
    assert_eq!(request["operation"], "CREATE");
    assert_eq!(request["namespace"], "default");
    assert_eq!(
        request["resource"],
        json!({"group": "wardle.example.com", "version": "v1alpha1", "resource": "flunders"})
    );
    assert_eq!(request["kind"]["kind"], "Flunder");
    assert_eq!(request["userInfo"]["username"], "alice");
    assert_eq!(
        request["object"]["metadata"]["labels"]["admitted-by"], "webhook",
        "validating webhooks see the mutated object"
    );
    assert!(
        seen.iter()
            .all(|(_, r)| r["request"]["uid"].as_str().is_some_and(|u| !u.is_empty()))
    );
}

/// Rules for Flunder creates in `v1beta1` only.
fn v1beta1_rules() -> Value {
    json!([{
        "operations": ["CREATE"],
        "apiGroups": ["wardle.example.com"],
        "apiVersions": ["v1beta1"],
        "resources": ["flunders"],
    }])
}

/// The `GroupVersionKind` and `GroupVersionResource` of Flunders in `version`, as a review
/// names them.
fn flunders_in(version: &str) -> (Value, Value) {
    (
        json!({"group": "wardle.example.com", "version": version, "kind": "Flunder"}),
        json!({"group": "wardle.example.com", "version": version, "resource": "flunders"}),
    )
}

/// The last review a webhook path received for the Flunder `name`.
fn review_of(server: &WebhookServer, path: &str, name: &str) -> Value {
    let seen = server.seen.lock().unwrap();
    seen.iter()
        .rev()
        .find(|(p, r)| p == path && r["request"]["name"] == name)
        .map(|(_, r)| r["request"].clone())
        .unwrap_or_else(|| panic!("{path} never saw Flunder {name}"))
}

/// A validating webhook registered for `v1beta1` without a `matchPolicy` (v1's default,
/// `Equivalent`) is called for a create sent to `v1alpha1` and refuses it; it gets the Flunder
/// converted to `v1beta1`, with `kind`/`resource` naming `v1beta1` and
/// `requestKind`/`requestResource` naming `v1alpha1`. The same webhook under
/// `matchPolicy: Exact` is called only for creates sent to `v1beta1`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_for_v1beta1_sees_creates_sent_to_v1alpha1_unless_exact() {
    let (server, stack, base) = webhook_stack().await;
    validating(
        &stack,
        "v1beta1-validators",
        vec![
            webhook(
                "equivalent.wardle.test",
                &format!("{base}/deny-marked"),
                &server.ca_pem,
                json!({"rules": v1beta1_rules()}),
            ),
            webhook(
                "exact.wardle.test",
                &format!("{base}/deny-all"),
                &server.ca_pem,
                json!({"rules": v1beta1_rules(), "matchPolicy": "Exact"}),
            ),
        ],
    )
    .await;
    // Both webhooks are in one configuration: once the first is seen, so is the second.
    let (code, body) = until(&stack, json!({"mark": "deny"}), |code, _| code != 201).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "admission webhook \"equivalent.wardle.test\" denied the request: marked flunder denied"
    );
    // The last review of the path is the one of the refused create.
    let request = server
        .seen
        .lock()
        .unwrap()
        .iter()
        .rev()
        .find(|(path, _)| path == "/deny-marked")
        .map(|(_, r)| r["request"].clone())
        .expect("/deny-marked was called");
    let (beta_kind, beta_resource) = flunders_in("v1beta1");
    let (alpha_kind, alpha_resource) = flunders_in("v1alpha1");
    assert_eq!(request["kind"], beta_kind);
    assert_eq!(request["resource"], beta_resource);
    assert_eq!(request["requestKind"], alpha_kind);
    assert_eq!(request["requestResource"], alpha_resource);
    let object = &request["object"];
    assert_eq!(object["apiVersion"], "wardle.example.com/v1beta1");
    assert_eq!(object["kind"], "Flunder");
    assert_eq!(
        (
            &object["spec"]["fischerReference"],
            &object["spec"]["reference"]
        ),
        (&json!("x"), &Value::Null),
        "the object is in v1beta1's shape: {object}"
    );
    assert_eq!(object["metadata"]["labels"]["mark"], "deny");

    // The Exact webhook, which denies everything, is not called for v1alpha1 ...
    let (code, body) = create(
        &stack,
        "default",
        with_metadata(flunder("unmarked"), "labels", json!({})),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    // ... and is for v1beta1 (once the host routes it).
    let beta = json!({
        "apiVersion": "wardle.example.com/v1beta1",
        "kind": "Flunder",
        "metadata": {"name": "sent-to-v1beta1"},
        "spec": {"fischerReference": "x", "referenceType": "Fischer"}
    });
    let (code, body) = wait::poll("the host to route v1beta1", TIMEOUT, || async {
        let (code, body) = create_in(&stack, "v1beta1", "default", beta.clone()).await;
        if !matches!(code, 404 | 503) {
            Ok((code, body))
        } else {
            Err(format!("{code} {body}"))
        }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "admission webhook \"exact.wardle.test\" denied the request: every flunder denied"
    );
    let exact: Vec<Value> = server
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(path, _)| path == "/deny-all")
        .map(|(_, r)| r["request"].clone())
        .collect();
    assert!(!exact.is_empty());
    for request in &exact {
        assert_eq!(request["requestKind"], beta_kind, "{request}");
        assert_eq!(request["kind"], beta_kind, "{request}");
    }
}

/// A mutating webhook registered for `v1beta1` mutates a create sent to `v1alpha1`: its JSON
/// patch, which only applies to a v1beta1 Flunder, is applied to the object in v1beta1, and the
/// stored object, read in v1alpha1, shows the change converted back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mutating_webhook_for_v1beta1_mutates_creates_sent_to_v1alpha1() {
    let (server, stack, base) = webhook_stack().await;
    mutating(
        &stack,
        "v1beta1-mutators",
        vec![webhook(
            "beta.wardle.test",
            &format!("{base}/mutate-v1beta1"),
            &server.ca_pem,
            json!({"rules": v1beta1_rules()}),
        )],
    )
    .await;
    let (code, body) = until(&stack, json!({}), |code, b| {
        code != 201 || b["metadata"]["labels"]["mutated-in"] == "v1beta1"
    })
    .await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["apiVersion"], "wardle.example.com/v1alpha1");
    assert_eq!(body["spec"]["reference"], "patched-in-v1beta1", "{body}");
    assert_eq!(body["spec"]["referenceType"], "Fischer", "{body}");
    let name = body["metadata"]["name"].as_str().expect("a name");

    let url = format!(
        "{}/apis/wardle.example.com/v1alpha1/namespaces/default/flunders/{name}",
        stack.host_url()
    );
    let (code, text) = stack
        .as_bearer(&stack.client(), Method::GET, &url, &stack.token("alice"))
        .await;
    assert_eq!(code, 200, "{text}");
    let stored: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(
        stored["spec"]["reference"], "patched-in-v1beta1",
        "{stored}"
    );
    assert_eq!(stored["metadata"]["labels"]["mutated-in"], "v1beta1");

    let request = review_of(&server, "/mutate-v1beta1", name);
    assert_eq!(request["kind"], flunders_in("v1beta1").0);
    assert_eq!(request["requestKind"], flunders_in("v1alpha1").0);
    assert_eq!(
        request["object"]["apiVersion"],
        "wardle.example.com/v1beta1"
    );
    assert_eq!(request["object"]["spec"]["fischerReference"], "x");
}

/// With its webhook down, `failurePolicy: Fail` refuses the request and `Ignore` admits it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failure_policy_decides_when_the_webhook_is_down() {
    let stack = Stack::start(&[]).await;
    let down = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("https://{}/validate", down.local_addr().expect("address"));
    drop(down);
    let ca = &stack.host.files.ca_pem;
    validating(
        &stack,
        "down",
        vec![
            webhook("fail.wardle.test", &url, ca, json!({
                "failurePolicy": "Fail",
                "objectSelector": {"matchLabels": {"policy": "fail"}},
            })),
            webhook("ignore.wardle.test", &url, ca, json!({
                "failurePolicy": "Ignore",
                "timeoutSeconds": 2,
                "objectSelector": {"matchExpressions": [{"key": "policy", "operator": "In", "values": ["ignore"]}]},
            })),
        ],
    )
    .await;
    let (code, body) = until(&stack, json!({"policy": "fail"}), |code, _| code != 201).await;
    assert_eq!(code, 500, "{body}");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("Internal error occurred: failed calling webhook \"fail.wardle.test\": failed to call webhook: Post "),
        "{message}"
    );
    let (code, body) = create(
        &stack,
        "default",
        with_metadata(flunder("ignored"), "labels", json!({"policy": "ignore"})),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let (code, body) = create(
        &stack,
        "default",
        with_metadata(flunder("unselected"), "labels", json!({})),
    )
    .await;
    assert_eq!(code, 201, "{body}");
}

/// Creating a Flunder in a namespace the host lacks is refused with upstream's 404; once the
/// host has it, the create succeeds; a terminating namespace refuses new content with 403. The
/// host runs the plugin on its own objects too: no ConfigMap in a namespace it lacks, and
/// `default` may not be deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_lifecycle_follows_the_host() {
    let stack = Stack::start(&[]).await;
    let (code, body) = create(
        &stack,
        "nowhere",
        with_metadata(flunder("lost"), "labels", json!({})),
    )
    .await;
    assert_eq!(code, 404, "{body}");
    assert_eq!(body["message"], "namespaces \"nowhere\" not found");
    assert_eq!(body["reason"], "NotFound");
    assert_eq!(body["details"]["kind"], "namespaces");

    let admin = stack.token("admin");
    let client = stack.client();
    let namespaces = format!("{}/api/v1/namespaces", stack.host_url());
    // The host runs the plugin over its own objects as a cluster does: no ConfigMap in a
    // namespace it lacks, no deleting `default`.
    let (code, text) = stack
        .send_as(
            "admin",
            Method::POST,
            &format!("{namespaces}/nowhere/configmaps"),
            Some(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})),
        )
        .await;
    assert_eq!(code, 404, "{text}");
    let s: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(s["message"], "namespaces \"nowhere\" not found");
    assert_eq!(
        s["details"],
        json!({"name": "nowhere", "kind": "namespaces"})
    );
    let (code, text) = stack
        .as_bearer(
            &client,
            Method::DELETE,
            &format!("{namespaces}/default"),
            &admin,
        )
        .await;
    assert_eq!(code, 403, "{text}");
    let s: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(
        s["message"],
        "namespaces \"default\" is forbidden: this namespace may not be deleted"
    );
    for ns in ["nowhere", "ending"] {
        let (code, text) = stack
            .send_as(
                "admin",
                Method::POST,
                &namespaces,
                Some(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})),
            )
            .await;
        assert_eq!(code, 201, "{text}");
    }
    let (code, body) = create(
        &stack,
        "nowhere",
        with_metadata(flunder("found"), "labels", json!({})),
    )
    .await;
    assert_eq!(code, 201, "{body}");

    let (code, text) = stack
        .as_bearer(
            &client,
            Method::GET,
            &format!("{namespaces}/ending"),
            &admin,
        )
        .await;
    assert_eq!(code, 200, "{text}");
    let mut ns: Value = serde_json::from_str(&text).expect("JSON");
    ns["status"] = json!({"phase": "Terminating"});
    let (code, text) = stack
        .send_as(
            "admin",
            Method::PUT,
            &format!("{namespaces}/ending/status"),
            Some(ns),
        )
        .await;
    assert_eq!(code, 200, "{text}");
    let (code, body) = wait::poll("the create in ending to be refused", TIMEOUT, || async {
        let (code, body) = create(
            &stack,
            "ending",
            with_metadata(flunder("late"), "labels", json!({})),
        )
        .await;
        if code != 201 {
            return Ok((code, body));
        }
        let url = format!(
            "{}/apis/wardle.example.com/v1alpha1/namespaces/ending/flunders/late",
            stack.host_url()
        );
        stack.as_bearer(&client, Method::DELETE, &url, &admin).await;
        Err(format!("{code} {body}"))
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "flunders.wardle.example.com \"late\" is forbidden: unable to create new content in namespace ending because it is being terminated"
    );
    assert_eq!(
        body["details"]["causes"][0]["reason"],
        "NamespaceTerminating"
    );
}

/// `--disable-admission-plugins` turns a plugin off: without NamespaceLifecycle a Flunder may
/// be created in a namespace the host lacks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disabled_plugins_do_not_run() {
    let stack = Stack::start(&["--disable-admission-plugins=NamespaceLifecycle"]).await;
    let (code, body) = create(
        &stack,
        "nowhere",
        with_metadata(flunder("lost"), "labels", json!({})),
    )
    .await;
    assert_eq!(code, 201, "{body}");
}

/// Creates Flunder `name` in `default` with kubectl as alice through the host: its output.
fn kubectl_create(stack: &Stack, name: &str) -> std::process::Output {
    let file = stack.path(&format!("{name}.json"));
    std::fs::write(&file, flunder(name).to_string()).expect("the Flunder's file");
    let file = file.display().to_string();
    stack.kubectl("alice", &["create", "-n", "default", "-f", &file])
}

/// A webhook's `warnings` reach kubectl, whether it allows the write or denies it, and its
/// `auditAnnotations` wardle's audit event under `<webhook name>/<key>`, as upstream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_warnings_reach_kubectl_and_annotations_the_audit_log() {
    let server = start_webhook_server().await;
    let (stack, audit) = audited_stack().await;
    let url = format!("https://{}/warn", server.addr);
    validating(
        &stack,
        "warn-flunders",
        vec![webhook("warn.wardle.test", &url, &server.ca_pem, json!({}))],
    )
    .await;
    let mut n = 0;
    wait::poll("wardle to call the webhook", TIMEOUT, || {
        let name = format!("probe-{n}");
        n += 1;
        let out = kubectl_create(&stack, &name);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        async move {
            match stderr.contains("looked at by the webhook") {
                true => Ok(()),
                false => Err(stderr),
            }
        }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));

    let out = kubectl_create(&stack, "warned");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("Warning: flunder warned looked at by the webhook"),
        "{stderr}"
    );
    let out = kubectl_create(&stack, "rejected");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("Warning: flunder rejected looked at by the webhook")
            && stderr.contains(
                "admission webhook \"warn.wardle.test\" denied the request: flunder name rejected"
            ),
        "{stderr}"
    );

    let created = |name: &'static str| {
        move |e: &Value| e["verb"] == "create" && e["objectRef"]["name"] == name
    };
    let events = audit_events(audit.path(), 1, created("warned")).await;
    assert_eq!(
        events[0]["annotations"]["warn.wardle.test/decision"], "allowed",
        "{}",
        events[0]
    );
    let events = audit_events(audit.path(), 1, created("rejected")).await;
    assert_eq!(
        events[0]["annotations"]["warn.wardle.test/decision"], "denied",
        "{}",
        events[0]
    );
    assert_eq!(events[0]["responseStatus"]["code"], 403, "{}", events[0]);
}

/// A mutating webhook with `reinvocationPolicy: IfNeeded` is called again after a later one
/// changed the object, and sees that change; one with the default policy (`Never`) is not, as
/// upstream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_if_needed_webhook_is_reinvoked_and_sees_the_later_change() {
    let (server, stack, base) = webhook_stack().await;
    // Configurations run in name order: `a-` first.
    mutating(
        &stack,
        "a-saw-b",
        vec![webhook(
            "saw-b.wardle.test",
            &format!("{base}/saw-b"),
            &server.ca_pem,
            json!({"reinvocationPolicy": "IfNeeded"}),
        )],
    )
    .await;
    mutating(
        &stack,
        "b-add-b",
        vec![webhook(
            "add-b.wardle.test",
            &format!("{base}/add-b"),
            &server.ca_pem,
            json!({}),
        )],
    )
    .await;
    let (code, body) = until(&stack, json!({}), |code, b| {
        code == 201 && b["metadata"]["labels"]["b"] == "added"
    })
    .await;
    assert_eq!(
        body["metadata"]["labels"]["a-saw-b"], "true",
        "{code} {body}"
    );

    let calls = |path: &str, name: &str| {
        server
            .seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(p, r)| p == path && r["request"]["name"] == name)
            .map(|(_, r)| r["request"]["object"]["metadata"]["labels"].clone())
            .collect::<Vec<_>>()
    };
    let name = body["metadata"]["name"]
        .as_str()
        .expect("a name")
        .to_string();
    let saw_b = calls("/saw-b", &name);
    assert_eq!(saw_b.len(), 2, "called twice: {saw_b:?}");
    assert_eq!(saw_b[0]["b"], Value::Null, "{saw_b:?}");
    assert_eq!(saw_b[1]["b"], "added", "{saw_b:?}");
    assert_eq!(calls("/add-b", &name).len(), 1, "Never: called once");
}

/// A webhook's `matchConditions` decide whether it is called, as upstream's: one that is false
/// skips it (the webhook server never sees the request), and one that fails to evaluate
/// refuses the write with 403 under `failurePolicy: Fail`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn match_conditions_decide_whether_a_webhook_is_called() {
    let (server, stack, base) = webhook_stack().await;
    let gated = "has(object.metadata.labels) && 'gated' in object.metadata.labels";
    let broken = "!has(object.metadata.labels) || !('broken' in object.metadata.labels) \
                  || object.spec.missing == 'x'";
    validating(
        &stack,
        "conditions",
        vec![webhook(
            "gated.wardle.test",
            &format!("{base}/deny-all"),
            &server.ca_pem,
            json!({"matchConditions": [
                {"name": "gated-only", "expression": gated},
                {"name": "broken-when-asked", "expression": broken},
            ]}),
        )],
    )
    .await;
    // Once wardle sees the configuration, a gated Flunder reaches the webhook, which denies it.
    let (_, denied) = until(&stack, json!({"gated": "yes"}), |code, _| code == 403).await;
    assert_eq!(
        denied["message"],
        "admission webhook \"gated.wardle.test\" denied the request: every flunder denied",
        "{denied}"
    );
    // One without the label is created, and the webhook never heard of it.
    let (code, body) = create(&stack, "default", flunder("ungated")).await;
    assert_eq!(code, 201, "{body}");
    let calls = |name: &str| {
        server
            .seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, r)| r["request"]["name"] == name)
            .count()
    };
    assert_eq!(calls("ungated"), 0, "a false condition skips the webhook");
    // A condition that cannot be evaluated (no `spec.missing`) fails closed.
    let labels = json!({"gated": "yes", "broken": "yes"});
    let labelled = with_metadata(flunder("broken"), "labels", labels);
    let (code, body) = create(&stack, "default", labelled).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(body["reason"], "Forbidden");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("flunders.wardle.example.com \"broken\" is forbidden: expression ")
            && message.contains("resulted in error"),
        "{message}"
    );
    assert_eq!(
        calls("broken"),
        0,
        "the webhook is not called when its conditions fail"
    );

    // Wardle's metrics count it all as upstream's admission metrics do.
    let url = format!("{}/metrics", stack.wardle_url());
    let (code, text) = stack.send_as("admin", Method::GET, &url, None).await;
    assert_eq!(code, 200, "{text}");
    let samples = parse(&text);
    let gated = |more: &[(&'static str, &'static str)]| {
        let mut labels = vec![("name", "gated.wardle.test")];
        labels.extend_from_slice(more);
        labels
    };
    let conditions = gated(&[
        ("kind", "webhook"),
        ("type", "validating"),
        ("operation", "CREATE"),
    ]);
    assert!(
        value(
            &samples,
            "apiserver_admission_match_condition_exclusions_total",
            &conditions
        ) >= 1.0,
        "the ungated Flunder was excluded"
    );
    assert_eq!(
        value(
            &samples,
            "apiserver_admission_match_condition_evaluation_errors_total",
            &conditions
        ),
        1.0,
        "the broken condition"
    );
    let denials = gated(&[
        ("type", "validating"),
        ("operation", "CREATE"),
        ("code", "403"),
        ("rejected", "true"),
    ]);
    assert!(
        value(
            &samples,
            "apiserver_admission_webhook_request_total",
            &denials
        ) >= 1.0
    );
    let rejection = gated(&[
        ("type", "validating"),
        ("operation", "CREATE"),
        ("error_type", "no_error"),
        ("rejection_code", "403"),
    ]);
    assert!(
        value(
            &samples,
            "apiserver_admission_webhook_rejection_count",
            &rejection
        ) >= 1.0
    );
    let latency = gated(&[
        ("type", "validating"),
        ("operation", "CREATE"),
        ("rejected", "true"),
    ]);
    assert!(
        value(
            &samples,
            "apiserver_admission_webhook_admission_duration_seconds_count",
            &latency
        ) >= 1.0
    );
}

/// A webhook's `matchConditions` may ask wardle's authorizer (the host's SubjectAccessReview):
/// a webhook gated on a permission alice lacks (deleting the host's nodes) is not called for
/// her writes; one gated on a permission she has (deleting the Flunder she creates,
/// `authorizer.requestResource`) is, and denies it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn match_conditions_ask_the_authorizer() {
    let (server, stack, base) = webhook_stack().await;
    let labelled = "has(object.metadata.labels) && 'authz' in object.metadata.labels";
    let gate = |name: &str, expression: &str| {
        json!({"matchConditions": [
            {"name": "labelled", "expression": labelled},
            {"name": name, "expression": expression},
        ]})
    };
    validating(
        &stack,
        "authorized-conditions",
        vec![
            webhook(
                "node-deleters.wardle.test",
                &format!("{base}/node-deleters"),
                &server.ca_pem,
                gate(
                    "may-delete-nodes",
                    "authorizer.group('').resource('nodes').check('delete').allowed()",
                ),
            ),
            webhook(
                "flunder-deleters.wardle.test",
                &format!("{base}/deny-all"),
                &server.ca_pem,
                gate(
                    "may-delete-it",
                    "authorizer.requestResource.check('delete').allowed()",
                ),
            ),
        ],
    )
    .await;
    let (_, denied) = until(&stack, json!({"authz": "yes"}), |code, _| code == 403).await;
    assert_eq!(
        denied["message"],
        "admission webhook \"flunder-deleters.wardle.test\" denied the request: every flunder denied",
        "{denied}"
    );
    // The webhook server answers any other path (`/node-deleters`) by allowing: it records
    // every call.
    let seen = server.seen.lock().unwrap().clone();
    let called = |path: &str| {
        seen.iter()
            .filter(|(p, r)| {
                p == path && r["request"]["object"]["metadata"]["labels"]["authz"] == "yes"
            })
            .count()
    };
    assert!(called("/deny-all") >= 1, "{seen:?}");
    assert_eq!(
        called("/node-deleters"),
        0,
        "a webhook whose condition alice's permissions fail is not called"
    );
}

/// Issue 48: with `--tracing-config-file`, a create's trace in wardle holds upstream's spans of
/// the webhook calls (`Call mutating webhook`, `Call validating webhook`, with upstream's
/// attributes) under the admission phases, under the request span; exported to a real OTLP
/// receiver (Jaeger v2).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_calls_are_spans_of_the_requests_trace() {
    use crate::support::jaeger::{Jaeger, Span, describe};

    let jaeger = Jaeger::start().await;
    let dir = tempfile::tempdir().unwrap();
    // Wardle samples every request itself: the host sends no trace context.
    let config = jaeger.tracing_config(dir.path(), 1_000_000);
    let server = start_webhook_server().await;
    let stack = Stack::start(&["--tracing-config-file", config.to_str().unwrap()]).await;
    let base = format!("https://{}", server.addr);
    mutating(
        &stack,
        "label-flunders",
        vec![webhook(
            "label.wardle.test",
            &format!("{base}/mutate"),
            &server.ca_pem,
            json!({}),
        )],
    )
    .await;
    validating(
        &stack,
        "deny-marked-flunders",
        vec![webhook(
            "deny-marked.wardle.test",
            &format!("{base}/deny-marked"),
            &server.ca_pem,
            json!({}),
        )],
    )
    .await;
    // Denied once wardle sees both configurations (the probes' names differ).
    until(&stack, json!({"mark": "deny"}), |code, _| code == 403).await;

    let spans: Vec<Span> = wait::poll("a trace with both webhook calls", TIMEOUT, || async {
        jaeger
            .traces_of("wardle", 1000)
            .await
            .into_iter()
            .find(|t| {
                ["Call mutating webhook", "Call validating webhook"]
                    .iter()
                    .all(|name| t.iter().any(|s| s.name == *name))
            })
            .ok_or("not yet")
    })
    .await
    .unwrap_or_else(|e| panic!("{e}; Jaeger's log:\n{}", jaeger.log()));
    let named = |name: &str| {
        spans
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no {name} among:{}", describe(&spans)))
    };
    let request = named("POST /apis/wardle.example.com/v1alpha1/namespaces/{:namespace}/flunders");
    assert_eq!(request.tag("http.status_code"), "403");
    for (phase, call, configuration, hook) in [
        (
            "Admission mutating",
            "Call mutating webhook",
            "label-flunders",
            "label.wardle.test",
        ),
        (
            "Admission validating",
            "Call validating webhook",
            "deny-marked-flunders",
            "deny-marked.wardle.test",
        ),
    ] {
        let phase = named(phase);
        let call = named(call);
        assert_eq!(call.parent.as_deref(), Some(phase.span_id.as_str()));
        assert_eq!(phase.parent.as_deref(), Some(request.span_id.as_str()));
        assert_eq!(call.tag("configuration"), configuration);
        assert_eq!(call.tag("webhook"), hook);
        assert_eq!(call.tag("operation"), "CREATE");
        assert_eq!(
            call.tag("resource"),
            "wardle.example.com/v1alpha1, Resource=flunders"
        );
        assert!(!call.tag("UID").is_empty(), "{call:?}");
    }
    assert_eq!(
        named("Admission validating").tag("otel.status_code"),
        "ERROR"
    );
    // Each call sent its span to the webhook as the parent, in `traceparent`.
    let sent = server.traceparents.lock().unwrap().clone();
    for (path, call) in [
        ("/mutate", "Call mutating webhook"),
        ("/deny-marked", "Call validating webhook"),
    ] {
        let call = named(call);
        let expected = format!("00-{}-{}-01", call.trace_id, call.span_id);
        assert!(
            sent.iter()
                .any(|(p, parent)| p == path && *parent == expected),
            "{path}: {expected} among {sent:?}"
        );
    }
}
