//! The server's Prometheus metrics, served at `/metrics` in the text exposition format
//! (version 0.0.4), with upstream's names, labels and buckets
//! (`k8s.io/apiserver/pkg/endpoints/metrics` and `k8s.io/apiserver/pkg/storage/etcd3/metrics`).
//!
//! As upstream's `legacyregistry`, the metrics are process-wide: [`global`] holds them, the
//! handler chain (`RequestRecorder`) and the storage wrapper (`storage::InstrumentedStorage`)
//! record into them, and every chain of the process serves them. The layers below own their
//! families (admission's, the watch events'), which this registry serves too.

pub(crate) mod go_float;
pub(crate) mod labels;
pub(crate) mod recorder;
pub mod storage;

use std::sync::OnceLock;

use axum::body::Body;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use prometheus::{
    GaugeVec, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry,
};

pub(crate) use labels::RequestLabels;
pub(crate) use recorder::RequestRecorder;

/// The content type of `/metrics`: the Prometheus text exposition format 0.0.4.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Upstream's buckets of `apiserver_request_duration_seconds` and `etcd_request_duration_seconds`.
const DURATION_BUCKETS: &[f64] = &[
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];

/// Upstream's buckets of `apiserver_request_sli_duration_seconds`.
const SLI_BUCKETS: &[f64] = &[
    0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0,
    30.0, 45.0, 60.0,
];

/// The labels of `apiserver_request_total`.
const REQUEST_LABELS: &[&str] = &[
    "verb",
    "dry_run",
    "group",
    "version",
    "resource",
    "subresource",
    "scope",
    "component",
    "code",
];

/// The labels of `apiserver_longrunning_requests` and of `apiserver_response_sizes`.
const LONGRUNNING_LABELS: &[&str] = &[
    "verb",
    "group",
    "version",
    "resource",
    "subresource",
    "scope",
    "component",
];

/// Every metric family the framework records, in one registry.
pub struct Metrics {
    registry: Registry,
    /// `apiserver_request_total`: requests by verb, dry run, group, version, resource,
    /// subresource, scope, component and response code.
    pub requests: IntCounterVec,
    /// `apiserver_request_duration_seconds`: time to produce the response, same labels less
    /// the code.
    pub request_duration: HistogramVec,
    /// `apiserver_request_sli_duration_seconds`: the request's latency less the time its
    /// admission webhooks took (upstream's SLI), labelled as `apiserver_longrunning_requests`.
    pub request_sli_duration: HistogramVec,
    /// `apiserver_current_inflight_requests{request_kind}`: requests being served that are
    /// not long-running, `readOnly` or `mutating`.
    pub inflight: IntGaugeVec,
    /// `inflight`'s two series, looked up once: `readOnly` and `mutating`.
    inflight_kinds: [IntGauge; 2],
    /// `apiserver_longrunning_requests`: open long-running requests (watches, proxies, …).
    pub longrunning: IntGaugeVec,
    /// `apiserver_registered_watchers{group,version,kind}`: open watches.
    pub watchers: IntGaugeVec,
    /// `etcd_request_duration_seconds{operation,group,resource}`: storage call latencies.
    pub storage_duration: HistogramVec,
    /// `etcd_requests_total{operation,group,resource}`: storage calls.
    pub storage_requests: IntCounterVec,
    /// `etcd_request_errors_total{operation,group,resource}`: storage calls that failed.
    pub storage_errors: IntCounterVec,
    /// `apiserver_storage_objects{resource}`: stored objects by `<resource>.<group>`.
    pub storage_objects: IntGaugeVec,
    /// `aggregator_unavailable_apiservice{name}`: 1 for each APIService the aggregator's
    /// last check found unavailable, 0 for each it found available (the series of the
    /// kubernetes-mixin's `AggregatedAPIDown` alert).
    pub unavailable_apiservices: IntGaugeVec,
    /// `aggregator_unavailable_apiservice_total{name,reason}`: the times an APIService was
    /// marked unavailable, by the reason of its `Available` condition.
    pub apiservices_marked_unavailable: IntCounterVec,
    /// `apiserver_response_sizes{verb,group,version,resource,subresource,scope,component}`:
    /// the bytes of the responses to GET and LIST requests.
    pub response_sizes: HistogramVec,
    /// `apiserver_audit_event_total`: audit events generated and sent to the audit backend.
    pub audit_events: IntCounterVec,
    /// `apiserver_audit_requests_rejected_total`: requests refused because their audit event
    /// could not be stored (`blocking-strict`).
    pub audit_requests_rejected: IntCounterVec,
    /// `apiserver_audit_error_total{plugin}`: audit events that failed to be audited, by the
    /// plugin affected (`buffered`, `truncate`, `webhook`).
    pub audit_errors: IntCounterVec,
    /// `apiserver_encryption_config_controller_automatic_reloads_total{status,apiserver_id_hash}`:
    /// automatic reloads of `--encryption-provider-config`, `success` or `failure`.
    pub(crate) encryption_reloads: IntCounterVec,
    /// `apiserver_encryption_config_controller_automatic_reload_last_timestamp_seconds{status,apiserver_id_hash}`:
    /// when the last successful and the last failed reload happened.
    pub(crate) encryption_reload_timestamp: GaugeVec,
    /// `apiserver_encryption_config_controller_last_config_info{apiserver_id_hash,hash}`: 1 for
    /// the configuration in use, by the hash of its file.
    pub(crate) encryption_config_info: IntGaugeVec,
}

