//! What is authorized is what is served, straight to wardle (in-process, over real HTTPS):
//! writes under the legacy `/watch/` prefix are refused whoever sends them, a named GET with
//! `?watch=true` answers the object, and a write through `scale` is admitted as one.
//!
//! The chain in front of wardle is the real one: the dev host's token-file authenticator and
//! rules-file authorizer, and an audit log.

#[path = "support/checks.rs"]
mod checks;
#[path = "support/fixtures.rs"]
mod fixtures;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use apiserver_framework::admission::{AdmissionAttributes, AdmissionPlugin, Operation, Phases};
use apiserver_framework::audit::AuditOptions;
use apiserver_framework::devhost::rules::RulesFile;
use apiserver_framework::devhost::tokens::TokenFile;
use apiserver_framework::error::ApiError;
use apiserver_framework::server::serve::HandlerChain;
use apiserver_framework::testing::{ServedChain, serve_chain_in};
use checks::message;
use fixtures::flunder;
use reqwest::Method;
use serde_json::{Value, json};

const FLUNDERS: &str = "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders";
const WATCH_FLUNDERS: &str = "/apis/wardle.example.com/v1alpha1/watch/namespaces/default/flunders";

/// alice may do anything to wardle's resources, bob only read them (get, list, watch), and
/// getter only get them.
const TOKENS: &str = "alice-token,alice,1,\"editors\"\nbob-token,bob,2,\"viewers\"\ngetter-token,getter,3,\"getters\"\n";
const RULES: &str = r#"
rules:
- groups: ["editors"]
  verbs: ["*"]
  apiGroups: ["wardle.example.com"]
  resources: ["*"]
- groups: ["viewers"]
  verbs: ["get", "list", "watch"]
  apiGroups: ["wardle.example.com"]
  resources: ["*"]
- groups: ["getters"]
  verbs: ["get"]
  apiGroups: ["wardle.example.com"]
  resources: ["*"]
"#;
const POLICY: &str = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n";

/// What an admission plugin saw: operation, subresource, name.
type Seen = Arc<Mutex<Vec<(Operation, Option<String>, String)>>>;

/// Records what it is asked to admit (mutating and validating).
struct Recorder(Seen);

#[async_trait::async_trait]
impl AdmissionPlugin for Recorder {
    fn name(&self) -> &str {
        "Recorder"
    }

    fn phases(&self) -> Phases {
        Phases::Validate
    }

    async fn validate(&self, attrs: &AdmissionAttributes<'_>) -> Result<(), ApiError> {
        self.0.lock().unwrap().push((
            attrs.operation,
            attrs.subresource.map(str::to_string),
            attrs.name.to_string(),
        ));
        Ok(())
    }
}

struct Server {
    _served: ServedChain,
    http: reqwest::Client,
    url: String,
    audit_log: std::path::PathBuf,
    admitted: Seen,
}

impl Server {
    async fn start() -> Server {
        let admitted = Seen::default();
        let server = wardle::app()
            .server_builder()
            .admission(Recorder(admitted.clone()))
            .build();
        let served = serve_chain_in(|dir| {
            let policy = dir.join("policy.yaml");
            std::fs::write(&policy, POLICY).unwrap();
            let auditor = AuditOptions {
                audit_policy_file: Some(policy),
                audit_log_path: Some(dir.join("audit.log").display().to_string()),
                ..Default::default()
            }
            .build()
            .unwrap()
            .unwrap();
            let tokens = TokenFile::parse("tokens.csv", TOKENS).unwrap();
            let rules = RulesFile::parse("rules.yaml", RULES).unwrap();
            HandlerChain::new(Arc::new(server), Arc::new(tokens), Arc::new(rules))
                .with_audit(Arc::new(auditor))
        })
        .await
        .unwrap();
        let http = reqwest::Client::builder()
            .use_preconfigured_tls(apiserver_framework::testing::tls::http1_config(
                &served.ca_pem,
            ))
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap();
        Server {
            url: served.url.clone(),
            audit_log: served.dir.path().join("audit.log"),
            http,
            admitted,
            _served: served,
        }
    }

