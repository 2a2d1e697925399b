//! Auditing and impersonation over real HTTPS: a policy file and `--audit-log-path` set up
//! with the real flags, events read back from the JSON-lines log, impersonation authorized by
//! a rules-based test double of the authorizer.

mod support_audit;
mod support_chain;
mod support_kinds;
mod support_local;

use std::path::PathBuf;
use std::sync::Arc;

use apiserver_framework::audit::AuditOptions;
use apiserver_framework::authn::StaticTokens;
use apiserver_framework::authz::{Attributes, AuthorizationError, Authorizer, Decision, Request};
use apiserver_framework::prelude::*;
use apiserver_framework::server::GenericApiServer;
use apiserver_framework::testing::{TestServer, wait};
use apiserver_framework::tls::install_crypto_provider;
use apiserver_framework::user::UserInfo;
use reqwest::Method;
use serde_json::{Value, json};
use support_audit::{Audited as Server, Flunder, Setup, audit_id, flunders};
use support_local::start_local;

/// Namespace `quiet` is not recorded, `full` at RequestResponse, `req` at Request, `brief` at
/// Metadata without RequestReceived; everything else at Metadata.
const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  namespaces: ["quiet"]
- level: RequestResponse
  namespaces: ["full"]
- level: Request
  namespaces: ["req"]
- level: Metadata
  namespaces: ["brief"]
  omitStages: ["RequestReceived"]
- level: None
  nonResourceURLs: ["/healthz*"]
- level: Metadata
"#;

/// `alice` may do anything with flunders; `bob` is denied with a reason; `imp` may only
/// impersonate the user `alice`, the group `devs` and the extra `scopes=read`.
struct Rules;

#[async_trait::async_trait]
impl Authorizer for Rules {
    async fn authorize(&self, attrs: &Attributes) -> Result<Decision, AuthorizationError> {
        let user = attrs.user.username.as_str();
        Ok(match (user, &attrs.request) {
            ("bob", _) => Decision::Deny("bob is banned".into()),
            ("alice", Request::Resource(r)) if r.resource == "flunders" => Decision::Allow,
            ("imp", Request::Resource(r)) if r.verb == "impersonate" => {
                let ok = matches!(
                    (
                        r.group.as_str(),
                        r.resource.as_str(),
                        r.subresource.as_str(),
                        r.name.as_str()
                    ),
                    ("", "users", "", "alice")
                        | ("", "groups", "", "devs")
                        | ("authentication.k8s.io", "userextras", "scopes", "read")
                );
                if ok {
                    Decision::Allow
                } else {
                    Decision::NoOpinion(String::new())
                }
            }
            _ => Decision::NoOpinion(String::new()),
        })
    }
}

impl Server {
    async fn start(maxsize_mb: u64, maxbackup: usize) -> Self {
        let user = |name: &str| UserInfo::new(name, &["system:authenticated"]);
        Server::start_with(Setup {
            name: "audit",
            policy: POLICY,
            log: "logs/audit.log",
            options: AuditOptions {
                audit_log_maxsize: maxsize_mb,
                audit_log_maxbackup: maxbackup,
                audit_log_maxage: 0,
                ..Default::default()
            },
            users: StaticTokens::from([
                ("alice-token", user("alice")),
                ("bob-token", user("bob")),
                ("imp-token", user("imp")),
            ]),
            authorizer: Arc::new(Rules),
            client: reqwest::Client::builder().user_agent("audit-test/1.0"),
        })
        .await
    }

    /// Sends a request; answers the status, the `Audit-Id` header and the body text.
    async fn send(
        &self,
        token: &str,
        method: Method,
        path: &str,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> (u16, String, String) {
        let mut req = self.request(token, method, path);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().await.unwrap();
        let (code, id) = (res.status().as_u16(), audit_id(&res));
        (code, id, res.text().await.unwrap())
    }

    async fn create(
        &self,
        token: &str,
        ns: &str,
        name: &str,
        headers: &[(&str, &str)],
    ) -> (u16, String, String) {
        let flunder = json!({
            "apiVersion": "wardle.example.com/v1alpha1",
            "kind": "Flunder",
            "metadata": {"name": name},
            "spec": {"reference": "x"}
        });
        self.send(token, Method::POST, &flunders(ns), Some(flunder), headers)
            .await
    }

    /// The events of one request, in the order written.
    fn events(&self, audit_id: &str) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .filter(|e| e["auditID"] == audit_id)
            .collect()
    }
}

