//! Auditing, as upstream's `k8s.io/apiserver` audits: an [`Policy`] (`--audit-policy-file`)
//! decides how much of each request is recorded; the [`Auditor`] in the handler chain records
//! `audit.k8s.io/v1` [`Event`]s stage by stage into an `AuditBackend`, such as the JSON-lines
//! `LogBackend` (`--audit-log-path`, rotated by size) and the webhook (`--audit-webhook-*`,
//! batched). Every response carries the request's `Audit-Id`.

pub(crate) mod backend;
pub(crate) mod blocking;
pub(crate) mod buffered;
pub(crate) mod encoded;
pub(crate) mod event;
pub(crate) mod filter;
pub(crate) mod options;
pub(crate) mod policy;
pub(crate) mod rotation;
pub(crate) mod truncate;
pub(crate) mod webhook;
pub(crate) mod webhook_options;

pub use event::{Event, EventUser, Level, ObjectReference, ResponseStatus, Stage};
pub(crate) use filter::annotate_authorization;
pub use filter::{AUDIT_ID_HEADER, AuditContext, AuditId, Auditor};
pub use options::{AuditError, AuditOptions};
pub use policy::{GroupResources, Policy, PolicyError, PolicyRule, RequestAuditConfig};
pub use webhook_options::AuditWebhookOptions;
