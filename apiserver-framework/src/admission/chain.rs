//! [`AdmissionChain`]: the plugins of a server, as the store runs them.

use std::sync::Arc;

use super::attributes::{AdmissionAttributes, Operation};
use super::plugin::AdmissionPlugin;
use crate::error::ApiError;
use crate::resource::ResourceInfo;

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
        for p in &self.plugins {
            if p.phases().validates() && p.handles(attrs.resource, attrs.operation) {
                p.validate(attrs).await?;
            }
        }
        Ok(())
    }
}
