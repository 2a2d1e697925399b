//! Allows everything: the `local` development mode's authorizer (upstream's
//! `authorizerfactory.NewAlwaysAllowAuthorizer`).

use super::{Attributes, AuthorizationError, Authorizer, Decision};

/// Allows every request.
#[derive(Clone, Copy, Debug, Default)]
pub struct AllowAll;

#[async_trait::async_trait]
impl Authorizer for AllowAll {
    async fn authorize(&self, _attrs: &Attributes) -> Result<Decision, AuthorizationError> {
        Ok(Decision::Allow)
    }
}
