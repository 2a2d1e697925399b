//! wardle in production mode behind the development host, over real TLS on loopback:
//! delegated authentication and authorization, the front proxy, review caches, the
//! aggregator's availability, the authentication ConfigMap and certificate reloads.

mod admission;
mod aggregator_routing;
mod policies;
mod profiling;
mod stack;
#[path = "../support/mod.rs"]
mod support;
mod tracing;
mod versions;
mod watch_prefix;

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::checks::answer;
use crate::support::checks::message;
use apiserver_framework::devhost::files::FRONT_PROXY_CLIENT;
use apiserver_framework::devhost::host::{
    authentication_configmap, write_authentication_configmap,
};
use apiserver_framework::testing::wait;
use reqwest::Method;
use serde_json::{Value, json};
use stack::{FLUNDERS, Stack, TIMEOUT};

use support::fixtures::flunder;
use support::process::Lines;

fn status(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

/// Through the host, as its token users: alice (editors) may do everything, bob (viewers)
/// only read, an unknown token nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_users_through_the_host() {
    let stack = Stack::start(&[]).await;
    let client = stack.client();
    let url = format!("{}{FLUNDERS}", stack.host_url());
    let alice = stack.token("alice");
    let bob = stack.token("bob");

    // A watch opened before the create sees it.
    let mut watch = answer(client.get(format!("{url}?watch=true")).bearer_auth(&alice)).await;
    assert_eq!(watch.status(), 200);

    let (code, body) = stack
        .send_as("alice", Method::POST, &url, Some(flunder("one")))
        .await;
    assert_eq!(code, 201, "{body}");
    let event = tokio::time::timeout(TIMEOUT, watch.chunk())
        .await
        .expect("a watch event in time")
        .unwrap()
        .expect("a chunk");
    let event: Value = serde_json::from_slice(&event).unwrap();
    assert_eq!(event["type"], "ADDED");
    assert_eq!(event["object"]["metadata"]["name"], "one");

    let (code, body) = stack
        .as_bearer(&client, Method::GET, &format!("{url}/one"), &bob)
        .await;
    assert_eq!(code, 200, "{body}");
    let (code, body) = stack.as_bearer(&client, Method::GET, &url, &bob).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(status(&body)["items"][0]["metadata"]["name"], "one");

    // bob may not write: upstream's Forbidden, word for word.
    let (code, body) = stack
        .send_as("bob", Method::POST, &url, Some(flunder("two")))
        .await;
    assert_eq!(code, 403, "{body}");
    let s = status(&body);
    assert_eq!(s["reason"], "Forbidden");
    assert_eq!(s["code"], 403);
    assert_eq!(
        s["message"],
        "flunders.wardle.example.com is forbidden: User \"bob\" cannot create resource \"flunders\" in API group \"wardle.example.com\" in the namespace \"default\""
    );
    assert_eq!(s["details"]["group"], "wardle.example.com");
    assert_eq!(s["details"]["kind"], "flunders");

    // An unknown token: 401 from the host, which never forwards it.
    let (code, body) = stack
        .call(&client, Method::GET, &url, Some("not-a-token"), None)
        .await;
    assert_eq!(code, 401, "{body}");
    assert_eq!(status(&body)["reason"], "Unauthorized");

    let (code, body) = stack
        .as_bearer(&client, Method::DELETE, &format!("{url}/one"), &alice)
        .await;
    assert_eq!(code, 200, "{body}");
    let (code, _) = stack
        .as_bearer(&client, Method::GET, &format!("{url}/one"), &alice)
        .await;
    assert_eq!(code, 404);
}

