//! The audit filter: records each request as the policy says, stage by stage, as upstream's
//! `WithAudit` and `WithFailedAuthenticationAudit` filters do
//! (`k8s.io/apiserver/pkg/endpoints/filters/audit.go`).
//!
//! `RequestReceived` is recorded before the request goes further, `ResponseStarted` once a
//! long-running (watch) response starts, `ResponseComplete` when the response is complete (for
//! watches: when the stream ends), `Panic` when the handler panicked. Filters behind this one
//! add to the event through the [`AuditContext`] in the request extensions.
//!
//! This filter runs before authorization and never reads a request body: the handlers hand
//! over what they decode (the object of a create or update, a patch) through the
//! [`AuditHook`] it puts in the extensions, as upstream's handlers call `LogRequestObject`.

use std::future::Future;
use std::net::IpAddr;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use bytes::Bytes;
use futures::FutureExt;
use http::request::Parts;
use http::{Extensions, HeaderMap, Response};
use http_body_util::BodyExt;
use parking_lot::Mutex;
use serde_json::Value;

use super::backend::AuditBackend;
use super::event::{Event, EventUser, Level, ObjectReference, ResponseStatus, Stage, micro_time};
use super::policy::Policy;
use crate::authn::PeerAddr;
use crate::authz::{self, Attributes, ParsedRequest, Request as AuthzRequest};
use crate::endpoints::audit_hook::{AuditHook, RequestAudit};
use crate::endpoints::query::Query;
use crate::user::UserInfo;

/// The request header carrying a caller's audit id, and the response header echoing it.
pub const AUDIT_ID_HEADER: &str = "audit-id";

/// The request's audit id, kept in its extensions by the handler chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditId(pub String);

impl AuditId {
    /// The caller's `Audit-ID` header when given, otherwise a new UUID (upstream's
    /// `WithAuditInit`).
    pub fn of(headers: &HeaderMap) -> Self {
        match headers
            .get(AUDIT_ID_HEADER)
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.is_empty())
        {
            Some(id) => AuditId(id.to_string()),
            // Written straight into its string (`to_string` goes through the formatter).
            None => {
                let mut id = [0u8; uuid::fmt::Hyphenated::LENGTH];
                AuditId(
                    uuid::Uuid::new_v4()
                        .hyphenated()
                        .encode_lower(&mut id)
                        .to_owned(),
                )
            }
        }
    }
}

/// The policy and backend of a server's auditing.
pub struct Auditor {
    policy: Policy,
    backend: Arc<dyn AuditBackend>,
}

struct Recording {
    event: Event,
    omit_stages: Vec<Stage>,
}

/// The event of one request being recorded; in the request extensions of audited requests,
/// for the filters behind the audit filter to add to.
#[derive(Clone)]
pub struct AuditContext {
    recording: Arc<Mutex<Recording>>,
    backend: Arc<dyn AuditBackend>,
}

impl AuditContext {
    /// The context of an audited request, if it is audited.
    pub fn of(extensions: &Extensions) -> Option<&AuditContext> {
        extensions.get::<AuditContext>()
    }

    /// Records the user the request impersonates.
    pub fn log_impersonated_user(&self, user: &UserInfo) {
        self.recording.lock().event.impersonated_user = Some(EventUser::from(user));
    }

    /// Adds an annotation (an existing key keeps its first value, as upstream).
    pub fn add_annotation(&self, key: &str, value: &str) {
        self.recording
            .lock()
            .event
            .annotations
            .entry(key.to_string())
            .or_insert_with(|| value.to_string());
    }

    fn with_event(&self, f: impl FnOnce(&mut Event)) {
        f(&mut self.recording.lock().event)
    }

    /// Records the event at `stage` unless the policy omits that stage.
    fn emit(&self, stage: Stage) {
        if let Some(event) = self.staged(stage) {
            self.backend.process(&event);
        }
    }

    /// Records the event at `stage` as [`AuditContext::emit`], waiting for a blocking backend
    /// to store it: whether it was stored (an omitted stage counts as stored).
    async fn emit_stored(&self, stage: Stage) -> bool {
        match self.staged(stage) {
            Some(event) if self.backend.blocks() => self.backend.store(&event).await,
            Some(event) => {
                self.backend.process(&event);
                true
            }
            None => true,
        }
    }