fn stages(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["stage"].as_str().unwrap())
        .collect()
}

fn is_micro_time(v: &Value) -> bool {
    let s = v.as_str().unwrap_or_default();
    // 2026-01-02T03:04:05.123456Z
    s.len() == 27
        && s.ends_with('Z')
        && s.as_bytes()[19] == b'.'
        && s.parse::<jiff::Timestamp>().is_ok()
}

#[tokio::test]
async fn requests_produce_one_event_per_stage() {
    let s = Server::start(0, 0).await;
    let (code, id, text) = s.create("alice-token", "default", "f1", &[]).await;
    assert_eq!(code, 201, "{text}");
    assert_eq!(id.len(), 36, "a uuid: {id}");
    let events = s.events(&id);
    assert_eq!(stages(&events), ["RequestReceived", "ResponseComplete"]);
    let (received, complete) = (&events[0], &events[1]);
    for e in &events {
        assert_eq!(e["kind"], "Event");
        assert_eq!(e["apiVersion"], "audit.k8s.io/v1");
        assert_eq!(e["level"], "Metadata");
        assert_eq!(e["verb"], "create");
        assert_eq!(e["requestURI"], flunders("default"));
        assert_eq!(
            e["user"],
            json!({"username": "alice", "groups": ["system:authenticated"]})
        );
        assert_eq!(e["sourceIPs"], json!(["127.0.0.1"]));
        assert_eq!(e["userAgent"], "audit-test/1.0");
        assert!(e.get("requestObject").is_none() && e.get("responseObject").is_none());
        assert!(e.get("impersonatedUser").is_none());
        assert!(is_micro_time(&e["requestReceivedTimestamp"]), "{e}");
        assert!(is_micro_time(&e["stageTimestamp"]), "{e}");
        assert_eq!(
            e["requestReceivedTimestamp"],
            received["requestReceivedTimestamp"]
        );
    }
    // Before the body is read the name is unknown; the complete event has it from the object.
    assert_eq!(
        received["objectRef"],
        json!({"resource": "flunders", "namespace": "default", "apiGroup": "wardle.example.com", "apiVersion": "v1alpha1"})
    );
    assert!(received.get("responseStatus").is_none());
    assert!(received.get("annotations").is_none());
    assert_eq!(complete["objectRef"]["name"], "f1");
    assert_eq!(
        complete["responseStatus"],
        json!({"metadata": {}, "code": 201})
    );
    assert_eq!(
        complete["annotations"],
        json!({"authorization.k8s.io/decision": "allow", "authorization.k8s.io/reason": ""})
    );

    // A failure keeps the Status fields; a caller's Audit-ID is reused.
    let path = format!("{}/missing", flunders("default"));
    let (code, id, _) = s
        .send(
            "alice-token",
            Method::GET,
            &path,
            None,
            &[("Audit-ID", "my-audit-id")],
        )
        .await;
    assert_eq!((code, id.as_str()), (404, "my-audit-id"));
    let events = s.events("my-audit-id");
    assert_eq!(stages(&events), ["RequestReceived", "ResponseComplete"]);
    assert_eq!(events[1]["verb"], "get");
    assert_eq!(events[1]["objectRef"]["name"], "missing");
    let status = &events[1]["responseStatus"];
    assert_eq!(status["code"], 404);
    assert_eq!(status["status"], "Failure");
    assert_eq!(status["reason"], "NotFound");
    assert_eq!(
        status["message"],
        "flunders.wardle.example.com \"missing\" not found"
    );

    // A denial is recorded with its reason.
    let (code, id, _) = s
        .send("bob-token", Method::GET, &flunders("default"), None, &[])
        .await;
    assert_eq!(code, 403);
    let events = s.events(&id);
    assert_eq!(events[1]["verb"], "list");
    assert_eq!(events[1]["responseStatus"]["code"], 403);
    assert_eq!(events[1]["responseStatus"]["reason"], "Forbidden");
    assert_eq!(
        events[1]["annotations"],
        json!({"authorization.k8s.io/decision": "forbid", "authorization.k8s.io/reason": "bob is banned"})
    );

    // A failed authentication: one ResponseStarted event, no user.
    let (code, id, _) = s
        .send("wrong-token", Method::GET, &flunders("default"), None, &[])
        .await;
    assert_eq!(code, 401);
    let events = s.events(&id);
    assert_eq!(stages(&events), ["ResponseStarted"]);
    assert_eq!(events[0]["user"], json!({}));
    assert_eq!(
        events[0]["responseStatus"],
        json!({"metadata": {}, "message": "Authentication failed, attempted: bearer", "code": 401})
    );

    // Non-resource requests have no objectRef; /healthz is not recorded by the policy.
    let (code, id, _) = s
        .send("alice-token", Method::GET, "/version", None, &[])
        .await;
    assert_eq!(code, 403);
    let events = s.events(&id);
    assert_eq!(events[1]["verb"], "get");
    assert!(events[1].get("objectRef").is_none());
    let (_, id, _) = s
        .send("alice-token", Method::GET, "/healthz", None, &[])
        .await;
    assert!(!id.is_empty());
    assert!(s.events(&id).is_empty());
}