/// kubectl end to end through the host: create, get, and `get -w` seeing a new object.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_through_the_host() {
    let stack = Stack::start(&[]).await;
    let file = stack.path("flunder.json");
    std::fs::write(&file, flunder("kubectl-one").to_string()).unwrap();
    let out = stack.kubectl("alice", &["create", "-f", file.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "flunder.wardle.example.com/kubectl-one created"
    );
    let out = stack.kubectl("bob", &["get", "flunders"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("NAME"), "{text}");
    assert!(text.contains("kubectl-one"), "{text}");
    let out = stack.kubectl("bob", &["delete", "flunder", "kubectl-one"]);
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "Error from server (Forbidden): flunders.wardle.example.com \"kubectl-one\" is forbidden: User \"bob\" cannot delete resource \"flunders\" in API group \"wardle.example.com\" in the namespace \"default\""
    );

    let mut watch = stack
        .kubectl_command("bob", &["get", "flunders", "-w", "--output-watch-events"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = Lines::of(watch.stdout.take().unwrap());
    // The watch prints the existing object first, then the new one once created.
    let wait_for = |needle: &str| lines.wait_for(needle, TIMEOUT);
    wait_for("kubectl-one");
    std::fs::write(&file, flunder("kubectl-two").to_string()).unwrap();
    let out = stack.kubectl("alice", &["create", "-f", file.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = wait_for("kubectl-two");
    assert!(line.starts_with("ADDED"), "{line}");
    let _ = watch.kill();
    let _ = watch.wait();
}

/// `k8s\0` and the `runtime.Unknown` envelope around `object`, as client-go sends a built-in
/// object in protobuf.
fn protobuf_body(kind: &str, object: impl prost::Message) -> Vec<u8> {
    protobuf_body_of("v1", kind, object)
}

/// Like [`protobuf_body`], for a kind of `api_version`.
fn protobuf_body_of(api_version: &str, kind: &str, object: impl prost::Message) -> Vec<u8> {
    let unknown = k8s_pb::apimachinery::pkg::runtime::Unknown {
        type_meta: Some(k8s_pb::apimachinery::pkg::runtime::TypeMeta {
            api_version: Some(api_version.into()),
            kind: Some(kind.into()),
        }),
        raw: Some(object.encode_to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut body = b"k8s\0".to_vec();
    body.extend(prost::Message::encode_to_vec(&unknown));
    body
}

/// Sends `body` as `content_type` to the host as its admin, accepting protobuf or anything
/// (as client-go's typed clients do); returns the status, the response's Content-Type and
/// its body as JSON.
async fn send_as(
    stack: &Stack,
    method: Method,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> (u16, String, Value) {
    let res = stack
        .client()
        .request(method, format!("{}{path}", stack.host_url()))
        .bearer_auth(stack.token("admin"))
        .header("Content-Type", content_type)
        .header("Accept", "application/vnd.kubernetes.protobuf, */*")
        .body(body)
        .send()
        .await
        .expect("an answer");
    let code = res.status().as_u16();
    let content_type = support::checks::content_type(&res);
    (code, content_type, status(&res.text().await.unwrap()))
}

/// kubectl 1.32 and later creates built-in objects with typed clients, which send them in
/// protobuf: the host accepts them as a cluster does (it answered 415 before), for kubectl
/// 1.33 and the machine's kubectl alike, and accepts a protobuf update too, and TokenReviews
/// and SubjectAccessReviews in protobuf (as a Go extension server sends them). A protobuf body
/// that does not decode is a 400 Status; a media type nobody decodes is still upstream's 415.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn built_in_objects_are_accepted_in_protobuf() {
    use k8s_pb::api::core::v1 as core;
    use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
    const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

    let stack = Stack::start(&[]).await;
    let kubectls = [
        ("made-by-1-33", support::kubectl_binary(33)),
        ("made-by-kubectl", std::path::PathBuf::from("kubectl")),
    ];
    for (ns, kubectl) in &kubectls {
        let run = |args: &[&str]| {
            let out = stack
                .kubectl_command_of(kubectl, "admin", args)
                .output()
                .expect("run kubectl");
            assert!(
                out.status.success(),
                "{} {args:?}: {}",
                kubectl.display(),
                support::stderr(&out)
            );
            support::stdout(&out).trim().to_string()
        };
        assert_eq!(
            run(&["create", "namespace", ns]),
            format!("namespace/{ns} created")
        );
        assert_eq!(
            run(&[
                "create",
                "configmap",
                "settings",
                "-n",
                ns,
                "--from-literal=colour=blue"
            ]),
            "configmap/settings created"
        );
        assert_eq!(
            run(&[
                "get",
                "configmap",
                "settings",
                "-n",
                ns,
                "-o",
                "jsonpath={.data.colour}"
            ]),
            "blue"
        );
    }

    // An update in protobuf (what a typed client's Update sends), answered in JSON.
    let path = "/api/v1/namespaces/made-by-1-33/configmaps/settings";
    let (code, _, current) =
        send_as(&stack, Method::GET, path, "application/json", Vec::new()).await;
    assert_eq!(code, 200, "{current}");
    let changed = core::ConfigMap {
        metadata: Some(meta::ObjectMeta {
            name: Some("settings".into()),
            namespace: Some("made-by-1-33".into()),
            resource_version: current["metadata"]["resourceVersion"]
                .as_str()
                .map(String::from),
            ..Default::default()
        }),
        data: [("colour".to_string(), "green".to_string())].into(),
        ..Default::default()
    };
    let (code, content_type, updated) = send_as(
        &stack,
        Method::PUT,
        path,
        PROTOBUF,
        protobuf_body("ConfigMap", changed),
    )
    .await;
    assert_eq!(code, 200, "{updated}");
    assert_eq!(content_type, "application/json");
    assert_eq!(updated["data"], json!({"colour": "green"}));

    // Bodies that do not decode: 400 Statuses, nothing stored.
    let namespaces = "/api/v1/namespaces";
    let whole = protobuf_body(
        "Namespace",
        core::Namespace {
            metadata: Some(meta::ObjectMeta {
                name: Some("truncated".into()),
                ..Default::default()
            }),
            ..Default::default()
        },
    );
    for (body, message) in [
        (
            whole[..whole.len() - 6].to_vec(),
            "the protobuf request body does not decode: ",
        ),
        (
            br#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"json"}}"#.to_vec(),
            "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]",
        ),
        (
            protobuf_body("ConfigMap", core::ConfigMap::default()),
            "the body holds a \"ConfigMap\" of \"v1\", not a Namespace of \"v1\"",
        ),
    ] {
        let (code, _, s) = send_as(&stack, Method::POST, namespaces, PROTOBUF, body).await;
        assert_eq!(code, 400, "{s}");
        assert_eq!(s["kind"], "Status");
        assert_eq!(s["reason"], "BadRequest");
        assert!(s["message"].as_str().unwrap().starts_with(message), "{s}");
    }
    let (code, _, _) = send_as(
        &stack,
        Method::GET,
        &format!("{namespaces}/truncated"),
        "application/json",
        Vec::new(),
    )
    .await;
    assert_eq!(code, 404);

    // The reviews a Go extension server's delegated authentication and authorization send
    // through client-go, in protobuf.
    let review = k8s_pb::api::authentication::v1::TokenReview {
        spec: Some(k8s_pb::api::authentication::v1::TokenReviewSpec {
            token: Some(stack.token("alice")),
            audiences: Vec::new(),
        }),
        ..Default::default()
    };
    let (code, _, answer) = send_as(
        &stack,
        Method::POST,
        "/apis/authentication.k8s.io/v1/tokenreviews",
        PROTOBUF,
        protobuf_body_of("authentication.k8s.io/v1", "TokenReview", review),
    )
    .await;
    assert_eq!(code, 201, "{answer}");
    assert_eq!(answer["status"]["authenticated"], true, "{answer}");
    assert_eq!(answer["status"]["user"]["username"], "alice", "{answer}");
    let review = k8s_pb::api::authorization::v1::SubjectAccessReview {
        spec: Some(k8s_pb::api::authorization::v1::SubjectAccessReviewSpec {
            resource_attributes: Some(k8s_pb::api::authorization::v1::ResourceAttributes {
                namespace: Some("default".into()),
                verb: Some("delete".into()),
                group: Some("wardle.example.com".into()),
                resource: Some("flunders".into()),
                ..Default::default()
            }),
            user: Some("bob".into()),
            groups: vec!["viewers".into()],
            ..Default::default()
        }),
        ..Default::default()
    };
    let (code, _, answer) = send_as(
        &stack,
        Method::POST,
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        PROTOBUF,
        protobuf_body_of("authorization.k8s.io/v1", "SubjectAccessReview", review),
    )
    .await;
    assert_eq!(code, 201, "{answer}");
    assert_eq!(answer["status"]["allowed"], false, "{answer}");

    // A media type the host does not decode: upstream's 415.
    let (code, _, s) = send_as(
        &stack,
        Method::POST,
        namespaces,
        "application/cbor",
        vec![0xa0],
    )
    .await;
    assert_eq!(code, 415, "{s}");
    assert_eq!(s["reason"], "UnsupportedMediaType");
}

/// Straight to wardle, around the host: only certificates vouch for a caller.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn direct_callers_are_who_their_certificates_say() {
    let stack = Stack::start(&[]).await;
    let url = format!("{}{FLUNDERS}", stack.wardle_url());
    let forged = |c: &reqwest::Client| {
        c.get(&url)
            .header("X-Remote-User", "admin")
            .header("X-Remote-Group", "system:masters")
    };

    // Forged headers without a certificate: anonymous, which the host does not authorize.
    let res = forged(&stack.client()).send().await.unwrap();
    assert_eq!(res.status(), 403);
    let s = status(&res.text().await.unwrap());
    assert_eq!(
        s["message"],
        "flunders.wardle.example.com is forbidden: User \"system:anonymous\" cannot list resource \"flunders\" in API group \"wardle.example.com\" in the namespace \"default\""
    );

    // The real front proxy's certificate makes the same headers count.
    let fp = &stack.host.files.front_proxy_client;
    let proxy = stack.client_with_identity(&fp.cert_pem, &fp.key_pem);
    let res = forged(&proxy).send().await.unwrap();
    assert_eq!(res.status(), 200, "{}", res.text().await.unwrap());

    // Signed by the request-header CA, but not an allowed name: 401.
    let (cert, key) = stack.issue_client_cert("front-proxy-ca", "intruder", None, false);
    let res = forged(&stack.client_with_identity(&cert, &key))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    assert_eq!(status(&res.text().await.unwrap())["reason"], "Unauthorized");

    // An unknown CA: 401.
    let (cert, key) = stack.foreign_client_cert(FRONT_PROXY_CLIENT);
    let res = forged(&stack.client_with_identity(&cert, &key))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);

    // Expired, though from the right CAs: 401.
    let (cert, key) = stack.issue_client_cert("front-proxy-ca", FRONT_PROXY_CLIENT, None, true);
    let res = forged(&stack.client_with_identity(&cert, &key))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    let (cert, key) = stack.issue_client_cert("ca", "alice", Some("editors"), true);
    let res = stack
        .client_with_identity(&cert, &key)
        .get(&url)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);

    // A valid client certificate of the host's client CA: CN alice, O editors.
    let (cert, key) = stack.issue_client_cert("ca", "alice", Some("editors"), false);
    let res = stack
        .client_with_identity(&cert, &key)
        .get(&url)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200, "{}", res.text().await.unwrap());
    // ... whose headers cannot make it someone else.
    let (cert, key) = stack.issue_client_cert("ca", "carol", None, false);
    let res = forged(&stack.client_with_identity(&cert, &key))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 403);
    assert!(
        status(&res.text().await.unwrap())["message"]
            .as_str()
            .unwrap()
            .contains("User \"carol\" cannot list"),
    );
}

/// TokenReview once per token per TTL, SubjectAccessReview once per distinct attributes per
/// TTL, counted by the host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reviews_are_cached_for_their_ttl() {
    let stack = Stack::start(&[
        "--authentication-token-webhook-cache-ttl=3s",
        "--authorization-webhook-cache-authorized-ttl=3s",
        "--authorization-webhook-cache-unauthorized-ttl=3s",
    ])
    .await;
    let client = stack.client();
    let alice = stack.token("alice");
    let flunders = format!("{}{FLUNDERS}", stack.wardle_url());
    let fischers = format!(
        "{}/apis/wardle.example.com/v1alpha1/fischers",
        stack.wardle_url()
    );
    let tokens = &stack.host.token_reviews;
    let access = &stack.host.access_reviews;
    let list_flunders = "sar:alice list wardle.example.com/flunders default/";
    let list_fischers = "sar:alice list wardle.example.com/fischers /";
    let bob_create = "sar:bob create wardle.example.com/flunders default/";

    let started = Instant::now();
    for _ in 0..5 {
        let (code, body) = stack
            .as_bearer(&client, Method::GET, &flunders, &alice)
            .await;
        assert_eq!(code, 200, "{body}");
    }
    for _ in 0..3 {
        let (code, body) = stack
            .as_bearer(&client, Method::GET, &fischers, &alice)
            .await;
        assert_eq!(code, 200, "{body}");
    }
    for _ in 0..3 {
        let (code, _) = stack
            .send_as("bob", Method::POST, &flunders, Some(flunder("b")))
            .await;
        assert_eq!(code, 403);
    }
    for _ in 0..3 {
        let (code, _) = stack
            .call(&client, Method::GET, &flunders, Some("bogus"), None)
            .await;
        assert_eq!(code, 401);
    }
    // All within one TTL (the assertions below are only meaningful if so).
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "too slow to test caching"
    );
    assert_eq!(tokens.count("token:alice"), 1, "{:?}", tokens.entries());
    assert_eq!(tokens.count("token:bob"), 1, "{:?}", tokens.entries());
    assert_eq!(tokens.count("token:!invalid"), 1, "{:?}", tokens.entries());
    assert_eq!(access.count(list_flunders), 1, "{:?}", access.entries());
    assert_eq!(access.count(list_fischers), 1, "{:?}", access.entries());
    assert_eq!(access.count(bob_create), 1, "{:?}", access.entries());

    // After the TTL, each is asked again once. The measured subject: the caches' TTL, waited
    // out on purpose.
    tokio::time::sleep(Duration::from_millis(3200)).await;
    for _ in 0..3 {
        let (code, _) = stack
            .as_bearer(&client, Method::GET, &flunders, &alice)
            .await;
        assert_eq!(code, 200);
        let (code, _) = stack
            .send_as("bob", Method::POST, &flunders, Some(flunder("b")))
            .await;
        assert_eq!(code, 403);
    }
    assert_eq!(tokens.count("token:alice"), 2, "{:?}", tokens.entries());
    assert_eq!(tokens.count("token:bob"), 2, "{:?}", tokens.entries());
    assert_eq!(access.count(list_flunders), 2, "{:?}", access.entries());
    assert_eq!(access.count(bob_create), 2, "{:?}", access.entries());
    assert_eq!(access.count(list_fischers), 1, "{:?}", access.entries());
}

