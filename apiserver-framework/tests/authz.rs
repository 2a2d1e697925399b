//! Authorization over real HTTPS: the handler chain asks the delegating authorizer (privileged
//! groups, always-allowed paths, cached SubjectAccessReview) and answers upstream's 403 and 500.
//!
//! The host cluster is replaced by a rules-based reviewer test double; everything between the
//! HTTPS client and it is the real thing.

mod support_chain;
mod support_kinds;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use apiserver_framework::authn::StaticTokens;
use apiserver_framework::authz::{
    Attributes, AuthorizationError, DelegatingAuthorizerConfig, Request, ReviewStatus,
    SubjectAccessReviewer,
};
use apiserver_framework::prelude::*;
use apiserver_framework::server::GenericApiServer;
use apiserver_framework::server::serve::HandlerChain;
use apiserver_framework::user::UserInfo;
use serde_json::{Value, json};
use support_chain::{ServedChain, https, serve_chain};
use support_kinds::Flunder;

const FLUNDERS: &str = "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders";

fn users() -> StaticTokens {
    let user = |name: &str, groups: &[&str]| UserInfo::new(name, groups);
    StaticTokens::from([
        ("alice-token", user("alice", &["system:authenticated"])),
        ("reader-token", user("reader", &["system:authenticated"])),
        ("mallory-token", user("mallory", &["system:authenticated"])),
        (
            "admin-token",
            user("admin", &["system:masters", "system:authenticated"]),
        ),
        ("broken-token", user("broken", &["system:authenticated"])),
    ])
}

/// A rules-based test double of the host cluster's SubjectAccessReview: `alice` may do
/// anything with flunders and read discovery; `reader` may get, list and watch flunders;
/// `mallory` is denied with a reason; reviews for `broken` fail; nobody else is allowed.
/// It counts the reviews it answers.
struct RulesReviewer {
    calls: AtomicUsize,
}

#[async_trait::async_trait]
impl SubjectAccessReviewer for RulesReviewer {
    async fn review(&self, attrs: &Attributes) -> Result<ReviewStatus, AuthorizationError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let allowed = |yes: bool| ReviewStatus {
            allowed: yes,
            ..Default::default()
        };
        let user = attrs.user.username.as_str();
        Ok(match (user, &attrs.request) {
            ("broken", _) => {
                return Err(AuthorizationError(
                    "Post \"https://host/apis/authorization.k8s.io/v1/subjectaccessreviews\": connection refused".into(),
                ));
            }
            ("mallory", _) => ReviewStatus {
                denied: true,
                reason: "mallory is banned".into(),
                ..Default::default()
            },
            ("alice", Request::Resource(r)) => allowed(r.resource == "flunders"),
            ("alice", Request::NonResource(n)) => allowed(n.path.starts_with("/apis")),
            ("reader", Request::Resource(r)) => allowed(
                r.resource == "flunders" && ["get", "list", "watch"].contains(&r.verb.as_str()),
            ),
            _ => allowed(false),
        })
    }
}

struct Server {
    served: ServedChain,
    http: reqwest::Client,
    url: String,
    reviewer: Arc<RulesReviewer>,
}

impl Server {
    async fn start() -> Self {
        let server = GenericApiServer::builder("authz")
            .group(Group::new("wardle.example.com").resource::<Flunder>())
            .build();
        let reviewer = Arc::new(RulesReviewer {
            calls: AtomicUsize::new(0),
        });
        let config = DelegatingAuthorizerConfig::default();
        let authorizer = config.build(Some(reviewer.clone())).unwrap();
        let chain = HandlerChain::new(Arc::new(server), Arc::new(users()), Arc::new(authorizer))
            .with_anonymous_paths(config.anonymous_paths().unwrap());
        let served = serve_chain(chain).await.unwrap();
        let http = https(&served).build().unwrap();
        let url = served.url.clone();
        Server {
            served,
            http,
            url,
            reviewer,
        }
    }

    fn reviews(&self) -> usize {
        self.reviewer.calls.load(Ordering::SeqCst)
    }