#[tokio::test]
async fn policy_levels_change_what_is_recorded() {
    let s = Server::start(0, 0).await;
    for ns in ["quiet", "full", "req", "brief"] {
        let (code, _, text) = s.create("alice-token", ns, "seed", &[]).await;
        assert_eq!(code, 201, "{text}");
    }
    let (_, id, _) = s.create("alice-token", "quiet", "f", &[]).await;
    assert!(s.events(&id).is_empty(), "None records nothing");

    let (_, id, _) = s.create("alice-token", "req", "f", &[]).await;
    let events = s.events(&id);
    assert_eq!(stages(&events), ["RequestReceived", "ResponseComplete"]);
    assert_eq!(events[1]["level"], "Request");
    assert_eq!(events[1]["requestObject"]["metadata"]["name"], "f");
    assert!(events[1].get("responseObject").is_none());

    let (_, id, _) = s.create("alice-token", "full", "f", &[]).await;
    let events = s.events(&id);
    assert_eq!(events[1]["level"], "RequestResponse");
    assert_eq!(events[1]["requestObject"]["spec"]["reference"], "x");
    assert!(events[1]["requestObject"]["metadata"].get("uid").is_none());
    assert_eq!(events[1]["responseObject"]["metadata"]["name"], "f");
    assert!(events[1]["responseObject"]["metadata"]["uid"].is_string());

    let (_, id, _) = s.create("alice-token", "brief", "f", &[]).await;
    let events = s.events(&id);
    assert_eq!(
        stages(&events),
        ["ResponseComplete"],
        "RequestReceived omitted"
    );
    assert!(events[0].get("requestObject").is_none());

    // A watch: ResponseStarted once the stream starts, ResponseComplete when it ends.
    let path = format!("{}?watch=true&timeoutSeconds=1", flunders("default"));
    let (code, id, _) = s.send("alice-token", Method::GET, &path, None, &[]).await;
    assert_eq!(code, 200);
    let three = wait::poll(
        "the watch's three events",
        std::time::Duration::from_secs(5),
        || async {
            let events = s.events(&id);
            if events.len() == 3 {
                Ok(events)
            } else {
                Err(format!("{events:?}"))
            }
        },
    )
    .await;
    // Not three: the assertion below shows what there is.
    let events = three.unwrap_or_else(|_| s.events(&id));
    assert_eq!(
        stages(&events),
        ["RequestReceived", "ResponseStarted", "ResponseComplete"]
    );
    assert_eq!(events[1]["verb"], "watch");
    assert_eq!(events[1]["responseStatus"]["code"], 200);
    assert_eq!(events[2]["responseStatus"]["code"], 200);
}

