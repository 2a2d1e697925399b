//! [`AdmissionChain`]: the plugins of a server, as the store runs them.

use std::sync::Arc;

use tracing::Instrument;

use super::attributes::{AdmissionAttributes, Operation};
use super::plugin::AdmissionPlugin;
use crate::error::ApiError;
use crate::resource::ResourceInfo;
use crate::storage::traced::TRACE_TARGET;

/// The OpenTelemetry span of one admission phase (`--tracing-config-file`): `name` with the
/// resource and operation admitted; nothing when tracing is off.
fn phase_span(name: &'static str, attrs: &AdmissionAttributes<'_>) -> tracing::Span {
    tracing::trace_span!(
        target: TRACE_TARGET,
        "admission",
        otel.name = name,
        otel.kind = "internal",
        otel.status_code = tracing::field::Empty,
        operation = super::webhook::matching::operation_name(attrs.operation),
        group = attrs.resource.group.as_str(),
        resource = attrs.resource.plural.as_str(),
        subresource = attrs.subresource.unwrap_or(""),
    )
}

/// Marks `span` failed when `result` is an error.
fn record<T>(span: &tracing::Span, result: &Result<T, ApiError>) {
    if result.is_err() {
        span.record("otel.status_code", "error");
    }
}

/// The plugins of a server, run in order.
#[derive(Clone, Default)]
pub struct AdmissionChain {
    plugins: Vec<Arc<dyn AdmissionPlugin>>,
}

impl AdmissionChain {
    /// A chain of the given plugins.
    pub fn new(plugins: Vec<Arc<dyn AdmissionPlugin>>) -> Self {
        AdmissionChain { plugins }
    }

    /// Adds a plugin at the end.
    pub fn push(&mut self, plugin: Arc<dyn AdmissionPlugin>) {
        self.plugins.push(plugin);
    }

    /// The names of the plugins, in order.
    pub fn names(&self) -> Vec<String> {
        self.plugins.iter().map(|p| p.name().to_string()).collect()
    }

    /// Whether no plugin is registered.
    pub fn is_empty(&self) -> bool {
        self.plugins.is_empty()
    }

    /// Whether any plugin wants to see this request ([`AdmissionPlugin::handles`]).
    pub fn handles(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        self.plugins.iter().any(|p| p.handles(resource, operation))
    }

    /// Whether a plugin may change the object of this request: one that mutates
    /// ([`AdmissionPlugin::phases`]) and handles it.
    pub fn may_mutate(&self, resource: &ResourceInfo, operation: Operation) -> bool {
        self.plugins
            .iter()
            .any(|p| p.phases().mutates() && p.handles(resource, operation))
    }

    /// Runs every mutating plugin (before the store's defaulting and validation, as upstream),
    /// and all of them a second time when one asks for it (see
    /// [`Reinvocation`](super::Reinvocation)).
    pub async fn mutate(&self, attrs: &mut AdmissionAttributes<'_>) -> Result<(), ApiError> {
        let span = phase_span("Admission mutating", attrs);
        let result = self.mutate_rounds(attrs).instrument(span.clone()).await;
        record(&span, &result);
        result
    }

    async fn mutate_rounds(&self, attrs: &mut AdmissionAttributes<'_>) -> Result<(), ApiError> {
        self.mutate_round(attrs).await?;
        if attrs.reinvocation.should_reinvoke && !attrs.reinvocation.is_reinvoke {
            attrs.reinvocation.is_reinvoke = true;
            self.mutate_round(attrs).await?;
        }
        Ok(())
    }

    async fn mutate_round(&self, attrs: &mut AdmissionAttributes<'_>) -> Result<(), ApiError> {
        for p in &self.plugins {
            if p.phases().mutates() && p.handles(attrs.resource, attrs.operation) {
                p.mutate(attrs).await?;
            }
        }
        Ok(())
    }

    /// Runs every validating plugin (after the store's validation, right before storage).
    pub async fn validate(&self, attrs: &AdmissionAttributes<'_>) -> Result<(), ApiError> {
        let span = phase_span("Admission validating", attrs);
        let result = self.validate_all(attrs).instrument(span.clone()).await;
        record(&span, &result);
        result
    }

    async fn validate_all(&self, attrs: &AdmissionAttributes<'_>) -> Result<(), ApiError> {
        for p in &self.plugins {
            if p.phases().validates() && p.handles(attrs.resource, attrs.operation) {
                p.validate(attrs).await?;
            }
        }
        Ok(())
    }
}