    /// Sends a request; answers the status, the headers and the body text.
    async fn send(
        &self,
        token: Option<&str>,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, reqwest::header::HeaderMap, String) {
        let mut req = self.http.request(method, format!("{}{path}", self.url));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().await.unwrap();
        let code = res.status().as_u16();
        let headers = res.headers().clone();
        (code, headers, res.text().await.unwrap())
    }

    async fn create(&self, token: &str, name: &str) -> (u16, reqwest::header::HeaderMap, String) {
        let flunder = json!({
            "apiVersion": "wardle.example.com/v1alpha1",
            "kind": "Flunder",
            "metadata": {"name": name},
            "spec": {"reference": "x"}
        });
        self.send(Some(token), reqwest::Method::POST, FLUNDERS, Some(flunder))
            .await
    }
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[tokio::test]
async fn allowed_users_are_served_and_others_forbidden() {
    let s = Server::start().await;

    let (code, _, text) = s.create("alice-token", "f1").await;
    assert_eq!(code, 201, "{text}");
    assert_eq!(json(&text)["metadata"]["name"], "f1");

    // The reader may read…
    let (code, _, text) = s
        .send(
            Some("reader-token"),
            reqwest::Method::GET,
            &format!("{FLUNDERS}/f1"),
            None,
        )
        .await;
    assert_eq!(code, 200, "{text}");
    // …but not create: upstream's Forbidden, word for word.
    let (code, headers, text) = s.create("reader-token", "f2").await;
    assert_eq!(code, 403, "{text}");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(
        json(&text),
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "flunders.wardle.example.com is forbidden: User \"reader\" cannot create resource \"flunders\" in API group \"wardle.example.com\" in the namespace \"default\"",
            "reason": "Forbidden",
            "details": {"group": "wardle.example.com", "kind": "flunders"},
            "code": 403
        })
    );
    // A named object, a subresource, a list by field selector.
    let (code, _, text) = s
        .send(
            Some("reader-token"),
            reqwest::Method::DELETE,
            &format!("{FLUNDERS}/f1"),
            None,
        )
        .await;
    assert_eq!(code, 403, "{text}");
    let status = json(&text);
    assert_eq!(
        status["message"],
        "flunders.wardle.example.com \"f1\" is forbidden: User \"reader\" cannot delete resource \"flunders\" in API group \"wardle.example.com\" in the namespace \"default\""
    );
    assert_eq!(
        status["details"],
        json!({"name": "f1", "group": "wardle.example.com", "kind": "flunders"})
    );
    // A denial's reason is appended.
    let (code, _, text) = s.create("mallory-token", "f3").await;
    assert_eq!(code, 403, "{text}");
    assert_eq!(
        json(&text)["message"],
        "flunders.wardle.example.com is forbidden: User \"mallory\" cannot create resource \"flunders\" in API group \"wardle.example.com\" in the namespace \"default\": mallory is banned"
    );
    // Nothing was created by the refused requests, and f1 is still there.
    let (code, _, text) = s
        .send(Some("alice-token"), reqwest::Method::GET, FLUNDERS, None)
        .await;
    assert_eq!(code, 200, "{text}");
    let names: Vec<Value> = json(&text)["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].clone())
        .collect();
    assert_eq!(names, [json!("f1")]);
    s.served.running.shutdown().await;
}

#[tokio::test]
async fn non_resource_requests_are_authorized_by_path() {
    let s = Server::start().await;
    let (code, headers, text) = s
        .send(Some("reader-token"), reqwest::Method::GET, "/apis", None)
        .await;
    assert_eq!(code, 403, "{text}");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    let status = json(&text);
    assert_eq!(
        status["message"],
        "forbidden: User \"reader\" cannot get path \"/apis\""
    );
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(status["details"], json!({}));
    assert_eq!(status["code"], 403);
    let (code, _, text) = s
        .send(Some("alice-token"), reqwest::Method::GET, "/apis", None)
        .await;
    assert_eq!(code, 200, "{text}");
    s.served.running.shutdown().await;
}

