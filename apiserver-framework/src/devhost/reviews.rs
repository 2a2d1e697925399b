//! The development host's `TokenReview` (`authentication.k8s.io/v1`) and
//! `SubjectAccessReview` (`authorization.k8s.io/v1`) endpoints: create-only, computed
//! resources answered from the token file and the host's authorizer, never stored.
//!
//! Each answered review is recorded in a [`ReviewLog`], so tests can count how often an
//! extension server asks.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use serde_json::{Value, json};

use crate::authz::{
    Attributes, Authorizer, Decision, NonResourceAttributes, Request, ResourceAttributes,
};
use crate::devhost::protobuf;
use crate::devhost::tokens::TokenFile;
use crate::error::{ApiError, FieldError};
use crate::registry::rest::options::WriteOptions;
use crate::registry::rest::{ProtobufDecoder, RequestContext, RestStorage};
use crate::resource::{ResourceInfo, Scope};
use crate::user::UserInfo;

/// What the reviews answered, in order (one entry per review).
#[derive(Debug, Default)]
pub struct ReviewLog {
    entries: Mutex<Vec<String>>,
}

impl ReviewLog {
    fn record(&self, entry: String) {
        self.entries.lock().push(entry);
    }

    /// Every entry so far: a TokenReview records `token:<user or !invalid>`, a
    /// SubjectAccessReview `sar:<user> <verb> <group>/<resource>[/<sub>] <ns>/<name>` or
    /// `sar:<user> <verb> <path>`.
    pub fn entries(&self) -> Vec<String> {
        self.entries.lock().clone()
    }

    /// How many entries equal `entry`.
    pub fn count(&self, entry: &str) -> usize {
        self.entries.lock().iter().filter(|e| *e == entry).count()
    }
}

fn review_info(group: &str, kind: &str, plural: &str) -> ResourceInfo {
    ResourceInfo {
        group: group.into(),
        version: "v1".into(),
        kind: kind.into(),
        plural: plural.into(),
        singular: kind.to_lowercase(),
        scope: Scope::Cluster,
        short_names: Vec::new(),
        categories: Vec::new(),
        status_subresource: false,
        printer_columns: Vec::new(),
        selectable_fields: Vec::new(),
        scale: None,
        schema: Arc::new(json!({
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
            }
        })),
    }
}

fn spec_of(body: &Value, info: &ResourceInfo) -> Result<Value, ApiError> {
    let spec = body.get("spec").cloned().unwrap_or(Value::Null);
    if !spec.is_object() {
        return Err(ApiError::invalid(
            info,
            "",
            &[FieldError::required("spec", "")],
        ));
    }
    Ok(spec)
}

fn answer(info: &ResourceInfo, spec: Value, status: Value) -> Result<Bytes, ApiError> {
    let obj = json!({
        "kind": info.kind,
        "apiVersion": info.api_version(),
        "metadata": {"creationTimestamp": null},
        "spec": spec,
        "status": status,
    });
    serde_json::to_vec(&obj)
        .map(Bytes::from)
        .map_err(ApiError::internal)
}

/// `authentication.k8s.io/v1` `tokenreviews`: authenticates `spec.token` against a token
/// file.
pub struct TokenReviews {
    info: ResourceInfo,
    tokens: Arc<TokenFile>,
    log: Arc<ReviewLog>,
}

impl TokenReviews {
    /// Answers from `tokens`, recording each review in `log`.
    pub fn new(tokens: Arc<TokenFile>, log: Arc<ReviewLog>) -> Self {
        TokenReviews {
            info: review_info("authentication.k8s.io", "TokenReview", "tokenreviews"),
            tokens,
            log,
        }
    }
}

fn user_json(u: &UserInfo) -> Value {
    json!({
        "username": u.username,
        "uid": u.uid,
        "groups": u.groups,
        "extra": u.extra,
    })
}

#[async_trait::async_trait]
impl RestStorage for TokenReviews {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }

    fn protobuf_decoder(&self) -> Option<ProtobufDecoder> {
        Some(protobuf::token_review)
    }

    fn verbs(&self) -> Vec<&'static str> {
        vec!["create"]
    }

    async fn create(
        &self,
        _ctx: &RequestContext,
        body: Value,
        _opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        let spec = spec_of(&body, &self.info)?;
        let token = spec.get("token").and_then(Value::as_str).unwrap_or("");
        if token.is_empty() {
            return Err(ApiError::invalid(
                &self.info,
                "",
                &[FieldError::required("spec.token", "")],
            ));
        }
        let audiences = spec.get("audiences").cloned().unwrap_or(json!([]));
        let status = match self.tokens.authenticate_token(token) {
            Some(user) => {
                self.log.record(format!("token:{}", user.username));
                json!({"authenticated": true, "user": user_json(&user), "audiences": audiences})
            }
            None => {
                // As kube-apiserver for a token no authenticator knows: not authenticated,
                // without an error (so the asking server caches the answer).
                self.log.record("token:!invalid".into());
                json!({"user": {}})
            }
        };
        answer(&self.info, spec, status)
    }
}

