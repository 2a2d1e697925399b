//! [`RequestRecorder`]: records one request of the handler chain, from its arrival to its
//! response (and, for long-running requests, to the end of the response body), and logs it
//! at debug level (`-v=3` and up, as upstream's `httplog` logs at `V(3)`).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::body::Body;
use bytes::Bytes;
use http::request::Parts;
use http::{Response, StatusCode, header};
use http_body::{Frame, SizeHint};
use prometheus::IntGauge;

use crate::auth::PeerAddr;
use crate::metrics::{Metrics, RequestLabels, global};
use crate::server::generic::GenericApiServer;

/// One request being served: counts it in flight until dropped, and records it once its
/// response is produced ([`RequestRecorder::finish`]).
pub struct RequestRecorder {
    metrics: &'static Metrics,
    labels: RequestLabels,
    started: Instant,
    inflight: Option<IntGauge>,
    method: http::Method,
    uri: http::Uri,
    user_agent: Option<http::HeaderValue>,
    peer: Option<PeerAddr>,
}

impl RequestRecorder {
    /// Starts recording the request with these parts into the [`global`] metrics.
    pub fn start(parts: &Parts) -> Self {
        let metrics = global();
        let labels = RequestLabels::of(parts);
        // Long-running requests are not counted in flight, as upstream's max-in-flight filter.
        let inflight = (!labels.long_running).then(|| {
            let g = metrics.inflight.with_label_values(&[labels.request_kind()]);
            g.inc();
            g
        });
        RequestRecorder {
            metrics,
            labels,
            started: Instant::now(),
            inflight,
            // Cheap clones (shared bytes), formatted only when the request log is on.
            method: parts.method.clone(),
            uri: parts.uri.clone(),
            user_agent: parts.headers.get(header::USER_AGENT).cloned(),
            peer: parts.extensions.get::<PeerAddr>().copied(),
        }
    }

    /// Records the response `res` the chain starting at `server` produced, and returns it (for
    /// long-running requests, with a body that keeps the long-running and watcher gauges up
    /// until it ends).
    pub fn finish(mut self, server: &Arc<GenericApiServer>, res: Response<Body>) -> Response<Body> {
        let status = res.status();
        let routed = resolve(server, &self.labels);
        let labels = std::mem::take(&mut self.labels);
        let labels = if status == StatusCode::NOT_FOUND && routed.is_none() {
            labels.unrouted()
        } else {
            labels
        };
        let elapsed = self.started.elapsed();
        let values = labels.duration_values();
        let mut with_code = [""; 9];
        with_code[..8].copy_from_slice(&values);
        with_code[8] = status.as_str();
        self.metrics.requests.with_label_values(&with_code).inc();
        self.metrics
            .request_duration
            .with_label_values(&values)
            .observe(elapsed.as_secs_f64());
        tracing::debug!(
            target: "apiserver_framework::httplog",
            verb = %self.method,
            uri = %self.uri,
            latency = ?elapsed,
            user_agent = self
                .user_agent
                .as_ref()
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default(),
            src_ip = ?self.peer.map(|p| p.0.ip()),
            resp = status.as_u16(),
            "HTTP"
        );
        if !labels.long_running || !status.is_success() {
            return res;
        }
        let longrunning = self
            .metrics
            .longrunning
            .with_label_values(&labels.longrunning_values());
        longrunning.inc();
        let mut gauges = vec![longrunning];
        if labels.request_verb == "watch"
            && let Some(kind) = routed
        {
            let watchers =
                self.metrics
                    .watchers
                    .with_label_values(&[&labels.group, &labels.version, &kind]);
            watchers.inc();
            gauges.push(watchers);
        }
        res.map(|body| {
            Body::new(TrackedBody {
                inner: body,
                _guard: GaugeGuard(gauges),
            })
        })
    }
}

impl Drop for RequestRecorder {
    fn drop(&mut self) {
        if let Some(g) = &self.inflight {
            g.dec();
        }
    }
}

/// The kind of the resource the labels name, when some server of the chain serves it; for
/// non-resource requests, `Some("")`.
fn resolve(server: &Arc<GenericApiServer>, labels: &RequestLabels) -> Option<String> {
    if !labels.is_resource {
        return Some(String::new());
    }
    let mut server = server;
    loop {
        if let Some(storage) =
            server
                .registry()
                .find(&labels.group, &labels.version, &labels.resource)
        {
            return Some(storage.info().kind.clone());
        }
        server = server.delegate()?;
    }
}

/// Decrements its gauges when dropped.
struct GaugeGuard(Vec<IntGauge>);

impl Drop for GaugeGuard {
    fn drop(&mut self) {
        for g in &self.0 {
            g.dec();
        }
    }
}

/// A response body that holds gauges up while it is alive.
struct TrackedBody {
    inner: Body,
    _guard: GaugeGuard,
}

impl http_body::Body for TrackedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