/// The APIService follows wardle: Available, then FailedDiscoveryCheck and 503 while it is
/// down, then Available again by itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn availability_follows_the_backend() {
    let mut stack = Stack::start(&[]).await;
    let c = stack.available_condition().await;
    assert_eq!(c["reason"], "Passed");
    assert_eq!(c["message"], "all checks passed");
    let client = stack.client();
    let url = format!("{}{FLUNDERS}", stack.host_url());
    let alice = stack.token("alice");

    stack.stop_wardle();
    let c = stack.wait_available("False").await;
    assert_eq!(c["reason"], "FailedDiscoveryCheck", "{c}");
    assert!(
        message(&c).contains("/apis/wardle.example.com/v1alpha1"),
        "{c}"
    );
    let (code, body) = stack.as_bearer(&client, Method::GET, &url, &alice).await;
    assert_eq!(code, 503);
    assert_eq!(body, "service unavailable\n");
    let out = stack.kubectl("admin", &["get", "apiservices"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("v1alpha1.wardle.example.com") && l.contains("False")),
        "{text}"
    );

    stack.start_wardle().await;
    let c = stack.wait_available("True").await;
    assert_eq!(c["reason"], "Passed");
    let (code, body) = stack.as_bearer(&client, Method::GET, &url, &alice).await;
    assert_eq!(code, 200, "{body}");
}

