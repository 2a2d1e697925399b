//! [`RequestRecorder`]: records one request of the handler chain, from its arrival to its
//! response (and, for long-running requests, to the end of the response body), and logs it
//! at debug level (`-v=3` and up, as upstream's `httplog` logs at `V(3)`).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use bytes::Bytes;
use http::{Response, StatusCode, header};
use http_body::{Frame, SizeHint};
use prometheus::IntGauge;

use crate::authn::PeerAddr;
use crate::authz::attributes::request_of_path;
use crate::metrics::labels::PathLabels;
use crate::metrics::{Metrics, RequestLabels, global};
use crate::registry::rest::RestStorage;
use crate::registry::scheme::Registry;

/// A chain of servers as the recorder reads it: what each server stores, and the server it
/// hands other requests to. The server implements it; the recorder keeps only the labels a
/// server of the chain serves.
pub trait ServingChain {
    /// The resources this server (not the next ones) stores.
    fn served_registry(&self) -> &Registry;

    /// The server requests go to when this one does not serve them, if any.
    fn next_server(&self) -> Option<&dyn ServingChain>;
}

impl<T: ServingChain + ?Sized> ServingChain for Arc<T> {
    fn served_registry(&self) -> &Registry {
        (**self).served_registry()
    }

    fn next_server(&self) -> Option<&dyn ServingChain> {
        (**self).next_server()
    }
}

/// The resource the router served a request with, kept in the response's extensions: the
/// recorder takes the request's labels from it (borrowed, not copied) rather than routing the
/// request again.
#[derive(Clone)]
pub struct ServedRoute {
    /// The resource's storage.
    pub storage: Arc<dyn RestStorage>,
    /// The subresource the path names, when the resource has it.
    pub subresource: Option<&'static str>,
    /// The time the request's admission webhooks took, which its SLI latency leaves out.
    pub webhook_time: Duration,
}

/// One request being served: counts it in flight until dropped, and records it once its
/// response is produced ([`RequestRecorder::finish`]).
pub struct RequestRecorder {
    metrics: &'static Metrics,
    labels: RequestLabels,
    /// A non-resource request's path (its only label that is not fixed), taken when it
    /// arrives; resource requests are named by their route, or read again when none served
    /// them.
    non_resource: Option<PathLabels<String>>,
    started: Instant,
    inflight: Option<IntGauge>,
    method: http::Method,
    uri: http::Uri,
    user_agent: Option<http::HeaderValue>,
    peer: Option<PeerAddr>,
}

impl RequestRecorder {
    /// Starts recording `req` into the [`global`] metrics.
    pub fn start<B>(req: &http::Request<B>) -> Self {
        let metrics = global();
        let labels = RequestLabels::of(req);
        // Long-running requests are not counted in flight, as upstream's max-in-flight filter.
        let inflight = (!labels.long_running).then(|| {
            let g = metrics.inflight_of(labels.read_only).clone();
            g.inc();
            g
        });
        let non_resource = (!labels.is_resource).then(|| PathLabels {
            subresource: req.uri().path().to_string(),
            ..Default::default()
        });
        RequestRecorder {
            metrics,
            labels,
            non_resource,
            started: Instant::now(),
            inflight,
            // Cheap clones (shared bytes), formatted only when the request log is on.
            method: req.method().clone(),
            uri: req.uri().clone(),
            user_agent: req.headers().get(header::USER_AGENT).cloned(),
            peer: req.extensions().get::<PeerAddr>().copied(),
        }
    }