#[tokio::test]
async fn the_log_rotates_by_size() {
    let s = Server::start(1, 2).await;
    let big = "y".repeat(300 * 1024);
    for i in 0..8 {
        let flunder = json!({
            "apiVersion": "wardle.example.com/v1alpha1",
            "kind": "Flunder",
            "metadata": {"name": format!("big{i}")},
            "spec": {"reference": big}
        });
        let (code, _, text) = s
            .send(
                "alice-token",
                Method::POST,
                &flunders("full"),
                Some(flunder),
                &[],
            )
            .await;
        assert_eq!(code, 201, "{text}");
    }
    let mut backups: Vec<PathBuf> = std::fs::read_dir(s.dir.path().join("logs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p != &s.log)
        .collect();
    backups.sort();
    assert_eq!(
        backups.len(),
        2,
        "at most --audit-log-maxbackup backups: {backups:?}"
    );
    for b in backups.iter().chain([&s.log]) {
        let name = b.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with("audit") && name.ends_with(".log"),
            "{name}"
        );
        let text = std::fs::read_to_string(b).unwrap();
        assert!(text.len() <= 1024 * 1024, "{name} is {} bytes", text.len());
        for line in text.lines() {
            let e: Value = serde_json::from_str(line).unwrap();
            assert_eq!(e["kind"], "Event");
        }
    }
}

#[tokio::test]
async fn impersonation_is_authorized_and_audited() {
    let s = Server::start(0, 0).await;
    // imp may not create flunders itself…
    let (code, _, _) = s.create("imp-token", "default", "f0", &[]).await;
    assert_eq!(code, 403);
    // …but as alice it may.
    let headers = [
        ("Impersonate-User", "alice"),
        ("Impersonate-Group", "devs"),
        ("Impersonate-Extra-Scopes", "read"),
    ];
    let (code, id, text) = s.create("imp-token", "default", "f1", &headers).await;
    assert_eq!(code, 201, "{text}");
    let events = s.events(&id);
    assert_eq!(stages(&events), ["RequestReceived", "ResponseComplete"]);
    assert_eq!(events[0]["user"]["username"], "imp");
    assert!(events[0].get("impersonatedUser").is_none());
    assert_eq!(events[1]["user"]["username"], "imp");
    assert_eq!(
        events[1]["impersonatedUser"],
        json!({"username": "alice", "groups": ["devs", "system:authenticated"], "extra": {"scopes": ["read"]}})
    );

    // Each thing impersonated is authorized: upstream's 403.
    let forbidden = |text: &str| serde_json::from_str::<Value>(text).unwrap()["message"].clone();
    let (code, id, text) = s
        .create(
            "imp-token",
            "default",
            "f2",
            &[("Impersonate-User", "admin")],
        )
        .await;
    assert_eq!(code, 403);
    assert_eq!(
        forbidden(&text),
        "users \"admin\" is forbidden: User \"imp\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
    );
    assert_eq!(s.events(&id)[1]["responseStatus"]["code"], 403);
    let (code, _, text) = s
        .create(
            "imp-token",
            "default",
            "f2",
            &[
                ("Impersonate-User", "alice"),
                ("Impersonate-Extra-Scopes", "write"),
            ],
        )
        .await;
    assert_eq!(code, 403);
    assert_eq!(
        forbidden(&text),
        "userextras.authentication.k8s.io \"write\" is forbidden: User \"imp\" cannot impersonate resource \"userextras/scopes\" in API group \"authentication.k8s.io\" at the cluster scope"
    );
    let (code, _, text) = s
        .create(
            "alice-token",
            "default",
            "f2",
            &[("Impersonate-User", "bob")],
        )
        .await;
    assert_eq!(code, 403);
    assert_eq!(
        forbidden(&text),
        "users \"bob\" is forbidden: User \"alice\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
    );
    // Groups without a user: upstream's plain-text 500.
    let (code, _, text) = s
        .create(
            "imp-token",
            "default",
            "f2",
            &[("Impersonate-Group", "devs")],
        )
        .await;
    assert_eq!(code, 500);
    assert_eq!(
        text,
        format!(
            "Internal Server Error: \"{}\": requested [{{Group  devs    }}] without impersonating a user\n",
            flunders("default")
        )
    );
}

#[tokio::test]
async fn local_mode_takes_the_audit_flags() {
    install_crypto_provider();
    let server = GenericApiServer::builder("local-audit")
        .group(Group::new("wardle.example.com").resource::<Flunder>())
        .build();
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let log = dir.path().join("audit.log");
    let flags = [
        format!("--audit-policy-file={}", policy.display()),
        format!("--audit-log-path={}", log.display()),
    ];
    let local = start_local("local-audit", server, &flags).await;
    let client = &local.client;
    let res = client
        .http
        .get(format!("{}{}", client.url, flunders("default")))
        .bearer_auth(&client.token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let id = res.headers()["audit-id"].to_str().unwrap().to_string();
    let text = std::fs::read_to_string(&log).unwrap();
    let events: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["auditID"] == id.as_str())
        .collect();
    assert_eq!(stages(&events), ["RequestReceived", "ResponseComplete"]);
    assert_eq!(events[1]["user"]["username"], "local-admin");
    assert_eq!(events[1]["verb"], "list");

    // A policy that does not parse stops the start.
    std::fs::write(&policy, "kind: Policy\n").unwrap();
    let server = GenericApiServer::builder("local-audit").build();
    let refused = TestServer::serve_local("local-audit", server, &flags).await;
    assert!(
        refused.is_err(),
        "a policy that does not parse must stop the start"
    );
}
