//! OpenTelemetry tracing, as upstream's `--tracing-config-file` (`k8s.io/apiserver`'s
//! `TracingOptions`, `k8s.io/component-base/tracing`): off unless the flag names a
//! `TracingConfiguration`, and then free of cost when off (no layer, no exporter, no span).
//!
//! When on, the framework's spans are `tracing` spans under the target
//! [`TRACE_TARGET`](crate::storage::traced::TRACE_TARGET), exported over OTLP/gRPC by
//! [`Tracing`]:
//! - the request (the handler chain's filter after authentication, `filters::request_span`), named
//!   as upstream's `WithTracing` names it: `GET /apis/<group>/<version>/namespaces/{:namespace}/<resource>`
//!   for resource requests, the method alone for others; its parent is the caller's
//!   `traceparent` when the caller is in `system:masters` or `system:monitoring` (as upstream's
//!   public-endpoint rule), a link otherwise;
//! - admission (`Admission mutating`, `Admission validating`) and each webhook call (`Call
//!   mutating webhook`, `Call validating webhook`, as upstream);
//! - storage calls (`Get storage`, `List storage`, …; `storage::traced`);
//! - conversion of an object between versions (`Convert`);
//! - the aggregator's proxy hop (`HTTP GET`, …, as upstream's `otelhttp` transport), whose
//!   context goes to the backend in `traceparent`.

pub mod config;
pub mod exporter;
pub mod options;

pub use config::{TracingConfiguration, TracingError};
pub use exporter::Tracing;
pub use options::TracingOptions;
