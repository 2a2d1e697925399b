//! Admission plugins: the webhooks (`MutatingAdmissionWebhook`, `ValidatingAdmissionWebhook`),
//! `NamespaceLifecycle`, the production set and its flags, and filters that narrow a plugin to
//! some resources.
//!
//! A plugin implements [`AdmissionPlugin`](crate::registry::admission::AdmissionPlugin); the
//! store runs them through its [`AdmissionChain`](crate::registry::admission::AdmissionChain)
//! (`registry::admission`), mutating plugins before its defaulting and validation, validating
//! plugins right before the object is stored.

pub mod filter;
pub(crate) mod host;
pub(crate) mod lifecycle;
pub(crate) mod options;
pub(crate) mod production;
pub(crate) mod webhook;
