//! How handlers give auditing what they decoded from a request body, as upstream's handlers
//! call `audit.LogRequestObject` and `audit.LogRequestPatch`
//! (`k8s.io/apiserver/pkg/endpoints/handlers`): the audit filter runs before authorization and
//! never reads a body itself, so an unauthorized request costs no decoding.
//!
//! The audit layer puts an [`AuditHook`] in the extensions of each audited request; handlers
//! hand it the object of a create or update once decoded, and a patch once parsed.

use std::sync::Arc;

use http::Extensions;
use serde_json::Value;

/// What a request's audit event takes from its handler.
pub trait RequestAudit: Send + Sync {
    /// Whether the request body is recorded (audit level `Request` and up): patches are only
    /// transcoded to JSON for the record then.
    fn records_body(&self) -> bool;

    /// The decoded object of a create or update: completes the event's object reference from
    /// its metadata, and is recorded as `requestObject` when [`records_body`](Self::records_body).
    fn object(&self, object: &Value);

    /// A patch as JSON, recorded as `requestObject` (only called when
    /// [`records_body`](Self::records_body)).
    fn patch(&self, patch: Value);
}

/// The [`RequestAudit`] of an audited request, in its extensions.
#[derive(Clone)]
pub struct AuditHook(pub Arc<dyn RequestAudit>);

impl AuditHook {
    /// The hook of a request, if it is audited.
    pub fn of(extensions: &Extensions) -> Option<AuditHook> {
        extensions.get::<AuditHook>().cloned()
    }
}

impl std::fmt::Debug for AuditHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuditHook")
    }
}
