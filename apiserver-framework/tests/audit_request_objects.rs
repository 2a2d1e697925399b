//! What the audit log records of request bodies, now that the handlers hand it over instead of
//! the audit filter reading bodies before authorization: creates and updates complete the
//! object reference and (at level `Request` and up) record the decoded object; patches, apply
//! configurations included, are recorded as JSON; refused requests record no body at all.

mod support_audit;
mod support_chain;
mod support_kinds;

use std::sync::Arc;

use apiserver_framework::audit::AuditOptions;
use apiserver_framework::authn::StaticTokens;
use apiserver_framework::authz::{Attributes, AuthorizationError, Authorizer, Decision};
use apiserver_framework::prelude::*;
use apiserver_framework::user::UserInfo;
use reqwest::Method;
use serde_json::{Value, json};
use support_audit::{Audited as Server, Setup, audit_id, flunders};

/// `meta` at Metadata, everything else at Request.
const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
  namespaces: ["meta"]
- level: Request
"#;

/// `alice` may do anything; everyone else is refused.
struct OnlyAlice;

#[async_trait::async_trait]
impl Authorizer for OnlyAlice {
    async fn authorize(&self, attrs: &Attributes) -> Result<Decision, AuthorizationError> {
        Ok(if attrs.user.username == "alice" {
            Decision::Allow
        } else {
            Decision::Deny("only alice".into())
        })
    }
}

impl Server {
    async fn start() -> Self {
        Server::start_with(Setup {
            name: "audit-objects",
            policy: POLICY,
            log: "audit.log",
            options: AuditOptions::default(),
            users: StaticTokens::from([
                ("alice", UserInfo::new("alice", &["system:authenticated"])),
                ("bob", UserInfo::new("bob", &["system:authenticated"])),
            ]),
            authorizer: Arc::new(OnlyAlice),
            client: reqwest::Client::builder(),
        })
        .await
    }

    /// Sends a request with a body; the status and the completed event's audit id.
    async fn send(
        &self,
        token: &str,
        method: Method,
        path: &str,
        content_type: &str,
        body: String,
    ) -> (u16, String) {
        let req = self.request(token, method, path);
        let res = req
            .header("Content-Type", content_type)
            .body(body)
            .send()
            .await
            .unwrap();
        (res.status().as_u16(), audit_id(&res))
    }

    /// The `ResponseComplete` event of a request.
    fn completed(&self, audit_id: &str) -> Value {
        let text = std::fs::read_to_string(&self.log).unwrap();
        text.lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|e| e["auditID"] == audit_id && e["stage"] == "ResponseComplete")
            .unwrap_or_else(|| panic!("no ResponseComplete event for {audit_id}:\n{text}"))
    }
}

#[tokio::test]
async fn handlers_hand_their_decoded_bodies_to_the_audit_event() {
    let s = Server::start().await;
    let yaml = "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata:\n  name: f1\nspec:\n  reference: x\n";

    // A YAML create: the decoded object, as JSON, and the name completes the reference.
    let (code, id) = s
        .send(
            "alice",
            Method::POST,
            &flunders("req"),
            "application/yaml",
            yaml.into(),
        )
        .await;
    assert_eq!(code, 201);
    let e = s.completed(&id);
    assert_eq!(e["objectRef"]["name"], "f1");
    assert_eq!(
        e["requestObject"],
        json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
               "metadata": {"name": "f1"}, "spec": {"reference": "x"}})
    );

    // At Metadata, the reference is completed but no object is kept.
    let (code, id) = s
        .send(
            "alice",
            Method::POST,
            &flunders("meta"),
            "application/yaml",
            yaml.into(),
        )
        .await;
    assert_eq!(code, 201);
    let e = s.completed(&id);
    assert_eq!(e["objectRef"]["name"], "f1");
    assert!(e.get("requestObject").is_none(), "{e}");

    // Patches of every kind, as JSON.
    let path = format!("{}/f1", flunders("req"));
    for (content_type, body, recorded) in [
        (
            "application/merge-patch+json",
            r#"{"spec":{"reference":"y"}}"#.to_string(),
            json!({"spec": {"reference": "y"}}),
        ),
        (
            "application/json-patch+json",
            r#"[{"op":"replace","path":"/spec/reference","value":"z"}]"#.to_string(),
            json!([{"op": "replace", "path": "/spec/reference", "value": "z"}]),
        ),
        (
            "application/apply-patch+yaml",
            "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata:\n  name: f1\nspec:\n  reference: w\n".to_string(),
            json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
                   "metadata": {"name": "f1"}, "spec": {"reference": "w"}}),
        ),
    ] {
        let (code, id) = s
            .send(
                "alice",
                Method::PATCH,
                &format!("{path}?fieldManager=m{}", if content_type.contains("apply") { "&force=true" } else { "" }),
                content_type,
                body,
            )
            .await;
        assert_eq!(code, 200, "{content_type}");
        assert_eq!(s.completed(&id)["requestObject"], recorded, "{content_type}");
    }

    // An update.
    let (code, id) = s
        .send(
            "alice",
            Method::PUT,
            &path,
            "application/json",
            json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
                   "metadata": {"name": "f1"}, "spec": {"reference": "v"}})
            .to_string(),
        )
        .await;
    assert_eq!(code, 422, "an update without resourceVersion");
    assert_eq!(s.completed(&id)["requestObject"]["spec"]["reference"], "v");

    // A refused request: its body is neither read nor recorded, nor does it complete the
    // reference.
    let (code, id) = s
        .send(
            "bob",
            Method::POST,
            &flunders("req"),
            "application/yaml",
            yaml.into(),
        )
        .await;
    assert_eq!(code, 403);
    let e = s.completed(&id);
    assert!(e.get("requestObject").is_none(), "{e}");
    assert!(e["objectRef"].get("name").is_none(), "{e}");
}