#[tokio::test]
async fn health_is_reachable_without_credentials_and_nothing_else() {
    let s = Server::start().await;
    for path in ["/healthz", "/readyz", "/livez"] {
        let (code, _, text) = s.send(None, reqwest::Method::GET, path, None).await;
        assert_eq!((code, text.as_str()), (200, "ok"), "{path}");
        // With any user's credentials too; credentials nobody knows are refused, as
        // upstream refuses them on every path.
        let (code, _, text) = s
            .send(Some("wrong"), reqwest::Method::GET, path, None)
            .await;
        assert_eq!(code, 401, "{path}");
        assert_eq!(json(&text)["reason"], "Unauthorized");
        let (code, _, _) = s
            .send(Some("reader-token"), reqwest::Method::GET, path, None)
            .await;
        assert_eq!(code, 200, "{path}");
    }
    // The always-allowed paths never reach the reviewer.
    assert_eq!(s.reviews(), 0);
    for path in ["/apis", "/version", FLUNDERS, "/healthz/ping"] {
        let (code, _, text) = s.send(None, reqwest::Method::GET, path, None).await;
        assert_eq!(code, 401, "{path}: {text}");
        assert_eq!(json(&text)["reason"], "Unauthorized");
    }
    assert_eq!(s.reviews(), 0);
    s.served.running.shutdown().await;
}

#[tokio::test]
async fn masters_are_always_allowed() {
    let s = Server::start().await;
    let (code, _, text) = s.create("admin-token", "m1").await;
    assert_eq!(code, 201, "{text}");
    for path in ["/apis", "/version", "/openapi/v2"] {
        let (code, _, text) = s
            .send(Some("admin-token"), reqwest::Method::GET, path, None)
            .await;
        assert_eq!(code, 200, "{path}: {text}");
    }
    assert_eq!(s.reviews(), 0, "system:masters needs no review");
    s.served.running.shutdown().await;
}

#[tokio::test]
async fn reviews_are_cached() {
    let s = Server::start().await;
    for _ in 0..3 {
        let (code, _, _) = s
            .send(Some("reader-token"), reqwest::Method::GET, FLUNDERS, None)
            .await;
        assert_eq!(code, 200);
    }
    assert_eq!(s.reviews(), 1);
    // Another verb is another review; a refused one is cached too.
    for _ in 0..2 {
        let (code, _, _) = s.create("reader-token", "r").await;
        assert_eq!(code, 403);
    }
    assert_eq!(s.reviews(), 2);
    s.served.running.shutdown().await;
}

#[tokio::test]
async fn an_authorizer_error_is_a_plain_text_500() {
    let s = Server::start().await;
    let path = format!("{FLUNDERS}?limit=1");
    for round in 1..=2 {
        let (code, headers, text) = s
            .send(Some("broken-token"), reqwest::Method::GET, &path, None)
            .await;
        assert_eq!(code, 500, "{text}");
        assert_eq!(headers["content-type"], "text/plain; charset=utf-8");
        assert_eq!(headers["x-content-type-options"], "nosniff");
        assert_eq!(
            text,
            format!(
                "Internal Server Error: \"{path}\": Post \"https://host/apis/authorization.k8s.io/v1/subjectaccessreviews\": connection refused\n"
            )
        );
        // Failures are not cached: every request asks again.
        assert_eq!(s.reviews(), round);
    }
    s.served.running.shutdown().await;
}

/// A test double of the host cluster's API, over plain HTTP on loopback: answers
/// SubjectAccessReviews (allowing `alice`, denying `mallory`), failing the first review of
/// `flaky` with a 500 and every review of `down` with a 403; records every body it gets.
async fn start_host() -> (String, Arc<parking_lot::Mutex<Vec<Value>>>) {
    use axum::response::IntoResponse;
    let seen = Arc::new(parking_lot::Mutex::new(Vec::<Value>::new()));
    let record = seen.clone();
    let handler = move |axum::Json(body): axum::Json<Value>| {
        let seen = record.clone();
        async move {
            let user = body["spec"]["user"].as_str().unwrap_or("").to_string();
            let earlier = {
                let mut seen = seen.lock();
                seen.push(body.clone());
                seen.iter()
                    .filter(|b| b["spec"]["user"] == user.as_str())
                    .count()
                    - 1
            };
            let failure = |code: u16, reason: &str| {
                let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                    "status": "Failure", "message": "boom", "reason": reason, "code": code});
                (
                    http::StatusCode::from_u16(code).unwrap(),
                    axum::Json(status),
                )
                    .into_response()
            };
            match user.as_str() {
                "flaky" if earlier == 0 => return failure(500, "InternalError"),
                "down" => return failure(403, "Forbidden"),
                _ => {}
            }
            let mut answer = body.clone();
            answer["status"] = match user.as_str() {
                "alice" | "flaky" => json!({"allowed": true}),
                "mallory" => json!({"allowed": false, "denied": true, "reason": "banned"}),
                _ => json!({"allowed": false, "reason": "no rule", "evaluationError": "x"}),
            };
            axum::Json(answer).into_response()
        }
    };
    let app = axum::Router::new().route(
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        axum::routing::post(handler),
    );
    let url = apiserver_framework::testing::serve_http(app).await.unwrap();
    (url, seen)
}

