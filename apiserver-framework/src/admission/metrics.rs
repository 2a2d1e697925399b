//! Admission's metrics, with upstream's names, labels and buckets
//! (`k8s.io/apiserver/pkg/admission/metrics`): the latency of each step (all mutating plugins,
//! all validating plugins), of each plugin and of each webhook call, the webhook calls by
//! their answer, the rejections and failures ignored, and the match conditions that excluded
//! a webhook or failed.
//!
//! Every label value comes from a bounded set: the plugins and webhooks the host's
//! configurations name, the three operations, `admit`/`validate`/`validating`, and HTTP codes
//! capped at 600 as upstream.
//!
//! As upstream's, the families are process-wide ([`global`]); the server's metrics registry
//! serves them (`crate::metrics`, a layer above, registers [`AdmissionMetrics::collectors`]).

use std::sync::OnceLock;
use std::time::Duration;

use prometheus::core::Collector;
use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, Opts};

/// Buckets of the step and plugin latencies (5 ms to 2.5 s).
const STEP_BUCKETS: &[f64] = &[0.005, 0.025, 0.1, 0.5, 1.0, 2.5];

/// Buckets of a webhook call's latency (5 ms to 25 s).
const WEBHOOK_BUCKETS: &[f64] = &[0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10.0, 25.0];

/// Buckets of a match condition's evaluation time (1 ms to 250 ms).
const MATCH_CONDITION_BUCKETS: &[f64] = &[0.001, 0.005, 0.01, 0.025, 0.1, 0.2, 0.25];

/// Why a webhook rejected a request, upstream's `error_type` label.
#[derive(Clone, Copy, Debug)]
pub enum RejectionType {
    /// The webhook could not be called or answered with an error (`calling_webhook_error`).
    CallingWebhook,
    /// The server failed handling the webhook's answer (`apiserver_internal_error`).
    Internal,
    /// The webhook answered and did not allow the request (`no_error`).
    Denied,
}

impl RejectionType {
    fn label(self) -> &'static str {
        match self {
            RejectionType::CallingWebhook => "calling_webhook_error",
            RejectionType::Internal => "apiserver_internal_error",
            RejectionType::Denied => "no_error",
        }
    }
}

/// The admission metric families.
pub struct AdmissionMetrics {
    step: HistogramVec,
    controller: HistogramVec,
    webhook: HistogramVec,
    webhook_requests: IntCounterVec,
    webhook_rejections: IntCounterVec,
    webhook_fail_open: IntCounterVec,
    match_condition_errors: IntCounterVec,
    match_condition_exclusions: IntCounterVec,
    match_condition_seconds: HistogramVec,
}

/// The process's admission metrics.
pub fn global() -> &'static AdmissionMetrics {
    static METRICS: OnceLock<AdmissionMetrics> = OnceLock::new();
    METRICS.get_or_init(AdmissionMetrics::new)
}

impl AdmissionMetrics {
    /// New, empty families.
    fn new() -> Self {
        let histogram = |name: &str, help: &str, buckets: &[f64], labels: &[&str]| {
            let opts = HistogramOpts::new(name, help).buckets(buckets.to_vec());
            HistogramVec::new(opts, labels).expect("valid histogram")
        };
        let counter = |name: &str, help: &str, labels: &[&str]| {
            IntCounterVec::new(Opts::new(name, help), labels).expect("valid counter")
        };
        AdmissionMetrics {
            step: histogram(
                "apiserver_admission_step_admission_duration_seconds",
                "Admission sub-step latency histogram in seconds, broken out for each operation and API resource and step type (validate or admit).",
                STEP_BUCKETS,
                &["type", "operation", "rejected"],
            ),
            controller: histogram(
                "apiserver_admission_controller_admission_duration_seconds",
                "Admission controller latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).",
                STEP_BUCKETS,
                &["name", "type", "operation", "rejected"],
            ),
            webhook: histogram(
                "apiserver_admission_webhook_admission_duration_seconds",
                "Admission webhook latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).",
                WEBHOOK_BUCKETS,
                &["name", "type", "operation", "rejected"],
            ),
            webhook_requests: counter(
                "apiserver_admission_webhook_request_total",
                "Admission webhook request total, identified by name and broken out for each admission type (validating or admit) and operation. Additional labels specify whether the request was rejected or not and an HTTP status code. Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.",
                &["name", "type", "operation", "code", "rejected"],
            ),
            webhook_rejections: counter(
                "apiserver_admission_webhook_rejection_count",
                "Admission webhook rejection count, identified by name and broken out for each admission type (validating or admit) and operation. Additional labels specify an error type (calling_webhook_error or apiserver_internal_error if an error occurred; no_error otherwise) and optionally a non-zero rejection code if the webhook rejects the request with an HTTP status code (honored by the apiserver when the code is greater or equal to 400). Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.",
                &["name", "type", "operation", "error_type", "rejection_code"],
            ),
            webhook_fail_open: counter(
                "apiserver_admission_webhook_fail_open_count",
                "Admission webhook fail open count, identified by name and broken out for each admission type (validating or mutating).",
                &["name", "type"],
            ),
            match_condition_errors: counter(
                "apiserver_admission_match_condition_evaluation_errors_total",
                "Admission match condition evaluation errors count, identified by name of resource containing the match condition and broken out for each kind containing matchConditions (webhook or policy), operation and admission type (validate or admit).",
                &["name", "kind", "type", "operation"],
            ),
            match_condition_exclusions: counter(
                "apiserver_admission_match_condition_exclusions_total",
                "Admission match condition evaluation exclusions count, identified by name of resource containing the match condition and broken out for each kind containing matchConditions (webhook or policy), operation and admission type (validate or admit).",
                &["name", "kind", "type", "operation"],
            ),
            match_condition_seconds: histogram(
                "apiserver_admission_match_condition_evaluation_seconds",
                "Admission match condition evaluation time in seconds, identified by name and broken out for each kind containing matchConditions (webhook or policy), operation and type (validate or admit).",
                MATCH_CONDITION_BUCKETS,
                &["name", "kind", "type", "operation"],
            ),
        }
    }