    /// Records the response `res` the chain starting at `server` produced, and returns it (for
    /// long-running requests, with a body that keeps the long-running and watcher gauges up
    /// until it ends).
    pub fn finish(mut self, server: &dyn ServingChain, res: Response<Body>) -> Response<Body> {
        let status = res.status();
        let route = res.extensions().get::<ServedRoute>().cloned();
        let read;
        let (path, routed) = match &route {
            // The router served a resource of its own: it names the path's parts.
            Some(route) => {
                let info = route.storage.info();
                let path = PathLabels {
                    group: info.group.as_str(),
                    version: info.version.as_str(),
                    resource: info.plural.as_str(),
                    subresource: route.subresource.unwrap_or_default(),
                };
                (path, Some(info.kind.as_str()))
            }
            // Answered before the router chose a route (refused, or not a resource): the path's
            // parts, cut down to what the chain serves.
            None => {
                read = match self.non_resource.take() {
                    Some(path) => served(server, path, false, status),
                    // A resource request's path, read again (the request's reading is gone).
                    None => served(
                        server,
                        PathLabels::of(&request_of_path(&self.method, self.uri.path())),
                        true,
                        status,
                    ),
                };
                (read.0.as_str(), read.1.as_deref())
            }
        };
        let labels = &self.labels;
        let elapsed = self.started.elapsed();
        let values = labels.duration_values(&path);
        let mut with_code = [""; 9];
        with_code[..8].copy_from_slice(&values);
        with_code[8] = status.as_str();
        self.metrics.requests.with_label_values(&with_code).inc();
        self.metrics
            .request_duration
            .with_label_values(&values)
            .observe(elapsed.as_secs_f64());
        // Upstream's SLI: the latency less what the request's admission webhooks took.
        let webhook_time = route.as_ref().map_or(Duration::ZERO, |r| r.webhook_time);
        self.metrics
            .request_sli_duration
            .with_label_values(&labels.longrunning_values(&path))
            .observe(elapsed.saturating_sub(webhook_time).as_secs_f64());
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
        if !labels.long_running && matches!(labels.verb, "GET" | "LIST") {
            let sizes = self
                .metrics
                .response_sizes
                .with_label_values(&labels.longrunning_values(&path));
            // A body of a known size is observed at once; a streamed one once it is written.
            return match http_body::Body::size_hint(res.body()).exact() {
                Some(bytes) => {
                    sizes.observe(bytes as f64);
                    res
                }
                None => res.map(|body| {
                    Body::new(TrackedBody {
                        inner: body,
                        _guard: GaugeGuard(Vec::new()),
                        size: Some((0, sizes)),
                    })
                }),
            };
        }
        if !labels.long_running || !status.is_success() {
            return res;
        }
        let longrunning = self
            .metrics
            .longrunning
            .with_label_values(&labels.longrunning_values(&path));
        longrunning.inc();
        let mut gauges = vec![longrunning];
        if labels.watch
            && let Some(kind) = routed
        {
            let watchers =
                self.metrics
                    .watchers
                    .with_label_values(&[path.group, path.version, kind]);
            watchers.inc();
            gauges.push(watchers);
        }
        res.map(|body| {
            Body::new(TrackedBody {
                inner: body,
                _guard: GaugeGuard(gauges),
                size: None,
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

/// The labels cut down to what the chain serves, and the kind of the resource they name
/// (for non-resource requests, `Some("")`).
///
/// Label values must come from the server, never from the caller, or every new name a caller
/// sends would add series to `/metrics` for good (upstream records the labels of the route a
/// request reached, so only served resources appear). A resource request keeps its group,
/// version and resource only when a server of the chain serves that resource, and its
/// subresource only when the resource has it; a non-resource request keeps its path only when
/// the path is one the server answers ([`served_path`]). Otherwise those labels are empty.
fn served(
    server: &dyn ServingChain,
    mut labels: PathLabels<String>,
    is_resource: bool,
    status: StatusCode,
) -> (PathLabels<String>, Option<String>) {
    if !is_resource {
        if !served_path(server, &labels.subresource, status) {
            labels.subresource.clear();
        }
        return (labels, Some(String::new()));
    }
    let mut server = server;
    loop {
        if let Some(storage) =
            server
                .served_registry()
                .find(&labels.group, &labels.version, &labels.resource)
        {
            let info = storage.info();
            if !labels.subresource.is_empty()
                && !info.subresources().contains(&labels.subresource.as_str())
            {
                labels.subresource.clear();
            }
            return (labels, Some(info.kind.clone()));
        }
        match server.next_server() {
            Some(next) => server = next,
            None => return (PathLabels::default(), None),
        }
    }
}

/// Whether a server of the chain serves `group` (and `version`, if given).
fn chain_serves(server: &dyn ServingChain, group: &str, version: Option<&str>) -> bool {
    let mut server = server;
    loop {
        if server.served_registry().serves(group, version) {
            return true;
        }
        match server.next_server() {
            Some(next) => server = next,
            None => return false,
        }
    }
}

/// Whether `path` is a non-resource path the server answers: the fixed ones (health,
/// version, metrics, OpenAPI, the discovery roots, the debug flags), the discovery and OpenAPI v3 documents of
/// served groups and versions, and a health check that answered as a check does (`200` or
/// `500`; an unknown check is `404`).
fn served_path(server: &dyn ServingChain, path: &str, status: StatusCode) -> bool {
    const FIXED: &[&str] = &[
        "/",
        "/api",
        "/apis",
        "/healthz",
        "/livez",
        "/readyz",
        "/version",
        "/metrics",
        "/openapi/v2",
        "/openapi/v3",
        "/debug/flags",
        "/debug/flags/v",
    ];
    let trimmed = match path.strip_suffix('/') {
        Some(p) if !p.is_empty() => p,
        _ => path,
    };
    if FIXED.contains(&trimmed) {
        return true;
    }
    let segments: Vec<&str> = trimmed.split('/').skip(1).collect();
    match segments.as_slice() {
        ["healthz" | "livez" | "readyz", _check] => {
            status == StatusCode::OK || status == StatusCode::INTERNAL_SERVER_ERROR
        }
        ["api", version] | ["openapi", "v3", "api", version] => {
            chain_serves(server, "", Some(version))
        }
        ["apis", group] => !group.is_empty() && chain_serves(server, group, None),
        ["apis", group, version] | ["openapi", "v3", "apis", group, version] => {
            !group.is_empty() && chain_serves(server, group, Some(version))
        }
        _ => false,
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

/// A response body that holds gauges up while it is alive, and, given a histogram of
/// `apiserver_response_sizes`, counts its bytes into it once it is done (written, or abandoned
/// by its client).
struct TrackedBody {
    inner: Body,
    _guard: GaugeGuard,
    size: Option<(u64, prometheus::Histogram)>,
}

impl Drop for TrackedBody {
    fn drop(&mut self) {
        if let Some((bytes, sizes)) = &self.size {
            sizes.observe(*bytes as f64);
        }
    }
}

impl http_body::Body for TrackedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        let frame = Pin::new(&mut this.inner).poll_frame(cx);
        if let (Poll::Ready(Some(Ok(frame))), Some((bytes, _))) = (&frame, &mut this.size)
            && let Some(data) = frame.data_ref()
        {
            *bytes += data.len() as u64;
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Group;
    use crate::authz::{ParsedRequest, Request as AuthzRequest};
    use crate::registry::rest::RestStorage;
    use crate::resource::{ResourceInfo, Scope};
    use crate::server::generic::GenericApiServer;

    /// A storage that only describes itself: `widgets.example.com/v1`, with a status.
    struct Widgets(ResourceInfo);

    impl RestStorage for Widgets {
        fn info(&self) -> &ResourceInfo {
            &self.0
        }
        fn verbs(&self) -> Vec<&'static str> {
            vec!["get"]
        }
    }

    fn server() -> Arc<GenericApiServer> {
        let info = ResourceInfo {
            group: "example.com".into(),
            version: "v1".into(),
            kind: "Widget".into(),
            plural: "widgets".into(),
            singular: "widget".into(),
            scope: Scope::Namespaced,
            short_names: Vec::new(),
            categories: Vec::new(),
            status_subresource: true,
            printer_columns: Vec::new(),
            selectable_fields: Vec::new(),
            scale: None,
            schema: Arc::new(serde_json::json!({"type": "object"})),
        };
        let backend = GenericApiServer::builder("backend")
            .group(Group::new("example.com").storage(Arc::new(Widgets(info))))
            .build();
        Arc::new(
            GenericApiServer::builder("front")
                .build()
                .delegate_to(backend),
        )
    }

    fn served_labels(uri: &str, status: StatusCode) -> (PathLabels<String>, Option<String>) {
        let uri: http::Uri = uri.parse().unwrap();
        let parsed = ParsedRequest::of(&http::Method::GET, uri.path(), uri.query());
        let is_resource = matches!(parsed.request(), AuthzRequest::Resource(_));
        served(
            &server(),
            PathLabels::of(parsed.request()),
            is_resource,
            status,
        )
    }

    #[test]
    fn served_resources_keep_their_labels_through_the_chain() {
        let (l, kind) = served_labels(
            "/apis/example.com/v1/namespaces/ns/widgets/w/status",
            StatusCode::FORBIDDEN,
        );
        assert_eq!(kind.as_deref(), Some("Widget"));
        assert_eq!(
            (l.group.as_str(), l.version.as_str(), l.resource.as_str()),
            ("example.com", "v1", "widgets")
        );
        assert_eq!(l.subresource, "status");
    }

    #[test]
    fn caller_chosen_names_are_dropped() {
        for uri in [
            "/apis/example.com/v1/namespaces/ns/gadgets",
            "/apis/example.com/v2/widgets",
            "/apis/other.example.com/v1/widgets",
            "/api/v1/namespaces/ns/pods/p",
        ] {
            for status in [
                StatusCode::OK,
                StatusCode::UNAUTHORIZED,
                StatusCode::NOT_FOUND,
            ] {
                let (l, kind) = served_labels(uri, status);
                assert_eq!(kind, None, "{uri}");
                assert_eq!(
                    [l.group, l.version, l.resource, l.subresource],
                    ["", "", "", ""].map(String::from),
                    "{uri} {status}"
                );
            }
        }
        let (l, _) = served_labels(
            "/apis/example.com/v1/namespaces/ns/widgets/w/anything",
            StatusCode::NOT_FOUND,
        );
        assert_eq!(
            (l.resource.as_str(), l.subresource.as_str()),
            ("widgets", "")
        );
    }

    #[test]
    fn only_served_paths_are_labels() {
        let kept = [
            ("/healthz", StatusCode::OK),
            ("/readyz", StatusCode::INTERNAL_SERVER_ERROR),
            ("/healthz/ping", StatusCode::OK),
            ("/livez/etcd", StatusCode::INTERNAL_SERVER_ERROR),
            ("/metrics", StatusCode::FORBIDDEN),
            ("/version/", StatusCode::OK),
            ("/apis", StatusCode::OK),
            ("/apis/example.com", StatusCode::OK),
            ("/apis/example.com/v1", StatusCode::UNAUTHORIZED),
            ("/openapi/v3/apis/example.com/v1", StatusCode::OK),
            ("/openapi/v2", StatusCode::OK),
        ];
        for (path, status) in kept {
            let (l, _) = served_labels(path, status);
            assert_eq!(l.subresource, path, "{path} {status}");
        }
        let dropped = [
            ("/healthz/nothing", StatusCode::NOT_FOUND),
            ("/healthz/nothing", StatusCode::UNAUTHORIZED),
            ("/apis/other.example.com", StatusCode::NOT_FOUND),
            ("/apis/example.com/v9", StatusCode::FORBIDDEN),
            (
                "/openapi/v3/apis/other.example.com/v1",
                StatusCode::NOT_FOUND,
            ),
            ("/api/v1", StatusCode::NOT_FOUND),
            ("/random", StatusCode::FORBIDDEN),
            ("/metrics/x", StatusCode::NOT_FOUND),
        ];
        for (path, status) in dropped {
            let (l, _) = served_labels(path, status);
            assert_eq!(l.subresource, "", "{path} {status}");
        }
    }
}