#[tokio::test]
async fn kube_client_reviews_through_the_host_api() {
    use apiserver_framework::authz::{
        Authorizer, Decision, NonResourceAttributes, WebhookAuthorizer,
    };
    use std::time::Duration;

    let (url, seen) = start_host().await;
    let client = kube::Client::try_from(kube::Config::new(url.parse().unwrap())).unwrap();
    let attrs = |user: &str, request: Request| Attributes {
        user: UserInfo::new(user, &["system:authenticated"]),
        request,
    };
    let create = apiserver_framework::authz::request_of(&http::Method::POST, FLUNDERS, None);
    let status = client
        .review(&attrs("alice", create.clone()))
        .await
        .unwrap();
    assert!(status.allowed && !status.denied);
    assert_eq!(
        seen.lock()[0],
        json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "metadata": {},
            "spec": {
                "user": "alice",
                "groups": ["system:authenticated"],
                "resourceAttributes": {
                    "namespace": "default", "verb": "create", "group": "wardle.example.com",
                    "version": "v1alpha1", "resource": "flunders"
                }
            }
        })
    );

    // A list by name carries the name and the selector.
    let by_name = apiserver_framework::authz::request_of(
        &http::Method::GET,
        FLUNDERS,
        Some("watch=true&fieldSelector=metadata.name%3Df1"),
    );
    client.review(&attrs("alice", by_name)).await.unwrap();
    assert_eq!(
        seen.lock()[1]["spec"]["resourceAttributes"],
        json!({
            "namespace": "default", "verb": "watch", "group": "wardle.example.com",
            "version": "v1alpha1", "resource": "flunders", "name": "f1",
            "fieldSelector": {"requirements": [{"key": "metadata.name", "operator": "In", "values": ["f1"]}]}
        })
    );

    let authorizer = WebhookAuthorizer::new(
        Arc::new(client),
        Duration::from_secs(10),
        Duration::from_secs(10),
    );
    let apis = Request::NonResource(NonResourceAttributes {
        path: "/apis".into(),
        verb: "get".into(),
    });
    assert_eq!(
        authorizer
            .authorize(&attrs("mallory", create.clone()))
            .await,
        Ok(Decision::Deny("banned".into()))
    );
    assert_eq!(
        authorizer.authorize(&attrs("bob", apis.clone())).await,
        Ok(Decision::NoOpinion("no rule".into()))
    );
    assert_eq!(
        seen.lock().last().unwrap()["spec"]["nonResourceAttributes"],
        json!({"path": "/apis", "verb": "get"})
    );
    // A transient failure is retried; a refusal of the review itself is an error, not cached.
    assert_eq!(
        authorizer.authorize(&attrs("flaky", create.clone())).await,
        Ok(Decision::Allow)
    );
    let flaky = |seen: &[Value]| seen.iter().filter(|b| b["spec"]["user"] == "flaky").count();
    assert_eq!(flaky(&seen.lock()), 2);
    for _ in 0..2 {
        let err = authorizer
            .authorize(&attrs("down", create.clone()))
            .await
            .unwrap_err();
        assert!(err.0.contains("boom"), "{err}");
    }
    let before = seen.lock().len();
    authorizer
        .authorize(&attrs("down", create.clone()))
        .await
        .unwrap_err();
    assert_eq!(seen.lock().len(), before + 1);
    // Answers are cached.
    authorizer
        .authorize(&attrs("mallory", create))
        .await
        .unwrap();
    authorizer.authorize(&attrs("bob", apis)).await.unwrap();
    assert_eq!(seen.lock().len(), before + 1);
}
