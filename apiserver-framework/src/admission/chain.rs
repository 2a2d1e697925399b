//! [`AdmissionChain`]: the plugins of a server, as the store runs them.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use tracing::Instrument;

use super::attributes::{AdmissionAttributes, Operation};
use super::metrics;
use super::plugin::AdmissionPlugin;
use crate::cel::authorizer::Authorize;
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
        operation = attrs.operation.as_str(),
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
    /// The server's authorizer, for the `authorizer` of admission's CEL expressions.
    authorizer: OnceLock<Arc<dyn Authorize>>,
}

impl AdmissionChain {
    /// A chain of the given plugins.
    pub fn new(plugins: Vec<Arc<dyn AdmissionPlugin>>) -> Self {
        AdmissionChain {
            plugins,
            authorizer: OnceLock::new(),
        }
    }

    /// Gives admission's CEL expressions the server's `authorizer`, as upstream's
    /// `WantsAuthorizer` plugin initializer does, when the server's handler chain is assembled
    /// (the first one given stays).
    pub(crate) fn authorize_with(&self, authorizer: Arc<dyn Authorize>) {
        let _ = self.authorizer.set(authorizer);
    }

    /// The authorizer admission's CEL expressions ask, once the server has one.
    pub(crate) fn authorizer(&self) -> Option<&dyn Authorize> {
        self.authorizer.get().map(|a| a.as_ref())
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
    ///
    /// The step and each plugin's part are recorded in upstream's admission metrics.
    pub async fn mutate(&self, attrs: &mut AdmissionAttributes<'_>) -> Result<(), ApiError> {
        let span = phase_span("Admission mutating", attrs);
        let started = Instant::now();
        let result = self.mutate_rounds(attrs).instrument(span.clone()).await;
        record(&span, &result);
        let operation = attrs.operation.as_str();
        metrics::global().observe_step(STEP_ADMIT, operation, result.is_err(), started.elapsed());
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
                let started = Instant::now();
                let result = p.mutate(attrs).await;
                observe_plugin(p.name(), STEP_ADMIT, attrs, result.is_err(), started);
                result?;
            }
        }
        Ok(())
    }

    /// Runs every validating plugin (after the store's validation, right before storage).
    ///
    /// The step and each plugin's part are recorded in upstream's admission metrics.
    pub async fn validate(&self, attrs: &AdmissionAttributes<'_>) -> Result<(), ApiError> {
        let span = phase_span("Admission validating", attrs);
        let started = Instant::now();
        let result = self.validate_each(attrs).instrument(span.clone()).await;
        record(&span, &result);
        metrics::global().observe_step(
            STEP_VALIDATE,
            attrs.operation.as_str(),
            result.is_err(),
            started.elapsed(),
        );
        result
    }

    async fn validate_each(&self, attrs: &AdmissionAttributes<'_>) -> Result<(), ApiError> {
        for p in &self.plugins {
            if p.phases().validates() && p.handles(attrs.resource, attrs.operation) {
                let started = Instant::now();
                let result = p.validate(attrs).await;
                observe_plugin(p.name(), STEP_VALIDATE, attrs, result.is_err(), started);
                result?;
            }
        }
        Ok(())
    }
}

/// The `type` of the mutating step and its plugins in the admission metrics.
const STEP_ADMIT: &str = "admit";

/// The `type` of the validating step and its plugins.
const STEP_VALIDATE: &str = "validate";

/// Records one plugin's part of a step, started at `started`.
fn observe_plugin(
    name: &str,
    step: &str,
    attrs: &AdmissionAttributes<'_>,
    rejected: bool,
    started: Instant,
) {
    metrics::global().observe_plugin(
        name,
        step,
        attrs.operation.as_str(),
        rejected,
        started.elapsed(),
    );
}