    /// The event at `stage`, counted, unless the policy omits that stage.
    fn staged(&self, stage: Stage) -> Option<Event> {
        let event = {
            let mut r = self.recording.lock();
            if r.omit_stages.contains(&stage) {
                return None;
            }
            r.event.stage = stage;
            r.event.stage_timestamp = micro_time(jiff::Timestamp::now());
            r.event.clone()
        };
        crate::metrics::global()
            .audit_events
            .with_label_values(&[] as &[&str])
            .inc();
        Some(event)
    }
}

/// Upstream's answer to a request whose `RequestReceived` event could not be stored
/// (`responsewriters.InternalError`): 500 with a line of text.
fn failed_to_store(parts: &Parts) -> Response<Body> {
    let uri = parts
        .uri
        .path_and_query()
        .map_or(parts.uri.path(), |p| p.as_str());
    let text = format!(
        "Internal Server Error: {}: failed to store audit event\n",
        crate::quote::go_quote(uri)
    );
    let mut res = Response::new(Body::from(text));
    *res.status_mut() = http::StatusCode::INTERNAL_SERVER_ERROR;
    res.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    res.headers_mut().insert(
        http::header::X_CONTENT_TYPE_OPTIONS,
        http::HeaderValue::from_static("nosniff"),
    );
    res
}

/// What the handlers decode from the body, as upstream's `LogRequestObject` and
/// `LogRequestPatch` record it.
impl RequestAudit for AuditContext {
    fn records_body(&self) -> bool {
        self.recording.lock().event.level >= Level::Request
    }

    fn object(&self, object: &Value) {
        let kept = self.records_body().then(|| object.clone());
        self.with_event(|e| {
            complete_object_ref(e, object);
            if kept.is_some() {
                e.request_object = kept;
            }
        });
    }

    fn patch(&self, patch: Value) {
        if self.records_body() {
            self.with_event(|e| e.request_object = Some(patch));
        }
    }
}

/// The authorization filter's annotation keys and values (upstream's `WithAuthorization`).
const DECISION: &str = "authorization.k8s.io/decision";
const REASON: &str = "authorization.k8s.io/reason";

/// Annotates the audit event of a request (if audited) with the authorizer's decision:
/// `allow` or `forbid` and the reason; `internal error` as the reason when it failed.
pub fn annotate_authorization(
    extensions: &Extensions,
    decision: &Result<authz::Decision, authz::AuthorizationError>,
) {
    let Some(ctx) = AuditContext::of(extensions) else {
        return;
    };
    match decision {
        Ok(authz::Decision::Allow) => {
            ctx.add_annotation(DECISION, "allow");
            ctx.add_annotation(REASON, "");
        }
        Ok(authz::Decision::Deny(reason) | authz::Decision::NoOpinion(reason)) => {
            ctx.add_annotation(DECISION, "forbid");
            ctx.add_annotation(REASON, reason);
        }
        Err(_) => ctx.add_annotation(REASON, "internal error"),
    }
}

