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

impl From<ApplyError> for crate::error::ApiError {
    /// Conflicts answer 409 `Conflict` whose details hold only the causes (as upstream);
    /// malformed requests 400; objects that do not fit their schema 422; unreadable stored
    /// managed fields 500.
    fn from(e: ApplyError) -> Self {
        use crate::error::{ApiError, StatusCause, StatusDetails};
        match e {
            ApplyError::Conflicts(c) => {
                ApiError::new(409, "Conflict", c.message()).with_details(StatusDetails {
                    causes: c
                        .causes()
                        .into_iter()
                        .map(|cause| StatusCause {
                            reason: cause.reason.to_string(),
                            message: cause.message,
                            field: cause.field,
                        })
                        .collect(),
                    ..Default::default()
                })
            }
            ApplyError::BadRequest(m) => ApiError::bad_request(m),
            ApplyError::Invalid(m) => ApiError::new(422, "Invalid", m),
            e @ ApplyError::ManagedFields(_) => ApiError::internal(e),
        }
    }
}
