//! W3C trace context (`traceparent`, `tracestate`) in HTTP headers: read from a caller's request
//! (kube-apiserver sends it to the backends it proxies to) and written on the requests the
//! aggregator proxies and on admission webhook calls, as upstream's `otelhttp` handler and
//! transport do with the `TraceContext` propagator.

use http::HeaderMap;
use http::header::{HeaderName, HeaderValue};
use opentelemetry::Context;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The header carrying the trace and parent span ids.
pub const TRACEPARENT: &str = "traceparent";

struct Headers<'a>(&'a HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key)?.to_str().ok()
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(HeaderName::as_str).collect()
    }
}

struct HeadersMut<'a>(&'a mut HeaderMap);

impl Injector for HeadersMut<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(key.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            self.0.insert(name, value);
        }
    }
}

/// The caller's span, when `headers` carry a valid `traceparent`.
pub fn remote_parent(headers: &HeaderMap) -> Option<Context> {
    if !headers.contains_key(TRACEPARENT) {
        return None;
    }
    let cx = TraceContextPropagator::new().extract(&Headers(headers));
    cx.span().span_context().is_valid().then_some(cx)
}

/// Writes `span`'s trace context into `headers` (replacing a caller's), when `span` is
/// recorded by OpenTelemetry; leaves `headers` as they are otherwise.
pub fn inject(span: &tracing::Span, headers: &mut HeaderMap) {
    if span.is_disabled() {
        return;
    }
    let cx = span.context();
    if cx.span().span_context().is_valid() {
        TraceContextPropagator::new().inject_context(&cx, &mut HeadersMut(headers));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_valid_traceparent_is_the_parent_and_junk_is_none() {
        let mut h = HeaderMap::new();
        assert!(remote_parent(&h).is_none());
        h.insert(
            TRACEPARENT,
            HeaderValue::from_static("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        );
        let cx = remote_parent(&h).unwrap();
        let sc = cx.span().span_context().clone();
        assert_eq!(
            sc.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(sc.span_id().to_string(), "00f067aa0ba902b7");
        assert!(sc.is_sampled() && sc.is_remote());
        h.insert(TRACEPARENT, HeaderValue::from_static("00-zz-00-01"));
        assert!(remote_parent(&h).is_none());
    }
}
