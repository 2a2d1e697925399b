//! The request's span (upstream's `WithTracing`, after authentication so that only trusted
//! callers choose the parent): in the chain only when `--tracing-config-file` is given.
//!
//! Named as upstream's span name formatter names it: `<METHOD> /apis/<group>/<version>
//! [/namespaces/{:namespace}]/<resource>[/{:name}][/<subresource>]` (`/api/<version>/…` for the
//! core group) for resource requests, the method alone for others. Its attributes are
//! `otelhttp`'s (`http.method`, `http.target`, `http.user_agent`, `http.status_code`) and
//! upstream's `audit-id`. A caller's `traceparent` is its parent when the caller is in
//! `system:masters` or `system:monitoring` (upstream's `notSystemPrivilegedGroup` public
//! endpoint rule); for anyone else it is a link, and the request starts a trace of its own.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use axum::body::Body;
use http::{Request, Response};
use opentelemetry::trace::TraceContextExt;
use pin_project_lite::pin_project;
use tower::{Layer, Service};
use tracing::Instrument;
use tracing::instrument::Instrumented;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::audit::AuditId;
use crate::authz::{ParsedRequest, Request as Asked};
use crate::storage::traced::TRACE_TARGET;
use crate::trace_context as propagation;
use crate::user::UserInfo;

/// The groups whose `traceparent` is taken as the request's parent.
const TRUSTED_GROUPS: &[&str] = &["system:masters", "system:monitoring"];

/// The request-span filter as a layer.
pub fn layer() -> RequestSpanLayer {
    RequestSpanLayer
}

/// Starts each request's span.
#[derive(Clone, Copy, Debug, Default)]
pub struct RequestSpanLayer;

impl<S> Layer<S> for RequestSpanLayer {
    type Service = RequestSpan<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RequestSpan { inner }
    }
}

/// The service of [`RequestSpanLayer`].
#[derive(Clone, Debug)]
pub struct RequestSpan<S> {
    inner: S,
}

impl<S> Service<Request<Body>> for RequestSpan<S>
where
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = RequestSpanFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let span = span_of(&req);
        let inner = {
            let _entered = span.enter();
            self.inner.call(req)
        };
        RequestSpanFuture {
            inner: inner.instrument(span),
        }
    }
}

pin_project! {
    /// The rest of the chain, in the request's span; the status code is recorded on it.
    pub struct RequestSpanFuture<F> {
        #[pin]
        inner: Instrumented<F>,
    }
}

impl<F> Future for RequestSpanFuture<F>
where
    F: Future<Output = Result<Response<Body>, Infallible>>,
{
    type Output = Result<Response<Body>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let result = ready!(this.inner.as_mut().poll(cx));
        let span = this.inner.span();
        if let Ok(res) = &result {
            let code = res.status().as_u16();
            span.record("http.status_code", code);
            if code >= 500 {
                span.record("otel.status_code", "error");
            }
        }
        Poll::Ready(result)
    }
}

/// The span of `req`, its parent (or link) the caller's `traceparent`.
fn span_of(req: &Request<Body>) -> tracing::Span {
    let span = tracing::trace_span!(
        target: TRACE_TARGET,
        "request",
        otel.name = %name_of(req),
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        http.method = %req.method(),
        http.target = req.uri().path_and_query().map_or("", |p| p.as_str()),
        http.user_agent = req
            .headers()
            .get(http::header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or(""),
        http.status_code = tracing::field::Empty,
        "audit-id" = req.extensions().get::<AuditId>().map_or("", |a| a.0.as_str()),
    );
    if span.is_disabled() {
        return span;
    }
    if let Some(parent) = propagation::remote_parent(req.headers()) {
        let trusted = req.extensions().get::<UserInfo>().is_some_and(|u| {
            u.groups
                .iter()
                .any(|g| TRUSTED_GROUPS.contains(&g.as_str()))
        });
        if trusted {
            let _ = span.set_parent(parent);
        } else {
            span.add_link(parent.span().span_context().clone());
        }
    }
    span
}

/// Upstream's span name of `req` (see the module documentation).
fn name_of(req: &Request<Body>) -> String {
    let method = req.method().as_str();
    let Some(Asked::Resource(r)) = req.extensions().get::<ParsedRequest>().map(|p| p.request())
    else {
        return method.to_owned();
    };
    let mut name = String::with_capacity(96);
    name.push_str(method);
    if r.group.is_empty() {
        name.push_str(" /api/");
    } else {
        name.push_str(" /apis/");
        name.push_str(&r.group);
        name.push('/');
    }
    name.push_str(&r.version);
    if !r.namespace.is_empty() {
        name.push_str("/namespaces/{:namespace}");
    }
    name.push('/');
    name.push_str(&r.resource);
    if !r.name.is_empty() {
        name.push_str("/{:name}");
    }
    if !r.subresource.is_empty() {
        name.push('/');
        name.push_str(&r.subresource);
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(method: &str, uri: &str) -> String {
        let mut req = Request::builder()
            .method(method)
            .uri(uri)
            .body(Body::empty())
            .unwrap();
        super::super::request_info::read(&mut req);
        name_of(&req)
    }

    #[test]
    fn names_are_upstreams() {
        assert_eq!(
            named(
                "GET",
                "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders?limit=5"
            ),
            "GET /apis/wardle.example.com/v1alpha1/namespaces/{:namespace}/flunders"
        );
        assert_eq!(
            named("PUT", "/api/v1/namespaces/ns/pods/p/status"),
            "PUT /api/v1/namespaces/{:namespace}/pods/{:name}/status"
        );
        assert_eq!(named("GET", "/apis/wardle.example.com"), "GET");
        assert_eq!(named("GET", "/healthz"), "GET");
    }
}