/// `authorization.k8s.io/v1` `subjectaccessreviews`: asks the host's authorizer.
pub struct SubjectAccessReviews {
    info: ResourceInfo,
    authorizer: Arc<dyn Authorizer>,
    log: Arc<ReviewLog>,
}

impl SubjectAccessReviews {
    /// Answers with `authorizer`, recording each review in `log`.
    pub fn new(authorizer: Arc<dyn Authorizer>, log: Arc<ReviewLog>) -> Self {
        SubjectAccessReviews {
            info: review_info(
                "authorization.k8s.io",
                "SubjectAccessReview",
                "subjectaccessreviews",
            ),
            authorizer,
            log,
        }
    }
}

fn str_field(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_string()
}

/// The attributes a SubjectAccessReview spec asks about.
fn attributes_of(spec: &Value) -> Result<Attributes, String> {
    let groups = spec
        .get("groups")
        .and_then(Value::as_array)
        .map(|g| {
            g.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let extra: BTreeMap<String, Vec<String>> = spec
        .get("extra")
        .cloned()
        .and_then(|e| serde_json::from_value(e).ok())
        .unwrap_or_default();
    let user = UserInfo {
        username: str_field(spec, "user"),
        uid: str_field(spec, "uid"),
        groups,
        extra,
    };
    let request = match (
        spec.get("resourceAttributes"),
        spec.get("nonResourceAttributes"),
    ) {
        (Some(r), None) => Request::Resource(ResourceAttributes {
            verb: str_field(r, "verb"),
            group: str_field(r, "group"),
            version: str_field(r, "version"),
            resource: str_field(r, "resource"),
            subresource: str_field(r, "subresource"),
            namespace: str_field(r, "namespace"),
            name: str_field(r, "name"),
            ..Default::default()
        }),
        (None, Some(n)) => Request::NonResource(NonResourceAttributes {
            path: str_field(n, "path"),
            verb: str_field(n, "verb"),
        }),
        _ => {
            return Err(
                "exactly one of nonResourceAttributes or resourceAttributes must be specified"
                    .into(),
            );
        }
    };
    if user.username.is_empty() && user.groups.is_empty() {
        return Err("at least one of user or group must be specified".into());
    }
    Ok(Attributes { user, request })
}

fn describe(attrs: &Attributes) -> String {
    match &attrs.request {
        Request::Resource(r) => {
            let sub = if r.subresource.is_empty() {
                String::new()
            } else {
                format!("/{}", r.subresource)
            };
            format!(
                "sar:{} {} {}/{}{} {}/{}",
                attrs.user.username, r.verb, r.group, r.resource, sub, r.namespace, r.name
            )
        }
        Request::NonResource(n) => format!("sar:{} {} {}", attrs.user.username, n.verb, n.path),
    }
}

#[async_trait::async_trait]
impl RestStorage for SubjectAccessReviews {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }

    fn protobuf_decoder(&self) -> Option<ProtobufDecoder> {
        Some(protobuf::subject_access_review)
    }

    fn verbs(&self) -> Vec<&'static str> {
        vec!["create"]
    }

    async fn create(
        &self,
        _ctx: &RequestContext,
        body: Value,
        _opts: &WriteOptions,
    ) -> Result<Bytes, ApiError> {
        let spec = spec_of(&body, &self.info)?;
        let attrs = attributes_of(&spec).map_err(|m| {
            ApiError::invalid(&self.info, "", &[FieldError::invalid("spec", "", m)])
        })?;
        self.log.record(describe(&attrs));
        let status = match self.authorizer.authorize(&attrs).await {
            Ok(Decision::Allow) => json!({"allowed": true}),
            Ok(Decision::Deny(reason)) => {
                json!({"allowed": false, "denied": true, "reason": reason})
            }
            Ok(Decision::NoOpinion(reason)) => json!({"allowed": false, "reason": reason}),
            Err(e) => json!({"allowed": false, "evaluationError": e.to_string()}),
        };
        answer(&self.info, spec, status)
    }
}