/// Changing the host's authentication ConfigMap (the front proxy's allowed names) takes
/// effect in the running wardle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configmap_changes_apply_without_restart() {
    let stack = Stack::start(&[]).await;
    let fp = &stack.host.files.front_proxy_client;
    let proxy = stack.client_with_identity(&fp.cert_pem, &fp.key_pem);
    let url = format!("{}{FLUNDERS}", stack.wardle_url());
    let until = |want: u16| {
        let proxy = proxy.clone();
        let url = url.clone();
        async move {
            let what = format!("wardle to answer {want}");
            wait::eventually(&what, TIMEOUT, || async {
                let res = answer(
                    proxy
                        .get(&url)
                        .header("X-Remote-User", "alice")
                        .header("X-Remote-Group", "editors"),
                )
                .await;
                res.status().as_u16() == want
            })
            .await;
        }
    };
    until(200).await;
    let files = &stack.host.files;
    write_authentication_configmap(
        &stack.host.server,
        authentication_configmap(files, &["someone-else"]),
    )
    .await
    .unwrap();
    // The proxy's certificate no longer carries an allowed name: its headers are refused.
    until(401).await;
    // The aggregator's own probes are refused too, so the APIService turns unavailable.
    let c = stack.wait_available("False").await;
    assert_eq!(c["reason"], "FailedDiscoveryCheck", "{c}");
    write_authentication_configmap(
        &stack.host.server,
        authentication_configmap(files, &[FRONT_PROXY_CLIENT]),
    )
    .await
    .unwrap();
    until(200).await;
    stack.wait_available("True").await;
}

