//! A further authorization a handler needs besides the handler chain's: upstream's handlers
//! ask the authorizer again for what only the request's options reveal, such as the
//! `unsafe-delete-ignore-read-errors` verb of a delete that sets
//! `ignoreStoreReadErrorWithClusterBreakingPotential`. The authorization filter puts its
//! [`AlsoAuthorize`] (one per chain, shared by every request) into an allowed request's
//! extensions; only a handler that asks builds the further check, from the user and the request
//! reading the extensions already hold, for the same resource, namespace and name.

use std::sync::Arc;

use crate::error::ApiError;
use crate::resource::ResourceInfo;

/// The verb a delete needs as well when it sets `ignoreStoreReadErrorWithClusterBreakingPotential`.
pub const UNSAFE_DELETE_VERB: &str = "unsafe-delete-ignore-read-errors";

/// The authorizer's answer to a further verb.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VerbDecision {
    /// The user may.
    Allowed,
    /// The user may not, for this reason (denied or no opinion).
    Refused(String),
    /// The authorizer failed.
    Failed(String),
}

/// Authorizes a further verb for a request's user on the request's resource (implemented by
/// the handler chain's authorization filter).
#[async_trait::async_trait]
pub trait VerbAuthorizer: Send + Sync {
    /// Whether the user of the request with these extensions may also do `verb` on the
    /// resource, namespace and name the request names.
    async fn authorize_verb(&self, request: &http::Extensions, verb: &str) -> VerbDecision;
}

/// The chain's [`VerbAuthorizer`], in an allowed request's extensions.
#[derive(Clone)]
pub struct AlsoAuthorize(pub Arc<dyn VerbAuthorizer>);

/// Upstream's check of an unsafe delete: the user must also be allowed
/// [`UNSAFE_DELETE_VERB`], else 403 `Forbidden` with upstream's message (`not permitted to do
/// "unsafe-delete-ignore-read-errors", reason: …`). Without an authorizer to ask (the request's
/// extensions hold no [`AlsoAuthorize`]), the delete is refused.
pub async fn unsafe_delete_allowed(
    request: &http::Extensions,
    info: &ResourceInfo,
    name: &str,
) -> Result<(), ApiError> {
    let Some(also) = request.get::<AlsoAuthorize>() else {
        return Err(ApiError::forbidden(
            info,
            name,
            "no authorizer to check the unsafe delete",
        ));
    };
    match also.0.authorize_verb(request, UNSAFE_DELETE_VERB).await {
        VerbDecision::Allowed => Ok(()),
        VerbDecision::Refused(reason) => Err(ApiError::forbidden(
            info,
            name,
            &format!("not permitted to do {UNSAFE_DELETE_VERB:?}, reason: {reason}"),
        )),
        VerbDecision::Failed(err) => Err(ApiError::forbidden(
            info,
            name,
            &format!("error while checking permission for {UNSAFE_DELETE_VERB:?}, {err}"),
        )),
    }
}