    fn request(&self, user: &str, method: Method, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.url))
            .bearer_auth(format!("{user}-token"))
    }

    /// Sends a request with an optional JSON body (`content_type` for PATCH); answers the
    /// status and the body, which must arrive within 10 s.
    async fn send(
        &self,
        user: &str,
        method: Method,
        path: &str,
        body: Option<(&str, Value)>,
    ) -> (u16, String) {
        let mut req = self.request(user, method, path);
        if let Some((content_type, body)) = body {
            req = req
                .header("content-type", content_type)
                .body(body.to_string());
        }
        let res = req.send().await.unwrap();
        let code = res.status().as_u16();
        let text = tokio::time::timeout(Duration::from_secs(10), res.text())
            .await
            .unwrap_or_else(|_| panic!("{path}: the body did not end: a stream, not an answer"))
            .unwrap();
        (code, text)
    }

    /// The audit events written so far.
    fn audit_events(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.audit_log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

const JSON: &str = "application/json";
const MERGE: &str = "application/merge-patch+json";

/// A request body and its content type.
type Body = Option<(&'static str, Value)>;

/// Every write sent under `/watch/`: its verb and its request.
fn writes_under_the_watch_prefix() -> Vec<(&'static str, Method, String, Body)> {
    let one = format!("{WATCH_FLUNDERS}/one");
    let mut replaced = flunder("one");
    replaced["spec"]["reference"] = json!("changed");
    vec![
        (
            "create",
            Method::POST,
            WATCH_FLUNDERS.to_string(),
            Some((JSON, flunder("two"))),
        ),
        ("update", Method::PUT, one.clone(), Some((JSON, replaced))),
        (
            "patch",
            Method::PATCH,
            one.clone(),
            Some((MERGE, json!({"spec": {"reference": "patched"}}))),
        ),
        ("delete", Method::DELETE, one, None),
        (
            "deletecollection",
            Method::DELETE,
            WATCH_FLUNDERS.to_string(),
            None,
        ),
    ]
}

/// Writes under `/watch/` are authorized as `watch` (as upstream reads them) and answered 405
/// with upstream's Status, whoever sends them: bob, who may watch, and alice, who may also
/// write. getter, who may not watch, gets 403. Nothing changes, and the audit log records no
/// write as a `watch`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_under_the_watch_prefix_are_refused() {
    let s = Server::start().await;
    let (code, body) = s
        .send(
            "alice",
            Method::POST,
            FLUNDERS,
            Some((JSON, flunder("one"))),
        )
        .await;
    assert_eq!(code, 201, "{body}");
    let before = parse(&s.send("alice", Method::GET, FLUNDERS, None).await.1);

    for (what, method, path, body) in writes_under_the_watch_prefix() {
        for user in ["bob", "alice"] {
            let (code, text) = s.send(user, method.clone(), &path, body.clone()).await;
            assert_eq!(code, 405, "{what} by {user} under /watch/: {text}");
            let status = parse(&text);
            assert_eq!(status["kind"], "Status", "{text}");
            assert_eq!(status["reason"], "MethodNotAllowed", "{text}");
            assert_eq!(
                status["message"],
                "the server does not allow this method on the requested resource"
            );
        }
        let (code, text) = s.send("getter", method.clone(), &path, body.clone()).await;
        assert_eq!(code, 403, "{what} by getter under /watch/: {text}");
        assert!(
            message(&parse(&text)).contains("User \"getter\" cannot watch resource \"flunders\""),
            "{text}"
        );
    }

    // Nothing was created, changed or deleted.
    let after = parse(&s.send("alice", Method::GET, FLUNDERS, None).await.1);
    assert_eq!(after["items"], before["items"]);
    assert_eq!(after["items"].as_array().unwrap().len(), 1);
    assert_eq!(after["items"][0]["spec"]["reference"], "x");

    // Every request authorized as a watch was answered 405 or 403: no write passed as one.
    let events = s.audit_events();
    let watches: Vec<&Value> = events
        .iter()
        .filter(|e| e["stage"] == "ResponseComplete" && e["verb"] == "watch")
        .collect();
    assert_eq!(watches.len(), 15, "{watches:#?}");
    for e in &watches {
        let code = e["responseStatus"]["code"].as_i64().unwrap();
        assert!(code == 405 || code == 403, "{e}");
    }
    // The one write that happened is recorded as what it was.
    let creates: Vec<&Value> = events
        .iter()
        .filter(|e| e["stage"] == "ResponseComplete" && e["verb"] == "create")
        .collect();
    assert_eq!(creates.len(), 1, "{creates:#?}");
    assert_eq!(creates[0]["responseStatus"]["code"], 201);

    // The prefix still serves what it is for: a GET watch, of the collection or of one
    // object, for a user who may watch.
    for path in [WATCH_FLUNDERS.to_string(), format!("{WATCH_FLUNDERS}/one")] {
        let mut res = s.request("bob", Method::GET, &path).send().await.unwrap();
        assert_eq!(res.status(), 200, "{path}");
        let event = checks::first_event(&mut res).await;
        assert_eq!(event["type"], "ADDED");
        assert_eq!(event["object"]["metadata"]["name"], "one");
    }
    // ... but watches no subresource.
    let (code, text) = s
        .send(
            "bob",
            Method::GET,
            &format!("{WATCH_FLUNDERS}/one/status"),
            None,
        )
        .await;
    assert_eq!(code, 404, "{text}");
    assert_eq!(parse(&text)["reason"], "NotFound");
}

/// A named GET is authorized as a `get` whatever its query says, so `?watch=true` on it
/// answers the object, not a watch stream: getter, who may get but not watch, reads the
/// object; watches stay out of getter's reach.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_get_with_watch_is_a_plain_get() {
    let s = Server::start().await;
    let (code, body) = s
        .send(
            "alice",
            Method::POST,
            FLUNDERS,
            Some((JSON, flunder("one"))),
        )
        .await;
    assert_eq!(code, 201, "{body}");

    for query in ["watch=true", "watch=1", "watch=true&resourceVersion=0"] {
        let (code, text) = s
            .send(
                "getter",
                Method::GET,
                &format!("{FLUNDERS}/one?{query}"),
                None,
            )
            .await;
        assert_eq!(code, 200, "{query}: {text}");
        let object = parse(&text);
        assert_eq!(object["kind"], "Flunder", "{query}: {text}");
        assert_eq!(object["metadata"]["name"], "one");
    }

    // Watches are watches, which getter may not open.
    for path in [
        format!("{FLUNDERS}?watch=true"),
        format!("{WATCH_FLUNDERS}/one"),
        WATCH_FLUNDERS.to_string(),
    ] {
        let (code, text) = s.send("getter", Method::GET, &path, None).await;
        assert_eq!(code, 403, "{path}: {text}");
    }
    let events = s.audit_events();
    let gets = events
        .iter()
        .filter(|e| {
            e["stage"] == "ResponseComplete"
                && e["user"]["username"] == "getter"
                && e["verb"] == "get"
        })
        .count();
    assert_eq!(gets, 3);
}

