//! Why an apply or an update of managed fields failed.

use super::conflict::Conflicts;
use super::managed::ManagedFieldsError;

/// A failed server-side apply (or managed fields update).
#[derive(Debug, Clone, thiserror::Error)]
pub enum ApplyError {
    /// Fields owned by other managers would change: 409 Conflict with the causes.
    #[error("{}", .0.message())]
    Conflicts(Conflicts),
    /// A malformed apply request (400 Bad Request), e.g. `metadata.managedFields must be nil`.
    #[error("{0}")]
    BadRequest(String),
    /// An object that does not fit its schema, e.g. a map-list item without its key field.
    #[error("{0}")]
    Invalid(String),
    /// The live object's `metadata.managedFields` cannot be read.
    #[error("failed to decode managed fields: {0}")]
    ManagedFields(#[from] ManagedFieldsError),
}
