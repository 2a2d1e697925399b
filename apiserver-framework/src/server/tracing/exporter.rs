//! The OpenTelemetry side of a tracing configuration: an OTLP/gRPC exporter to its endpoint
//! behind a batching span processor, a parent-based sampler as upstream's
//! (`k8s.io/component-base/tracing.NewProvider`), and the `tracing` layer that turns the
//! framework's spans (target [`TRACE_TARGET`]) into OpenTelemetry spans.

use opentelemetry::KeyValue;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::registry::LookupSpan;

use super::config::{TracingConfiguration, TracingError};
use crate::storage::traced::TRACE_TARGET;

/// The name of the tracer the framework's spans are recorded by (their instrumentation scope).
const SCOPE: &str = "apiserver-framework";

/// Spans exported as a [`TracingConfiguration`] says: hand [`Tracing::layer`] to the process's
/// subscriber, and [`Tracing::shutdown`] before exit to send what is still buffered.
pub struct Tracing {
    provider: SdkTracerProvider,
}

impl Tracing {
    /// Starts exporting to `config.endpoint` as service `service_name` (on a tokio runtime: the
    /// gRPC client runs on it). Sampling is upstream's: a trace whose caller sampled it (a
    /// `traceparent` with the sampled flag) is always recorded, one the caller did not sample
    /// never, and one started here with a chance of `samplingRatePerMillion` in a million.
    pub fn start(config: &TracingConfiguration, service_name: &str) -> Result<Self, TracingError> {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(format!("http://{}", config.endpoint))
            .build()
            .map_err(|e| TracingError::Exporter(e.to_string()))?;
        let root = if config.sampling_rate_per_million > 0 {
            Sampler::TraceIdRatioBased(config.ratio())
        } else {
            Sampler::AlwaysOff
        };
        let resource = Resource::builder()
            .with_service_name(service_name.to_owned())
            .with_attribute(KeyValue::new(
                "service.instance.id",
                uuid::Uuid::new_v4().to_string(),
            ))
            .build();
        let provider = SdkTracerProvider::builder()
            .with_sampler(Sampler::ParentBased(Box::new(root)))
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build();
        Ok(Tracing { provider })
    }

    /// The `tracing` layer exporting the framework's spans (target [`TRACE_TARGET`]) and
    /// nothing else.
    pub fn layer<S>(&self) -> impl Layer<S>
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        tracing_opentelemetry::layer()
            .with_tracer(self.provider.tracer(SCOPE))
            .with_location(false)
            .with_threads(false)
            .with_tracked_inactivity(false)
            .with_target(false)
            .with_filter(Targets::new().with_target(TRACE_TARGET, tracing::Level::TRACE))
    }

    /// Sends the spans still buffered and stops the exporter.
    pub fn shutdown(&self) {
        if let Err(e) = self.provider.shutdown() {
            tracing::warn!("tracing: exporting the last spans failed: {e}");
        }
    }
}