/// The process's metrics.
pub fn global() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(Metrics::new)
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// A new, empty set of the framework's metric families.
    pub fn new() -> Self {
        let registry = Registry::new();
        let counter = |name: &str, help: &str, labels: &[&str]| {
            let c = IntCounterVec::new(Opts::new(name, help), labels).expect("valid counter");
            registry
                .register(Box::new(c.clone()))
                .expect("unique metric");
            c
        };
        let gauge = |name: &str, help: &str, labels: &[&str]| {
            let g = IntGaugeVec::new(Opts::new(name, help), labels).expect("valid gauge");
            registry
                .register(Box::new(g.clone()))
                .expect("unique metric");
            g
        };
        // The families the layers below own, served here.
        let below = crate::admission::metrics::global()
            .collectors()
            .into_iter()
            .chain(crate::endpoints::watch_metrics::global().collectors());
        for collector in below {
            registry.register(collector).expect("unique metric");
        }
        let with_buckets = |name: &str, help: &str, buckets: Vec<f64>, labels: &[&str]| {
            let opts = HistogramOpts::new(name, help).buckets(buckets);
            let h = HistogramVec::new(opts, labels).expect("valid histogram");
            registry
                .register(Box::new(h.clone()))
                .expect("unique metric");
            h
        };
        let histogram = |name: &str, help: &str, labels: &[&str]| {
            with_buckets(name, help, DURATION_BUCKETS.to_vec(), labels)
        };
        let inflight = gauge(
            "apiserver_current_inflight_requests",
            "Number of requests currently being served by this apiserver per request kind (long-running requests excluded).",
            &["request_kind"],
        );
        Metrics {
            request_sli_duration: with_buckets(
                "apiserver_request_sli_duration_seconds",
                "Response latency distribution (not counting webhook duration and priority & fairness queue wait times) in seconds for each verb, group, version, resource, subresource, scope and component.",
                SLI_BUCKETS.to_vec(),
                LONGRUNNING_LABELS,
            ),
            inflight_kinds: [
                inflight.with_label_values(&["readOnly"]),
                inflight.with_label_values(&["mutating"]),
            ],
            inflight,
            requests: counter(
                "apiserver_request_total",
                "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
                REQUEST_LABELS,
            ),
            request_duration: histogram(
                "apiserver_request_duration_seconds",
                "Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
                &REQUEST_LABELS[..REQUEST_LABELS.len() - 1],
            ),
            longrunning: gauge(
                "apiserver_longrunning_requests",
                "Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way.",
                LONGRUNNING_LABELS,
            ),
            watchers: gauge(
                "apiserver_registered_watchers",
                "Number of currently registered watchers for a given resources",
                &["group", "version", "kind"],
            ),
            storage_duration: histogram(
                "etcd_request_duration_seconds",
                "Etcd request latency in seconds for each operation and object type.",
                &["operation", "group", "resource"],
            ),
            storage_requests: counter(
                "etcd_requests_total",
                "Etcd request counts for each operation and object type.",
                &["operation", "group", "resource"],
            ),
            storage_errors: counter(
                "etcd_request_errors_total",
                "Etcd failed request counts for each operation and object type.",
                &["operation", "group", "resource"],
            ),
            storage_objects: gauge(
                "apiserver_storage_objects",
                "Number of stored objects at the time of last check split by kind.",
                &["resource"],
            ),
            unavailable_apiservices: gauge(
                "aggregator_unavailable_apiservice",
                "Gauge of APIServices which are marked as unavailable broken down by APIService name.",
                &["name"],
            ),
            apiservices_marked_unavailable: counter(
                "aggregator_unavailable_apiservice_total",
                "Counter of APIServices which are marked as unavailable broken down by APIService name and reason.",
                &["name", "reason"],
            ),
            response_sizes: with_buckets(
                "apiserver_response_sizes",
                "Response size distribution in bytes for each group, version, verb, resource, subresource, scope and component.",
                prometheus::exponential_buckets(1000.0, 10.0, 7).expect("valid buckets"),
                LONGRUNNING_LABELS,
            ),
            audit_events: counter(
                "apiserver_audit_event_total",
                "Counter of audit events generated and sent to the audit backend.",
                &[],
            ),
            audit_requests_rejected: counter(
                "apiserver_audit_requests_rejected_total",
                "Counter of apiserver requests rejected due to an error in audit logging backend.",
                &[],
            ),
            audit_errors: counter(
                "apiserver_audit_error_total",
                "Counter of audit events that failed to be audited properly. Plugin identifies the plugin affected by the error.",
                &["plugin"],
            ),
            encryption_reloads: counter(
                "apiserver_encryption_config_controller_automatic_reloads_total",
                "Total number of reload successes and failures of encryption configuration split by apiserver identity.",
                &["status", "apiserver_id_hash"],
            ),
            encryption_reload_timestamp: {
                let g = GaugeVec::new(
                    Opts::new(
                        "apiserver_encryption_config_controller_automatic_reload_last_timestamp_seconds",
                        "Timestamp of the last successful or failed automatic reload of encryption configuration split by apiserver identity.",
                    ),
                    &["status", "apiserver_id_hash"],
                )
                .expect("valid gauge");
                registry
                    .register(Box::new(g.clone()))
                    .expect("unique metric");
                g
            },
            encryption_config_info: gauge(
                "apiserver_encryption_config_controller_last_config_info",
                "Information about the last applied encryption configuration with hash as label, split by apiserver identity.",
                &["apiserver_id_hash", "hash"],
            ),
            registry,
        }
    }

    /// The series of `apiserver_current_inflight_requests` of requests that only read
    /// (`readOnly`) or of the others (`mutating`).
    pub(crate) fn inflight_of(&self, read_only: bool) -> &IntGauge {
        &self.inflight_kinds[usize::from(!read_only)]
    }

    /// The metrics in the text exposition format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Encoding only fails on malformed families, which the constructors rule out.
        if let Err(e) =
            prometheus::TextEncoder::new().encode_utf8(&self.registry.gather(), &mut out)
        {
            tracing::error!(error = %e, "encoding metrics failed");
        }
        go_float::go_bounds(out)
    }

    /// The metrics as a response to `req` (`GET`/`HEAD` only; others answer 405).
    pub fn respond(&self, req: &Request<Body>) -> Response<Body> {
        if req.method() != Method::GET && req.method() != Method::HEAD {
            return axum::response::IntoResponse::into_response(
                crate::error::ApiError::method_not_allowed(),
            );
        }
        let mut res = Response::new(Body::from(self.encode()));
        *res.status_mut() = StatusCode::OK;
        res.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
        res
    }
}