/// Writes through the `scale` subresource (update, merge patch, apply) reach admission as
/// writes of the subresource `scale`, as upstream admits them; writes of the object itself
/// carry none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scale_writes_are_admitted_as_the_scale_subresource() {
    let s = Server::start().await;
    let (code, body) = s
        .send(
            "alice",
            Method::POST,
            FLUNDERS,
            Some((JSON, flunder("one"))),
        )
        .await;
    assert_eq!(code, 201, "{body}");
    let scale = format!("{FLUNDERS}/one/scale");
    let current = parse(&s.send("alice", Method::GET, &scale, None).await.1);
    let mut put = current.clone();
    put["spec"] = json!({"replicas": 2});
    let writes = [
        (Method::PUT, JSON, put),
        (Method::PATCH, MERGE, json!({"spec": {"replicas": 3}})),
        (
            Method::PATCH,
            "application/apply-patch+yaml",
            json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "spec": {"replicas": 4}}),
        ),
    ];
    for (i, (method, content_type, body)) in writes.into_iter().enumerate() {
        s.admitted.lock().unwrap().clear();
        let path = match content_type {
            "application/apply-patch+yaml" => format!("{scale}?fieldManager=scaler&force=true"),
            _ => scale.clone(),
        };
        let (code, text) = s
            .send("alice", method.clone(), &path, Some((content_type, body)))
            .await;
        assert_eq!(code, 200, "{method} {content_type}: {text}");
        assert_eq!(parse(&text)["spec"]["replicas"], i + 2);
        assert_eq!(
            *s.admitted.lock().unwrap(),
            [(
                Operation::Update,
                Some("scale".to_string()),
                "one".to_string()
            )],
            "{method} {content_type}"
        );
    }
    let object = parse(
        &s.send("alice", Method::GET, &format!("{FLUNDERS}/one"), None)
            .await
            .1,
    );
    assert_eq!(object["spec"]["replicas"], 4);

    // The object itself: no subresource.
    s.admitted.lock().unwrap().clear();
    let (code, text) = s
        .send(
            "alice",
            Method::PATCH,
            &format!("{FLUNDERS}/one"),
            Some((MERGE, json!({"spec": {"reference": "y"}}))),
        )
        .await;
    assert_eq!(code, 200, "{text}");
    assert_eq!(
        *s.admitted.lock().unwrap(),
        [(Operation::Update, None, "one".to_string())]
    );
}