    /// The families, for a registry to serve.
    pub fn collectors(&self) -> Vec<Box<dyn Collector>> {
        vec![
            Box::new(self.step.clone()),
            Box::new(self.controller.clone()),
            Box::new(self.webhook.clone()),
            Box::new(self.webhook_requests.clone()),
            Box::new(self.webhook_rejections.clone()),
            Box::new(self.webhook_fail_open.clone()),
            Box::new(self.match_condition_errors.clone()),
            Box::new(self.match_condition_exclusions.clone()),
            Box::new(self.match_condition_seconds.clone()),
        ]
    }

    /// One step (`admit` or `validate`) of a request's admission.
    pub fn observe_step(&self, step: &str, operation: &str, rejected: bool, elapsed: Duration) {
        self.step
            .with_label_values(&[step, operation, bool_label(rejected)])
            .observe(elapsed.as_secs_f64());
    }

    /// One plugin's part of a step.
    pub fn observe_plugin(
        &self,
        name: &str,
        step: &str,
        operation: &str,
        rejected: bool,
        elapsed: Duration,
    ) {
        self.controller
            .with_label_values(&[name, step, operation, bool_label(rejected)])
            .observe(elapsed.as_secs_f64());
    }

    /// One call of webhook `name` (`type` `admit` or `validating`), answered with HTTP `code`
    /// (0 when it was not answered).
    pub fn observe_webhook(
        &self,
        name: &str,
        kind: &str,
        operation: &str,
        code: u16,
        rejected: bool,
        elapsed: Duration,
    ) {
        let code = code.min(600).to_string();
        let rejected = bool_label(rejected);
        self.webhook_requests
            .with_label_values(&[name, kind, operation, &code, rejected])
            .inc();
        self.webhook
            .with_label_values(&[name, kind, operation, rejected])
            .observe(elapsed.as_secs_f64());
    }

    /// A webhook's rejection of a request: why, and the code it gave (0 when none).
    pub fn observe_rejection(
        &self,
        name: &str,
        kind: &str,
        operation: &str,
        why: RejectionType,
        code: u16,
    ) {
        self.webhook_rejections
            .with_label_values(&[
                name,
                kind,
                operation,
                why.label(),
                &code.min(600).to_string(),
            ])
            .inc();
    }

    /// A webhook's failure ignored under `failurePolicy: Ignore`.
    pub fn observe_fail_open(&self, name: &str, kind: &str) {
        self.webhook_fail_open
            .with_label_values(&[name, kind])
            .inc();
    }

    /// A webhook's match conditions evaluated: how long it took, and whether they excluded
    /// the call or failed.
    pub fn observe_match_conditions(
        &self,
        name: &str,
        kind: &str,
        operation: &str,
        excluded: bool,
        failed: bool,
        elapsed: Duration,
    ) {
        let labels = [name, "webhook", kind, operation];
        self.match_condition_seconds
            .with_label_values(&labels)
            .observe(elapsed.as_secs_f64());
        if excluded {
            self.match_condition_exclusions
                .with_label_values(&labels)
                .inc();
        }
        if failed {
            self.match_condition_errors.with_label_values(&labels).inc();
        }
    }
}

fn bool_label(b: bool) -> &'static str {
    if b { "true" } else { "false" }
}