impl Auditor {
    /// Audits requests as `policy` says into `backend`.
    pub fn new(policy: Policy, backend: Arc<dyn AuditBackend>) -> Self {
        Auditor { policy, backend }
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Serves an authenticated request through `next`, recording it as the policy says.
    pub async fn serve<F, Fut>(
        &self,
        mut parts: Parts,
        body: Body,
        user: &UserInfo,
        next: F,
    ) -> Response<Body>
    where
        F: FnOnce(Parts, Body) -> Fut,
        Fut: Future<Output = Response<Body>>,
    {
        let attrs = Attributes {
            user: user.clone(),
            request: ParsedRequest::of_parts(&parts).0.as_ref().clone(),
        };
        let config = self.policy.evaluate(&attrs);
        if config.level == Level::None {
            return next(parts, body).await;
        }
        let ctx = AuditContext {
            recording: Arc::new(Mutex::new(Recording {
                event: new_event(&parts, &attrs, config.level),
                omit_stages: config.omit_stages,
            })),
            backend: self.backend.clone(),
        };
        if !ctx.emit_stored(Stage::RequestReceived).await {
            // blocking-strict: a request whose arrival could not be audited is not served
            // (upstream's `failed to store audit event`).
            crate::metrics::global()
                .audit_requests_rejected
                .with_label_values(&[] as &[&str])
                .inc();
            return failed_to_store(&parts);
        }

        let long_running = matches!(&attrs.request, AuthzRequest::Resource(r) if r.verb == "watch");
        let delete = matches!(&attrs.request, AuthzRequest::Resource(r) if r.verb == "delete");
        parts.extensions.insert(ctx.clone());
        parts.extensions.insert(AuditHook(Arc::new(ctx.clone())));
        let served = AssertUnwindSafe(next(parts, body)).catch_unwind().await;
        match served {
            Ok(res) => {
                let capture = config.level >= Level::RequestResponse || delete;
                self.finish(&ctx, res, long_running, capture).await
            }
            Err(panic) => {
                let message = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                ctx.with_event(|e| {
                    e.response_status = Some(ResponseStatus {
                        status: "Failure".into(),
                        reason: "InternalError".into(),
                        message: format!("APIServer panic'd: {message}"),
                        code: 500,
                        ..Default::default()
                    })
                });
                ctx.emit(Stage::Panic);
                std::panic::resume_unwind(panic)
            }
        }
    }

    /// Records the response: `ResponseStarted` now and `ResponseComplete` when the body ends
    /// for long-running requests, `ResponseComplete` now for the others. The body of failures
    /// is read for their Status fields; `capture` reads successful ones too (for the response
    /// object, or the Status of a delete).
    async fn finish(
        &self,
        ctx: &AuditContext,
        res: Response<Body>,
        long_running: bool,
        capture: bool,
    ) -> Response<Body> {
        let code = res.status().as_u16();
        ctx.with_event(|e| {
            e.response_status = Some(ResponseStatus {
                code,
                ..Default::default()
            })
        });
        if long_running {
            ctx.emit_stored(Stage::ResponseStarted).await;
            let (parts, body) = res.into_parts();
            let body = Body::new(CompleteOnEnd {
                inner: body,
                ctx: Some(ctx.clone()),
            });
            return Response::from_parts(parts, body);
        }
        let read = capture || !res.status().is_success();
        if !read {
            ctx.emit_stored(Stage::ResponseComplete).await;
            return res;
        }
        let (parts, body) = res.into_parts();
        let bytes = match body.collect().await {
            Ok(c) => c.to_bytes(),
            Err(e) => {
                tracing::debug!(error = %e, "response body failed");
                Bytes::new()
            }
        };
        if let Some(object) = parse_object(&parts.headers, &bytes) {
            ctx.with_event(|e| {
                if object.get("kind").and_then(|k| k.as_str()) == Some("Status") {
                    let text = |k: &str| {
                        object
                            .get(k)
                            .and_then(|v| v.as_str())
                            .unwrap_or_default()
                            .to_string()
                    };
                    e.response_status = Some(ResponseStatus {
                        status: text("status"),
                        message: text("message"),
                        reason: text("reason"),
                        details: object.get("details").cloned(),
                        code: object
                            .get("code")
                            .and_then(|c| c.as_u64())
                            .and_then(|c| u16::try_from(c).ok())
                            .unwrap_or(code),
                        ..Default::default()
                    });
                }
                if e.level >= Level::RequestResponse {
                    e.response_object = Some(object);
                }
            });
        }
        ctx.emit_stored(Stage::ResponseComplete).await;
        Response::from_parts(parts, Body::from(bytes))
    }

    /// Records a request whose authentication failed: one `ResponseStarted` event with the
    /// response code and the credentials tried (upstream's `WithFailedAuthenticationAudit`).
    pub fn failed_authentication(&self, parts: &Parts, code: u16) {
        let attrs = Attributes {
            user: UserInfo::default(),
            request: ParsedRequest::of_parts(parts).0.as_ref().clone(),
        };
        let config = self.policy.evaluate(&attrs);
        if config.level == Level::None {
            return;
        }
        let mut event = new_event(parts, &attrs, config.level);
        event.response_status = Some(ResponseStatus {
            message: auth_methods(parts),
            code,
            ..Default::default()
        });
        let ctx = AuditContext {
            recording: Arc::new(Mutex::new(Recording {
                event,
                omit_stages: config.omit_stages,
            })),
            backend: self.backend.clone(),
        };
        ctx.emit(Stage::ResponseStarted);
    }
}

/// The credentials a failed request carried, as upstream words them.
fn auth_methods(parts: &Parts) -> String {
    let mut methods = Vec::new();
    let auth = parts
        .headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .trim();
    let mut words = auth.split(' ');
    let scheme = words.next().unwrap_or_default();
    let has_more = words.next().is_some();
    if scheme.eq_ignore_ascii_case("basic") && has_more {
        methods.push("basic");
    }
    if has_more && scheme.eq_ignore_ascii_case("bearer") {
        methods.push("bearer");
    }
    let has_token = |q: &Query| q.all("access_token").any(|v| !v.trim().is_empty());
    let access_token = match parts.extensions.get::<Query>() {
        Some(query) => has_token(query),
        None => parts
            .uri
            .query()
            .is_some_and(|q| has_token(&Query::parse(Some(q)))),
    };
    if access_token {
        methods.push("access_token");
    }
    if parts
        .extensions
        .get::<crate::authn::PeerCertificates>()
        .is_some()
    {
        methods.push("x509");
    }
    if methods.is_empty() {
        "Authentication failed, no credentials provided".to_string()
    } else {
        format!("Authentication failed, attempted: {}", methods.join(", "))
    }
}

fn new_event(parts: &Parts, attrs: &Attributes, level: Level) -> Event {
    let now = micro_time(jiff::Timestamp::now());
    let (verb, object_ref) = match &attrs.request {
        AuthzRequest::Resource(r) => (
            r.verb.clone(),
            Some(ObjectReference {
                resource: r.resource.clone(),
                namespace: r.namespace.clone(),
                name: r.name.clone(),
                api_group: r.group.clone(),
                api_version: r.version.clone(),
                subresource: r.subresource.clone(),
                ..Default::default()
            }),
        ),
        AuthzRequest::NonResource(n) => (n.verb.clone(), None),
    };
    let audit_id = parts
        .extensions
        .get::<AuditId>()
        .cloned()
        .unwrap_or_else(|| AuditId::of(&parts.headers));
    Event {
        kind: "Event".into(),
        api_version: "audit.k8s.io/v1".into(),
        level,
        audit_id: audit_id.0,
        stage: Stage::RequestReceived,
        request_uri: parts
            .uri
            .path_and_query()
            .map_or_else(|| parts.uri.path().to_string(), |p| p.as_str().to_string()),
        verb,
        user: EventUser::from(&attrs.user),
        impersonated_user: None,
        source_ips: source_ips(parts),
        user_agent: parts
            .headers
            .get(http::header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string(),
        object_ref,
        response_status: None,
        request_object: None,
        response_object: None,
        request_received_timestamp: now.clone(),
        stage_timestamp: now,
        annotations: Default::default(),
    }
}

/// The client addresses: `X-Forwarded-For`, then `X-Real-Ip`, then the peer, without repeats
/// (upstream's `utilnet.SourceIPs`).
fn source_ips(parts: &Parts) -> Vec<String> {
    let mut ips: Vec<IpAddr> = Vec::new();
    for value in parts.headers.get_all("x-forwarded-for") {
        for ip in value.to_str().unwrap_or_default().split(',') {
            if let Ok(ip) = ip.trim().parse() {
                ips.push(ip);
            }
        }
    }
    if let Some(ip) = parts
        .headers
        .get("x-real-ip")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
        && !ips.contains(&ip)
    {
        ips.push(ip);
    }
    if let Some(PeerAddr(addr)) = parts.extensions.get::<PeerAddr>()
        && !ips.contains(&addr.ip())
    {
        ips.push(addr.ip());
    }
    ips.iter().map(|ip| ip.to_string()).collect()
}

/// A JSON (or YAML) response body as a JSON value.
fn parse_object(headers: &HeaderMap, bytes: &[u8]) -> Option<serde_json::Value> {
    if bytes.is_empty() {
        return None;
    }
    if let Ok(v) = serde_json::from_slice(bytes) {
        return Some(v);
    }
    let yaml = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.contains("yaml"));
    if yaml {
        return serde_yaml_ng::from_slice(bytes).ok();
    }
    None
}

/// Fills what the URL did not say from the object's metadata (upstream's `LogRequestObject`).
fn complete_object_ref(event: &mut Event, object: &Value) {
    let Some(r) = event.object_ref.as_mut() else {
        return;
    };
    let Some(meta) = object.get("metadata") else {
        return;
    };
    let field = |k: &str| meta.get(k).and_then(|v| v.as_str()).unwrap_or_default();
    for (slot, key) in [
        (&mut r.namespace, "namespace"),
        (&mut r.name, "name"),
        (&mut r.uid, "uid"),
        (&mut r.resource_version, "resourceVersion"),
    ] {
        if slot.is_empty() {
            *slot = field(key).to_string();
        }
    }
}

/// A long-running response body recording `ResponseComplete` when it ends or is dropped.
struct CompleteOnEnd {
    inner: Body,
    ctx: Option<AuditContext>,
}

impl http_body::Body for CompleteOnEnd {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(None) = polled
            && let Some(ctx) = self.ctx.take()
        {
            ctx.emit(Stage::ResponseComplete);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for CompleteOnEnd {
    fn drop(&mut self) {
        if let Some(ctx) = self.ctx.take() {
            ctx.emit(Stage::ResponseComplete);
        }
    }
}