/// A new serving certificate written over wardle's files is served without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serving_certificate_is_reloaded() {
    let stack = Stack::start(&[]).await;
    let peer = || async {
        // A new client, so a new connection and handshake.
        let res = stack
            .client()
            .get(format!("{}/readyz", stack.wardle_url()))
            .send()
            .await
            .unwrap();
        res.extensions()
            .get::<reqwest::tls::TlsInfo>()
            .and_then(|i| i.peer_certificate().map(<[u8]>::to_vec))
            .expect("the peer certificate")
    };
    let before = peer().await;
    let files = &stack.host.files;
    let dir = &files.dir;
    // Issue a new serving certificate for the same names with the host's CA.
    let fresh = tempfile::tempdir().unwrap();
    for f in ["ca.crt", "ca.key"] {
        std::fs::copy(dir.join(f), fresh.path().join(f)).unwrap();
    }
    let ca = apiserver_framework::devhost::pki::Authority::load_or_create(fresh.path(), "ca", "x")
        .unwrap();
    let cert = ca
        .load_or_issue(
            fresh.path(),
            "backend",
            apiserver_framework::devhost::pki::Usage::Server,
            &["api.wardle.svc", "localhost", "127.0.0.1"],
        )
        .unwrap();
    // Key first, then certificate, each replaced atomically.
    for (from, to) in [
        (&cert.key_path, &files.backend_cert.key_path),
        (&cert.cert_path, &files.backend_cert.cert_path),
    ] {
        let tmp = to.with_extension("new");
        std::fs::copy(from, &tmp).unwrap();
        std::fs::rename(&tmp, to).unwrap();
    }
    let now = wait::poll("the new certificate to be served", TIMEOUT, || async {
        let now = peer().await;
        if now != before {
            Ok(now)
        } else {
            Err("the old one still")
        }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let expected = rustls_pemfile_first(&cert.cert_pem);
    assert_eq!(now, expected, "serves the new certificate");
}

/// The DER of the first certificate of a PEM text.
fn rustls_pemfile_first(pem: &str) -> Vec<u8> {
    use base64::Engine;
    let body: String = pem
        .lines()
        .skip_while(|l| !l.starts_with("-----BEGIN CERTIFICATE"))
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .collect();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .unwrap()
}

/// `PUT /debug/flags/v` changes wardle's log verbosity while it runs, as upstream's: at 0
/// requests are not logged, at 3 they are. The host decides who may (`put` on the non-resource
/// URL `/debug/flags/v`): bob may not, anonymous callers neither.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_verbosity_changes_at_run_time() {
    let stack = Stack::start(&[]).await;
    let client = stack.client();
    let flags = format!("{}/debug/flags/v", stack.wardle_url());
    let admin = stack.token("admin");
    let set = |v: u32| {
        let (client, flags, admin) = (&client, &flags, &admin);
        let stack = &stack;
        async move {
            stack
                .call(client, Method::PUT, flags, Some(admin), Some(json!(v)))
                .await
        }
    };
    let list = |marker: &'static str| {
        let url = format!("{}{FLUNDERS}?labelSelector={marker}", stack.wardle_url());
        let (client, alice) = (&client, stack.token("alice"));
        let stack = &stack;
        async move {
            let (code, body) = stack.as_bearer(client, Method::GET, &url, &alice).await;
            assert_eq!(code, 200, "{body}");
        }
    };

    assert_eq!(
        set(0).await,
        (200, "successfully set klog.logging.verbosity to 0\n".into())
    );
    list("quiet").await;
    assert_eq!(
        set(3).await,
        (200, "successfully set klog.logging.verbosity to 3\n".into())
    );
    list("loud").await;
    wait::eventually("wardle to log the request", TIMEOUT, || async {
        stack.log().contains("labelSelector=loud")
    })
    .await;
    assert!(
        !stack.log().contains("labelSelector=quiet"),
        "logged at verbosity 0"
    );

    let bad = stack
        .send_as("admin", Method::PUT, &flags, Some(json!("x")))
        .await;
    assert_eq!(bad.0, 400, "{}", bad.1);
    let (code, body) = stack.as_bearer(&client, Method::GET, &flags, &admin).await;
    assert_eq!((code, body.as_str()), (406, "unsupported http method\n"));
    let (code, body) = stack
        .send_as("bob", Method::PUT, &flags, Some(json!(9)))
        .await;
    assert_eq!(code, 403, "{body}");
    let (code, body) = stack
        .call(&client, Method::PUT, &flags, None, Some(json!(9)))
        .await;
    assert_eq!(code, 403, "{body}");
    assert!(!stack.log().contains("TRACE"), "bob changed the verbosity");
}
